/* Must be rejected: the loop bound comes from the packet and is never limited. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if (data + 8 > end) return XDP_DROP;
    volatile __u64 n = *(__u64 *)data;
    __u64 sum = 0;
    for (__u64 i = 0; i < n; i++) sum += i;
    return sum & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
