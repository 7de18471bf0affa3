/* Style: a flow monitor as in Cilium's and Katran's connection tables. Feature: an LRU hash
 * (BPF_MAP_TYPE_LRU_HASH) keyed by the 5-tuple, deliberately small: when more flows arrive than it
 * holds, the least recently used ones are evicted instead of the insert failing. IPv4 and IPv6
 * addresses share one key layout (IPv4 as v4-mapped IPv6). Every frame passes. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define FLOW_TABLE_SIZE 8

struct flow_key {
    __u32 saddr[4];
    __u32 daddr[4];
    __u16 sport;
    __u16 dport;
    __u8 proto;
    __u8 pad[3];
};

struct flow_stats {
    __u64 packets;
    __u64 bytes;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, FLOW_TABLE_SIZE);
    __type(key, struct flow_key);
    __type(value, struct flow_stats);
} flows SEC(".maps");

static __always_inline void v4_mapped(__u32 *dst, __be32 addr)
{
    dst[0] = 0;
    dst[1] = 0;
    dst[2] = bpf_htonl(0xffff);
    dst[3] = addr;
}

SEC("xdp")
int xdp_lru_flows(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct flow_key key = {};
    void *l4;

    if ((void *)(eth + 1) > data_end)
        return XDP_PASS;
    if (eth->h_proto == bpf_htons(ETH_P_IP)) {
        struct iphdr *iph = (void *)(eth + 1);
        if ((void *)(iph + 1) > data_end || iph->ihl < 5)
            return XDP_PASS;
        v4_mapped(key.saddr, iph->saddr);
        v4_mapped(key.daddr, iph->daddr);
        key.proto = iph->protocol;
        l4 = (void *)iph + iph->ihl * 4;
    } else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip6h = (void *)(eth + 1);
        if ((void *)(ip6h + 1) > data_end)
            return XDP_PASS;
        __builtin_memcpy(key.saddr, &ip6h->saddr, 16);
        __builtin_memcpy(key.daddr, &ip6h->daddr, 16);
        key.proto = ip6h->nexthdr;
        l4 = ip6h + 1;
    } else {
        return XDP_PASS;
    }
    if (key.proto == IPPROTO_TCP || key.proto == IPPROTO_UDP) {
        __be16 *ports = l4;  /* source and destination port lead both headers */
        if ((void *)(ports + 2) > data_end)
            return XDP_PASS;
        key.sport = bpf_ntohs(ports[0]);
        key.dport = bpf_ntohs(ports[1]);
    }

    __u64 len = data_end - data;
    struct flow_stats *st = bpf_map_lookup_elem(&flows, &key);
    if (st) {
        __sync_fetch_and_add(&st->packets, 1);
        __sync_fetch_and_add(&st->bytes, len);
    } else {
        struct flow_stats init = { .packets = 1, .bytes = len };
        bpf_map_update_elem(&flows, &key, &init, BPF_NOEXIST);
    }
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
