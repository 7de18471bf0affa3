/* libnanobpf internals shared by its source files (not installed). */
#ifndef NANOBPF_INT_H
#define NANOBPF_INT_H

#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include "nanobpf.h"

#define NB_ERR_LEN 1024
#define NB_DEFAULT_TIMEOUT_MS 30000

struct nanobpf {
	struct nl_sock *sk;
	struct nl_cb *cb;
	int family;
	unsigned timeout_ms;
	int dev_status;			/* -1: the device did not refuse the last request */
	int in_followup;		/* fetching DEV_GET after a failure */
	char err[NB_ERR_LEN];
};

/* One request: the reply messages are parsed by parse (attributes indexed by NANOBPF_ATTR_*). */
struct nb_req {
	struct nanobpf *h;
	int (*parse)(struct nb_req *r, struct nlattr **tb);
	void *arg;		/* parse's */
	int done;
	int error;		/* negative errno from the kernel (NLMSG_ERROR or NLMSG_DONE) */
	int stop;		/* parse asked to stop (its nonzero return) */
	int expected_errno;	/* an errno that is an answer, not a refusal (no DEV_GET follow-up) */
	int bad_offset;		/* extack: offset of the refused attribute in the request, or -1 */
	int missing_attr;	/* extack: a required attribute the request lacked, or -1 */
	unsigned count;		/* reply messages parsed */
	char extack[NANOBPF_ATTR_LEN_ERRMSG + 64];
};

/* Test hook: when set (by a test binary), called on open to divert the socket's traffic (libnl
 * send/receive overrides on sk's and cb's callbacks). NULL in the library itself. */
extern int (*nanobpf__test_transport)(struct nl_sock *sk, struct nl_cb *cb);

/* A message for cmd with room for payload bytes of attributes; NULL on ENOMEM (error text set). */
struct nl_msg *nb_msg(struct nanobpf *h, int cmd, int flags, size_t payload);
/* Send msg (consumed), collect the replies; returns 0 or -errno (error text set, device status
 * fetched when the device refused it). what: the operation's name for messages ("key add"). */
int nb_transact(struct nanobpf *h, struct nl_msg *msg, struct nb_req *r, const char *what);
/* Set the error text (printf-style) and return -err (err > 0) */
int nb_fail(struct nanobpf *h, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void nb_clear(struct nanobpf *h);
/* libnl error code -> errno */
int nb_nle_errno(int nle);

/* Checked attribute readers: 1 and *out set when a has exactly the type's size */
int nb_get_u8(const struct nlattr *a, uint8_t *out);
int nb_get_u16(const struct nlattr *a, uint16_t *out);
int nb_get_u32(const struct nlattr *a, uint32_t *out);
int nb_get_u64(const struct nlattr *a, uint64_t *out);
/* string attribute into out (NUL-terminated, truncated to outlen-1); 1 if present */
int nb_get_str(const struct nlattr *a, char *out, size_t outlen);

#endif
