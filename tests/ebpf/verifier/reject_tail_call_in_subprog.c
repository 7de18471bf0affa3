/* Must be rejected on the device (Linux 6.18 accepts it): bpf_tail_call from a subprogram; the device
 * keeps tail calls in a program's own function. */
#include "nanobpf_xdp.h"
struct {
    __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, __u32);
} jmp_table SEC(".maps");
static __noinline int jump(struct xdp_md *ctx, __u32 slot) {
    bpf_tail_call(ctx, &jmp_table, slot);
    return XDP_PASS;
}
SEC("xdp")
int prog(struct xdp_md *ctx) {
    return jump(ctx, ctx->ingress_ifindex & 3);
}
char _license[] SEC("license") = "GPL";
