/* Must be accepted (privileged Linux): the low half of a pointer (a 32-bit move) is a number. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    int r;
    asm volatile("w2 = w1; %0 = r2" : "=r"(r) :: "r2");
    return r & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
