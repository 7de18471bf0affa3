/* Style: kernel samples/bpf xdp2skb_meta (XDP leaves a mark in the metadata area in front of the frame
 * for the stack's TC hook to read) with xdp-tutorial's VLAN tag pop. Feature: bpf_xdp_adjust_meta,
 * metadata bounds proven against data (data_meta + n <= data), the metadata moving with the frame on
 * bpf_xdp_adjust_head, adjustments the kernel refuses (-EACCES, -EINVAL) leaving it as it was, and
 * metadata removed again (ARP frames leave without the program's own; what the frame came with stays).
 * The output of a run starts at data_meta, so the metadata is compared as well as the frame. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define EINVAL 22
#define EACCES 13

struct meta_info {
    __u32 mark;      /* flow class: the IPv4 addresses (or the IPv6 addresses' last words) xor'ed */
    __be16 eth_type; /* the EtherType the frame arrived with (before any VLAN pop) */
    __u8 vlans_popped;
    __u8 refused;    /* bit per adjustment the kernel refused as it should (1, 2, 4) */
};

struct vlan_hdr {
    __be16 h_vlan_TCI;
    __be16 h_vlan_encapsulated_proto;
};

static __always_inline __u32 flow_mark(void *nh, void *data_end, __be16 proto)
{
    if (proto == bpf_htons(ETH_P_IP)) {
        struct iphdr *iph = nh;
        if ((void *)(iph + 1) > data_end)
            return 0;
        return iph->saddr ^ iph->daddr;
    }
    if (proto == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip6h = nh;
        if ((void *)(ip6h + 1) > data_end)
            return 0;
        return ip6h->saddr.in6_u.u6_addr32[3] ^ ip6h->daddr.in6_u.u6_addr32[3];
    }
    return 0;
}

SEC("xdp")
int xdp_meta_mark(struct xdp_md *ctx)
{
    if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct meta_info)) < 0)
        return XDP_ABORTED;
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct meta_info *meta = (void *)(long)ctx->data_meta;
    if ((void *)(meta + 1) > data)
        return XDP_ABORTED;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > data_end)
        return XDP_DROP;
    meta->eth_type = eth->h_proto;
    meta->vlans_popped = 0;
    meta->mark = flow_mark(eth + 1, data_end, eth->h_proto);

    /* refused: a length that is not a multiple of 4; data_meta past data; far beyond the headroom */
    __u8 refused = 0;
    if (bpf_xdp_adjust_meta(ctx, -2) == -EACCES)
        refused |= 1;
    int metalen = (int)((long)ctx->data - (long)ctx->data_meta); /* ours, and whatever came before it */
    if (bpf_xdp_adjust_meta(ctx, metalen + 4) == -EINVAL)
        refused |= 2;
    if (bpf_xdp_adjust_meta(ctx, -4096) == -EINVAL)
        refused |= 4;
    meta = (void *)(long)ctx->data_meta;
    data = (void *)(long)ctx->data;
    if ((void *)(meta + 1) > data)
        return XDP_ABORTED;
    meta->refused = refused;

    data_end = (void *)(long)ctx->data_end;
    eth = data;
    if ((void *)(eth + 1) > data_end)
        return XDP_DROP;
    if (eth->h_proto == bpf_htons(ETH_P_ARP)) {
        /* nothing to say about ARP: the metadata goes again */
        if (bpf_xdp_adjust_meta(ctx, (int)sizeof(struct meta_info)))
            return XDP_ABORTED;
        return XDP_PASS;
    }
    if (eth->h_proto != bpf_htons(ETH_P_8021Q))
        return XDP_PASS;

    /* pop the tag: the addresses move 4 bytes up, then data does (and the metadata with it) */
    struct vlan_hdr *vh = (void *)(eth + 1);
    if ((void *)(vh + 1) > data_end)
        return XDP_DROP;
    __be16 inner = vh->h_vlan_encapsulated_proto;
    __u8 macs[12];
    __builtin_memcpy(macs, eth, 12);
    if (bpf_xdp_adjust_head(ctx, (int)sizeof(*vh)))
        return XDP_ABORTED;
    data = (void *)(long)ctx->data;
    data_end = (void *)(long)ctx->data_end;
    eth = data;
    if ((void *)(eth + 1) > data_end)
        return XDP_DROP;
    __builtin_memcpy(eth, macs, 12);
    eth->h_proto = inner;
    meta = (void *)(long)ctx->data_meta;
    if ((void *)(meta + 1) > data)
        return XDP_ABORTED;
    if (meta->eth_type != bpf_htons(ETH_P_8021Q))
        return XDP_DROP; /* the metadata did not move with the frame */
    meta->vlans_popped = 1;
    meta->mark = flow_mark(eth + 1, data_end, inner);
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
