/* Must be accepted (privileged Linux): a pointer written into the packet. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    if (data + 8 > end) return XDP_DROP;
    *(__u64 *)data = (__u64)end;
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
