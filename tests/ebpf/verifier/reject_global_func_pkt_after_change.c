/* Must be rejected: a global function that moves the packet end (bpf_xdp_adjust_tail) invalidates
 * the caller's packet pointers. */
#include "nanobpf_xdp.h"
__noinline int shrink(struct xdp_md *ctx) {
    return bpf_xdp_adjust_tail(ctx, -4);
}
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    if (data + 64 > end)
        return XDP_DROP;
    shrink(ctx);
    return data[60] & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
