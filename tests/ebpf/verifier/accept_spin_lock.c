/* Must be accepted: per-flow counters updated together under the value's bpf_spin_lock, as programs
 * do when several CPUs (here: cores) share a map value. */
#include "nanobpf_xdp.h"
struct stats {
    __u64 packets;
    struct bpf_spin_lock lock;
    __u32 last_len;
    __u64 bytes;
};
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, __u32);
    __type(value, struct stats);
} flows SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 key = ctx->ingress_ifindex, len = ctx->data_end - ctx->data;
    struct stats *s = bpf_map_lookup_elem(&flows, &key);
    if (!s) {
        struct stats init = {.packets = 1, .last_len = len, .bytes = len};
        bpf_map_update_elem(&flows, &key, &init, BPF_NOEXIST);
        return XDP_PASS;
    }
    bpf_spin_lock(&s->lock);
    s->packets++;
    s->bytes += len;
    s->last_len = len;
    bpf_spin_unlock(&s->lock);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
