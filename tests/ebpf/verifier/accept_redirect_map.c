/* Must be accepted: an L2 forwarder that looks its egress up in a DEVMAP_HASH (reading the entry is
 * allowed) and redirects through a DEVMAP, XDP_PASS when the key has no entry. */
#include "nanobpf_xdp.h"
struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP);
    __uint(max_entries, 8);
    __type(key, __u32);
    __type(value, __u32);
} tx_port SEC(".maps");
struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
    __uint(max_entries, 8);
    __type(key, __u32);
    __type(value, struct bpf_devmap_val);
} by_vlan SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 key = ctx->ingress_ifindex;
    struct bpf_devmap_val *v = bpf_map_lookup_elem(&by_vlan, &key);
    if (v && v->ifindex == key) return XDP_DROP;
    return bpf_redirect_map(&tx_port, key, XDP_PASS);
}
char _license[] SEC("license") = "GPL";
