/* clang: -mcpu=v3 */
/* Must be accepted: the frame length as a __u32, data_end - data, which clang computes with a 32-bit
 * subtraction of the two pointers' low halves for -mcpu=v3 (`w3 -= w2`), as Linux allows it. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    __u32 len = end - data;
    bpf_printk("frame of %u bytes", len);
    return len > 1514 ? XDP_DROP : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
