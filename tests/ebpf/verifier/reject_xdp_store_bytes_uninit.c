/* Must be rejected: bpf_xdp_store_bytes from stack bytes nothing wrote (the helper reads them). */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u8 hdr[8];
    hdr[0] = 1;
    return bpf_xdp_store_bytes(ctx, 0, hdr, sizeof hdr) ? XDP_ABORTED : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
