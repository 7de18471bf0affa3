#include "corpus.h"
#include <linux/ipv6.h>
/* Skip up to 4 IPv6 extension headers (variable length) to find UDP. */
SEC("xdp")
int ipv6_ext(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end) return XDP_DROP;
    if (eth->h_proto != bpf_htons(ETH_P_IPV6)) return XDP_PASS;
    struct ipv6hdr *ip6 = (void *)(eth + 1);
    if ((void *)(ip6 + 1) > end) return XDP_DROP;
    __u8 nh = ip6->nexthdr;
    unsigned char *p = (unsigned char *)(ip6 + 1);
    #pragma unroll
    for (int i = 0; i < 4; i++) {
        if (nh != 0 && nh != 43 && nh != 60) break;
        if (p + 2 > (unsigned char *)end) return XDP_DROP;
        nh = p[0];
        p += (p[1] + 1) * 8;
    }
    if (nh != IPPROTO_UDP) return XDP_PASS;
    struct udphdr *udp = (void *)p;
    if ((void *)(udp + 1) > end) return XDP_DROP;
    return udp->dest == bpf_htons(53) ? XDP_TX : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
