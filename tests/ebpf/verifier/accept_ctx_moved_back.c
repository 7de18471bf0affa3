/* Must be accepted (privileged Linux): the context pointer moved and moved back before it is read. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    int r;
    asm volatile("r2 = %1; r2 += 4; r2 += -4; %0 = *(u32 *)(r2 + 12)" : "=r"(r) : "r"(ctx) : "r2");
    return r == 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
