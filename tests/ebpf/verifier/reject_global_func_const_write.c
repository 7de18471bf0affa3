/* Must be rejected: a global function writes through its pointer-to-const argument (the const cast
 * away). It is verified once for every caller, and callers may pass read-only memory there (a key
 * table value) and keep what the bytes held. */
#include "nanobpf_xdp.h"
struct blk {
    __u64 w[2];
};
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct blk);
} blocks SEC(".maps");

__noinline int blk_clear(const struct blk *b) {
    if (!b)
        return -1;
    ((struct blk *)b)->w[0] = 0;
    return 0;
}

SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 zero = 0;
    struct blk *b = bpf_map_lookup_elem(&blocks, &zero);
    if (!b)
        return XDP_PASS;
    return blk_clear(b) ? XDP_DROP : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
