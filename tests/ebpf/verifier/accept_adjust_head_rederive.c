/* Must be accepted: strips a VLAN tag with bpf_xdp_adjust_head, then re-derives and re-checks. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if (data + 18 > end) return XDP_DROP;
    if (data[12] != 0x81 || data[13] != 0x00) return XDP_PASS;
    unsigned char mac[12];
    __builtin_memcpy(mac, data, 12);
    if (bpf_xdp_adjust_head(ctx, 4)) return XDP_ABORTED;
    data = (unsigned char *)(long)ctx->data;
    end = (unsigned char *)(long)ctx->data_end;
    if (data + 12 > end) return XDP_DROP;
    __builtin_memcpy(data, mac, 12);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
