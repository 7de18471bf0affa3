/* Style: a DDoS-mitigation "top talkers" table (xdp-tools, Cloudflare-style samples). Feature:
 * BPF_MAP_TYPE_LRU_PERCPU_HASH keyed by the source address (IPv4 as v4-mapped IPv6), large enough
 * here that nothing is evicted, and a source block list in a plain hash map: a listed source is
 * dropped but still counted. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct src_key {
    __u32 addr[4];
};

struct src_count {
    __u64 packets;
    __u64 bytes;
    __u64 dropped;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
    __uint(max_entries, 256);
    __type(key, struct src_key);
    __type(value, struct src_count);
} top_talkers SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 64);
    __type(key, struct src_key);
    __type(value, __u8);
} blocked_srcs SEC(".maps");

SEC("xdp")
int xdp_src_lru_percpu(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct src_key key = {};

    if ((void *)(eth + 1) > data_end)
        return XDP_PASS;
    if (eth->h_proto == bpf_htons(ETH_P_IP)) {
        struct iphdr *iph = (void *)(eth + 1);
        if ((void *)(iph + 1) > data_end)
            return XDP_PASS;
        key.addr[2] = bpf_htonl(0xffff);
        key.addr[3] = iph->saddr;
    } else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip6h = (void *)(eth + 1);
        if ((void *)(ip6h + 1) > data_end)
            return XDP_PASS;
        __builtin_memcpy(key.addr, &ip6h->saddr, sizeof(key.addr));
    } else {
        return XDP_PASS;
    }

    int drop = bpf_map_lookup_elem(&blocked_srcs, &key) != NULL;
    __u64 len = data_end - data;
    struct src_count *c = bpf_map_lookup_elem(&top_talkers, &key);
    if (c) {
        c->packets++;
        c->bytes += len;
        c->dropped += drop;
    } else {
        struct src_count init = { .packets = 1, .bytes = len, .dropped = drop };
        bpf_map_update_elem(&top_talkers, &key, &init, BPF_ANY);
    }
    return drop ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
