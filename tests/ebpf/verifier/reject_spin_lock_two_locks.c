/* Must be rejected: a second bpf_spin_lock taken while one is held (one at a time, as Linux). */
#include "spin_lock_map.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 k0 = 0, k1 = 1;
    struct stats *a = bpf_map_lookup_elem(&counters, &k0), *b = bpf_map_lookup_elem(&counters, &k1);
    if (!a || !b) return XDP_PASS;
    bpf_spin_lock(&a->lock);
    bpf_spin_lock(&b->lock);
    a->packets += b->packets;
    bpf_spin_unlock(&b->lock);
    bpf_spin_unlock(&a->lock);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
