/* Must be rejected: reads the EtherType with no check against data_end. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    return data[12] == 0x08 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
