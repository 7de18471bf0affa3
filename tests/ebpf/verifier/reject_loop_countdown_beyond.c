/* clang: -mcpu=v3 */
/* Must be rejected: accept_loop_countdown.c reading t->b[i + 2], i up to 62: byte 64 of a 64-byte map
 * value. */
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
    for (int i = (data[0] & 63) - 1; i >= 0; i--) sum += t->b[i + 2];
    return sum & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
