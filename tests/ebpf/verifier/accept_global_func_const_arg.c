/* Must be accepted: a global function that takes a pointer to const only reads it, so a key table value
 * (read-only for programs) may be passed to it; so may the stack, whose spilled pointer the caller
 * still has after the call (a const argument's bytes are kept, not overwritten). */
#include "nanobpf_xdp.h"
#include "nanobpf_helpers.h"
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_keys);
} nanobpf_quic_keys SEC(".maps");
struct blk {
    __u64 w[2];
};

__noinline int key_sum(const struct nanobpf_quic_keys *k) {
    if (!k)
        return -1;
    int s = 0;
    for (int i = 0; i < 16; i++)
        s += k->key[i];
    return s;
}

__noinline int blk_sum(const struct blk *b) {
    return b ? (int)(b->w[0] + b->w[1]) : 0;
}

SEC("xdp")
int prog(struct xdp_md *ctx) {
    struct nanobpf_quic_cid cid = {.len = 0};
    const struct nanobpf_quic_keys *keys = bpf_map_lookup_elem(&nanobpf_quic_keys, &cid);
    struct blk b = {{ctx->ingress_ifindex, 2}};
    int s = blk_sum(&b);
    if (keys)
        s += key_sum(keys);
    return s & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
