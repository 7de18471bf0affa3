/* clang: -mcpu=v3 */
/* Must be accepted: a __u32 counter and a __u32 length compared with 32-bit jumps (what clang emits for
 * -mcpu=v3), the length capped at 1,522 and each byte checked against data_end. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if (data + 4 > end) return XDP_DROP;
    __u32 len = data[2] << 8 | data[3];
    if (len > 1522) len = 1522;
    __u32 x = 0;
    for (__u32 i = 4; i < len; i++) {
        if (data + i + 1 > end) break;
        x ^= data[i];
    }
    return x == 0x5a ? XDP_DROP : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
