/* Must be accepted: global (independently verified) functions, as Linux verifies them once for every
 * caller: a memory argument checked for NULL and used within its size, from the stack and from a map
 * value; the context with a packet offset; a global function calling another. */
#include "nanobpf_xdp.h"
struct blk {
    __u32 w[4];
};
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct blk);
} blocks SEC(".maps");

__noinline int blk_mix(struct blk *b, __u32 k) {
    if (!b)
        return 0;
    for (int i = 0; i < 4; i++)
        b->w[i] = (b->w[i] ^ k) * 2654435761u;
    return b->w[0] & 0xff;
}

__noinline int pkt_byte(struct xdp_md *ctx, __u32 off) {
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    __u8 *p = data + (off & 0x3ff);
    if (p + 1 > end)
        return -1;
    return *p;
}

__noinline int blk_fold(struct xdp_md *ctx, struct blk *b) {
    if (!b)
        return 0;
    int v = pkt_byte(ctx, b->w[1]);
    return blk_mix(b, v < 0 ? 0 : v);
}

SEC("xdp")
int prog(struct xdp_md *ctx) {
    struct blk s = {{1, 2, 3, 4}};
    __u32 zero = 0;
    int a = blk_mix(&s, ctx->ingress_ifindex);
    struct blk *m = bpf_map_lookup_elem(&blocks, &zero);
    int b = m ? blk_fold(ctx, m) : 0;
    return (a + b + s.w[3]) & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
