/* Must be accepted (privileged Linux): a map value compared with a packet pointer; nothing is learned. */
#include "nanobpf_xdp.h"
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64[4]); } m SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 k = 0;
    __u64 *v = bpf_map_lookup_elem(&m, &k);
    if (!v) return XDP_PASS;
    if ((void *)v == (void *)(long)ctx->data) return XDP_DROP;
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
