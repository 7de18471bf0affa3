/* Test frames for the eBPF firmware programs, built in memory (no packet path yet). */
#ifndef NB_PACKETS_H
#define NB_PACKETS_H
#include <stddef.h>
#include <stdint.h>

enum nb_frame_kind {
    NB_QUIC_SHORT_OURS,    /* IPv4/UDP:443, QUIC short header, CID whose checksum marks it "ours" */
    NB_QUIC_SHORT_OTHER,   /* same, another CID */
    NB_QUIC_LONG_V6,       /* IPv6/UDP:443, QUIC long header (Initial) */
    NB_VLAN_UDP_DNS,       /* 802.1Q + IPv4/UDP:53 */
    NB_IPV4_TCP,           /* IPv4/TCP */
    NB_IPV4_TRUNCATED,     /* IPv4 total length beyond the frame */
    NB_QUIC_NO_FIXED_BIT,  /* QUIC short header with the fixed bit clear */
    NB_ARP,                /* ARP request */
    NB_FRAME_KINDS
};

/* Build frame `kind` with `payload` bytes of UDP/TCP payload into buf (room for 14+4+40+8+payload);
 * returns the frame length. cid (8 bytes) is used for the QUIC short-header kinds (NULL: default). */
size_t nb_build_frame(uint8_t *buf, enum nb_frame_kind kind, size_t payload, const uint8_t *cid);
/* The 8-byte CID of NB_QUIC_SHORT_OURS (its bench_parse checksum is 0x5a). */
void nb_ours_cid(uint8_t cid[8]);
const char *nb_frame_name(enum nb_frame_kind kind);
#endif
