/* Must be rejected: after bpf_loop the context may hold what the callback wrote (a number) instead of
 * the packet pointer the caller put there. */
#include "nanobpf_xdp.h"
struct box {
    unsigned char *p;
};
static int clobber(__u32 i, struct box *b) {
    b->p = (unsigned char *)(long)i;
    return 1;
}
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    if (data + 1 > end) return XDP_DROP;
    struct box b = {data};
    bpf_loop(1, clobber, &b, 0);
    return *b.p ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
