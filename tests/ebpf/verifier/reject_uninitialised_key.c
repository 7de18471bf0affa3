/* Must be rejected: the lookup key on the stack is only written on one path. */
#include "nanobpf_xdp.h"
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 8);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 key;
    if (ctx->ingress_ifindex == 3) key = 1;
    asm volatile("" : : "r"(&key) : "memory");
    return bpf_map_lookup_elem(&counters, &key) ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
