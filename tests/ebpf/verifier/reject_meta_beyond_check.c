/* Must be rejected: proves four bytes of metadata and reads eight. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    if (bpf_xdp_adjust_meta(ctx, -4)) return XDP_ABORTED;
    __u32 *meta = (__u32 *)(long)ctx->data_meta;
    void *data = (void *)(long)ctx->data;
    if ((void *)(meta + 1) > data) return XDP_ABORTED;
    return meta[1] ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
