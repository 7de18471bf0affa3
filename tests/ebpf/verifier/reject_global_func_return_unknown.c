/* Must be rejected: a global function's return value is unknown to its caller (the function is
 * verified on its own, not along each call), so using it as an index needs a bounds check. */
#include "nanobpf_xdp.h"
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u8[4]);
} table SEC(".maps");
__noinline int small(__u32 x) {
    return x & 3;
}
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 zero = 0;
    __u8 *t = bpf_map_lookup_elem(&table, &zero);
    if (!t)
        return XDP_DROP;
    return t[small(ctx->ingress_ifindex)] & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
