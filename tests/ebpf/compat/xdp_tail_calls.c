/* Style: Cilium's and Katran's dispatchers and xdp-tutorial's tail-call examples: a root program jumps
 * to a per-protocol program through a PROG_ARRAY filled by user space, and passes the frame when the
 * slot is empty. Feature: BPF_MAP_TYPE_PROG_ARRAY and bpf_tail_call (the attached program replaced,
 * its caller getting the new program's action), an empty slot (the call fails and the program goes
 * on), and the limit of 33 tail calls per run (a program that tail-calls itself: the 34th call fails).
 * Slots: 0 IPv4, 1 IPv6, 2 the chain, 3 never set. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xdp_counters.h"

struct {
    __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, __u32);
} jmp_table SEC(".maps");

/* per slot: frames that reached it; [4]: runs of the chain in the last chained frame; [5]: passed */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 6);
    __type(key, __u32);
    __type(value, __u64);
} reached SEC(".maps");

SEC("xdp")
int xdp_dispatch(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    __u32 k = 4;

    if ((void *)(eth + 1) > data_end)
        return XDP_DROP;
    if (eth->h_proto == bpf_htons(ETH_P_IP))
        bpf_tail_call(ctx, &jmp_table, 0);
    else if (eth->h_proto == bpf_htons(ETH_P_IPV6))
        bpf_tail_call(ctx, &jmp_table, 1);
    else if (eth->h_proto == bpf_htons(ETH_P_ARP)) {
        __u64 *runs = bpf_map_lookup_elem(&reached, &k);
        if (runs)
            *runs = 0;
        bpf_tail_call(ctx, &jmp_table, 2);
    } else
        bpf_tail_call(ctx, &jmp_table, 3); /* never set: goes on */
    counter_inc(&reached, 5);
    return XDP_PASS;
}

SEC("xdp")
int xdp_ipv4(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct iphdr *iph = data + sizeof(struct ethhdr);

    counter_inc(&reached, 0);
    if ((void *)(iph + 1) > data_end)
        return XDP_DROP;
    return iph->ttl <= 1 ? XDP_DROP : XDP_PASS;
}

SEC("xdp")
int xdp_ipv6(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ipv6hdr *ip6h = data + sizeof(struct ethhdr);

    counter_inc(&reached, 1);
    if ((void *)(ip6h + 1) > data_end)
        return XDP_DROP;
    return ip6h->hop_limit <= 1 ? XDP_DROP : XDP_TX;
}

SEC("xdp")
int xdp_chain(struct xdp_md *ctx)
{
    counter_inc(&reached, 2);
    counter_inc(&reached, 4);
    bpf_tail_call(ctx, &jmp_table, 2); /* itself, until the limit */
    return XDP_ABORTED + 1;              /* XDP_DROP: the call failed */
}

char _license[] SEC("license") = "GPL";
