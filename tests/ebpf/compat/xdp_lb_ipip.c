/* Style: Katran's L4 load balancer (balancer_kern.c), much reduced. Feature: the map layout of a
 * Maglev-style balancer: VIPs in a hash map, per-VIP consistent-hash rings and the real servers in
 * arrays, a BPF_MAP_TYPE_LRU_HASH connection table that keeps a flow on its real server when the ring
 * changes, configuration in an array (the gateway's MAC, the balancer's tunnel source); then IPIP
 * encapsulation with bpf_xdp_adjust_head (a new outer IPv4 header, its checksum computed in a loop)
 * and XDP_TX. The flow hash is Linux's jhash_3words over the source address, the ports and the
 * protocol. IPv4 TCP/UDP to a VIP only; everything else passes. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_VIPS 8
#define RING_SIZE 16
#define MAX_REALS 16
#define CONN_TABLE_SIZE 1024
#define INIT_JHASH_SEED 0x5eed

struct vip_definition {
    __be32 vip;
    __be16 port;
    __u8 proto;
    __u8 pad;
};

struct vip_meta {
    __u32 flags;
    __u32 vip_num;
};

struct real_definition {
    __be32 dst;
    __u32 flags;
};

struct flow_key {
    __be32 src;
    __be32 dst;
    __u32 ports;  /* source and destination port as they lie in the packet */
    __u8 proto;
    __u8 pad[3];
};

struct real_pos_lru {
    __u32 pos;
    __u32 pad;
};

struct ctl_value {
    __u8 gw_mac[ETH_ALEN];
    __u8 pad[2];
    __be32 tunnel_src;
};

struct lb_stats {
    __u64 packets;
    __u64 bytes;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, MAX_VIPS);
    __type(key, struct vip_definition);
    __type(value, struct vip_meta);
} vip_map SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, MAX_VIPS * RING_SIZE);
    __type(key, __u32);
    __type(value, __u32);
} ch_rings SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, MAX_REALS);
    __type(key, __u32);
    __type(value, struct real_definition);
} reals SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, CONN_TABLE_SIZE);
    __type(key, struct flow_key);
    __type(value, struct real_pos_lru);
} lru_conn SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct ctl_value);
} ctl_array SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, MAX_VIPS);
    __type(key, __u32);
    __type(value, struct lb_stats);
} vip_stats SEC(".maps");

static __always_inline __u32 rol32(__u32 word, unsigned int shift)
{
    return (word << shift) | (word >> ((-shift) & 31));
}

static __always_inline __u32 jhash_3words(__u32 a, __u32 b, __u32 c, __u32 initval)
{
    a += initval + 0xdeadbeef + (3 << 2);
    b += initval + 0xdeadbeef + (3 << 2);
    c += initval + 0xdeadbeef + (3 << 2);
    c ^= b; c -= rol32(b, 14);
    a ^= c; a -= rol32(c, 11);
    b ^= a; b -= rol32(a, 25);
    c ^= b; c -= rol32(b, 16);
    a ^= c; a -= rol32(c, 4);
    b ^= a; b -= rol32(a, 14);
    c ^= b; c -= rol32(b, 24);
    return c;
}

static __always_inline __u16 ipv4_csum(struct iphdr *iph)
{
    __u16 *p = (__u16 *)iph;
    __u32 sum = 0;

#pragma unroll
    for (int i = 0; i < (int)sizeof(*iph) / 2; i++)
        sum += p[i];
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return ~sum;
}

SEC("xdp")
int balancer_ingress(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *iph = (void *)(eth + 1);
    struct flow_key flow = {};
    struct vip_definition vip = {};
    __u32 zero = 0;

    if ((void *)(iph + 1) > data_end)
        return XDP_PASS;
    if (eth->h_proto != bpf_htons(ETH_P_IP) || iph->ihl != 5)
        return XDP_PASS;
    if (iph->frag_off & bpf_htons(0x3fff))
        return XDP_PASS;  /* fragments: no ports to hash */
    if (iph->protocol != IPPROTO_TCP && iph->protocol != IPPROTO_UDP)
        return XDP_PASS;
    __u32 *ports = (void *)(iph + 1);
    if ((void *)(ports + 1) > data_end)
        return XDP_DROP;

    flow.src = iph->saddr;
    flow.dst = iph->daddr;
    flow.ports = *ports;
    flow.proto = iph->protocol;
    vip.vip = iph->daddr;
    vip.port = ((__be16 *)ports)[1];
    vip.proto = iph->protocol;
    struct vip_meta *meta = bpf_map_lookup_elem(&vip_map, &vip);
    if (!meta)
        return XDP_PASS;
    __u32 vip_num = meta->vip_num;
    if (vip_num >= MAX_VIPS)
        return XDP_DROP;

    __u32 real_pos;
    struct real_pos_lru *dst_lru = bpf_map_lookup_elem(&lru_conn, &flow);
    if (dst_lru) {
        real_pos = dst_lru->pos;
    } else {
        __u32 hash = jhash_3words(flow.src, flow.ports, flow.proto, INIT_JHASH_SEED);
        __u32 key = vip_num * RING_SIZE + hash % RING_SIZE;
        __u32 *pos = bpf_map_lookup_elem(&ch_rings, &key);
        if (!pos)
            return XDP_DROP;
        real_pos = *pos;
        struct real_pos_lru new_dst_lru = { .pos = real_pos };
        bpf_map_update_elem(&lru_conn, &flow, &new_dst_lru, BPF_ANY);
    }
    struct real_definition *real = bpf_map_lookup_elem(&reals, &real_pos);
    if (!real || !real->dst)
        return XDP_DROP;
    __be32 real_dst = real->dst;
    struct ctl_value *ctl = bpf_map_lookup_elem(&ctl_array, &zero);
    if (!ctl)
        return XDP_DROP;

    struct lb_stats *st = bpf_map_lookup_elem(&vip_stats, &vip_num);
    if (st) {
        st->packets++;
        st->bytes += data_end - data;
    }

    __u8 tos = iph->tos;
    __u16 inner_len = bpf_ntohs(iph->tot_len);
    if (bpf_xdp_adjust_head(ctx, 0 - (int)sizeof(struct iphdr)))
        return XDP_DROP;
    data = (void *)(long)ctx->data;
    data_end = (void *)(long)ctx->data_end;
    struct ethhdr *new_eth = data;
    struct ethhdr *old_eth = data + sizeof(struct iphdr);
    struct iphdr *outer = data + sizeof(struct ethhdr);
    if ((void *)(outer + 1) > data_end)
        return XDP_DROP;
    __builtin_memcpy(new_eth->h_source, old_eth->h_dest, ETH_ALEN);
    __builtin_memcpy(new_eth->h_dest, ctl->gw_mac, ETH_ALEN);
    new_eth->h_proto = bpf_htons(ETH_P_IP);

    outer->version = 4;
    outer->ihl = 5;
    outer->tos = tos;
    outer->tot_len = bpf_htons(inner_len + sizeof(struct iphdr));
    outer->id = 0;
    outer->frag_off = 0;
    outer->ttl = 64;
    outer->protocol = IPPROTO_IPIP;
    outer->check = 0;
    outer->saddr = ctl->tunnel_src;
    outer->daddr = real_dst;
    outer->check = ipv4_csum(outer);
    return XDP_TX;
}

char _license[] SEC("license") = "GPL";
