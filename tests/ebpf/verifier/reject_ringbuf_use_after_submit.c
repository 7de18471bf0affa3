/* Must be rejected: the record is written after it was submitted (the host may be reading it). */
#include "nanobpf_xdp.h"
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u64 *ev = bpf_ringbuf_reserve(&rb, 8, 0);
    if (!ev) return XDP_PASS;
    bpf_ringbuf_submit(ev, 0);
    *(volatile __u64 *)ev = 1;
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
