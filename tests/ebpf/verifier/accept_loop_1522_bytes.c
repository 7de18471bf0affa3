/* Must be accepted (Linux accepts it after about 24,000 instructions): a sum over up to 1,522 frame
 * bytes, each checked against data_end, with the flow key live across the loop. The loop is left
 * through its bounds check at every iteration: the verifier explores that exit first and keeps the
 * next iteration as its one pending branch (not one pending branch per iteration). */
#include "nanobpf_xdp.h"
#include <linux/if_ether.h>
#include <linux/ip.h>
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 64); __type(key, __u64); __type(value, __u64); } sums SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    struct ethhdr *eth = (void *)data;
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > (void *)end) return XDP_DROP;
    if (eth->h_proto != bpf_htons(ETH_P_IP)) return XDP_PASS;
    __u64 key = (__u64)ip->saddr << 32 | ip->daddr;
    __u64 sum = 0;
    for (__u32 i = 0; i < 1522; i++) {
        if (data + i + 1 > end) break;
        sum += data[i];
    }
    __u64 *v = bpf_map_lookup_elem(&sums, &key);
    if (v) __sync_fetch_and_add(v, sum);
    else bpf_map_update_elem(&sums, &key, &sum, BPF_ANY);
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
