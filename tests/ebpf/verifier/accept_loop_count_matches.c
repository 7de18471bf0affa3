/* Must be accepted (Linux accepts it after about 46,000 instructions): newlines counted over up to 1,522
 * bytes into a map. The body's if (`if w5 == 10 goto`, both sides in the loop) would pend one side per
 * iteration; the verifier follows both sides to their join at once, where one covers the other. */
#include "nanobpf_xdp.h"
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } lines SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    __u64 n = 0;
    for (__u32 i = 0; i < 1522; i++) {
        if (data + i + 1 > end) break;
        if (data[i] == '\n') n++;
    }
    __u32 k = 0;
    __u64 *v = bpf_map_lookup_elem(&lines, &k);
    if (v) __sync_fetch_and_add(v, n);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
