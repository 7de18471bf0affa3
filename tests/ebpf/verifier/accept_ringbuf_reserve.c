/* Must be accepted: a ring buffer record reserved, checked for NULL, filled and submitted on one path,
 * discarded on the other. */
#include "nanobpf_xdp.h"
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u64 *ev = bpf_ringbuf_reserve(&rb, 16, 0);
    if (!ev) return XDP_PASS;
    ev[0] = ctx->ingress_ifindex;
    ev[1] = ctx->rx_queue_index;
    if (ev[0] & 1) {
        bpf_ringbuf_discard(ev, 0);
        return XDP_DROP;
    }
    bpf_ringbuf_submit(ev, 0);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
