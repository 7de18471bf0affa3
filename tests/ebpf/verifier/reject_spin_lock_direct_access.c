/* Must be rejected: the bpf_spin_lock is written directly instead of through the helpers. */
#include "spin_lock_map.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 key = 0;
    struct stats *s = bpf_map_lookup_elem(&counters, &key);
    if (!s) return XDP_PASS;
    *(volatile __u32 *)&s->lock = 0;
    s->packets++;
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
