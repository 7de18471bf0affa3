/* libnanobpf: the handle, the generic-netlink transport (requests, replies, extended ACKs) and the
 * error text. The commands are in nanobpf_cmds.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <linux/netlink.h>
#include <netlink/errno.h>
#include <netlink/genl/ctrl.h>
#include <netlink/socket.h>

#include "nanobpf_int.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

int (*nanobpf__test_transport)(struct nl_sock *sk, struct nl_cb *cb);

static const char *const status_names[NANOBPF_STATUS_COUNT] = NANOBPF_STATUS_NAMES;
static const int status_errnos[NANOBPF_STATUS_COUNT] = NANOBPF_STATUS_ERRNOS;
static const char *const stat_names[NANOBPF_STAT_COUNT] = NANOBPF_STAT_NAMES;
static const char *const drv_stat_names[NANOBPF_DRV_STAT_COUNT] = NANOBPF_DRV_STAT_NAMES;
static const char *const table_names[NANOBPF_TABLE_COUNT] = NANOBPF_TABLE_NAMES;
static const char *const link_names[] = {
	[NANOBPF_LINK_DETACHED] = "detached",
	[NANOBPF_LINK_NO_SESSION] = "no_session",
	[NANOBPF_LINK_IN_SYNC] = "in_sync",
	[NANOBPF_LINK_RESYNC] = "resync_pending",
};

/* for messages about a refused or missing attribute (an attribute without a name here is shown by number) */
#define ATTR_NAME(a) [NANOBPF_ATTR_##a] = #a
static const char *const attr_names[NANOBPF_ATTR_MAX + 1] = {
	ATTR_NAME(IFNAME), ATTR_NAME(VDEV_NAME), ATTR_NAME(LINK_STATE), ATTR_NAME(EPOCH), ATTR_NAME(VERSION),
	ATTR_NAME(CID), ATTR_NAME(KEYS), ATTR_NAME(KEY_PHASE), ATTR_NAME(SLOT), ATTR_NAME(SYNCED), ATTR_NAME(IMAGE),
	ATTR_NAME(PROG_NAME), ATTR_NAME(IMAGE_LEN), ATTR_NAME(PROG_CRC), ATTR_NAME(PROG_INSNS), ATTR_NAME(MAP_NAME),
	ATTR_NAME(MAP_KEY), ATTR_NAME(MAP_VALUE), ATTR_NAME(MAP_FLAGS), ATTR_NAME(TABLE), ATTR_NAME(TABLE_INDEX),
	ATTR_NAME(TABLE_VALUE), ATTR_NAME(STATS), ATTR_NAME(DRV_STATS), ATTR_NAME(STAT), ATTR_NAME(STAT_ID),
	ATTR_NAME(STAT_VALUE), ATTR_NAME(DEV_STATUS), ATTR_NAME(ERRMSG), ATTR_NAME(KEY_COUNT), ATTR_NAME(DIR),
	ATTR_NAME(ADDR_ID),
};

const char *nanobpf_link_state_name(unsigned state)
{
	return state < sizeof(link_names) / sizeof(link_names[0]) ? link_names[state] : "unknown";
}

const char *nanobpf_status_name(unsigned status)
{
	return status < NANOBPF_STATUS_COUNT ? status_names[status] : NULL;
}

const char *nanobpf_stat_name(unsigned id)
{
	return id < NANOBPF_STAT_COUNT ? stat_names[id] : NULL;
}

const char *nanobpf_drv_stat_name(unsigned id)
{
	return id < NANOBPF_DRV_STAT_COUNT ? drv_stat_names[id] : NULL;
}

const char *nanobpf_table_name(unsigned table)
{
	return table < NANOBPF_TABLE_COUNT ? table_names[table] : NULL;
}

/* ------------------------------------------------------------------ errors */

void nb_clear(struct nanobpf *h)
{
	h->err[0] = '\0';
	h->dev_status = -1;
}

int nb_fail(struct nanobpf *h, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h->err, sizeof(h->err), fmt, ap);
	va_end(ap);
	return -err;
}

static void nb_append(struct nanobpf *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void nb_append(struct nanobpf *h, const char *fmt, ...)
{
	size_t n = strlen(h->err);
	va_list ap;

	if (n + 1 >= sizeof(h->err))
		return;
	va_start(ap, fmt);
	vsnprintf(h->err + n, sizeof(h->err) - n, fmt, ap);
	va_end(ap);
}

static void append_attr(struct nanobpf *h, const char *what, int type)
{
	if (type > 0 && type <= NANOBPF_ATTR_MAX && attr_names[type])
		nb_append(h, " (%s attribute %s)", what, attr_names[type]);
	else
		nb_append(h, " (%s attribute %d)", what, type);
}

int nb_nle_errno(int nle)
{
	switch (nle < 0 ? -nle : nle) {
	case NLE_SUCCESS: return 0;
	case NLE_INTR: return EINTR;
	case NLE_BAD_SOCK: return EBADF;
	case NLE_AGAIN: return ETIMEDOUT;	/* our receive timeout */
	case NLE_NOMEM: return ENOMEM;
	case NLE_EXIST: return EEXIST;
	case NLE_INVAL: return EINVAL;
	case NLE_RANGE: return ERANGE;
	case NLE_MSGSIZE: return EMSGSIZE;
	case NLE_OPNOTSUPP: return EOPNOTSUPP;
	case NLE_AF_NOSUPPORT: return EAFNOSUPPORT;
	case NLE_OBJ_NOTFOUND: return ENOENT;
	case NLE_NOATTR: return ENOENT;
	case NLE_PERM: return EPERM;
	case NLE_NOACCESS: return EACCES;
	case NLE_BUSY: return EBUSY;
	case NLE_PROTO_MISMATCH: return EPROTONOSUPPORT;
	case NLE_MSG_TRUNC: return EMSGSIZE;
	case NLE_NODEV: return ENODEV;
	case NLE_SEQ_MISMATCH: return EPROTO;
	case NLE_MSG_OVERFLOW: return ENOBUFS;
	case NLE_MSG_TOOSHORT: return EPROTO;
	case NLE_DUMP_INTR: return EINTR;
	default: return EIO;
	}
}

const char *nanobpf_errmsg(const struct nanobpf *h)
{
	return h ? h->err : "no handle";
}

int nanobpf_dev_status(const struct nanobpf *h)
{
	return h ? h->dev_status : -1;
}

/* ------------------------------------------------------------------ attribute readers */

int nb_get_u8(const struct nlattr *a, uint8_t *out)
{
	if (!a || nla_len(a) != 1)
		return 0;
	*out = nla_get_u8((struct nlattr *)a);
	return 1;
}

int nb_get_u16(const struct nlattr *a, uint16_t *out)
{
	if (!a || nla_len(a) != 2)
		return 0;
	*out = nla_get_u16((struct nlattr *)a);
	return 1;
}

int nb_get_u32(const struct nlattr *a, uint32_t *out)
{
	if (!a || nla_len(a) != 4)
		return 0;
	*out = nla_get_u32((struct nlattr *)a);
	return 1;
}

int nb_get_u64(const struct nlattr *a, uint64_t *out)
{
	if (!a || nla_len(a) != 8)
		return 0;
	memcpy(out, nla_data(a), 8);
	return 1;
}

int nb_get_str(const struct nlattr *a, char *out, size_t outlen)
{
	size_t n;
	const char *s;

	if (!a || outlen == 0)
		return 0;
	s = nla_data(a);
	n = strnlen(s, (size_t)nla_len(a));
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, s, n);
	out[n] = '\0';
	return 1;
}

/* ------------------------------------------------------------------ handle */

static int set_timeout(struct nanobpf *h)
{
	struct timeval tv = { .tv_sec = h->timeout_ms / 1000, .tv_usec = (h->timeout_ms % 1000) * 1000 };
	int fd = nl_socket_get_fd(h->sk);

	if (fd < 0)
		return 0;
	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ? -errno : 0;
}

int nanobpf_set_timeout(struct nanobpf *h, unsigned timeout_ms)
{
	int ret;

	nb_clear(h);
	h->timeout_ms = timeout_ms;
	ret = set_timeout(h);
	if (ret < 0)
		return nb_fail(h, -ret, "setting the receive timeout: %s", strerror(-ret));
	return 0;
}

static int open_fail(struct nanobpf *h, int err, char *errbuf, size_t errlen)
{
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", h->err);
	nanobpf_close(h);
	return -err;
}

int nanobpf_open(struct nanobpf **hp, char *errbuf, size_t errlen)
{
	struct nanobpf *h;
	int one = 1, ret, fd;

	*hp = NULL;
	if (errbuf && errlen)
		errbuf[0] = '\0';
	h = calloc(1, sizeof(*h));
	if (!h) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	nb_clear(h);
	h->timeout_ms = NB_DEFAULT_TIMEOUT_MS;
	h->sk = nl_socket_alloc();
	h->cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!h->sk || !h->cb) {
		nb_fail(h, ENOMEM, "out of memory");
		return open_fail(h, ENOMEM, errbuf, errlen);
	}
	ret = genl_connect(h->sk);
	if (ret < 0) {
		int e = nb_nle_errno(ret);

		nb_fail(h, e, "cannot open a generic netlink socket: %s", nl_geterror(ret));
		return open_fail(h, e, errbuf, errlen);
	}
	/* a refused image is not echoed back; the kernel's reason comes as an extended ACK */
	fd = nl_socket_get_fd(h->sk);
	(void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	(void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	nl_socket_enable_msg_peek(h->sk);
	set_timeout(h);
	if (nanobpf__test_transport) {
		ret = nanobpf__test_transport(h->sk, h->cb);
		if (ret < 0) {
			nb_fail(h, -ret, "test transport: %s", strerror(-ret));
			return open_fail(h, -ret, errbuf, errlen);
		}
	}
	ret = genl_ctrl_resolve(h->sk, NANOBPF_GENL_NAME);
	if (ret < 0) {
		int e = nb_nle_errno(ret);

		if (ret == -NLE_OBJ_NOTFOUND)
			nb_fail(h, ENOENT, "generic netlink family '%s' not found: is nanobpf.ko loaded? "
				"(modprobe nanobpf)", NANOBPF_GENL_NAME);
		else
			nb_fail(h, e, "cannot resolve the generic netlink family '%s': %s",
				NANOBPF_GENL_NAME, nl_geterror(ret));
		return open_fail(h, ret == -NLE_OBJ_NOTFOUND ? ENOENT : e, errbuf, errlen);
	}
	h->family = ret;
	*hp = h;
	return 0;
}

void nanobpf_close(struct nanobpf *h)
{
	if (!h)
		return;
	if (h->cb)
		nl_cb_put(h->cb);
	if (h->sk)
		nl_socket_free(h->sk);
	free(h);
}

/* ------------------------------------------------------------------ requests */

struct nl_msg *nb_msg(struct nanobpf *h, int cmd, int flags, size_t payload)
{
	size_t size = NLMSG_HDRLEN + GENL_HDRLEN + payload + 256;
	struct nl_msg *msg = nlmsg_alloc_size(size);

	if (!msg) {
		nb_fail(h, ENOMEM, "out of memory");
		return NULL;
	}
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, h->family, 0, flags, (uint8_t)cmd,
			 NANOBPF_GENL_VERSION)) {
		nlmsg_free(msg);
		nb_fail(h, ENOMEM, "out of memory");
		return NULL;
	}
	return msg;
}

/* extended ACK TLVs after the nlmsgerr of hdr (NLMSG_ERROR) or the error code (NLMSG_DONE) */
static void parse_extack(struct nb_req *r, const struct nlmsghdr *hdr, size_t ack_len)
{
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t payload;

	if (!(hdr->nlmsg_flags & NLM_F_ACK_TLVS) || hdr->nlmsg_len < NLMSG_HDRLEN)
		return;
	payload = hdr->nlmsg_len - NLMSG_HDRLEN;
	ack_len = NLMSG_ALIGN(ack_len);
	if (ack_len >= payload)
		return;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)NLMSG_DATA(hdr) + ack_len),
		      (int)(payload - ack_len), NULL) < 0)
		return;
	if (tb[NLMSGERR_ATTR_MSG])
		nb_get_str(tb[NLMSGERR_ATTR_MSG], r->extack, sizeof(r->extack));
	if (tb[NLMSGERR_ATTR_OFFS] && nla_len(tb[NLMSGERR_ATTR_OFFS]) == 4)
		r->bad_offset = (int)nla_get_u32(tb[NLMSGERR_ATTR_OFFS]);
	if (tb[NLMSGERR_ATTR_MISS_TYPE] && nla_len(tb[NLMSGERR_ATTR_MISS_TYPE]) == 4)
		r->missing_attr = (int)nla_get_u32(tb[NLMSGERR_ATTR_MISS_TYPE]);
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct nb_req *r = arg;
	const struct nlmsghdr *hdr = (const struct nlmsghdr *)((const char *)e - NLMSG_HDRLEN);
	size_t ack_len = sizeof(*e);

	(void)nla;
	if (!(hdr->nlmsg_flags & NLM_F_CAPPED) && e->msg.nlmsg_len > sizeof(struct nlmsghdr))
		ack_len += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
	r->error = e->error < 0 ? e->error : -e->error;
	parse_extack(r, hdr, ack_len);
	r->done = 1;
	return NL_STOP;
}

static int on_ack(struct nl_msg *msg, void *arg)
{
	struct nb_req *r = arg;

	(void)msg;
	r->done = 1;
	return NL_STOP;
}

static int on_finish(struct nl_msg *msg, void *arg)
{
	struct nb_req *r = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);

	if (hdr->nlmsg_len >= NLMSG_HDRLEN + sizeof(int)) {
		int err;

		memcpy(&err, NLMSG_DATA(hdr), sizeof(err));
		if (err < 0) {
			r->error = err;
			parse_extack(r, hdr, sizeof(int));
		}
	}
	r->done = 1;
	return NL_STOP;
}

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct nb_req *r = arg;
	struct nlattr *tb[NANOBPF_ATTR_MAX + 1];
	int ret;

	if (r->stop)
		return NL_SKIP;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, NANOBPF_ATTR_MAX, NULL) < 0) {
		r->error = -EPROTO;
		snprintf(r->extack, sizeof(r->extack), "malformed reply from the driver");
		return NL_SKIP;
	}
	r->count++;
	if (!r->parse)
		return NL_OK;
	ret = r->parse(r, tb);
	if (ret)
		r->stop = ret;
	return NL_OK;
}

/* DEV_GET after a failure: the device's status (and text in msg) of the last request it refused,
 * when that status is the one the driver turned into err; -1 otherwise */
static int followup_dev_status(struct nanobpf *h, int err, char *msg, size_t msglen)
{
	struct nanobpf_dev_info info;
	int ret;

	h->in_followup = 1;
	ret = nanobpf_dev_get(h, &info);
	h->in_followup = 0;
	if (ret < 0 || !(info.present & NANOBPF_DEV_HAS_STATUS) || info.dev_status == NANOBPF_CTRL_ST_OK ||
	    info.dev_status >= NANOBPF_STATUS_COUNT || status_errnos[info.dev_status] != err)
		return -1;
	snprintf(msg, msglen, "%s", info.errmsg);
	return info.dev_status;
}

static int device_errno(int err)
{
	for (int i = 1; i < NANOBPF_STATUS_COUNT; i++)
		if (status_errnos[i] == err)
			return 1;
	return 0;
}

/* the attribute type at offset off of the request (extack NLMSGERR_ATTR_OFFS), or -1 */
static int attr_at(struct nl_msg *msg, int off)
{
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct nlattr *a;
	int rem;

	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(hdr), 0), genlmsg_attrlen(nlmsg_data(hdr), 0), rem) {
		if ((char *)a - (char *)hdr == off)
			return nla_type(a);
	}
	return -1;
}

int nb_transact(struct nanobpf *h, struct nl_msg *msg, struct nb_req *r, const char *what)
{
	int ret, cmd = genlmsg_hdr(nlmsg_hdr(msg))->cmd;

	r->h = h;
	r->done = 0;
	r->error = 0;
	r->stop = 0;
	r->count = 0;
	r->bad_offset = -1;
	r->missing_attr = -1;
	r->extack[0] = '\0';
	nl_cb_set(h->cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, r);
	nl_cb_set(h->cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, r);
	nl_cb_set(h->cb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, r);
	nl_cb_err(h->cb, NL_CB_CUSTOM, on_error, r);

	ret = nl_send_auto(h->sk, msg);
	if (ret < 0) {
		int e = nb_nle_errno(ret);

		nlmsg_free(msg);
		return nb_fail(h, e, "%s: sending the request: %s", what, nl_geterror(ret));
	}
	while (!r->done) {
		ret = nl_recvmsgs(h->sk, h->cb);
		if (ret < 0 && !r->done) {
			int e = nb_nle_errno(ret);

			nlmsg_free(msg);
			if (e == ETIMEDOUT)
				return nb_fail(h, e, "%s: no answer from the driver within %u ms", what, h->timeout_ms);
			return nb_fail(h, e, "%s: receiving the answer: %s", what, nl_geterror(ret));
		}
	}
	if (r->error < 0) {
		int e = -r->error, st = -1, t = r->bad_offset >= 0 ? attr_at(msg, r->bad_offset) : -1;
		char devmsg[NANOBPF_ATTR_LEN_ERRMSG] = "";

		nlmsg_free(msg);
		/* Only a refusal that can be the device's is looked up: not when the kernel named a bad or
		 * missing attribute (its own argument checks), not an errno that is an answer. */
		if (!h->in_followup && cmd != NANOBPF_CMD_DEV_GET && cmd != NANOBPF_CMD_KEY_GET && device_errno(e) &&
		    e != r->expected_errno && t < 0 && r->missing_attr < 0)
			st = followup_dev_status(h, e, devmsg, sizeof(devmsg));
		if (st >= 0) {
			nb_fail(h, e, "%s: the device refused it (%s)", what, status_names[st]);
			if (devmsg[0])
				nb_append(h, ": %s", devmsg);
			/* the driver's own text, unless it only points at DEV_GET or repeats the device's */
			if (r->extack[0] && !strstr(r->extack, "DEV_GET") &&
			    (!devmsg[0] || (!strstr(devmsg, r->extack) && !strstr(r->extack, devmsg))))
				nb_append(h, " [driver: %s]", r->extack);
		} else {
			nb_fail(h, e, "%s: %s", what, strerror(e));
			if (r->extack[0])
				nb_append(h, ": %s", r->extack);
		}
		if (t >= 0)
			append_attr(h, "refused", t);
		if (r->missing_attr >= 0)
			append_attr(h, "missing", r->missing_attr);
		if (e == EPERM)
			nb_append(h, " (needs CAP_NET_ADMIN: run as root)");
		if (!h->in_followup)
			h->dev_status = st;
		return -e;
	}
	nlmsg_free(msg);
	if (r->stop)
		return r->stop;
	return 0;
}

/* ------------------------------------------------------------------ images */

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int nanobpf_image_check(const void *buf, size_t len, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	static const uint8_t elf[4] = { 0x7f, 'E', 'L', 'F' };
	uint32_t total;
	unsigned version;

#define IMG_FAIL(code, ...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); return -(code); } while (0)
	if (len >= 4 && memcmp(p, elf, 4) == 0)
		IMG_FAIL(ENOEXEC, "this is an ELF object, not a program image: turn it into one with "
			 "nanobpf-load FILE.o -o FILE.nbpf first");
	if (len > NANOBPF_CTRL_MAX_IMAGE)
		IMG_FAIL(EFBIG, "image is %zu bytes, more than the %d bytes the device accepts", len,
			 NANOBPF_CTRL_MAX_IMAGE);
	if (len < NANOBPF_IMAGE_HEADER_SIZE)
		IMG_FAIL(ENOEXEC, "not a program image: %zu bytes, shorter than the %d-byte image header", len,
			 NANOBPF_IMAGE_HEADER_SIZE);
	if (le32(p) != NANOBPF_IMAGE_MAGIC)
		IMG_FAIL(ENOEXEC, "not a program image (no 'NBPF' magic): make one with nanobpf-load");
	version = (unsigned)p[4] | (unsigned)p[5] << 8;
	if (version != NANOBPF_IMAGE_VERSION)
		IMG_FAIL(ENOEXEC, "image layout version %u, this tool knows version %d: rebuild it with "
			 "nanobpf-load", version, NANOBPF_IMAGE_VERSION);
	total = le32(p + offsetof(struct nanobpf_image_header, total_size));
	if (total != len)
		IMG_FAIL(EINVAL, "image header says %u bytes, the image has %zu (truncated?)", total, len);
#undef IMG_FAIL
	return 0;
}

int nanobpf_image_name(const void *buf, size_t len, char *out, size_t outlen)
{
	const char *name = (const char *)buf + offsetof(struct nanobpf_image_header, prog_name);
	size_t n;

	if (len < NANOBPF_IMAGE_HEADER_SIZE || outlen == 0)
		return -EINVAL;
	n = strnlen(name, NANOBPF_PROG_NAME_LEN);
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, name, n);
	out[n] = '\0';
	return 0;
}
