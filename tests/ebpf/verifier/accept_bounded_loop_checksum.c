/* Must be accepted: a bounded loop summing up to 64 payload bytes, each access checked. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    __u32 sum = 0;
    for (int i = 0; i < 64; i++) {
        if (data + 14 + i + 1 > end) break;
        sum += data[14 + i];
    }
    return sum & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
