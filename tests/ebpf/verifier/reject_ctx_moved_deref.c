/* Must be rejected: a context field read through a moved context pointer (Linux reads the context only
 * at offsets from its start). */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    int r;
    asm volatile("r2 = %1; r2 += 4; %0 = *(u32 *)(r2 + 8)" : "=r"(r) : "r"(ctx) : "r2");
    return r == 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
