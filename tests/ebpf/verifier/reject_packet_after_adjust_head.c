/* Must be rejected: uses a packet pointer checked before bpf_xdp_adjust_head moved the data. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if (data + 14 > end) return XDP_DROP;
    if (bpf_xdp_adjust_head(ctx, 4)) return XDP_DROP;
    return data[12] == 0x08 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
