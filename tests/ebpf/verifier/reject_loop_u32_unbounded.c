/* clang: -mcpu=v3 */
/* Must be rejected: a __u32 counter against a length from the packet that nothing caps (32-bit jumps):
 * the loop cannot be shown to end. */
#include "nanobpf_xdp.h"
struct val { unsigned char b[64]; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct val); } tbl SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if (data + 4 > end) return XDP_DROP;
    __u32 k = 0;
    struct val *t = bpf_map_lookup_elem(&tbl, &k);
    if (!t) return XDP_DROP;
    __u32 n = *(volatile __u32 *)data, sum = 0;
    for (__u32 i = 0; i < n; i++) sum += t->b[i & 63];
    return sum & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
