/* Must be rejected: the key table is read-only for programs (the control plane writes it), and a global
 * function whose argument is not a pointer to const may write what it gets (it is verified once for
 * every caller). Linux, which has no such read-only map, accepts it. */
#include "nanobpf_xdp.h"
#include "nanobpf_helpers.h"
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_keys);
} nanobpf_quic_keys SEC(".maps");

__noinline int rekey(struct nanobpf_quic_keys *k) {
    if (!k)
        return -1;
    k->key[0] ^= 1;
    return 0;
}

SEC("xdp")
int prog(struct xdp_md *ctx) {
    struct nanobpf_quic_cid cid = {.len = 0};
    struct nanobpf_quic_keys *keys = bpf_map_lookup_elem(&nanobpf_quic_keys, &cid);
    if (!keys)
        return XDP_PASS;
    return rekey(keys) ? XDP_DROP : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
