/* Must be accepted (privileged Linux): the low half of the context pointer compared (jmp32). */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    int r = XDP_PASS;
    asm volatile("if w1 > 100 goto +1; %0 = 1" : "+r"(r));
    return r;
}
char _license[] SEC("license") = "GPL";
