/* Must be accepted: bpf_tail_call through a PROG_ARRAY from the program's own function; the frame passes
 * when the slot is empty. */
#include "nanobpf_xdp.h"
struct {
    __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, __u32);
} jmp_table SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    bpf_tail_call(ctx, &jmp_table, ctx->ingress_ifindex & 3);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
