/* Must be rejected: bitwise and on a pointer (Linux allows only adding and subtracting). */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    long r;
    asm volatile("r2 = r1; r2 &= 7; %0 = r2" : "=r"(r) :: "r2");
    return r & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
