/* Style: xdp-tools (xdp-filter, xdp-trafficgen) and libbpf skeletons, whose maps are sized by the
 * loader: bpf_map__set_max_entries() before loading, `nanobpf-load --map-size NAME=N` here. Feature:
 * maps declared with max_entries 0, which cannot be created until the loader gives a size: an IPv4
 * source block list (hash) and per-receive-queue packet counters (array, one slot per queue). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 0);  /* set by the loader */
    __type(key, __be32);
    __type(value, __u64);
} blocklist SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 0);  /* set by the loader: the number of receive queues */
    __type(key, __u32);
    __type(value, __u64);
} queue_pkts SEC(".maps");

SEC("xdp")
int xdp_blocklist(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *iph = (void *)(eth + 1);
    __u32 queue = ctx->rx_queue_index;
    __u64 *n = bpf_map_lookup_elem(&queue_pkts, &queue);

    if (n)
        __sync_fetch_and_add(n, 1);
    if ((void *)(iph + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
        return XDP_PASS;
    __u64 *hits = bpf_map_lookup_elem(&blocklist, &iph->saddr);
    if (!hits)
        return XDP_PASS;
    __sync_fetch_and_add(hits, 1);
    return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
