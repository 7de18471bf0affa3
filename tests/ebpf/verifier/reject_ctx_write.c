/* Must be rejected: writes the read-only context. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    ctx->data = ctx->data_end;
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
