/* Style: per-flow statistics kept by several CPUs at once (xdp-tools' xdp-monitor style counters, or
 * a load balancer's per-backend totals), where packets and bytes must move together. Feature:
 * bpf_spin_lock/bpf_spin_unlock on the value's struct bpf_spin_lock (HASH), entries created with
 * BPF_NOEXIST on first sight. The key is the outer EtherType. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct flow_stats {
    __u64 packets;
    struct bpf_spin_lock lock;
    __u32 last_len;
    __u64 bytes;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, __u32);
    __type(value, struct flow_stats);
} flow_stats SEC(".maps");

SEC("xdp")
int xdp_locked_counters(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    __u32 len = data_end - data;

    if ((void *)(eth + 1) > data_end)
        return XDP_DROP;
    __u32 key = bpf_ntohs(eth->h_proto);
    struct flow_stats *s = bpf_map_lookup_elem(&flow_stats, &key);
    if (!s) {
        struct flow_stats init = {.packets = 1, .last_len = len, .bytes = len};
        bpf_map_update_elem(&flow_stats, &key, &init, BPF_NOEXIST);
        return XDP_PASS;
    }
    bpf_spin_lock(&s->lock);
    s->packets++;
    s->bytes += len;
    s->last_len = len;
    bpf_spin_unlock(&s->lock);
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
