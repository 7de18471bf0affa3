/* Must be accepted: bpf_xdp_load_bytes into an uninitialised stack buffer, which the program then
 * reads, and bpf_xdp_store_bytes back from it (a port rewrite without packet pointers). */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u8 hdr[8];
    if (bpf_xdp_load_bytes(ctx, 34, hdr, sizeof hdr)) return XDP_PASS;
    hdr[2] ^= 1;
    return bpf_xdp_store_bytes(ctx, 34, hdr, 4) ? XDP_ABORTED : XDP_TX;
}
char _license[] SEC("license") = "GPL";
