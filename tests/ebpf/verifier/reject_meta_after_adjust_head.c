/* Must be rejected: uses a metadata pointer checked before bpf_xdp_adjust_head moved the data (and the
 * metadata with it). */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    if (bpf_xdp_adjust_meta(ctx, -4)) return XDP_ABORTED;
    __u32 *meta = (__u32 *)(long)ctx->data_meta;
    void *data = (void *)(long)ctx->data;
    if ((void *)(meta + 1) > data) return XDP_ABORTED;
    if (bpf_xdp_adjust_head(ctx, 4)) return XDP_DROP;
    *meta = 7;
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
