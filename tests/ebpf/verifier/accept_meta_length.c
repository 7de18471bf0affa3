/* Must be accepted: the metadata's length (data - data_meta) as a scalar, and a metadata byte written at
 * a variable offset once that pointer's own bound is proven. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    if (bpf_xdp_adjust_meta(ctx, -16)) return XDP_ABORTED;
    unsigned char *meta = (unsigned char *)(long)ctx->data_meta;
    unsigned char *data = (unsigned char *)(long)ctx->data;
    __u32 len = data - meta;
    if (meta + 16 > data) return XDP_ABORTED;
    unsigned char *p = meta + (ctx->ingress_ifindex & 15);
    if (p + 1 > data) return XDP_ABORTED;
    *p = (unsigned char)len;
    return meta[0] ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
