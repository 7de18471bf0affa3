/* Must be accepted (privileged Linux): the context pointer returned as the action (none of the five:
 * the runtime aborts the packet). */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    long r;
    asm volatile("%0 = %1" : "=r"(r) : "r"(ctx));
    return r;
}
char _license[] SEC("license") = "GPL";
