/* Must be rejected: the caller passes 8 bytes of stack to a global function that takes 16. */
#include "nanobpf_xdp.h"
struct blk {
    __u32 w[4];
};
__noinline int last_word(struct blk *b) {
    if (!b)
        return 0;
    return b->w[3] & 1;
}
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u64 v = ctx->ingress_ifindex;
    return last_word((struct blk *)&v) ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
