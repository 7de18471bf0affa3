#include "corpus.h"
/* Walk TCP options (variable length) looking for MSS; clamp it to 1400 in place. */
SEC("xdp")
int tcp_options(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end) return XDP_DROP;
    if (eth->h_proto != bpf_htons(ETH_P_IP)) return XDP_PASS;
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > end) return XDP_DROP;
    if (ip->protocol != IPPROTO_TCP) return XDP_PASS;
    __u32 ihl = ip->ihl * 4;
    if (ihl < sizeof(*ip)) return XDP_DROP;
    struct tcphdr *tcp = (void *)ip + ihl;
    if ((void *)(tcp + 1) > end) return XDP_DROP;
    __u32 doff = tcp->doff * 4;
    if (doff <= sizeof(*tcp)) return XDP_PASS;
    unsigned char *opt = (unsigned char *)(tcp + 1);
    unsigned char *opt_end = (unsigned char *)tcp + doff;
    #pragma clang loop unroll(disable)
    for (int i = 0; i < 10; i++) {
        if (opt + 1 > (unsigned char *)end || opt >= opt_end) break;
        unsigned char kind = opt[0];
        if (kind == 0) break;
        if (kind == 1) { opt++; continue; }
        if (opt + 2 > (unsigned char *)end) break;
        unsigned char len = opt[1];
        if (len < 2) break;
        if (kind == 2 && len == 4) {
            if (opt + 4 > (unsigned char *)end) break;
            __u16 mss = (opt[2] << 8) | opt[3];
            if (mss > 1400) { opt[2] = 1400 >> 8; opt[3] = 1400 & 0xff; }
            return XDP_TX;
        }
        opt += len;
    }
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
