/* A fake of nanobpf.ko's generic-netlink family inside the process, linked into nanobpfctl-mock for
 * tests/unit/test_nanobpfctl.py: libnanobpf's requests never reach a socket; this file answers
 * them like the driver would (the controller's family lookup too), so that the library's messages,
 * reply parsing, extended ACKs, device-status follow-up and the CLI's output are tested on a host
 * without the module. Not part of libnanobpf.
 *
 * Environment:
 *   NANOBPF_MOCK_LOG=FILE     append one JSON line per request: {"cmd": N, "flags": N, "attrs": [[TYPE, "HEX"], ...]}
 *   NANOBPF_MOCK_ABSENT=1     the family does not exist (the controller answers ENOENT)
 *   NANOBPF_MOCK_FAIL=CMD:ERRNO[:STATUS[:EXTACK]]
 *                             command CMD fails with -ERRNO (and an extended ACK text); DEV_GET
 *                             reports DEV_STATUS=STATUS with ERRMSG "mock device: <status name>"
 *   NANOBPF_MOCK_FAIL_ATTR=TYPE  that failure's extended ACK points at the request's attribute TYPE
 *   NANOBPF_MOCK_EMPTY=1      no keys, no program (PROG_GET: ENOEXEC, status NO_PROG), empty map
 * Fixed state otherwise: device on eth0/nbpf0 in sync, three keys (an open and a seal entry by CID, an
 * open entry by address: 192.0.2.1 port 4433, local port 443), program "xdp_mock", map "counters"
 * (three 4-byte keys 0..2 with 8-byte values), event map "events" (5 records of 0, 3, 6, 9 and 12
 * bytes, indexes 0 1 0 1 0, 3 lost before the first; a read gives at most 2, or EVENTS_MAX; records a
 * process has read are gone for it), every counter.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netlink/errno.h>
#include <netlink/genl/ctrl.h>
#include <netlink/socket.h>

#include "../nanobpf_int.h"

#define MOCK_FAMILY 0x1b

static unsigned char *qbuf;	/* answers waiting for the next receive */
static size_t qlen;
static int fail_cmd = -1, fail_errno, fail_status = -1;
static char fail_extack[256];
static int empty;

static void queue(struct nl_msg *m)
{
	struct nlmsghdr *h = nlmsg_hdr(m);
	size_t n = NLMSG_ALIGN(h->nlmsg_len);
	unsigned char *b = realloc(qbuf, qlen + n);

	if (!b)
		abort();
	memset(b + qlen, 0, n);
	memcpy(b + qlen, h, h->nlmsg_len);
	qbuf = b;
	qlen += n;
	nlmsg_free(m);
}

/* offset of the request's first attribute of this type from its netlink header, or -1 */
static int attr_offset(const struct nlmsghdr *req, int type)
{
	struct genlmsghdr *g = nlmsg_data(req);
	struct nlattr *a;
	int rem;

	nla_for_each_attr(a, genlmsg_attrdata(g, 0), genlmsg_attrlen(g, 0), rem)
		if (nla_type(a) == type)
			return (int)((char *)a - (char *)req);
	return -1;
}

static void ack_offs(const struct nlmsghdr *req, int err, const char *extack, int offs)
{
	int tlvs = extack || offs >= 0;
	struct nl_msg *m = nlmsg_alloc_simple(NLMSG_ERROR, NLM_F_CAPPED | (tlvs ? NLM_F_ACK_TLVS : 0));
	struct nlmsgerr e = { .error = err, .msg = *req };

	nlmsg_hdr(m)->nlmsg_seq = req->nlmsg_seq;
	nlmsg_hdr(m)->nlmsg_pid = req->nlmsg_pid;
	if (nlmsg_append(m, &e, sizeof(e), NLMSG_ALIGNTO) < 0 ||
	    (extack && nla_put_string(m, NLMSGERR_ATTR_MSG, extack) < 0) ||
	    (offs >= 0 && nla_put_u32(m, NLMSGERR_ATTR_OFFS, (uint32_t)offs) < 0))
		abort();
	queue(m);
}

static void ack(const struct nlmsghdr *req, int err, const char *extack)
{
	ack_offs(req, err, extack, -1);
}

static struct nl_msg *reply(const struct nlmsghdr *req, int family, int cmd, int flags)
{
	struct nl_msg *m = nlmsg_alloc();

	if (!m || !genlmsg_put(m, req->nlmsg_pid, req->nlmsg_seq, family, 0, flags, (uint8_t)cmd, 1))
		abort();
	return m;
}

static void done(const struct nlmsghdr *req)
{
	struct nl_msg *m = nlmsg_alloc_simple(NLMSG_DONE, NLM_F_MULTI);
	int zero = 0;

	nlmsg_hdr(m)->nlmsg_seq = req->nlmsg_seq;
	nlmsg_hdr(m)->nlmsg_pid = req->nlmsg_pid;
	if (nlmsg_append(m, &zero, sizeof(zero), NLMSG_ALIGNTO) < 0)
		abort();
	queue(m);
}

static void log_request(const struct nlmsghdr *nlh)
{
	const char *path = getenv("NANOBPF_MOCK_LOG");
	struct genlmsghdr *g = nlmsg_data(nlh);
	struct nlattr *a;
	FILE *f;
	int rem, first = 1;

	if (!path || nlh->nlmsg_type != MOCK_FAMILY)
		return;
	f = fopen(path, "a");
	if (!f)
		return;
	fprintf(f, "{\"cmd\": %u, \"flags\": %u, \"attrs\": [", g->cmd, nlh->nlmsg_flags);
	nla_for_each_attr(a, genlmsg_attrdata(g, 0), genlmsg_attrlen(g, 0), rem) {
		const unsigned char *d = nla_data(a);

		fprintf(f, "%s[%d, \"", first ? "" : ", ", nla_type(a));
		for (int i = 0; i < nla_len(a); i++)
			fprintf(f, "%02x", d[i]);
		fputs("\"]", f);
		first = 0;
	}
	fputs("]}\n", f);
	fclose(f);
}

static void put_stat(struct nl_msg *m, uint32_t id, uint64_t v)
{
	struct nlattr *s = nla_nest_start(m, NANOBPF_ATTR_STAT);

	nla_put_u32(m, NANOBPF_ATTR_STAT_ID, id);
	nla_put_u64(m, NANOBPF_ATTR_STAT_VALUE, v);
	nla_nest_end(m, s);
}

static const uint8_t map_vals[3][8] = { { 1 }, { 2, 1 }, { 3, 0, 0, 0, 0, 0, 0, 0x80 } };

/* index of the mock map's 4-byte little-endian key, or -1 */
static int map_index(struct nlattr **tb)
{
	const uint8_t *k;

	if (!tb[NANOBPF_ATTR_MAP_KEY] || nla_len(tb[NANOBPF_ATTR_MAP_KEY]) != 4)
		return -1;
	k = nla_data(tb[NANOBPF_ATTR_MAP_KEY]);
	if (k[1] || k[2] || k[3] || k[0] > 2 || empty)
		return -1;
	return k[0];
}

#define MOCK_EVENTS 5
static int events_read;	/* records of "events" this process has taken */

static void put_events(struct nl_msg *m, struct nlattr **tb)
{
	unsigned max = tb[NANOBPF_ATTR_EVENTS_MAX] ? nla_get_u16(tb[NANOBPF_ATTR_EVENTS_MAX]) : 0, n = 0;
	struct nlattr *list, *ev;

	nla_put_u32(m, NANOBPF_ATTR_EVENTS_LOST, events_read ? 0 : 3);
	list = nla_nest_start(m, NANOBPF_ATTR_EVENT_LIST);
	for (; events_read < MOCK_EVENTS && n < (max && max < 2 ? max : 2); events_read++, n++) {
		uint8_t d[12];

		for (int i = 0; i < 3 * events_read; i++)
			d[i] = (uint8_t)(0x10 * events_read + i);
		ev = nla_nest_start(m, NANOBPF_ATTR_EVENT);
		nla_put_u32(m, NANOBPF_ATTR_EVENT_INDEX, (uint32_t)(events_read & 1));
		nla_put(m, NANOBPF_ATTR_EVENT_DATA, 3 * events_read, d);
		nla_nest_end(m, ev);
	}
	nla_nest_end(m, list);
	nla_put_u32(m, NANOBPF_ATTR_EVENTS_PENDING, (uint32_t)(MOCK_EVENTS - events_read));
}

static void family_request(const struct nlmsghdr *nlh)
{
	struct genlmsghdr *g = nlmsg_data(nlh);
	struct nlattr *tb[NANOBPF_ATTR_MAX + 1];
	struct nl_msg *m = NULL;
	int ack_needed = nlh->nlmsg_flags & NLM_F_ACK;
	int idx;

	log_request(nlh);
	if (genlmsg_parse((struct nlmsghdr *)nlh, 0, tb, NANOBPF_ATTR_MAX, NULL) < 0) {
		ack(nlh, -EINVAL, "mock: malformed request");
		return;
	}
	if (g->cmd == fail_cmd) {
		const char *fa = getenv("NANOBPF_MOCK_FAIL_ATTR");

		ack_offs(nlh, -fail_errno, fail_extack[0] ? fail_extack : NULL, fa ? attr_offset(nlh, atoi(fa)) : -1);
		return;
	}
	/* as the driver: DEV_ATTACH needs the device key (the policy: exactly 16 bytes) */
	if (g->cmd == NANOBPF_CMD_DEV_ATTACH && !tb[NANOBPF_ATTR_CTRL_KEY]) {
		ack(nlh, -EINVAL, "missing CTRL_KEY (the device key, 16 bytes)");
		return;
	}
	if (g->cmd == NANOBPF_CMD_DEV_ATTACH && nla_len(tb[NANOBPF_ATTR_CTRL_KEY]) != NANOBPF_CTRL_KEY_LEN) {
		ack(nlh, -ERANGE, "CTRL_KEY must be 16 bytes");
		return;
	}
	switch (g->cmd) {
	case NANOBPF_CMD_DEV_GET:
		m = reply(nlh, MOCK_FAMILY, g->cmd, 0);
		nla_put_string(m, NANOBPF_ATTR_IFNAME, "eth0");
		nla_put_string(m, NANOBPF_ATTR_VDEV_NAME, "nbpf0");
		nla_put_u8(m, NANOBPF_ATTR_LINK_STATE, NANOBPF_LINK_IN_SYNC);
		nla_put_u32(m, NANOBPF_ATTR_EPOCH, 0x1234abcd);
		nla_put_u16(m, NANOBPF_ATTR_VERSION, NANOBPF_CTRL_VERSION);
		nla_put_u32(m, NANOBPF_ATTR_KEY_COUNT, empty ? 0 : 3);
		if (fail_status >= 0) {
			char msg[64];

			snprintf(msg, sizeof(msg), "mock device: %s", nanobpf_status_name((unsigned)fail_status));
			nla_put_u8(m, NANOBPF_ATTR_DEV_STATUS, (uint8_t)fail_status);
			nla_put_string(m, NANOBPF_ATTR_ERRMSG, msg);
		}
		break;
	case NANOBPF_CMD_KEY_GET:
		if (!(nlh->nlmsg_flags & NLM_F_DUMP)) {
			ack(nlh, -EOPNOTSUPP, "mock: KEY_GET is a dump");
			return;
		}
		for (int i = 0; i < (empty ? 0 : 3); i++) {
			static const uint8_t cids[2][8] = { { 0x01, 0x02, 0x03, 0x04 }, { 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, 0x11 } };
			static const uint8_t addr[NANOBPF_CTRL_MAX_CID] = { [10] = 0xff, [11] = 0xff, [12] = 192, [13] = 0,
									    [14] = 2, [15] = 1, [16] = 0x11, [17] = 0x51,
									    [18] = 0x01, [19] = 0xbb };

			m = reply(nlh, MOCK_FAMILY, g->cmd, NLM_F_MULTI);
			if (i < 2) {
				nla_put(m, NANOBPF_ATTR_CID, i ? 8 : 4, cids[i]);
			} else {
				nla_put(m, NANOBPF_ATTR_CID, 0, NULL);
				nla_put(m, NANOBPF_ATTR_ADDR_ID, sizeof(addr), addr);
			}
			nla_put_u8(m, NANOBPF_ATTR_DIR, i == 1 ? NANOBPF_QUIC_DIR_SEAL : NANOBPF_QUIC_DIR_OPEN);
			nla_put_u8(m, NANOBPF_ATTR_KEY_PHASE, (uint8_t)(i & 1));
			nla_put_u32(m, NANOBPF_ATTR_SLOT, 7u + (unsigned)i);
			nla_put_u8(m, NANOBPF_ATTR_SYNCED, (uint8_t)!i);
			queue(m);
		}
		done(nlh);
		return;
	case NANOBPF_CMD_PROG_GET:
		if (empty) {
			fail_status = NANOBPF_CTRL_ST_NO_PROG;
			ack(nlh, -ENOEXEC, NULL);
			return;
		}
		m = reply(nlh, MOCK_FAMILY, g->cmd, 0);
		nla_put_string(m, NANOBPF_ATTR_PROG_NAME, "xdp_mock");
		nla_put_u32(m, NANOBPF_ATTR_IMAGE_LEN, 4096);
		nla_put_u32(m, NANOBPF_ATTR_PROG_CRC, 0xdeadbeef);
		nla_put_u32(m, NANOBPF_ATTR_PROG_INSNS, 500);
		break;
	case NANOBPF_CMD_MAP_GET_NEXT:
		if (!tb[NANOBPF_ATTR_MAP_NAME] || strcmp(nla_get_string(tb[NANOBPF_ATTR_MAP_NAME]), "counters")) {
			ack(nlh, -ENXIO, "mock: no such map");
			return;
		}
		idx = tb[NANOBPF_ATTR_MAP_KEY] ? map_index(tb) + 1 : 0;
		if (idx > 2 || (empty && idx == 0)) {
			ack(nlh, -ENOENT, NULL);
			return;
		}
		m = reply(nlh, MOCK_FAMILY, g->cmd, 0);
		nla_put(m, NANOBPF_ATTR_MAP_KEY, 4, (uint8_t[4]){ (uint8_t)idx, 0, 0, 0 });
		break;
	case NANOBPF_CMD_MAP_LOOKUP:
		if (!tb[NANOBPF_ATTR_MAP_NAME] || strcmp(nla_get_string(tb[NANOBPF_ATTR_MAP_NAME]), "counters")) {
			ack(nlh, -ENXIO, "mock: no such map");
			return;
		}
		idx = map_index(tb);
		if (idx < 0) {
			ack(nlh, -ENOENT, NULL);
			return;
		}
		m = reply(nlh, MOCK_FAMILY, g->cmd, 0);
		nla_put(m, NANOBPF_ATTR_MAP_VALUE, 8, map_vals[idx]);
		break;
	case NANOBPF_CMD_EVENTS_READ:
		if (!tb[NANOBPF_ATTR_MAP_NAME] || strcmp(nla_get_string(tb[NANOBPF_ATTR_MAP_NAME]), "events")) {
			fail_status = NANOBPF_CTRL_ST_NO_MAP;
			ack(nlh, -ENXIO, NULL);
			return;
		}
		m = reply(nlh, MOCK_FAMILY, g->cmd, 0);
		put_events(m, tb);
		break;
	case NANOBPF_CMD_STATS_GET: {
		struct nlattr *n;

		m = reply(nlh, MOCK_FAMILY, g->cmd, 0);
		n = nla_nest_start(m, NANOBPF_ATTR_STATS);
		for (uint32_t id = 0; id < NANOBPF_STAT_COUNT; id++)
			put_stat(m, id, 10ull * id + 1);
		put_stat(m, 200, 5);	/* a counter of a newer driver: ignored */
		nla_nest_end(m, n);
		n = nla_nest_start(m, NANOBPF_ATTR_DRV_STATS);
		for (uint32_t id = 0; id < NANOBPF_DRV_STAT_COUNT; id++)
			put_stat(m, id, 100ull * id + 1ull * (1ull << 40));
		nla_nest_end(m, n);
		break;
	}
	case NANOBPF_CMD_DEV_ATTACH: case NANOBPF_CMD_DEV_DETACH: case NANOBPF_CMD_DEV_RESET:
	case NANOBPF_CMD_KEY_ADD: case NANOBPF_CMD_KEY_UPDATE: case NANOBPF_CMD_KEY_DEL:
	case NANOBPF_CMD_PROG_LOAD: case NANOBPF_CMD_PROG_UNLOAD:
	case NANOBPF_CMD_MAP_UPDATE: case NANOBPF_CMD_MAP_DELETE:
	case NANOBPF_CMD_TABLE_SET: case NANOBPF_CMD_TABLE_DEL:
		break;	/* accepted; the log shows what was sent */
	default:
		ack(nlh, -EOPNOTSUPP, NULL);
		return;
	}
	if (m)
		queue(m);
	if (ack_needed)
		ack(nlh, 0, NULL);
}

static void ctrl_request(const struct nlmsghdr *nlh)
{
	struct nl_msg *m;

	if (getenv("NANOBPF_MOCK_ABSENT")) {
		ack(nlh, -ENOENT, NULL);
		return;
	}
	m = reply(nlh, GENL_ID_CTRL, CTRL_CMD_NEWFAMILY, 0);
	nla_put_u16(m, CTRL_ATTR_FAMILY_ID, MOCK_FAMILY);
	nla_put_string(m, CTRL_ATTR_FAMILY_NAME, NANOBPF_GENL_NAME);
	nla_put_u32(m, CTRL_ATTR_VERSION, NANOBPF_GENL_VERSION);
	nla_put_u32(m, CTRL_ATTR_HDRSIZE, 0);
	nla_put_u32(m, CTRL_ATTR_MAXATTR, NANOBPF_ATTR_MAX);
	queue(m);
	if (nlh->nlmsg_flags & NLM_F_ACK)
		ack(nlh, 0, NULL);
}

static int mock_send(struct nl_sock *sk, struct nl_msg *msg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	(void)sk;
	if (nlh->nlmsg_type == GENL_ID_CTRL)
		ctrl_request(nlh);
	else if (nlh->nlmsg_type == MOCK_FAMILY)
		family_request(nlh);
	else
		ack(nlh, -ENOENT, NULL);
	return (int)nlh->nlmsg_len;
}

/* one message per receive, like the kernel's answers to a request */
static int mock_recv(struct nl_sock *sk, struct sockaddr_nl *nla, unsigned char **buf, struct ucred **creds)
{
	size_t n;

	(void)sk;
	(void)creds;
	if (!qlen)
		return -NLE_AGAIN;	/* nothing sent that would be answered: a receive timeout */
	n = NLMSG_ALIGN(((struct nlmsghdr *)qbuf)->nlmsg_len);
	*buf = malloc(n);
	if (!*buf)
		return -NLE_NOMEM;
	memcpy(*buf, qbuf, n);
	memmove(qbuf, qbuf + n, qlen - n);
	qlen -= n;
	memset(nla, 0, sizeof(*nla));
	nla->nl_family = AF_NETLINK;
	return (int)n;
}

static int mock_install(struct nl_sock *sk, struct nl_cb *cb)
{
	struct nl_cb *scb = nl_socket_get_cb(sk);
	const char *f = getenv("NANOBPF_MOCK_FAIL");

	empty = getenv("NANOBPF_MOCK_EMPTY") != NULL;
	if (f) {
		char extack[256] = "";

		if (sscanf(f, "%d:%d:%d:%255[^\n]", &fail_cmd, &fail_errno, &fail_status, extack) < 2)
			return -EINVAL;
		snprintf(fail_extack, sizeof(fail_extack), "%s", extack);
	}
	nl_cb_overwrite_send(scb, mock_send);
	nl_cb_overwrite_recv(scb, mock_recv);
	nl_cb_put(scb);
	nl_cb_overwrite_send(cb, mock_send);
	nl_cb_overwrite_recv(cb, mock_recv);
	return 0;
}

__attribute__((constructor)) static void mock_init(void)
{
	nanobpf__test_transport = mock_install;
}
