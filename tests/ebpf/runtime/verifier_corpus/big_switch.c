#include "corpus.h"
/* Classify by a byte with many cases, each reading a different header field. */
SEC("xdp")
int big_switch(struct xdp_md *ctx) {
    unsigned char *d = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    if (d + 64 > end) return XDP_DROP;
    int act = XDP_PASS;
    switch (d[20]) {
    case 1: act = d[30] > 3 ? XDP_DROP : XDP_PASS; break;
    case 2: act = (d[31] & 1) ? XDP_TX : XDP_PASS; break;
    case 3: if (d[32] == d[33]) act = XDP_DROP; break;
    case 4: act = d[34] ^ d[35] ? 2 : 1; break;
    case 5: if (*(__u16 *)(d + 36) == 0x1234) act = XDP_TX; break;
    case 6: if (*(__u32 *)(d + 40) > 100) act = XDP_DROP; break;
    case 7: act = d[44] % 3 + 1; break;
    case 8: if (d[45] < d[46]) act = XDP_TX; break;
    case 9: if (d[47] & 0x80) act = XDP_DROP; break;
    case 10: act = d[48] == 7 ? 3 : 2; break;
    case 11: if (d[49] + d[50] > 200) act = 1; break;
    case 12: if (d[51]) act = 3; break;
    default: break;
    }
    /* more independent tests after the join */
    if (d[52] == 1) act = XDP_DROP;
    if (d[53] == 2) act = XDP_TX;
    if (d[54] == 3 && act == XDP_PASS) act = XDP_DROP;
    return act;
}
char _license[] SEC("license") = "GPL";
