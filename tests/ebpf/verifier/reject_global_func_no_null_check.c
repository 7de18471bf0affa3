/* Must be rejected: a global function's pointer argument may be NULL (any caller may pass it). */
#include "nanobpf_xdp.h"
struct blk {
    __u32 w[4];
};
__noinline int first_word(struct blk *b) {
    return b->w[0] & 1;
}
SEC("xdp")
int prog(struct xdp_md *ctx) {
    struct blk s = {{ctx->ingress_ifindex, 2, 3, 4}};
    return first_word(&s) ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
