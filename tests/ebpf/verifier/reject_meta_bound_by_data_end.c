/* Must be rejected: metadata checked against data_end, which says nothing about where data starts. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    if (bpf_xdp_adjust_meta(ctx, -4)) return XDP_ABORTED;
    __u32 *meta = (__u32 *)(long)ctx->data_meta;
    void *end = (void *)(long)ctx->data_end;
    if ((void *)(meta + 1) > end) return XDP_ABORTED;
    *meta = 1;
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
