#include "corpus.h"
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 256); __type(key, __u32); __type(value, __u64); } hist SEC(".maps");
/* Independent flags accumulated over many header tests and used as a map key at the end. */
SEC("xdp")
int flags(struct xdp_md *ctx) {
    unsigned char *d = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    if (d + 64 > end) return XDP_DROP;
    __u32 f = 0;
    if (d[14] == 0x45) f |= 1;
    if (d[22] < 64) f |= 2;
    if (d[23] == 6) f |= 4;
    if (d[23] == 17) f |= 8;
    if (d[34] == 0) f |= 16;
    if (d[36] == 0) f |= 32;
    if (d[47] & 2) f |= 64;
    if (d[47] & 16) f |= 128;
    __u64 *c = bpf_map_lookup_elem(&hist, &f);
    if (c) __sync_fetch_and_add(c, 1);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
