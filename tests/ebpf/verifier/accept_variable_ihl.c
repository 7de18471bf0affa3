/* Must be accepted: the UDP header found through the variable IPv4 header length, then checked. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    unsigned char *ip = data + 14;
    if (ip + 20 > end) return XDP_DROP;
    unsigned ihl = (ip[0] & 0x0f) * 4;
    if (ihl < 20) return XDP_DROP;
    unsigned char *udp = ip + ihl;
    if (udp + 8 > end) return XDP_DROP;
    return udp[3] == 53 ? XDP_DROP : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
