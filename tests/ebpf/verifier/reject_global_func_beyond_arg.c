/* Must be rejected: a global function reads past the size of what its argument points to (the
 * caller's buffer is larger, but the function is verified for its declared type only). */
#include "nanobpf_xdp.h"
__noinline int second_word(__u32 *w) {
    if (!w)
        return 0;
    return w[1] & 1;
}
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 s[4] = {1, 2, 3, 4};
    return second_word(s) ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
