/* Test frames for the eBPF firmware programs. */
#include <string.h>
#include "packets.h"

static const char *const names[NB_FRAME_KINDS] = {
    "quic-short-ours", "quic-short-other", "quic-long-v6", "vlan-udp-dns",
    "ipv4-tcp", "ipv4-truncated", "quic-no-fixed-bit", "arp",
};
const char *nb_frame_name(enum nb_frame_kind kind) { return kind < NB_FRAME_KINDS ? names[kind] : "?"; }

void nb_ours_cid(uint8_t cid[8]) {
    unsigned sum = 0;
    for (int i = 0; i < 7; i++) {
        cid[i] = (uint8_t)(0x10 + 7 * i);
        sum = sum * 31 + cid[i];
    }
    cid[7] = (uint8_t)(0x5a - sum * 31); /* makes (sum * 31 + cid[7]) & 0xff == 0x5a */
}

static void put16(uint8_t *p, unsigned v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

size_t nb_build_frame(uint8_t *buf, enum nb_frame_kind kind, size_t payload, const uint8_t *cid) {
    static const uint8_t mac[12] = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2};
    uint8_t *p = buf;
    memcpy(p, mac, 12);
    p += 12;
    if (kind == NB_VLAN_UDP_DNS) {
        put16(p, 0x8100);
        put16(p + 2, 42);
        p += 4;
    }
    if (kind == NB_ARP) {
        put16(p, 0x0806);
        memset(p + 2, 0, 28 + payload);
        put16(p + 2, 1);
        put16(p + 4, 0x0800);
        return (size_t)(p + 30 + payload - buf);
    }
    int v6 = kind == NB_QUIC_LONG_V6, tcp = kind == NB_IPV4_TCP;
    size_t l4len = (tcp ? 20 : 8) + payload;
    put16(p, v6 ? 0x86dd : 0x0800);
    p += 2;
    if (v6) {
        memset(p, 0, 40);
        p[0] = 0x60;
        put16(p + 4, (unsigned)l4len);
        p[6] = 17;
        p[7] = 64;
        for (int i = 0; i < 16; i++) p[8 + i] = (uint8_t)i, p[24 + i] = (uint8_t)(0x20 + i);
        p += 40;
    } else {
        memset(p, 0, 20);
        p[0] = 0x45;
        put16(p + 2, (unsigned)(20 + l4len + (kind == NB_IPV4_TRUNCATED ? 100 : 0)));
        p[8] = 64;
        p[9] = tcp ? 6 : 17;
        p[12] = 10, p[15] = 1, p[16] = 10, p[19] = 2;
        p += 20;
    }
    uint8_t *l4 = p;
    memset(l4, 0, l4len);
    put16(l4, 50000);
    put16(l4 + 2, kind == NB_VLAN_UDP_DNS ? 53 : 443);
    if (!tcp) put16(l4 + 4, (unsigned)l4len);
    uint8_t *q = l4 + (tcp ? 20 : 8);
    for (size_t i = 0; i < payload; i++) q[i] = (uint8_t)(i * 13 + 7);
    if (kind == NB_QUIC_SHORT_OURS || kind == NB_QUIC_SHORT_OTHER || kind == NB_QUIC_NO_FIXED_BIT) {
        uint8_t ours[8];
        nb_ours_cid(ours);
        q[0] = kind == NB_QUIC_NO_FIXED_BIT ? 0x01 : 0x41;
        if (cid) memcpy(q + 1, cid, 8);
        else if (kind == NB_QUIC_SHORT_OTHER) memcpy(q + 1, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
        else memcpy(q + 1, ours, 8);
    } else if (kind == NB_QUIC_LONG_V6) {
        q[0] = 0xc3;
        q[1] = 0, q[2] = 0, q[3] = 0, q[4] = 1; /* version 1 */
    }
    return (size_t)(q + payload - buf);
}
