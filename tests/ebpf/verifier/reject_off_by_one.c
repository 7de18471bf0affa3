/* Must be rejected: proves 14 bytes, reads the 15th. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if (data + 14 > end) return XDP_DROP;
    return data[14] == 0x45 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
