/* Must be rejected: a helper call while the bpf_spin_lock is held. */
#include "spin_lock_map.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 key = 0;
    struct stats *s = bpf_map_lookup_elem(&counters, &key);
    if (!s) return XDP_PASS;
    bpf_spin_lock(&s->lock);
    s->packets += bpf_get_prandom_u32() & 1;
    bpf_spin_unlock(&s->lock);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
