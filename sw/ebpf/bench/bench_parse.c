/* Benchmark workload "parse": a packet classifier in the shape of the QUIC offload's first stage.
 * Ethernet, up to two 802.1Q tags, IPv4 (options via IHL) or IPv6, UDP; QUIC on port 443/4433:
 * long header -> PASS (host), short header with the fixed bit -> TX when the 8-byte destination
 * connection ID is "ours" (a checksum of it matches), else PASS; anything malformed -> DROP. No maps or
 * helpers, so the same source runs natively for the baseline. */
#include "nanobpf_xdp.h"

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
#define IPPROTO_UDP 17
#define CID_LEN 8

SEC("xdp")
int bench_parse(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    unsigned char *p = data + 14;
    if (p > end) return XDP_DROP;
    __u16 proto = (__u16)(data[12] << 8 | data[13]);
NB_UNROLL
    for (int i = 0; i < 2; i++) {
        if (proto != ETH_P_8021Q && proto != ETH_P_8021AD) break;
        if (p + 4 > end) return XDP_DROP;
        proto = (__u16)(p[2] << 8 | p[3]);
        p += 4;
    }
    unsigned l4proto;
    if (proto == ETH_P_IP) {
        if (p + 20 > end) return XDP_DROP;
        unsigned ihl = (p[0] & 0x0f) * 4;
        if ((p[0] >> 4) != 4 || ihl < 20) return XDP_DROP;
        unsigned total = (unsigned)(p[2] << 8 | p[3]);
        if (total < ihl || p + total > end) return XDP_DROP;
        if ((p[6] & 0x3f) | p[7]) return XDP_PASS; /* fragments go to the host */
        l4proto = p[9];
        p += ihl;
    } else if (proto == ETH_P_IPV6) {
        if (p + 40 > end) return XDP_DROP;
        if ((p[0] >> 4) != 6) return XDP_DROP;
        l4proto = p[6];
        p += 40;
    } else {
        return XDP_PASS;
    }
    if (l4proto != IPPROTO_UDP) return XDP_PASS;
    if (p + 8 > end) return XDP_DROP;
    unsigned dport = (unsigned)(p[2] << 8 | p[3]);
    unsigned ulen = (unsigned)(p[4] << 8 | p[5]);
    if (ulen < 8 || p + ulen > end) return XDP_DROP;
    if (dport != 443 && dport != 4433) return XDP_PASS;
    unsigned char *q = p + 8;
    if (q + 1 + CID_LEN > end) return XDP_DROP;
    if (q[0] & 0x80) return XDP_PASS;      /* long header: Initial, Handshake, ... */
    if (!(q[0] & 0x40)) return XDP_DROP;   /* short header needs the fixed bit */
    unsigned sum = 0;
NB_UNROLL
    for (int i = 0; i < CID_LEN; i++) sum = sum * 31 + q[1 + i];
    return (sum & 0xff) == 0x5a ? XDP_TX : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
