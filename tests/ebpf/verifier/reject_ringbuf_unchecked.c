/* Must be rejected: the reserved record is written before its NULL check. */
#include "nanobpf_xdp.h"
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u64 *ev = bpf_ringbuf_reserve(&rb, 8, 0);
    *ev = 1;
    if (ev) bpf_ringbuf_submit(ev, 0);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
