/* Must be rejected: a bpf_loop callback returns 0 (go on) or 1 (stop), nothing else. */
#include "nanobpf_xdp.h"
static int cb(__u32 i, void *ctx) {
    return 2;
}
SEC("xdp")
int prog(struct xdp_md *ctx) {
    return bpf_loop(8, cb, 0, 0) == 8 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
