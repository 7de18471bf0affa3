/* Must be rejected: a key table value handed to a global function is plain memory there (the function
 * is verified once for every caller), so the helper may not take it as the connection's keys. */
#include "nanobpf_xdp.h"
#include "nanobpf_helpers.h"
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_keys);
} nanobpf_quic_keys SEC(".maps");
struct blk {
    __u8 b[16];
};

__noinline int mask(const struct nanobpf_quic_keys *keys, struct blk *s) {
    if (!keys || !s)
        return -1;
    return bpf_quic_hp_mask(keys, s->b, sizeof s->b);
}

SEC("xdp")
int prog(struct xdp_md *ctx) {
    struct nanobpf_quic_cid cid = {.len = 0};
    const struct nanobpf_quic_keys *keys = bpf_map_lookup_elem(&nanobpf_quic_keys, &cid);
    struct blk s = {};
    if (!keys)
        return XDP_PASS;
    return mask(keys, &s) ? XDP_DROP : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
