/* Style: a static XDP router (xdp-tutorial packet-solutions, Cilium's host routing). Feature:
 * bpf_csum_diff: the IPv4 header checksum is recomputed over the whole header (check zeroed, the sum
 * of the 20 bytes taken by the helper, folded) after the TTL is decremented. Host routes in hash maps
 * (one per family) give the next hop's MAC addresses and the port, taken with bpf_redirect. TTL or hop
 * limit 1 and IPv4 options go to the stack; unknown destinations pass. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct route {
    __u8 dmac[ETH_ALEN];
    __u8 smac[ETH_ALEN];
    __u32 ifindex;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 256);
    __type(key, __be32);
    __type(value, struct route);
} routes4 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 256);
    __type(key, struct in6_addr);
    __type(value, struct route);
} routes6 SEC(".maps");

static __always_inline __u16 csum_fold_helper(__u64 csum)
{
#pragma unroll
    for (int i = 0; i < 4; i++) {
        if (csum >> 16)
            csum = (csum & 0xffff) + (csum >> 16);
    }
    return ~csum;
}

static __always_inline int forward(struct ethhdr *eth, struct route *rt)
{
    __builtin_memcpy(eth->h_dest, rt->dmac, ETH_ALEN);
    __builtin_memcpy(eth->h_source, rt->smac, ETH_ALEN);
    return bpf_redirect(rt->ifindex, 0);
}

SEC("xdp")
int xdp_router_csum_diff(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;

    if ((void *)(eth + 1) > data_end)
        return XDP_DROP;
    if (eth->h_proto == bpf_htons(ETH_P_IP)) {
        struct iphdr *iph = (void *)(eth + 1);
        if ((void *)(iph + 1) > data_end)
            return XDP_DROP;
        if (iph->ihl != 5 || iph->ttl <= 1)
            return XDP_PASS;
        struct route *rt = bpf_map_lookup_elem(&routes4, &iph->daddr);
        if (!rt)
            return XDP_PASS;
        iph->ttl--;
        iph->check = 0;
        __s64 sum = bpf_csum_diff(0, 0, (__be32 *)iph, sizeof(*iph), 0);
        if (sum < 0)
            return XDP_ABORTED;
        iph->check = csum_fold_helper(sum);
        return forward(eth, rt);
    }
    if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip6h = (void *)(eth + 1);
        if ((void *)(ip6h + 1) > data_end)
            return XDP_DROP;
        if (ip6h->hop_limit <= 1)
            return XDP_PASS;
        struct in6_addr dst = ip6h->daddr;
        struct route *rt = bpf_map_lookup_elem(&routes6, &dst);
        if (!rt)
            return XDP_PASS;
        ip6h->hop_limit--;
        return forward(eth, rt);
    }
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
