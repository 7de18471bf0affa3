/* Must be rejected: a path leaves the program holding the bpf_spin_lock. */
#include "nanobpf_xdp.h"
struct stats {
    struct bpf_spin_lock lock;
    __u32 packets;
};
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct stats);
} counters SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 key = 0;
    struct stats *s = bpf_map_lookup_elem(&counters, &key);
    if (!s) return XDP_PASS;
    bpf_spin_lock(&s->lock);
    if (ctx->ingress_ifindex == 7) return XDP_DROP;
    s->packets++;
    bpf_spin_unlock(&s->lock);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
