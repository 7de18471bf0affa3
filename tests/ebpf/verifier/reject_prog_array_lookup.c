/* Must be rejected: programs do not look into a PROG_ARRAY; only bpf_tail_call takes it. */
#include "nanobpf_xdp.h"
struct {
    __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, __u32);
} jmp_table SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 k = 0;
    return bpf_map_lookup_elem(&jmp_table, &k) ? XDP_DROP : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
