/* nbtest: guest-side helper of the nanobpf.ko QEMU tests (tests/driver/test_driver.py).
 * One file on purpose (about 1,100 lines): one static binary with a verb per kind of request, built
 * with one cc line into the initramfs.
 *
 * Speaks the generic-netlink family "nanobpf" with raw netlink sockets (no libnl), so it can send
 * what a correct client never would. Built static and put in the test initramfs.
 *
 *   nbtest malformed IFNAME        bad/missing/oversize attributes, broken headers, unknown commands,
 *                                  device refusals, an unprivileged caller: "CASE name errno msg" lines
 *   nbtest fuzz SEED N             N random messages (random commands, attributes, lengths)
 *   nbtest bulk SEED N [CID0]      N random key add/update/delete operations (both directions, some
 *                                  entries by address id); "FAIL ..." lines for refused ones, then
 *                                  "EXPECT dir cid_len id keys" for the resulting table
 *   nbtest keys                    the driver's key table: "KEY dir cid_len id phase slot synced"
 *                                  (id: the 20 bytes of the CID, zero-padded, or the address id)
 *   nbtest dev                     DEV_GET: "DEV key=value ..."
 *   nbtest stats                   STATS_GET: "DEVSTAT id value", "DRVSTAT id value"
 *   nbtest udpsend IP PORT MARK HEX [SPORT]   a UDP datagram (payload in hex) with SO_MARK = MARK
 *   nbtest udprecv PORT TIMEOUT_MS        the first datagram on PORT: "RECV mark=0x... hex=PAYLOAD"
 *
 * Exit status 0 unless the tool itself failed (netlink errors of a case are its output).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/netlink.h>
#include <linux/genetlink.h>

#include "nanobpf_ctrl.h"
#include "nanobpf_ebpf_defs.h"

#ifndef SO_RCVMARK
#define SO_RCVMARK 75
#endif

#define BUFSZ (128 * 1024)

static int nl_fd = -1;
static int family_id;
static uint32_t nl_seq = 1;
static char last_msg[512];	/* extended-ack message of the last answer */

/* ------------------------------------------------------------------ message building */

struct msg {
	size_t len;
	union {
		struct nlmsghdr h;
		unsigned char buf[BUFSZ];
	};
};

static struct msg M;

static void m_start(struct msg *m, uint16_t type, uint8_t cmd, uint16_t flags)
{
	struct genlmsghdr *g;

	memset(m->buf, 0, NLMSG_HDRLEN + GENL_HDRLEN);
	m->h.nlmsg_type = type;
	m->h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	m->h.nlmsg_seq = nl_seq++;
	g = (struct genlmsghdr *)(m->buf + NLMSG_HDRLEN);
	g->cmd = cmd;
	g->version = NANOBPF_GENL_VERSION;
	m->len = NLMSG_HDRLEN + GENL_HDRLEN;
}

static void m_raw(struct msg *m, const void *data, size_t len)
{
	if (m->len + len > BUFSZ)
		abort();
	memcpy(m->buf + m->len, data, len);
	m->len += len;
}

static void m_attr(struct msg *m, uint16_t type, const void *data, size_t len)
{
	struct nlattr a = { .nla_len = NLA_HDRLEN + len, .nla_type = type };
	static const unsigned char zero[4];

	m_raw(m, &a, sizeof(a));
	m_raw(m, data, len);
	m_raw(m, zero, NLA_ALIGN(len) - len);
}

static void m_str(struct msg *m, uint16_t type, const char *s)
{
	m_attr(m, type, s, strlen(s) + 1);
}

static void m_u8(struct msg *m, uint16_t type, uint8_t v) { m_attr(m, type, &v, 1); }
static void m_u16(struct msg *m, uint16_t type, uint16_t v) { m_attr(m, type, &v, 2); }
static void m_u32(struct msg *m, uint16_t type, uint32_t v) { m_attr(m, type, &v, 4); }
static void m_u64(struct msg *m, uint16_t type, uint64_t v) { m_attr(m, type, &v, 8); }

static void m_start_nb(struct msg *m, uint8_t cmd)
{
	m_start(m, family_id, cmd, 0);
}

/* ------------------------------------------------------------------ sending, answers */

typedef void (*msg_cb)(const struct nlmsghdr *h, void *arg);

static void parse_ack_msg(const struct nlmsghdr *h)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);
	size_t off = NLMSG_HDRLEN + sizeof(*e);
	const struct nlattr *a;

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	while (off + NLA_HDRLEN <= h->nlmsg_len) {
		a = (const struct nlattr *)((const char *)h + off);
		if (a->nla_len < NLA_HDRLEN || off + a->nla_len > h->nlmsg_len)
			break;
		if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG)
			snprintf(last_msg, sizeof(last_msg), "%.*s", (int)(a->nla_len - NLA_HDRLEN),
				 (const char *)a + NLA_HDRLEN);
		off += NLA_ALIGN(a->nla_len);
	}
}

/* Send m; call cb for each answer message; returns 0 or -errno of the NLMSG_ERROR answer. */
static int m_send(struct msg *m, msg_cb cb, void *arg)
{
	static unsigned char rbuf[BUFSZ];
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	uint32_t seq = m->h.nlmsg_seq;
	int dump = m->h.nlmsg_flags & NLM_F_DUMP;

	if (m->h.nlmsg_len == 0)
		m->h.nlmsg_len = m->len;
	last_msg[0] = '\0';
	if (sendto(nl_fd, m->buf, m->len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	for (;;) {
		struct pollfd p = { .fd = nl_fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 30000) <= 0)
			return -ETIME;	/* no answer at all: never expected */
		n = recv(nl_fd, rbuf, sizeof(rbuf), 0);
		if (n < 0)
			return -errno;
		for (struct nlmsghdr *h = (struct nlmsghdr *)rbuf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				parse_ack_msg(h);
				return e->error;
			}
			if (h->nlmsg_type == NLMSG_DONE) {
				if (dump)
					return 0;
				continue;
			}
			if (cb)
				cb(h, arg);
		}
	}
}

/* Attributes of a family message into tb (type -> attribute), up to max. */
static void parse_attrs(const struct nlmsghdr *h, const struct nlattr **tb, int max)
{
	size_t off = NLMSG_HDRLEN + GENL_HDRLEN;

	memset(tb, 0, sizeof(*tb) * (max + 1));
	while (off + NLA_HDRLEN <= h->nlmsg_len) {
		const struct nlattr *a = (const struct nlattr *)((const char *)h + off);
		int t = a->nla_type & NLA_TYPE_MASK;

		if (a->nla_len < NLA_HDRLEN || off + a->nla_len > h->nlmsg_len)
			break;
		if (t <= max)
			tb[t] = a;
		off += NLA_ALIGN(a->nla_len);
	}
}

static const void *adata(const struct nlattr *a) { return (const char *)a + NLA_HDRLEN; }
static int alen(const struct nlattr *a) { return a->nla_len - NLA_HDRLEN; }
static uint8_t a_u8(const struct nlattr *a) { return *(const uint8_t *)adata(a); }
static uint16_t a_u16(const struct nlattr *a) { uint16_t v; memcpy(&v, adata(a), 2); return v; }
static uint32_t a_u32(const struct nlattr *a) { uint32_t v; memcpy(&v, adata(a), 4); return v; }
static uint64_t a_u64(const struct nlattr *a) { uint64_t v; memcpy(&v, adata(a), 8); return v; }

static void family_cb(const struct nlmsghdr *h, void *arg)
{
	size_t off = NLMSG_HDRLEN + GENL_HDRLEN;

	while (off + NLA_HDRLEN <= h->nlmsg_len) {
		const struct nlattr *a = (const struct nlattr *)((const char *)h + off);

		if (a->nla_len < NLA_HDRLEN)
			break;
		if (a->nla_type == CTRL_ATTR_FAMILY_ID)
			*(int *)arg = a_u16(a);
		off += NLA_ALIGN(a->nla_len);
	}
}

static void nl_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1, rcv = 4 << 20;

	nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (nl_fd < 0 || bind(nl_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("netlink socket");
		exit(1);
	}
	setsockopt(nl_fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(nl_fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	setsockopt(nl_fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	m_start(&M, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0);
	((struct genlmsghdr *)(M.buf + NLMSG_HDRLEN))->version = 1;
	m_str(&M, CTRL_ATTR_FAMILY_NAME, NANOBPF_GENL_NAME);
	M.h.nlmsg_len = 0;
	if (m_send(&M, family_cb, &family_id) || !family_id) {
		fprintf(stderr, "nbtest: generic-netlink family %s not found (nanobpf.ko loaded?)\n",
			NANOBPF_GENL_NAME);
		exit(1);
	}
}

/* ------------------------------------------------------------------ helpers */

static const char *errname(int e)
{
	const char *n;

	if (e == 0)
		return "OK";
	n = strerrorname_np(e < 0 ? -e : e);
	return n ? n : "E?";
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void hex(char *out, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = '\0';
}

/* A struct nanobpf_quic_keys for an entry with cid_len bytes of CID, from the RNG. */
static void make_keys(unsigned char *k, int cid_len)
{
	memset(k, 0, NANOBPF_CTRL_KEYS_SIZE);
	k[0] = rnd() & 1;		/* key_phase */
	k[1] = rnd() & 1;		/* flags: next keys present */
	k[2] = cid_len;
	for (int i = 4; i < 76; i++)	/* key[32], iv[24], hp[16]; pad stays zero */
		k[i] = rnd();
}

/* A key request naming the entry by CID only (DIR left to its default, open). */
static void m_key(struct msg *m, uint8_t cmd, const unsigned char *cid, int cid_len, const unsigned char *keys)
{
	m_start_nb(m, cmd);
	m_attr(m, NANOBPF_ATTR_CID, cid, cid_len);
	if (keys)
		m_attr(m, NANOBPF_ATTR_KEYS, keys, NANOBPF_CTRL_KEYS_SIZE);
}

/* A key request with DIR (dir < 0: none), and the CID (cid_len > 0) or the address id addr (NULL: none). */
static void m_key_dir(struct msg *m, uint8_t cmd, int dir, const unsigned char *cid, int cid_len,
		      const unsigned char *addr, int addr_len, const unsigned char *keys)
{
	m_start_nb(m, cmd);
	if (cid_len)
		m_attr(m, NANOBPF_ATTR_CID, cid, cid_len);
	if (addr)
		m_attr(m, NANOBPF_ATTR_ADDR_ID, addr, addr_len);
	if (dir >= 0)
		m_u8(m, NANOBPF_ATTR_DIR, dir);
	if (keys)
		m_attr(m, NANOBPF_ATTR_KEYS, keys, NANOBPF_CTRL_KEYS_SIZE);
}

/* ------------------------------------------------------------------ malformed */

static void report(const char *name, int err)
{
	printf("CASE %s %d %s \"%s\"\n", name, err, errname(err), last_msg);
	fflush(stdout);
}

static void run_case(const char *name)
{
	M.h.nlmsg_len = 0;
	report(name, m_send(&M, NULL, NULL));
}

static void dev_cb(const struct nlmsghdr *h, void *arg)
{
	const struct nlattr *tb[NANOBPF_ATTR_MAX + 1];

	(void)arg;
	parse_attrs(h, tb, NANOBPF_ATTR_MAX);
	printf("DEV");
	if (tb[NANOBPF_ATTR_IFNAME])
		printf(" ifname=%s", (const char *)adata(tb[NANOBPF_ATTR_IFNAME]));
	if (tb[NANOBPF_ATTR_VDEV_NAME])
		printf(" vdev=%s", (const char *)adata(tb[NANOBPF_ATTR_VDEV_NAME]));
	if (tb[NANOBPF_ATTR_LINK_STATE])
		printf(" state=%u", a_u8(tb[NANOBPF_ATTR_LINK_STATE]));
	if (tb[NANOBPF_ATTR_EPOCH])
		printf(" epoch=%u", a_u32(tb[NANOBPF_ATTR_EPOCH]));
	if (tb[NANOBPF_ATTR_VERSION])
		printf(" version=%u", a_u16(tb[NANOBPF_ATTR_VERSION]));
	if (tb[NANOBPF_ATTR_KEY_COUNT])
		printf(" keys=%u", a_u32(tb[NANOBPF_ATTR_KEY_COUNT]));
	if (tb[NANOBPF_ATTR_CTRL_KEY])	/* must never be: the device key is not sent back */
		printf(" ctrl_key=present");
	if (tb[NANOBPF_ATTR_DEV_STATUS])
		printf(" status=%u", a_u8(tb[NANOBPF_ATTR_DEV_STATUS]));
	if (tb[NANOBPF_ATTR_ERRMSG])
		printf(" errmsg=%s", (const char *)adata(tb[NANOBPF_ATTR_ERRMSG]));
	printf("\n");
}

static int cmd_dev(void)
{
	m_start_nb(&M, NANOBPF_CMD_DEV_GET);
	M.h.nlmsg_len = 0;
	return m_send(&M, dev_cb, NULL);
}

static void malformed(const char *ifname)
{
	unsigned char cid[21], keys[NANOBPF_CTRL_KEYS_SIZE + 8], big[NANOBPF_CTRL_MAX_IMAGE + 8];
	unsigned char addr[NANOBPF_CTRL_MAX_CID + 1], zero_addr[NANOBPF_CTRL_MAX_CID] = { 0 };
	struct nlattr bad;
	pid_t pid;
	int st;

	memset(cid, 0xc1, sizeof(cid));
	memset(addr, 0xad, sizeof(addr));
	memset(big, 0x5a, sizeof(big));
	rng_state = 0x9e3779b97f4a7c15ull;

	/* headers and commands */
	m_start_nb(&M, 99);
	run_case("unknown_cmd");
	m_start_nb(&M, NANOBPF_CMD_UNSPEC);
	run_case("cmd_unspec");
	m_start_nb(&M, NANOBPF_CMD_DEV_GET);
	M.len = NLMSG_HDRLEN + 2;	/* shorter than the genetlink header */
	run_case("short_genl_header");
	m_start_nb(&M, NANOBPF_CMD_DEV_GET);
	((struct genlmsghdr *)(M.buf + NLMSG_HDRLEN))->reserved = 7;
	run_case("genl_reserved_set");
	m_start_nb(&M, NANOBPF_CMD_KEY_DEL);
	m_attr(&M, NANOBPF_ATTR_CID, cid, 4);
	m_attr(&M, 200, cid, 4);
	run_case("attr_unknown_type");
	m_start_nb(&M, NANOBPF_CMD_KEY_DEL);
	bad.nla_len = 64;		/* claims more than the message holds */
	bad.nla_type = NANOBPF_ATTR_CID;
	m_raw(&M, &bad, sizeof(bad));
	m_raw(&M, cid, 8);
	run_case("attr_truncated");
	m_start_nb(&M, NANOBPF_CMD_KEY_DEL);
	bad.nla_len = 2;		/* shorter than an attribute header */
	bad.nla_type = NANOBPF_ATTR_CID;
	m_raw(&M, &bad, sizeof(bad));
	run_case("attr_len_below_header");
	m_start_nb(&M, NANOBPF_CMD_KEY_DEL);
	m_attr(&M, NANOBPF_ATTR_CID, cid, 4);
	m_raw(&M, cid, 3);		/* trailing garbage */
	run_case("trailing_garbage");
	m_start(&M, family_id, NANOBPF_CMD_KEY_GET, NLM_F_DUMP);
	m_attr(&M, 200, cid, 4);
	run_case("dump_unknown_attr");

	/* keys */
	make_keys(keys, 4);
	m_key(&M, NANOBPF_CMD_KEY_ADD, NULL, 0, keys);
	M.len = NLMSG_HDRLEN + GENL_HDRLEN;
	m_attr(&M, NANOBPF_ATTR_KEYS, keys, NANOBPF_CTRL_KEYS_SIZE);
	run_case("key_add_no_cid");
	m_key(&M, NANOBPF_CMD_KEY_ADD, cid, 0, keys);
	run_case("key_add_cid_empty");
	keys[2] = 21;
	m_key(&M, NANOBPF_CMD_KEY_ADD, cid, 21, keys);
	run_case("key_add_cid_21");
	m_key(&M, NANOBPF_CMD_KEY_ADD, cid, 4, NULL);
	run_case("key_add_no_keys");
	make_keys(keys, 4);
	m_start_nb(&M, NANOBPF_CMD_KEY_ADD);
	m_attr(&M, NANOBPF_ATTR_CID, cid, 4);
	m_attr(&M, NANOBPF_ATTR_KEYS, keys, NANOBPF_CTRL_KEYS_SIZE - 1);
	run_case("key_add_keys_79");
	m_start_nb(&M, NANOBPF_CMD_KEY_ADD);
	m_attr(&M, NANOBPF_ATTR_CID, cid, 4);
	m_attr(&M, NANOBPF_ATTR_KEYS, keys, NANOBPF_CTRL_KEYS_SIZE + 1);
	run_case("key_add_keys_81");
	keys[2] = 5;
	m_key(&M, NANOBPF_CMD_KEY_ADD, cid, 4, keys);
	run_case("key_add_cid_len_mismatch");
	keys[2] = 4;
	keys[0] = 2;
	m_key(&M, NANOBPF_CMD_KEY_ADD, cid, 4, keys);
	run_case("key_add_phase_2");
	keys[0] = 0;
	keys[1] = 0x80;
	m_key(&M, NANOBPF_CMD_KEY_ADD, cid, 4, keys);
	run_case("key_add_bad_flags");
	keys[1] = 0;
	keys[78] = 1;			/* pad not zero: only the device checks it -> refusal, rolled back */
	m_key(&M, NANOBPF_CMD_KEY_ADD, cid, 4, keys);
	run_case("key_add_device_refuses");
	cmd_dev();
	m_key(&M, NANOBPF_CMD_KEY_GET, cid, 4, NULL);
	run_case("key_get_after_refusal");
	keys[78] = 0;
	m_key(&M, NANOBPF_CMD_KEY_ADD, cid, 4, keys);
	run_case("key_add_ok");
	m_key(&M, NANOBPF_CMD_KEY_ADD, cid, 4, keys);
	run_case("key_add_duplicate");
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, NANOBPF_QUIC_DIR_OPEN, cid, 4, NULL, 0, keys);
	run_case("key_add_duplicate_dir_open");
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, NANOBPF_QUIC_DIR_SEAL, cid, 4, NULL, 0, keys);
	run_case("key_add_seal_same_cid");	/* the other direction of the same CID: another entry */
	m_key_dir(&M, NANOBPF_CMD_KEY_DEL, NANOBPF_QUIC_DIR_SEAL, cid, 4, NULL, 0, NULL);
	run_case("key_del_seal");
	m_key_dir(&M, NANOBPF_CMD_KEY_DEL, NANOBPF_QUIC_DIR_SEAL, cid, 4, NULL, 0, NULL);
	run_case("key_del_seal_missing");
	m_key(&M, NANOBPF_CMD_KEY_UPDATE, cid, 4, keys);
	run_case("key_update_ok");
	m_key(&M, NANOBPF_CMD_KEY_DEL, cid, 4, NULL);
	run_case("key_del_ok");
	m_key(&M, NANOBPF_CMD_KEY_DEL, cid, 4, NULL);
	run_case("key_del_missing");
	m_key(&M, NANOBPF_CMD_KEY_UPDATE, cid, 4, keys);
	run_case("key_update_missing");
	m_start_nb(&M, NANOBPF_CMD_KEY_DEL);
	m_u32(&M, NANOBPF_ATTR_CID, 0);	/* 4 bytes: a valid CID */
	run_case("key_del_u32_cid");

	/* directions and zero-length CIDs (by address id) */
	make_keys(keys, 4);
	keys[1] = 0;
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, 2, cid, 4, NULL, 0, keys);
	run_case("key_add_dir_2");
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, 0xff, cid, 4, NULL, 0, keys);
	run_case("key_add_dir_255");
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, NANOBPF_QUIC_DIR_OPEN, cid, 4, addr, NANOBPF_CTRL_MAX_CID, keys);
	run_case("key_add_cid_and_addr");
	keys[1] = NANOBPF_QUIC_KEY_NEXT | NANOBPF_QUIC_KEY_PREV;
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, NANOBPF_QUIC_DIR_OPEN, cid, 4, NULL, 0, keys);
	run_case("key_add_next_and_prev");
	keys[1] = NANOBPF_QUIC_KEY_PREV;
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, NANOBPF_QUIC_DIR_SEAL, cid, 4, NULL, 0, keys);
	run_case("key_add_prev_seal");
	make_keys(keys, 0);
	keys[1] = NANOBPF_QUIC_KEY_PREV;
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, NANOBPF_QUIC_DIR_SEAL, NULL, 0, NULL, 0, keys);
	run_case("key_add_no_cid_no_addr");
	keys[1] = 0;
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, NANOBPF_QUIC_DIR_SEAL, cid, 0, addr, NANOBPF_CTRL_MAX_CID - 1, keys);
	run_case("key_add_addr_19");
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, NANOBPF_QUIC_DIR_SEAL, cid, 0, addr, NANOBPF_CTRL_MAX_CID + 1, keys);
	run_case("key_add_addr_21");
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, NANOBPF_QUIC_DIR_SEAL, cid, 0, zero_addr, NANOBPF_CTRL_MAX_CID, keys);
	run_case("key_add_addr_zero");
	keys[2] = 4;
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, NANOBPF_QUIC_DIR_OPEN, cid, 0, addr, NANOBPF_CTRL_MAX_CID, keys);
	run_case("key_add_addr_cid_len_4");
	keys[2] = 0;
	keys[1] = NANOBPF_QUIC_KEY_PREV;
	m_key_dir(&M, NANOBPF_CMD_KEY_ADD, NANOBPF_QUIC_DIR_OPEN, cid, 0, addr, NANOBPF_CTRL_MAX_CID, keys);
	run_case("key_add_addr_prev_open");	/* PREV in an open entry, by address, with an empty CID */
	m_key_dir(&M, NANOBPF_CMD_KEY_GET, NANOBPF_QUIC_DIR_OPEN, NULL, 0, addr, NANOBPF_CTRL_MAX_CID, NULL);
	run_case("key_get_addr");
	m_key_dir(&M, NANOBPF_CMD_KEY_GET, NANOBPF_QUIC_DIR_SEAL, NULL, 0, addr, NANOBPF_CTRL_MAX_CID, NULL);
	run_case("key_get_addr_other_dir");
	m_key_dir(&M, NANOBPF_CMD_KEY_UPDATE, -1, NULL, 0, addr, NANOBPF_CTRL_MAX_CID, keys);
	run_case("key_update_addr_default_dir");
	m_key_dir(&M, NANOBPF_CMD_KEY_DEL, NANOBPF_QUIC_DIR_OPEN, NULL, 0, addr, NANOBPF_CTRL_MAX_CID, NULL);
	run_case("key_del_addr");
	m_key_dir(&M, NANOBPF_CMD_KEY_DEL, NANOBPF_QUIC_DIR_OPEN, NULL, 0, addr, NANOBPF_CTRL_MAX_CID, NULL);
	run_case("key_del_addr_missing");

	/* device */
	m_start_nb(&M, NANOBPF_CMD_DEV_ATTACH);
	run_case("attach_no_ifname");
	m_start_nb(&M, NANOBPF_CMD_DEV_ATTACH);
	m_attr(&M, NANOBPF_ATTR_IFNAME, "eth0", 4);	/* no NUL */
	run_case("attach_ifname_no_nul");
	m_start_nb(&M, NANOBPF_CMD_DEV_ATTACH);
	m_str(&M, NANOBPF_ATTR_IFNAME, "eth0123456789abcdefgh");
	run_case("attach_ifname_long");
	m_start_nb(&M, NANOBPF_CMD_DEV_ATTACH);
	m_str(&M, NANOBPF_ATTR_IFNAME, ifname);
	m_str(&M, NANOBPF_ATTR_VDEV_NAME, "a/b");
	run_case("attach_bad_vdev_name");
	m_start_nb(&M, NANOBPF_CMD_DEV_ATTACH);
	m_str(&M, NANOBPF_ATTR_IFNAME, ifname);
	run_case("attach_no_key");
	m_start_nb(&M, NANOBPF_CMD_DEV_ATTACH);
	m_str(&M, NANOBPF_ATTR_IFNAME, ifname);
	m_attr(&M, NANOBPF_ATTR_CTRL_KEY, big, NANOBPF_CTRL_KEY_LEN - 1);
	run_case("attach_key_15");
	m_start_nb(&M, NANOBPF_CMD_DEV_ATTACH);
	m_str(&M, NANOBPF_ATTR_IFNAME, ifname);
	m_attr(&M, NANOBPF_ATTR_CTRL_KEY, big, NANOBPF_CTRL_KEY_LEN + 1);
	run_case("attach_key_17");
	m_start_nb(&M, NANOBPF_CMD_DEV_ATTACH);
	m_str(&M, NANOBPF_ATTR_IFNAME, ifname);
	m_attr(&M, NANOBPF_ATTR_CTRL_KEY, big, NANOBPF_CTRL_KEY_LEN);	/* any key: the link is busy first */
	run_case("attach_again");

	/* programs */
	m_start_nb(&M, NANOBPF_CMD_PROG_LOAD);
	run_case("prog_no_image");
	m_start_nb(&M, NANOBPF_CMD_PROG_LOAD);
	m_attr(&M, NANOBPF_ATTR_IMAGE, big, 0);
	run_case("prog_image_empty");
	m_start_nb(&M, NANOBPF_CMD_PROG_LOAD);
	m_attr(&M, NANOBPF_ATTR_IMAGE, big, NANOBPF_CTRL_MAX_IMAGE + 1);
	run_case("prog_image_too_big");
	m_start_nb(&M, NANOBPF_CMD_PROG_LOAD);
	m_attr(&M, NANOBPF_ATTR_IMAGE, big, 3000);
	m_str(&M, NANOBPF_ATTR_PROG_NAME, "garbage");
	run_case("prog_image_garbage");
	cmd_dev();
	m_start_nb(&M, NANOBPF_CMD_PROG_LOAD);
	m_attr(&M, NANOBPF_ATTR_IMAGE, big, 100);
	m_str(&M, NANOBPF_ATTR_PROG_NAME, "");
	run_case("prog_name_empty");
	m_start_nb(&M, NANOBPF_CMD_PROG_LOAD);
	m_attr(&M, NANOBPF_ATTR_IMAGE, big, 100);
	m_str(&M, NANOBPF_ATTR_PROG_NAME, "0123456789abcdef0123456789abcdef0");
	run_case("prog_name_long");

	/* maps */
	m_start_nb(&M, NANOBPF_CMD_MAP_LOOKUP);
	m_attr(&M, NANOBPF_ATTR_MAP_KEY, cid, 4);
	run_case("map_no_name");
	m_start_nb(&M, NANOBPF_CMD_MAP_LOOKUP);
	m_str(&M, NANOBPF_ATTR_MAP_NAME, "");
	m_attr(&M, NANOBPF_ATTR_MAP_KEY, cid, 4);
	run_case("map_name_empty");
	m_start_nb(&M, NANOBPF_CMD_MAP_LOOKUP);
	m_str(&M, NANOBPF_ATTR_MAP_NAME, "quic_config");
	run_case("map_lookup_no_key");
	m_start_nb(&M, NANOBPF_CMD_MAP_LOOKUP);
	m_str(&M, NANOBPF_ATTR_MAP_NAME, "quic_config");
	m_attr(&M, NANOBPF_ATTR_MAP_KEY, big, NANOBPF_CTRL_MAX_MAP_KEY + 1);
	run_case("map_key_257");
	m_start_nb(&M, NANOBPF_CMD_MAP_UPDATE);
	m_str(&M, NANOBPF_ATTR_MAP_NAME, "quic_config");
	m_attr(&M, NANOBPF_ATTR_MAP_KEY, big, 4);
	m_attr(&M, NANOBPF_ATTR_MAP_VALUE, big, NANOBPF_CTRL_MAX_MAP_VALUE + 1);
	run_case("map_value_1025");
	m_start_nb(&M, NANOBPF_CMD_MAP_UPDATE);
	m_str(&M, NANOBPF_ATTR_MAP_NAME, "quic_config");
	m_attr(&M, NANOBPF_ATTR_MAP_KEY, big, 4);
	run_case("map_update_no_value");
	m_start_nb(&M, NANOBPF_CMD_MAP_UPDATE);
	m_str(&M, NANOBPF_ATTR_MAP_NAME, "quic_config");
	m_attr(&M, NANOBPF_ATTR_MAP_KEY, big, 4);
	m_attr(&M, NANOBPF_ATTR_MAP_VALUE, big, 16);
	m_u64(&M, NANOBPF_ATTR_MAP_FLAGS, 3);
	run_case("map_update_bad_flags");
	m_start_nb(&M, NANOBPF_CMD_MAP_LOOKUP);
	m_str(&M, NANOBPF_ATTR_MAP_NAME, "quic_config");
	m_attr(&M, NANOBPF_ATTR_MAP_KEY, big, 4);
	m_attr(&M, NANOBPF_ATTR_MAP_VALUE, big, 16);
	run_case("map_lookup_with_value");
	m_start_nb(&M, NANOBPF_CMD_MAP_LOOKUP);
	m_str(&M, NANOBPF_ATTR_MAP_NAME, "no_such_map");
	m_attr(&M, NANOBPF_ATTR_MAP_KEY, big, 4);
	run_case("map_unknown");
	m_start_nb(&M, NANOBPF_CMD_MAP_LOOKUP);
	m_str(&M, NANOBPF_ATTR_MAP_NAME, "quic_config");
	m_attr(&M, NANOBPF_ATTR_MAP_KEY, big, 3);
	run_case("map_key_wrong_size");

	/* tables */
	m_start_nb(&M, NANOBPF_CMD_TABLE_SET);
	m_u16(&M, NANOBPF_ATTR_TABLE_INDEX, 0);
	m_u32(&M, NANOBPF_ATTR_TABLE_VALUE, 1);
	run_case("table_no_table");
	m_start_nb(&M, NANOBPF_CMD_TABLE_SET);
	m_u8(&M, NANOBPF_ATTR_TABLE, NANOBPF_TABLE_COUNT);
	m_u16(&M, NANOBPF_ATTR_TABLE_INDEX, 0);
	m_u32(&M, NANOBPF_ATTR_TABLE_VALUE, 1);
	run_case("table_unknown");
	m_start_nb(&M, NANOBPF_CMD_TABLE_SET);
	m_u8(&M, NANOBPF_ATTR_TABLE, NANOBPF_CTRL_TABLE_PORT);
	m_u16(&M, NANOBPF_ATTR_TABLE_INDEX, 8);
	m_u32(&M, NANOBPF_ATTR_TABLE_VALUE, 1);
	run_case("table_port_index_8");
	m_start_nb(&M, NANOBPF_CMD_TABLE_SET);
	m_u8(&M, NANOBPF_ATTR_TABLE, NANOBPF_CTRL_TABLE_LPORT_CFG);
	m_u16(&M, NANOBPF_ATTR_TABLE_INDEX, 4);
	m_u32(&M, NANOBPF_ATTR_TABLE_VALUE, 1);
	run_case("table_lport_index_4");
	m_start_nb(&M, NANOBPF_CMD_TABLE_SET);
	m_u8(&M, NANOBPF_ATTR_TABLE, NANOBPF_CTRL_TABLE_PORT);
	m_u16(&M, NANOBPF_ATTR_TABLE_INDEX, 1);
	run_case("table_set_no_value");
	m_start_nb(&M, NANOBPF_CMD_TABLE_DEL);
	m_u8(&M, NANOBPF_ATTR_TABLE, NANOBPF_CTRL_TABLE_PORT);
	m_u16(&M, NANOBPF_ATTR_TABLE_INDEX, 1);
	m_u32(&M, NANOBPF_ATTR_TABLE_VALUE, 1);
	run_case("table_del_with_value");
	m_start_nb(&M, NANOBPF_CMD_TABLE_SET);
	m_u8(&M, NANOBPF_ATTR_TABLE, NANOBPF_CTRL_TABLE_PORT);
	m_u8(&M, NANOBPF_ATTR_TABLE_INDEX, 1);	/* u16 attribute of 1 byte */
	m_u32(&M, NANOBPF_ATTR_TABLE_VALUE, 1);
	run_case("table_index_short");
	m_start_nb(&M, NANOBPF_CMD_TABLE_SET);
	m_u8(&M, NANOBPF_ATTR_TABLE, NANOBPF_CTRL_TABLE_PORT);
	m_u16(&M, NANOBPF_ATTR_TABLE_INDEX, 1);
	m_u32(&M, NANOBPF_ATTR_TABLE_VALUE, 0xffffffff);	/* bits that are no field: the device refuses */
	run_case("table_device_refuses");

	/* nests where the family expects none */
	m_start_nb(&M, NANOBPF_CMD_STATS_GET);
	m_attr(&M, NANOBPF_ATTR_STATS, cid, 2);
	run_case("stats_short_nest");

	/* an unprivileged caller: changes need CAP_NET_ADMIN, reads do not */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(3);
		make_keys(keys, 4);
		m_key(&M, NANOBPF_CMD_KEY_ADD, cid, 4, keys);
		run_case("unpriv_key_add");
		m_start_nb(&M, NANOBPF_CMD_DEV_DETACH);
		run_case("unpriv_detach");
		m_start_nb(&M, NANOBPF_CMD_MAP_LOOKUP);
		m_str(&M, NANOBPF_ATTR_MAP_NAME, "quic_config");
		m_attr(&M, NANOBPF_ATTR_MAP_KEY, big, 4);
		run_case("unpriv_map_lookup");
		m_start_nb(&M, NANOBPF_CMD_DEV_GET);
		run_case("unpriv_dev_get");
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	cmd_dev();
}

/* ------------------------------------------------------------------ fuzz */

/* The attribute kinds of the family (for well-formed attributes with random contents). */
enum kind { K_U8, K_U16, K_U32, K_U64, K_STR, K_BIN, K_NEST };

static enum kind attr_kind(int type, int *max)
{
	*max = 0;
	switch (type) {
	case NANOBPF_ATTR_LINK_STATE: case NANOBPF_ATTR_KEY_PHASE: case NANOBPF_ATTR_SYNCED:
	case NANOBPF_ATTR_TABLE: case NANOBPF_ATTR_DEV_STATUS: case NANOBPF_ATTR_DIR:
		return K_U8;
	case NANOBPF_ATTR_VERSION: case NANOBPF_ATTR_TABLE_INDEX:
		return K_U16;
	case NANOBPF_ATTR_MAP_FLAGS: case NANOBPF_ATTR_STAT_VALUE:
		return K_U64;
	case NANOBPF_ATTR_IFNAME: case NANOBPF_ATTR_VDEV_NAME: *max = NANOBPF_ATTR_LEN_IFNAME; return K_STR;
	case NANOBPF_ATTR_PROG_NAME: case NANOBPF_ATTR_MAP_NAME: *max = NANOBPF_ATTR_LEN_MAP_NAME; return K_STR;
	case NANOBPF_ATTR_ERRMSG: *max = NANOBPF_ATTR_LEN_ERRMSG; return K_STR;
	case NANOBPF_ATTR_CID: *max = NANOBPF_ATTR_LEN_CID; return K_BIN;
	case NANOBPF_ATTR_ADDR_ID: *max = NANOBPF_ATTR_LEN_ADDR_ID; return K_BIN;
	case NANOBPF_ATTR_KEYS: *max = NANOBPF_ATTR_LEN_KEYS; return K_BIN;
	case NANOBPF_ATTR_IMAGE: *max = 4096; return K_BIN;
	case NANOBPF_ATTR_MAP_KEY: *max = NANOBPF_ATTR_LEN_MAP_KEY; return K_BIN;
	case NANOBPF_ATTR_MAP_VALUE: *max = NANOBPF_ATTR_LEN_MAP_VALUE; return K_BIN;
	case NANOBPF_ATTR_STATS: case NANOBPF_ATTR_DRV_STATS: case NANOBPF_ATTR_STAT:
		return K_NEST;
	default:
		return K_U32;
	}
}

static void fuzz_attr(struct msg *m, unsigned char *data, size_t cap)
{
	static const char *const words[] = { "eth0", "nbpf0", "quic_config", "quic_ports", "quic_stats",
					     NANOBPF_KEYTABLE_MAP_NAME, "xdp_quic", "" };
	int type = rnd() % (NANOBPF_ATTR_MAX + 3), max, len;
	enum kind k = attr_kind(type, &max);

	if (rnd() % 4 == 0) {		/* anything at all */
		len = rnd() % 4 ? rnd() % 24 : rnd() % cap;
		for (int j = 0; j < len; j++)
			data[j] = rnd() % 3 ? rnd() : 0;
		m_attr(m, type, data, len);
		return;
	}
	switch (k) {
	case K_U8: m_u8(m, type, rnd() % 4 ? rnd() % 4 : rnd()); break;
	case K_U16: m_u16(m, type, rnd() % 4 ? rnd() % 10 : rnd()); break;
	case K_U32: m_u32(m, type, rnd() % 4 ? rnd() % 4 : rnd()); break;
	case K_U64: m_u64(m, type, rnd() % 4 ? rnd() % 4 : rnd()); break;
	case K_STR:
		if (rnd() % 2) {
			m_str(m, type, words[rnd() % (sizeof(words) / sizeof(words[0]))]);
		} else {
			len = rnd() % (max + 4);
			for (int j = 0; j < len; j++)
				data[j] = 'a' + rnd() % 26;
			data[len] = 0;
			m_attr(m, type, data, len + 1);
		}
		break;
	case K_BIN:
		len = rnd() % 2 ? max : (int)(rnd() % (max + 3));
		for (int j = 0; j < len; j++)
			data[j] = rnd();
		if (type == NANOBPF_ATTR_KEYS && len >= 4) {	/* often a plausible entry */
			data[0] &= 1;
			data[1] &= 3;
			data[2] = rnd() % 9;
			data[3] = 0;
		}
		if (type == NANOBPF_ATTR_CID && rnd() % 2)
			len = rnd() % 9;
		m_attr(m, type, data, len);
		break;
	case K_NEST: {
		struct nlattr nest = { .nla_len = NLA_HDRLEN, .nla_type = type | (rnd() % 4 ? NLA_F_NESTED : 0) };
		size_t at = m->len;

		m_raw(m, &nest, sizeof(nest));
		for (int j = rnd() % 3; j > 0; j--)
			m_u32(m, NANOBPF_ATTR_STAT_ID, rnd() % 20);
		((struct nlattr *)(m->buf + at))->nla_len = m->len - at;
		break;
	}
	}
}

static void fuzz(uint64_t seed, int n)
{
	/* commands that would undo the test's set-up (attach, detach, reset, unload) are left out */
	static const uint8_t cmds[] = { 0, 3, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 77, 255 };
	static unsigned char data[4200];
	int counts[256] = { 0 }, ok = 0;

	rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
	for (int i = 0; i < n; i++) {
		int nattrs = rnd() % 6, err;

		m_start(&M, family_id, cmds[rnd() % sizeof(cmds)], (rnd() % 8 == 0) ? NLM_F_DUMP : 0);
		if (rnd() % 32 == 0)
			((struct genlmsghdr *)(M.buf + NLMSG_HDRLEN))->version = rnd();
		for (int a = 0; a < nattrs; a++)
			fuzz_attr(&M, data, sizeof(data) - 1);
		if (rnd() % 16 == 0)
			m_raw(&M, data, 1 + rnd() % 7);	/* trailing garbage */
		M.h.nlmsg_len = 0;
		err = m_send(&M, NULL, NULL);
		if (err == -ETIME) {
			printf("FUZZ message %d got no answer\n", i);
			exit(1);
		}
		if (err)
			counts[-err & 0xff]++;
		else
			ok++;
	}
	printf("FUZZ sent=%d ok=%d", n, ok);
	for (int e = 0; e < 256; e++)
		if (counts[e])
			printf(" %s=%d", errname(-e), counts[e]);
	printf("\n");
}

/* ------------------------------------------------------------------ bulk key operations */

#define BULK_MAX 4096

struct conn {
	int dir;
	unsigned char cid[NANOBPF_CTRL_MAX_CID];	/* the CID zero-padded, or the address id (cid_len 0) */
	int cid_len;
	unsigned char keys[NANOBPF_CTRL_KEYS_SIZE];
	int live;
};

static void m_conn(struct msg *m, uint8_t cmd, const struct conn *c, const unsigned char *keys)
{
	m_key_dir(m, cmd, c->dir, c->cid, c->cid_len, c->cid_len ? NULL : c->cid, NANOBPF_CTRL_MAX_CID, keys);
}

static struct conn conns[BULK_MAX];

static void bulk(uint64_t seed, int n, int cid0)
{
	int nconn = 0, ok = 0, fail = 0, live = 0;
	char h1[2 * NANOBPF_CTRL_MAX_CID + 1], h2[2 * NANOBPF_CTRL_KEYS_SIZE + 1];

	memset(conns, 0, sizeof(conns));

	rng_state = seed * 0x9e3779b97f4a7c15ull + 7;
	for (int i = 0; i < n; i++) {
		int r = rnd() % 10, idx = -1, err;
		struct conn *c;
		const char *op;

		if (live > 0 && r >= 5) {	/* update (20%) or delete (30%) a live connection */
			int k = rnd() % live;

			for (idx = 0; idx < nconn; idx++)
				if (conns[idx].live && k-- == 0)
					break;
		}
		if (idx < 0) {			/* add a new connection */
			if (nconn == BULK_MAX)
				break;
			c = &conns[nconn++];
			c->dir = rnd() % 2;
			c->cid_len = rnd() % 8 == 0 ? 0 : 1 + rnd() % NANOBPF_CTRL_MAX_CID;	/* 0: by address */
			if (c->cid_len && c->cid_len < 4)
				c->cid_len = 4;
			for (int j = 0; j < (c->cid_len ? c->cid_len : NANOBPF_CTRL_MAX_CID); j++)
				c->cid[j] = rnd();
			c->cid[0] = cid0;	/* distinct per test run */
			c->cid[1] = (nconn >> 8) & 0xff;
			c->cid[2] = nconn & 0xff;
			make_keys(c->keys, c->cid_len);
			if (c->dir == NANOBPF_QUIC_DIR_SEAL)
				c->keys[1] &= NANOBPF_QUIC_KEY_NEXT;
			m_conn(&M, NANOBPF_CMD_KEY_ADD, c, c->keys);
			op = "add";
		} else if (r < 7) {
			unsigned char nk[NANOBPF_CTRL_KEYS_SIZE];

			c = &conns[idx];
			make_keys(nk, c->cid_len);
			m_conn(&M, NANOBPF_CMD_KEY_UPDATE, c, nk);
			M.h.nlmsg_len = 0;
			err = m_send(&M, NULL, NULL);
			if (!err)
				memcpy(c->keys, nk, sizeof(nk));
			op = "update";
			goto done;
		} else {
			c = &conns[idx];
			m_conn(&M, NANOBPF_CMD_KEY_DEL, c, NULL);
			op = "del";
		}
		M.h.nlmsg_len = 0;
		err = m_send(&M, NULL, NULL);
		if (!err) {
			if (op[0] == 'a') {
				c->live = 1;
				live++;
			} else {
				c->live = 0;
				live--;
			}
		}
done:
		if (err) {
			hex(h1, c->cid, NANOBPF_CTRL_MAX_CID);
			printf("FAIL %s %d %d %s %d %s \"%s\"\n", op, c->dir, c->cid_len, h1, err, errname(err), last_msg);
			fail++;
		} else {
			ok++;
		}
	}
	for (int i = 0; i < nconn; i++) {
		if (!conns[i].live)
			continue;
		hex(h1, conns[i].cid, NANOBPF_CTRL_MAX_CID);
		hex(h2, conns[i].keys, NANOBPF_CTRL_KEYS_SIZE);
		printf("EXPECT %d %d %s %s\n", conns[i].dir, conns[i].cid_len, h1, h2);
	}
	printf("BULK ops=%d ok=%d fail=%d live=%d\n", ok + fail, ok, fail, live);
}

/* ------------------------------------------------------------------ listings */

static void key_cb(const struct nlmsghdr *h, void *arg)
{
	const struct nlattr *tb[NANOBPF_ATTR_MAX + 1];
	unsigned char id[NANOBPF_CTRL_MAX_CID] = { 0 };
	char hx[2 * NANOBPF_CTRL_MAX_CID + 1];
	int n;

	(void)arg;
	parse_attrs(h, tb, NANOBPF_ATTR_MAX);
	if (!tb[NANOBPF_ATTR_CID] || alen(tb[NANOBPF_ATTR_CID]) > NANOBPF_CTRL_MAX_CID || !tb[NANOBPF_ATTR_DIR])
		return;
	n = alen(tb[NANOBPF_ATTR_CID]);
	if (n)
		memcpy(id, adata(tb[NANOBPF_ATTR_CID]), n);
	else if (tb[NANOBPF_ATTR_ADDR_ID] && alen(tb[NANOBPF_ATTR_ADDR_ID]) == NANOBPF_CTRL_MAX_CID)
		memcpy(id, adata(tb[NANOBPF_ATTR_ADDR_ID]), NANOBPF_CTRL_MAX_CID);
	else
		return;
	hex(hx, id, NANOBPF_CTRL_MAX_CID);
	printf("KEY %u %d %s %u %u %u\n", a_u8(tb[NANOBPF_ATTR_DIR]), n, hx,
	       tb[NANOBPF_ATTR_KEY_PHASE] ? a_u8(tb[NANOBPF_ATTR_KEY_PHASE]) : 9,
	       tb[NANOBPF_ATTR_SLOT] ? a_u32(tb[NANOBPF_ATTR_SLOT]) : 0,
	       tb[NANOBPF_ATTR_SYNCED] ? a_u8(tb[NANOBPF_ATTR_SYNCED]) : 9);
}

static void stat_nest(const struct nlattr *nest, const char *tag)
{
	size_t off = NLA_HDRLEN;

	while (off + NLA_HDRLEN <= nest->nla_len) {
		const struct nlattr *st = (const struct nlattr *)((const char *)nest + off);
		size_t o2 = NLA_HDRLEN;
		uint32_t id = 0;
		uint64_t v = 0;

		if (st->nla_len < NLA_HDRLEN)
			break;
		while (o2 + NLA_HDRLEN <= st->nla_len) {
			const struct nlattr *a = (const struct nlattr *)((const char *)st + o2);

			if (a->nla_len < NLA_HDRLEN)
				break;
			if (a->nla_type == NANOBPF_ATTR_STAT_ID)
				id = a_u32(a);
			else if (a->nla_type == NANOBPF_ATTR_STAT_VALUE)
				v = a_u64(a);
			o2 += NLA_ALIGN(a->nla_len);
		}
		printf("%s %u %llu\n", tag, id, (unsigned long long)v);
		off += NLA_ALIGN(st->nla_len);
	}
}

static void stats_cb(const struct nlmsghdr *h, void *arg)
{
	const struct nlattr *tb[NANOBPF_ATTR_MAX + 1];

	(void)arg;
	parse_attrs(h, tb, NANOBPF_ATTR_MAX);
	if (tb[NANOBPF_ATTR_STATS])
		stat_nest(tb[NANOBPF_ATTR_STATS], "DEVSTAT");
	if (tb[NANOBPF_ATTR_DRV_STATS])
		stat_nest(tb[NANOBPF_ATTR_DRV_STATS], "DRVSTAT");
}

/* ------------------------------------------------------------------ UDP with marks */

static int unhex(unsigned char *out, size_t max, const char *h)
{
	size_t n = strlen(h) / 2;

	if (n > max || strlen(h) % 2)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (sscanf(h + 2 * i, "%2hhx", &out[i]) != 1)
			return -1;
	return n;
}

static int udpsend(const char *ip, int port, unsigned int mark, const char *hexdata, int sport)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(sport) };
	unsigned char data[2048];
	int fd = socket(AF_INET, SOCK_DGRAM, 0), n = unhex(data, sizeof(data), hexdata);

	if (fd < 0 || n < 0 || inet_pton(AF_INET, ip, &to.sin_addr) != 1)
		return 1;
	if (mark && setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark))) {
		perror("SO_MARK");
		return 1;
	}
	if (sport && bind(fd, (struct sockaddr *)&me, sizeof(me))) {
		perror("bind");
		return 1;
	}
	if (sendto(fd, data, n, 0, (struct sockaddr *)&to, sizeof(to)) < 0) {
		perror("sendto");
		return 1;
	}
	printf("SENT mark=0x%08x len=%d\n", mark, n);
	return 0;
}

static int udprecv(int port, int timeout_ms)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(port) };
	char data[2048], hx[4097], cbuf[256];
	struct iovec iov = { data, sizeof(data) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct pollfd p;
	unsigned int mark = 0;
	int fd = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
	ssize_t n;

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVMARK, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&me, sizeof(me))) {
		perror("udprecv socket");
		return 1;
	}
	printf("LISTEN %d\n", port);
	fflush(stdout);
	p.fd = fd;
	p.events = POLLIN;
	if (poll(&p, 1, timeout_ms) <= 0) {
		printf("RECV none\n");
		return 0;
	}
	n = recvmsg(fd, &mh, 0);
	if (n < 0)
		return 1;
	hex(hx, (unsigned char *)data, n);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_MARK)
			memcpy(&mark, CMSG_DATA(c), sizeof(mark));
	printf("RECV mark=0x%08x hex=%s\n", mark, hx);
	return 0;
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
	fprintf(stderr, "usage: nbtest malformed IFNAME | fuzz SEED N | bulk SEED N [CID0] | keys | dev | stats\n"
			"       nbtest udpsend IP PORT MARK HEX [SPORT] | udprecv PORT TIMEOUT_MS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "udpsend") && (argc == 6 || argc == 7))
		return udpsend(argv[2], atoi(argv[3]), strtoul(argv[4], NULL, 0), argv[5], argc == 7 ? atoi(argv[6]) : 0);
	if (!strcmp(argv[1], "udprecv") && argc == 4)
		return udprecv(atoi(argv[2]), atoi(argv[3]));

	nl_open();
	if (!strcmp(argv[1], "malformed") && argc == 3) {
		malformed(argv[2]);
	} else if (!strcmp(argv[1], "fuzz") && argc == 4) {
		fuzz(strtoull(argv[2], NULL, 0), atoi(argv[3]));
	} else if (!strcmp(argv[1], "bulk") && (argc == 4 || argc == 5)) {
		bulk(strtoull(argv[2], NULL, 0), atoi(argv[3]), argc == 5 ? atoi(argv[4]) : 0xb0);
	} else if (!strcmp(argv[1], "keys") && argc == 2) {
		m_start(&M, family_id, NANOBPF_CMD_KEY_GET, NLM_F_DUMP);
		M.h.nlmsg_len = 0;
		err = m_send(&M, key_cb, NULL);
		printf("KEYS done %d\n", err);
		return err ? 1 : 0;
	} else if (!strcmp(argv[1], "dev") && argc == 2) {
		return cmd_dev() ? 1 : 0;
	} else if (!strcmp(argv[1], "stats") && argc == 2) {
		m_start_nb(&M, NANOBPF_CMD_STATS_GET);
		M.h.nlmsg_len = 0;
		err = m_send(&M, stats_cb, NULL);
		if (err)
			printf("STATS error %d %s \"%s\"\n", err, errname(err), last_msg);
		return err ? 1 : 0;
	} else {
		usage();
	}
	return 0;
}
