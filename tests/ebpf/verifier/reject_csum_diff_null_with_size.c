/* Must be rejected: a NULL pointer to bpf_csum_diff with a size other than 0 (Linux allows a NULL
 * memory argument only for zero bytes). */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 w[2] = {ctx->ingress_ifindex, 7};
    return bpf_csum_diff(0, 4, w, sizeof w, 0) & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
