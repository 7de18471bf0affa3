/* Must be rejected: dereferences a map lookup result without checking it for NULL. */
#include "nanobpf_xdp.h"
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 8);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 key = ctx->ingress_ifindex;
    __u64 *v = bpf_map_lookup_elem(&counters, &key);
    *v += 1;
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
