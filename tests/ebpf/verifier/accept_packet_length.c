/* Must be accepted: the frame length as data_end - data, as ordinary XDP programs compute it. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    long len = end - data;
    bpf_printk("frame of %ld bytes", len);
    return len > 1514 ? XDP_DROP : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
