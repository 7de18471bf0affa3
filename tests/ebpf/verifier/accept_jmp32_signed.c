/* clang: -mcpu=v3 */
/* Must be accepted: the difference of two bytes as an int, bounded by signed 32-bit comparisons
 * (`if w2 s> 40`, then after a store `if w2 s< 0`), then an index: the low half's signed bounds. */
#include "nanobpf_xdp.h"
struct val { unsigned char b[64]; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct val); } tbl SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if (data + 2 > end) return XDP_DROP;
    __u32 k = 0;
    struct val *t = bpf_map_lookup_elem(&tbl, &k);
    if (!t) return XDP_DROP;
    int x = data[0] - data[1];
    if (x > 40) return XDP_DROP;
    t->b[0]++;
    if (x < 0) return XDP_PASS;
#ifndef READ_OFFSET /* reject_jmp32_signed_beyond.c includes this file with the next byte */
#define READ_OFFSET 23 /* x + 23: byte 63 of the value at most */
#endif
    return t->b[x + READ_OFFSET];
}
char _license[] SEC("license") = "GPL";
