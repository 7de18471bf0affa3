/* Must be accepted: Linux header structs (ethhdr, iphdr, udphdr) read through typed pointers; the
 * 4-byte address loads land on 2-byte-aligned offsets (a misaligned access on CVA6). */
#include "nanobpf_xdp.h"
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <linux/in.h>
SEC("xdp")
int prog(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end) return XDP_DROP;
    if (eth->h_proto != bpf_htons(ETH_P_IP)) return XDP_PASS;
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > end) return XDP_DROP;
    if (ip->protocol != IPPROTO_UDP || ip->ihl != 5) return XDP_PASS;
    struct udphdr *udp = (void *)(ip + 1);
    if ((void *)(udp + 1) > end) return XDP_DROP;
    __u32 mix = ip->saddr ^ ip->daddr ^ udp->dest;
    ip->ttl--;
    return (mix & 1) ? XDP_TX : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
