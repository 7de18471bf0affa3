/* Must be accepted (privileged Linux): a packet pointer compared with a number. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data;
    if ((long)data > 0x1000 + ctx->ingress_ifindex) return XDP_DROP;
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
