/* clang: -mcpu=v3 */
/* Must be accepted: an int counted down to 0. Clang compares the counter's old copy (`r4 = r2; r2 += -1;
 * if r4 > 1 goto loop`): the copy and the counter stay linked, one apart, so the bound on one is the other's
 * (as Linux links them). */
#include "nanobpf_xdp.h"
struct val { unsigned char b[64]; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct val); } tbl SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if (data + 1 > end) return XDP_DROP;
    __u32 k = 0;
    struct val *t = bpf_map_lookup_elem(&tbl, &k);
    if (!t) return XDP_DROP;
    unsigned sum = 0;
#ifndef READ_OFFSET /* reject_loop_countdown_beyond.c includes this file with the next byte */
#define READ_OFFSET 1 /* i + 1: byte 63 of the value at most */
#endif
    for (int i = (data[0] & 63) - 1; i >= 0; i--) sum += t->b[i + READ_OFFSET];
    return sum & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
