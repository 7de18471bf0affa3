#include "corpus.h"
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } sums SEC(".maps");
SEC("xdp")
int loop_sum(struct xdp_md *ctx) {
    unsigned char *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    __u64 sum = 0;
    #pragma clang loop unroll(disable)
    for (int i = 0; i < 64; i++) {
        if (data + i + 1 > end) break;
        sum += data[i];
    }
    __u32 k = 0;
    __u64 *v = bpf_map_lookup_elem(&sums, &k);
    if (v) __sync_fetch_and_add(v, sum);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
