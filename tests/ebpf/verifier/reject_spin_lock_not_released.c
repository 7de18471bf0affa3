/* Must be rejected: a path leaves the program holding the bpf_spin_lock. */
#include "spin_lock_map.h"
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
