/* clang: -mcpu=v3 */
/* Must be accepted: a 32-bit comparison bounds the low half of a 64-bit value (`if w1 > 55`), which then
 * indexes a 64-byte map value (`w2 = w1`): the low half's own bounds, as Linux keeps them. */
#include "nanobpf_xdp.h"
struct val { unsigned char b[64]; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct val); } tbl SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if (data + 8 > end) return XDP_DROP;
    __u32 k = 0;
    struct val *t = bpf_map_lookup_elem(&tbl, &k);
    if (!t) return XDP_DROP;
    __u64 v = *(volatile __u64 *)data;
    __u32 off = (__u32)v;
    if (off > 55) return XDP_PASS;
#ifndef READ_OFFSET /* reject_jmp32_low_half_beyond.c includes this file with the next byte */
#define READ_OFFSET 8 /* off + 8: byte 63 of the value at most */
#endif
    return t->b[off + READ_OFFSET] + (v >> 40);
}
char _license[] SEC("license") = "GPL";
