/* clang: -mcpu=v3 */
/* Must be rejected: accept_jmp32_signed.c reading t->b[x + 24], x up to 40: byte 64 of a 64-byte map
 * value. */
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
    return t->b[x + 24];
}
char _license[] SEC("license") = "GPL";
