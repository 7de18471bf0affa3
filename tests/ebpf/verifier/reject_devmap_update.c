/* Must be rejected: bpf_map_update_elem on a DEVMAP from the program (Linux: only lookups and
 * bpf_redirect_map take a devmap in a program). */
#include "nanobpf_xdp.h"
struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP);
    __uint(max_entries, 8);
    __type(key, __u32);
    __type(value, __u32);
} tx_port SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 key = 0, port = ctx->ingress_ifindex;
    bpf_map_update_elem(&tx_port, &key, &port, BPF_ANY);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
