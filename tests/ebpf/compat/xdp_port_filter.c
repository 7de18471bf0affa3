/* Style: xdp-tools xdp-filter (port mode). Feature: a hash map created with BPF_F_NO_PREALLOC (the
 * rule set is sparse and changes at run time) and a BPF_F_MMAPABLE array for the verdict counters
 * (user space maps it to read them; the device keeps it as an ordinary array). Ethernet with up to two
 * VLAN tags, IPv4 (options skipped by IHL) or IPv6 (no extension headers), then the TCP or UDP
 * destination port is looked up in port_rules: a rule says drop or pass and counts its hits. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define VLAN_MAX_DEPTH 2

enum { STAT_PASSED, STAT_DROPPED, STAT_NO_RULE, STAT_NOT_IP, STAT_MALFORMED, STAT_MAX };

#define RULE_DROP 1

struct port_key {
    __u8 proto;   /* IPPROTO_TCP or IPPROTO_UDP */
    __u8 pad;
    __u16 port;   /* host byte order */
};

struct port_rule {
    __u32 flags;  /* RULE_DROP, or 0 to pass */
    __u32 pad;
    __u64 hits;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, 1024);
    __type(key, struct port_key);
    __type(value, struct port_rule);
} port_rules SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, STAT_MAX);
    __type(key, __u32);
    __type(value, __u64);
} filter_stats SEC(".maps");

struct vlan_hdr {
    __be16 h_vlan_TCI;
    __be16 h_vlan_encapsulated_proto;
};

struct hdr_cursor {
    void *pos;
};

static __always_inline int verdict(__u32 stat, int action)
{
    __u64 *n = bpf_map_lookup_elem(&filter_stats, &stat);
    if (n)
        __sync_fetch_and_add(n, 1);
    return action;
}

static __always_inline int parse_ethhdr(struct hdr_cursor *nh, void *data_end)
{
    struct ethhdr *eth = nh->pos;
    if ((void *)(eth + 1) > data_end)
        return -1;
    nh->pos = eth + 1;
    __u16 h_proto = eth->h_proto;
#pragma unroll
    for (int i = 0; i < VLAN_MAX_DEPTH; i++) {
        if (h_proto != bpf_htons(ETH_P_8021Q) && h_proto != bpf_htons(ETH_P_8021AD))
            break;
        struct vlan_hdr *vlh = nh->pos;
        if ((void *)(vlh + 1) > data_end)
            return -1;
        h_proto = vlh->h_vlan_encapsulated_proto;
        nh->pos = vlh + 1;
    }
    return h_proto;
}

SEC("xdp")
int xdp_port_filter(struct xdp_md *ctx)
{
    void *data_end = (void *)(long)ctx->data_end;
    struct hdr_cursor nh = { .pos = (void *)(long)ctx->data };
    struct port_key key = {};
    int eth_type = parse_ethhdr(&nh, data_end);

    if (eth_type < 0)
        return verdict(STAT_MALFORMED, XDP_DROP);
    if (eth_type == bpf_htons(ETH_P_IP)) {
        struct iphdr *iph = nh.pos;
        if ((void *)(iph + 1) > data_end)
            return verdict(STAT_MALFORMED, XDP_DROP);
        int hlen = iph->ihl * 4;
        if (hlen < (int)sizeof(*iph) || nh.pos + hlen > data_end)
            return verdict(STAT_MALFORMED, XDP_DROP);
        nh.pos += hlen;
        key.proto = iph->protocol;
    } else if (eth_type == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip6h = nh.pos;
        if ((void *)(ip6h + 1) > data_end)
            return verdict(STAT_MALFORMED, XDP_DROP);
        nh.pos = ip6h + 1;
        key.proto = ip6h->nexthdr;
    } else {
        return verdict(STAT_NOT_IP, XDP_PASS);
    }

    if (key.proto == IPPROTO_TCP) {
        struct tcphdr *th = nh.pos;
        if ((void *)(th + 1) > data_end)
            return verdict(STAT_MALFORMED, XDP_DROP);
        key.port = bpf_ntohs(th->dest);
    } else if (key.proto == IPPROTO_UDP) {
        struct udphdr *uh = nh.pos;
        if ((void *)(uh + 1) > data_end)
            return verdict(STAT_MALFORMED, XDP_DROP);
        key.port = bpf_ntohs(uh->dest);
    } else {
        return verdict(STAT_NO_RULE, XDP_PASS);
    }

    struct port_rule *rule = bpf_map_lookup_elem(&port_rules, &key);
    if (!rule)
        return verdict(STAT_NO_RULE, XDP_PASS);
    __sync_fetch_and_add(&rule->hits, 1);
    if (rule->flags & RULE_DROP)
        return verdict(STAT_DROPPED, XDP_DROP);
    return verdict(STAT_PASSED, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
