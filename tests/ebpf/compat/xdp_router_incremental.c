/* Style: kernel samples/bpf xdp_fwd (ip_decrease_ttl) and xdp-tools xdp-forward. Feature: the
 * incremental IPv4 checksum update (RFC 1141/1624: the TTL is the high byte of a 16-bit word, so
 * the checksum grows by 0x0100 with the end-around carry), which leaves IPv4 options alone, and
 * bpf_redirect_map over a BPF_MAP_TYPE_DEVMAP_HASH of egress ports with XDP_PASS as the action when the
 * route's port is missing. Routes are /24 prefixes in a hash map (the network address is the key). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct nexthop {
    __u8 dmac[ETH_ALEN];
    __u8 smac[ETH_ALEN];
    __u32 port;  /* key of tx_ports */
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 128);
    __type(key, __be32);
    __type(value, struct nexthop);
} prefix24 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
    __uint(max_entries, 16);
    __type(key, __u32);
    __type(value, __u32);
} tx_ports SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} ttl_exceeded SEC(".maps");

static __always_inline int ip_decrease_ttl(struct iphdr *iph)
{
    __u32 check = (__u32)iph->check;

    check += (__u32)bpf_htons(0x0100);
    iph->check = (__sum16)(check + (check >= 0xFFFF));
    return --iph->ttl;
}

SEC("xdp")
int xdp_router_incremental(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *iph = data + sizeof(*eth);

    if ((void *)(iph + 1) > data_end)
        return XDP_PASS;
    if (eth->h_proto != bpf_htons(ETH_P_IP))
        return XDP_PASS;
    if (iph->ttl <= 1) {
        __u32 zero = 0;
        __u64 *n = bpf_map_lookup_elem(&ttl_exceeded, &zero);
        if (n)
            *n += 1;
        return XDP_PASS;
    }
    __be32 net = iph->daddr & bpf_htonl(0xffffff00);
    struct nexthop *nh = bpf_map_lookup_elem(&prefix24, &net);
    if (!nh)
        return XDP_PASS;
    long action = bpf_redirect_map(&tx_ports, nh->port, XDP_PASS);
    if (action != XDP_REDIRECT)
        return action;
    ip_decrease_ttl(iph);
    __builtin_memcpy(eth->h_dest, nh->dmac, ETH_ALEN);
    __builtin_memcpy(eth->h_source, nh->smac, ETH_ALEN);
    return action;
}

char _license[] SEC("license") = "GPL";
