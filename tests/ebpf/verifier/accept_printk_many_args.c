/* Must be accepted: bpf_printk with more than three values, which libbpf turns into bpf_trace_vprintk
 * (the values in a stack array). */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 len = ctx->data_end - ctx->data;
    bpf_printk("if %u queue %u len %u half %u", ctx->ingress_ifindex, ctx->rx_queue_index, len, len / 2);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
