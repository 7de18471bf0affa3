/* Style: a port-translation program written against the frags-safe accessors (xdp-tools and
 * Cilium use them where packet pointers are awkward). Feature: bpf_xdp_load_bytes copies each header
 * (Ethernet, one VLAN tag, IPv4 with options or IPv6, UDP) to the stack at a computed offset, and
 * bpf_xdp_store_bytes writes the translated UDP destination port and the incrementally updated UDP
 * checksum back (RFC 1624 eqn. 3; an IPv4 datagram without checksum keeps 0). Ports come from a hash
 * map; frames too short for a header pass unchanged (the helpers refuse reads past the end). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 64);
    __type(key, __u16);    /* original destination port, host order */
    __type(value, __u16);  /* translated destination port, host order */
} port_nat SEC(".maps");

enum { NAT_REWRITTEN, NAT_NO_RULE, NAT_SHORT, NAT_COUNT };

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, NAT_COUNT);
    __type(key, __u32);
    __type(value, __u64);
} nat_stats SEC(".maps");

struct vlan_hdr {
    __be16 h_vlan_TCI;
    __be16 h_vlan_encapsulated_proto;
};

static __always_inline int count(__u32 what, int action)
{
    __u64 *n = bpf_map_lookup_elem(&nat_stats, &what);
    if (n)
        __sync_fetch_and_add(n, 1);
    return action;
}

static __always_inline __u16 csum_replace2(__u16 check, __u16 old, __u16 new)
{
    __u32 sum = (__u16)~check + (__u16)~old + (__u32)new;

    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return ~sum;
}

SEC("xdp")
int xdp_udp_port_nat(struct xdp_md *ctx)
{
    struct ethhdr eth;
    struct udphdr uh;
    __u32 off = sizeof(eth);
    __u32 l4;
    int v6 = 0;

    if (bpf_xdp_load_bytes(ctx, 0, &eth, sizeof(eth)) < 0)
        return count(NAT_SHORT, XDP_PASS);
    __be16 proto = eth.h_proto;
    if (proto == bpf_htons(ETH_P_8021Q)) {
        struct vlan_hdr vh;
        if (bpf_xdp_load_bytes(ctx, off, &vh, sizeof(vh)) < 0)
            return count(NAT_SHORT, XDP_PASS);
        proto = vh.h_vlan_encapsulated_proto;
        off += sizeof(vh);
    }
    if (proto == bpf_htons(ETH_P_IP)) {
        struct iphdr iph;
        if (bpf_xdp_load_bytes(ctx, off, &iph, sizeof(iph)) < 0)
            return count(NAT_SHORT, XDP_PASS);
        if (iph.protocol != IPPROTO_UDP || iph.ihl < 5)
            return XDP_PASS;
        l4 = off + iph.ihl * 4;
    } else if (proto == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr ip6h;
        if (bpf_xdp_load_bytes(ctx, off, &ip6h, sizeof(ip6h)) < 0)
            return count(NAT_SHORT, XDP_PASS);
        if (ip6h.nexthdr != IPPROTO_UDP)
            return XDP_PASS;
        l4 = off + sizeof(ip6h);
        v6 = 1;
    } else {
        return XDP_PASS;
    }
    if (bpf_xdp_load_bytes(ctx, l4, &uh, sizeof(uh)) < 0)
        return count(NAT_SHORT, XDP_PASS);

    __u16 dport = bpf_ntohs(uh.dest);
    __u16 *to = bpf_map_lookup_elem(&port_nat, &dport);
    if (!to)
        return count(NAT_NO_RULE, XDP_PASS);
    __be16 new_port = bpf_htons(*to);
    if (uh.check || v6) {
        __u16 check = csum_replace2(uh.check, uh.dest, new_port);
        uh.check = check ? check : 0xffff;
    }
    uh.dest = new_port;
    /* dest, len and check: 6 bytes from the destination port on */
    if (bpf_xdp_store_bytes(ctx, l4 + __builtin_offsetof(struct udphdr, dest), &uh.dest, 6) < 0)
        return XDP_ABORTED;
    return count(NAT_REWRITTEN, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
