/* Style: kernel samples/bpf xdp1/xdp2 (per-protocol counters) with a per-CPU hash instead of the
 * per-CPU array. Feature: BPF_MAP_TYPE_PERCPU_HASH, entries created by the program on first sight
 * (bpf_map_update_elem with BPF_NOEXIST) and counted without atomics. The key is the EtherType and the
 * IP protocol (the innermost EtherType after up to two VLAN tags; protocol 0 for non-IP). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct proto_key {
    __u16 eth_type;  /* host byte order */
    __u8 ip_proto;
    __u8 vlans;
};

struct proto_count {
    __u64 packets;
    __u64 bytes;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
    __uint(max_entries, 64);
    __type(key, struct proto_key);
    __type(value, struct proto_count);
} proto_bytes SEC(".maps");

struct vlan_hdr {
    __be16 h_vlan_TCI;
    __be16 h_vlan_encapsulated_proto;
};

SEC("xdp")
int xdp_proto_bytes(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct proto_key key = {};
    void *nh;

    if ((void *)(eth + 1) > data_end)
        return XDP_DROP;
    __u16 h_proto = eth->h_proto;
    nh = eth + 1;
#pragma unroll
    for (int i = 0; i < 2; i++) {
        if (h_proto != bpf_htons(ETH_P_8021Q) && h_proto != bpf_htons(ETH_P_8021AD))
            break;
        struct vlan_hdr *vh = nh;
        if ((void *)(vh + 1) > data_end)
            return XDP_DROP;
        h_proto = vh->h_vlan_encapsulated_proto;
        nh = vh + 1;
        key.vlans++;
    }
    key.eth_type = bpf_ntohs(h_proto);
    if (h_proto == bpf_htons(ETH_P_IP)) {
        struct iphdr *iph = nh;
        if ((void *)(iph + 1) <= data_end)
            key.ip_proto = iph->protocol;
    } else if (h_proto == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip6h = nh;
        if ((void *)(ip6h + 1) <= data_end)
            key.ip_proto = ip6h->nexthdr;
    }

    __u64 len = data_end - data;
    struct proto_count *c = bpf_map_lookup_elem(&proto_bytes, &key);
    if (c) {
        c->packets += 1;
        c->bytes += len;
    } else {
        struct proto_count init = { .packets = 1, .bytes = len };
        bpf_map_update_elem(&proto_bytes, &key, &init, BPF_NOEXIST);
    }
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
