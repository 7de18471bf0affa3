/* Must be accepted: metadata added with bpf_xdp_adjust_meta and written once its bound is proven
 * against data (data_meta + 8 <= data); data itself is checked against data_end as usual. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    if (bpf_xdp_adjust_meta(ctx, -8)) return XDP_ABORTED;
    __u32 *meta = (__u32 *)(long)ctx->data_meta;
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if ((void *)(meta + 2) > (void *)data) return XDP_ABORTED;
    if (data + 14 > end) return XDP_DROP;
    meta[0] = data[12] << 8 | data[13];
    meta[1] = ctx->ingress_ifindex;
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
