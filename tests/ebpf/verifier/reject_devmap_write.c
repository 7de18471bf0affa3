/* Must be rejected: a store into a DEVMAP entry (its values are ports the host sets; Linux makes
 * devmaps BPF_F_RDONLY_PROG). */
#include "nanobpf_xdp.h"
struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP);
    __uint(max_entries, 8);
    __type(key, __u32);
    __type(value, __u32);
} tx_port SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 key = 0, *port = bpf_map_lookup_elem(&tx_port, &key);
    if (!port) return XDP_PASS;
    *port = ctx->ingress_ifindex;
    return XDP_DROP;
}
char _license[] SEC("license") = "GPL";
