/* Must be rejected: metadata checked against data + 4 (Linux proves metadata bounds only against data
 * itself), so the four bytes after the metadata may be the frame. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    if (bpf_xdp_adjust_meta(ctx, -4)) return XDP_ABORTED;
    __u32 *meta = (__u32 *)(long)ctx->data_meta;
    unsigned char *data = (unsigned char *)(long)ctx->data;
    if ((void *)(meta + 2) > (void *)(data + 4)) return XDP_ABORTED;
    return meta[1] ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
