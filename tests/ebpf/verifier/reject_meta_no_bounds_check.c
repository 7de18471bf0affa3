/* Must be rejected: writes metadata without proving it lies before data. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    if (bpf_xdp_adjust_meta(ctx, -4)) return XDP_ABORTED;
    __u32 *meta = (__u32 *)(long)ctx->data_meta;
    *meta = 1;
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
