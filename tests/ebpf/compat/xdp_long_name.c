/* Style: any libbpf program with a descriptive function name (libbpf finds programs by their full
 * function name; the Linux kernel keeps only the first 15 bytes as the program's name). Feature: a
 * 40-byte function name, longer than the device image's 31-byte name field: the loader accepts it,
 * keeps the first 31 bytes in the image, and `nanobpf-load -p` matches the full name. The program
 * counts IPv4 and IPv6 frames by IP protocol (next header for IPv6, not followed past extensions). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 512);  /* [0..255] IPv4 protocols, [256..511] IPv6 next headers */
    __type(key, __u32);
    __type(value, __u64);
} ip_protocols SEC(".maps");

SEC("xdp")
int xdp_count_ipv4_and_ipv6_packets_by_proto(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    __u32 key;

    if ((void *)(eth + 1) > data_end)
        return XDP_PASS;
    if (eth->h_proto == bpf_htons(ETH_P_IP)) {
        struct iphdr *iph = (void *)(eth + 1);
        if ((void *)(iph + 1) > data_end)
            return XDP_PASS;
        key = iph->protocol;
    } else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip6h = (void *)(eth + 1);
        if ((void *)(ip6h + 1) > data_end)
            return XDP_PASS;
        key = 256 + ip6h->nexthdr;
    } else {
        return XDP_PASS;
    }
    __u64 *n = bpf_map_lookup_elem(&ip_protocols, &key);
    if (n)
        __sync_fetch_and_add(n, 1);
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
