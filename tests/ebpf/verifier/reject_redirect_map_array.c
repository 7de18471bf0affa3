/* Must be rejected: bpf_redirect_map on an ARRAY (it takes a DEVMAP, DEVMAP_HASH, CPUMAP or XSKMAP). */
#include "nanobpf_xdp.h"
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 8);
    __type(key, __u32);
    __type(value, __u32);
} ports SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    return bpf_redirect_map(&ports, ctx->ingress_ifindex, XDP_PASS);
}
char _license[] SEC("license") = "GPL";
