/* Maps and frame classification shared by the QUIC XDP programs (xdp_quic_classify.c, xdp_quic.c,
 * xdp_quic_hw.c).
 *
 * Classification (RFC 9000 section 17, RFC 9001): Ethernet, up to two 802.1Q/802.1ad tags, IPv4 (options
 * through IHL; fragments are the host's) or IPv6 (extension headers are the host's), UDP to or from a
 * port in quic_ports, then the QUIC first byte:
 *   long header (0x80): Version Negotiation (version 0) and other versions pass; v1 needs the fixed bit
 *     and valid connection ID, token and length fields; Initial/0-RTT/Handshake/Retry pass to the host
 *     unless NANOBPF_QUIC_CFG_OFFLOAD_LONG is set and the destination CID is in the key table;
 *   short header: needs the fixed bit (0x40). Its destination CID has no length field: a frame to seal
 *     names it (the ENCRYPT shim's cid_len); a frame to open is looked up at each length of
 *     quic_config.open_cid_lens (quic_protect.h). Known -> the 1-RTT path, unknown -> pass.
 *   Several QUIC packets in one datagram (coalesced, RFC 9000 section 12.2: only behind long headers)
 *   are a class of their own (NANOBPF_QUIC_STAT_COALESCED).
 * Zero-length connection IDs name no connection: the key table holds such a peer under its address and
 * the ports (NANOBPF_QUIC_ADDR_*, RFC 9000 section 5.2), computed here from the IP and UDP headers.
 * Anything malformed is dropped with a reason (NANOBPF_QUIC_DROP_*, counted in quic_drops).
 * Counters and reasons come from hw/defs/ebpf.toml (nanobpf_ebpf_defs.h). */
#ifndef NANOBPF_QUIC_PARSE_H
#define NANOBPF_QUIC_PARSE_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "nanobpf_ebpf_defs.h"
#include "nanobpf_ctrl.h" /* the metadata shim (EtherType, flags) */
#include "quic_common.h"

#define ETH_HLEN_ 14
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88a8
#define IPPROTO_UDP_ 17
#define QUIC_MAX_FRAME 9216 /* longest frame handled (jumbo); longer ones are dropped (OVERSIZE) */
#define QUIC_OFF_MASK 0x3fff /* bound of every laundered offset (above QUIC_MAX_FRAME) */

/* The QUIC key table: connection ID -> keys; on NanoBPF backed by the device key table storage. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, NANOBPF_KEYTABLE_ENTRIES);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_keys);
} nanobpf_quic_keys SEC(".maps");

/* UDP ports carrying QUIC (host byte order) -> profile (nonzero). Either port of a datagram may match. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 64);
    __type(key, __u16);
    __type(value, __u32);
} quic_ports SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct nanobpf_quic_config);
} quic_config SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, NANOBPF_QUIC_STAT_COUNT);
    __type(key, __u32);
    __type(value, __u64);
} quic_stats SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, NANOBPF_QUIC_DROP_COUNT);
    __type(key, __u32);
    __type(value, __u64);
} quic_drops SEC(".maps");

/* Per-CPU working memory: the AEAD state, and the cell quic_launder() passes offsets through. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct quic_crypto);
} quic_scratch SEC(".maps");

/* A 16-bit big-endian field of packet data in one load or store: on the device packet memory is
 * uncached, so every access is a bus transaction, and 16-bit fields at even offsets are aligned (the
 * JIT splits a misaligned access into bytes itself). */
static __always_inline __u32 quic_be16(const __u8 *p) {
    return bpf_ntohs(*(const __u16 *)p);
}
static __always_inline void quic_put_be16(__u8 *p, __u32 v) {
    *(__u16 *)p = bpf_htons((__u16)v);
}

static __always_inline void quic_count(void *map, __u32 idx) {
    __u64 *v = bpf_map_lookup_elem(map, &idx);
    if (v)
        *v += 1;
}

static __always_inline int quic_drop(__u32 reason) {
    quic_count(&quic_drops, reason);
    quic_count(&quic_stats, NANOBPF_QUIC_STAT_DROPPED);
    return XDP_DROP;
}

/* What classification found out about a frame (offsets from the frame start). */
struct quic_pkt {
    __u32 l3;      /* IP header */
    __u32 l4;      /* UDP header */
    __u32 q;       /* QUIC packet (UDP payload) */
    __u32 udp_end; /* end of the UDP datagram */
    __u32 pn_off;  /* packet number (v1 Initial/0-RTT/Handshake and short headers) */
    __u32 pkt_end; /* end of the first QUIC packet in the datagram */
    __u32 ipv6;
    __u32 long_hdr;
    __u32 lens; /* quic_find_open's working copy of quic_config.open_cid_lens */
    __u32 pisa; /* classified by PISA's parse result (quic_pisa_classify): bpf_quic_keys_of may name the keys */
    __u32 cid_at; /* 0, or where the destination CID still is in the frame: not copied into cid yet (quic_short_cid_at) */
    /* the key table key: set by classification (long headers, or the shim's length), or by
     * quic_find_open; dir by the path. 8-byte aligned: the device's hash lookups then read it by words
     * (an unaligned key is copied byte by byte first) */
    struct nanobpf_quic_cid cid __attribute__((aligned(8)));
};

#define QUIC_CID_UNKNOWN 0xff /* quic_classify's short_cid_len when the frame does not say it (open) */

/* Classification results besides the NANOBPF_QUIC_STAT_* pass counters. */
#define QUIC_CANDIDATE 100 /* protected packet whose CID must be looked up (pk->cid) */
#define QUIC_NO_HINT 102   /* not classified yet (quic_pisa_classify: PISA's parse result does not decide) */
#define QUIC_DROPPED(reason) (-1 - (int)(reason))

/* QUIC variable-length integer at off (RFC 9000 section 16); its length in *n. -1 if cut short. */
static __always_inline int quic_varint(const __u8 *data, const __u8 *end, __u32 off, __u64 *val, __u32 *n) {
    if (off > QUIC_MAX_FRAME)
        return -1;
    const __u8 *p = data + off;
    if (p + 1 > end)
        return -1;
    __u32 len = 1u << (p[0] >> 6);
    __u64 v = p[0] & 0x3f;
    if (len == 1) {
        *val = v;
    } else if (len == 2) {
        if (p + 2 > end)
            return -1;
        *val = v << 8 | p[1];
    } else if (len == 4) {
        if (p + 4 > end)
            return -1;
        *val = v << 24 | (__u64)p[1] << 16 | (__u64)p[2] << 8 | p[3];
    } else {
        if (p + 8 > end)
            return -1;
        *val = v << 56 | (__u64)p[1] << 48 | (__u64)p[2] << 40 | (__u64)p[3] << 32 | (__u64)p[4] << 24 |
               (__u64)p[5] << 16 | (__u64)p[6] << 8 | p[7];
    }
    *n = len;
    return 0;
}

/* The key table key as three 64-bit words (struct nanobpf_quic_cid: len, id[20], dir, pad), so that it
 * is written with three stores instead of a byte store per field: the device's caches write through, so
 * each store is a bus write. QUIC_CID_BYTE(b, k): byte value b at byte k of the struct, within its word. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "quic_parse.h builds key table keys as little-endian words"
#endif
#define QUIC_CID_BYTE(b, k) ((__u64)(b) << (8 * ((k) & 7)))
_Static_assert(NANOBPF_QUIC_ADDR_IP_OFF == 0 && NANOBPF_QUIC_ADDR_PEER_PORT_OFF == 16 && NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF == 18,
               "quic_addr_id places the address and the ports in these words");
static __always_inline void quic_put_cid(struct nanobpf_quic_cid *cid, __u64 w0, __u64 w1, __u64 w2) {
    __u64 *w = (__u64 *)(void *)cid;
    w[0] = w0;
    w[1] = w1;
    w[2] = w2;
}

/* Copy a connection ID of len bytes (0..20) at off into cid (the caller zeroed the rest: the bytes
 * after the ID and dir). -1 if cut short. Byte stores: an ID is at any offset of the frame, and a loop
 * gathering words in registers cost more instructions than the stores it saved. */
static __always_inline int quic_copy_cid(const __u8 *data, const __u8 *end, __u32 off, __u32 len,
                                         struct nanobpf_quic_cid *cid) {
    if (off > QUIC_MAX_FRAME || len > NANOBPF_KEYTABLE_CID_MAX)
        return -1;
    cid->len = len;
    const __u8 *p = data + off;
    if (p + NANOBPF_KEYTABLE_CID_MAX <= end) {
        /* the usual case (a packet goes on for at least 20 bytes after its CID starts): one bound check,
         * and the copy unrolled (the loop below is not, and tests the bound for each byte) */
        NB_UNROLL
        for (__u32 i = 0; i < NANOBPF_KEYTABLE_CID_MAX; i++)
            if (i < len)
                cid->id[i] = p[i];
        return 0;
    }
    for (__u32 i = 0; i < NANOBPF_KEYTABLE_CID_MAX; i++) {
        if (i >= len)
            break;
        if (p + i + 1 > end)
            return -1;
        cid->id[i] = p[i];
    }
    return 0;
}

static __always_inline int quic_is_port(__u16 port) {
    __u32 *profile = bpf_map_lookup_elem(&quic_ports, &port);
    return profile && *profile;
}

/* Long header after the first byte (RFC 9000 section 17.2). */
static __always_inline int quic_parse_long(const __u8 *data, const __u8 *end, const struct nanobpf_quic_config *cfg,
                                           struct quic_crypto *c, struct quic_pkt *pk, __u32 missing) {
    __u32 o = pk->q;
    const __u8 *p = data + o;
    if (p + 6 > end)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u8 first = p[0];
    __u32 version = (__u32)p[1] << 24 | (__u32)p[2] << 16 | (__u32)p[3] << 8 | p[4];
    if (version == 0)
        return NANOBPF_QUIC_STAT_VERSION_NEGOTIATION;
    if (version != 1)
        return NANOBPF_QUIC_STAT_LONG_HEADER; /* another version: its rules are not ours to check */
    if (!(first & 0x40))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_NO_FIXED_BIT);
    __u32 dcid_len = p[5];
    if (dcid_len > NANOBPF_KEYTABLE_CID_MAX)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_BAD_CID_LENGTH);
    if (quic_copy_cid(data, end, o + 6, dcid_len, &pk->cid))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    o += 6 + dcid_len;
    p = data + o;
    if (p + 1 > end)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u32 scid_len = p[0];
    if (scid_len > NANOBPF_KEYTABLE_CID_MAX)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_BAD_CID_LENGTH);
    o = quic_launder(c, o + 1 + scid_len, QUIC_OFF_MASK);
    __u32 type = (first >> 4) & 3;
    if (type == 3) { /* Retry: the rest is the token and the integrity tag */
        if (o + 16 > pk->udp_end)
            return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
        return NANOBPF_QUIC_STAT_LONG_HEADER;
    }
    __u64 v;
    __u32 n;
    if (type == 0) { /* Initial: token */
        if (quic_varint(data, end, o, &v, &n) || o + n + v > pk->udp_end)
            return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
        o = quic_launder(c, o + n + (__u32)v, QUIC_OFF_MASK);
    }
    if (quic_varint(data, end, o, &v, &n)) /* Length: packet number and payload */
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    o += n;
    if (v < 1 + missing || o + v > pk->udp_end + missing)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    pk->pn_off = o;
    pk->pkt_end = quic_launder(c, o + (__u32)v - missing, QUIC_OFF_MASK);
    pk->long_hdr = 1;
    if (pk->pkt_end != pk->udp_end)
        return NANOBPF_QUIC_STAT_COALESCED; /* more packets follow: the datagram is handled as a whole */
    if (!(cfg->flags & NANOBPF_QUIC_CFG_OFFLOAD_LONG) || o + 4 - pk->q > QUIC_MAX_AAD)
        return NANOBPF_QUIC_STAT_LONG_HEADER; /* not offloaded, or a header (token) longer than QUIC_MAX_AAD */
    return QUIC_CANDIDATE;
}

/* The key of a peer that uses zero-length connection IDs (NANOBPF_QUIC_ADDR_*): its IPv6 address (IPv4
 * mapped), its UDP port and the local one. The peer is the source (peer_is_src: frames from the
 * network) or the destination (frames from the host). Sets pk->cid's len 0 and id; -1 if the headers
 * are cut. A global function: it is verified once for its three callers. */
__noinline int quic_addr_id(struct xdp_md *ctx, struct quic_pkt *pk, int peer_is_src) {
    if (!pk)
        return -1;
    const __u8 *data = (const __u8 *)(long)ctx->data, *end = (const __u8 *)(long)ctx->data_end;
    const __u8 *ip = data + (pk->l3 & QUIC_OFF_MASK), *udp = data + (pk->l4 & QUIC_OFF_MASK);
    if (udp + 8 > end)
        return -1;
    /* id[i] is the struct's byte i + 1: the address is bytes 1..16, the ports 17..20 (quic_put_cid) */
    __u64 w0 = 0, w1 = 0, w2 = 0;
    if (pk->ipv6) {
        if (ip + 40 > end)
            return -1;
        const __u8 *a = peer_is_src ? ip + 8 : ip + 24;
        NB_UNROLL
        for (int i = 0; i < 7; i++)
            w0 |= QUIC_CID_BYTE(a[i], NANOBPF_QUIC_ADDR_IP_OFF + 1 + i);
        NB_UNROLL
        for (int i = 7; i < 15; i++)
            w1 |= QUIC_CID_BYTE(a[i], NANOBPF_QUIC_ADDR_IP_OFF + 1 + i);
        w2 = QUIC_CID_BYTE(a[15], NANOBPF_QUIC_ADDR_IP_OFF + 16);
    } else {
        if (ip + 20 > end)
            return -1;
        const __u8 *a = peer_is_src ? ip + 12 : ip + 16; /* ::ffff:a.b.c.d */
        w1 = QUIC_CID_BYTE(0xff, NANOBPF_QUIC_ADDR_IP_OFF + 11) | QUIC_CID_BYTE(0xff, NANOBPF_QUIC_ADDR_IP_OFF + 12) |
             QUIC_CID_BYTE(a[0], NANOBPF_QUIC_ADDR_IP_OFF + 13) | QUIC_CID_BYTE(a[1], NANOBPF_QUIC_ADDR_IP_OFF + 14) |
             QUIC_CID_BYTE(a[2], NANOBPF_QUIC_ADDR_IP_OFF + 15);
        w2 = QUIC_CID_BYTE(a[3], NANOBPF_QUIC_ADDR_IP_OFF + 16);
    }
    const __u8 *peer = peer_is_src ? udp : udp + 2, *local = peer_is_src ? udp + 2 : udp;
    w2 |= QUIC_CID_BYTE(peer[0], NANOBPF_QUIC_ADDR_PEER_PORT_OFF + 1) | QUIC_CID_BYTE(peer[1], NANOBPF_QUIC_ADDR_PEER_PORT_OFF + 2) |
          QUIC_CID_BYTE(local[0], NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF + 1) |
          QUIC_CID_BYTE(local[1], NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF + 2);
    quic_put_cid(&pk->cid, w0, w1, w2); /* len 0, dir 0: the caller sets dir */
    return 0;
}

/* A short header's destination CID of len bytes (0..20: the length the shim named) into pk->cid, and
 * pk->pn_off after it: QUIC_CANDIDATE, or QUIC_DROPPED(QUIC_TRUNCATED). */
static __always_inline int quic_short_cid(const __u8 *data, const __u8 *end, struct quic_pkt *pk, __u32 len) {
    if (len > NANOBPF_KEYTABLE_CID_MAX || quic_copy_cid(data, end, pk->q + 1, len, &pk->cid) || pk->q + 1 + len > pk->udp_end)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    pk->pn_off = pk->q + 1 + len;
    return QUIC_CANDIDATE;
}

/* Classify the frame: a NANOBPF_QUIC_STAT_* pass counter, QUIC_CANDIDATE, or QUIC_DROPPED(reason).
 * missing: bytes a long header's Length counts that are not in the frame yet (16, the tag, for
 * packets from the host that are still to be sealed; 0 otherwise). short_cid_len: the destination CID
 * length of a short header (0..20, copied into pk->cid and pk->pn_off set), or QUIC_CID_UNKNOWN (the
 * caller finds it: quic_find_open). */
static __always_inline int quic_classify(struct xdp_md *ctx, const struct nanobpf_quic_config *cfg,
                                         struct quic_crypto *c, struct quic_pkt *pk, __u32 missing,
                                         __u32 short_cid_len) {
    const __u8 *data = (const __u8 *)(long)ctx->data, *end = (const __u8 *)(long)ctx->data_end;
    if (data + QUIC_MAX_FRAME < end)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_OVERSIZE);
    if (data + ETH_HLEN_ > end)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_TRUNCATED);
    __u32 o = 12;
    __u16 type = quic_be16(data + 12);
    for (int i = 0; i < 2; i++) {
        if (type != ETHERTYPE_VLAN && type != ETHERTYPE_QINQ)
            break;
        if (data + o + 6 > end)
            return QUIC_DROPPED(NANOBPF_QUIC_DROP_TRUNCATED);
        type = quic_be16(data + o + 4);
        o += 4;
    }
    o = quic_launder(c, o + 2, QUIC_OFF_MASK);
    pk->l3 = o;
    const __u8 *ip = data + o;
    __u32 ip_end;
    if (type == ETHERTYPE_IPV4) {
        if (ip + 20 > end)
            return QUIC_DROPPED(NANOBPF_QUIC_DROP_TRUNCATED);
        __u32 ihl = (ip[0] & 0xf) * 4, total = quic_be16(ip + 2);
        if ((ip[0] >> 4) != 4 || ihl < 20 || total < ihl || ip + total > end)
            return QUIC_DROPPED(NANOBPF_QUIC_DROP_BAD_IPV4);
        if (ip[9] != IPPROTO_UDP_ || (quic_be16(ip + 6) & 0x3fff))
            return NANOBPF_QUIC_STAT_NOT_QUIC; /* not UDP, or a fragment (MF set or offset nonzero) */
        ip_end = o + total;
        o += ihl;
    } else if (type == ETHERTYPE_IPV6) {
        if (ip + 40 > end)
            return QUIC_DROPPED(NANOBPF_QUIC_DROP_TRUNCATED);
        __u32 plen = quic_be16(ip + 4);
        if ((ip[0] >> 4) != 6 || ip + 40 + plen > end)
            return QUIC_DROPPED(NANOBPF_QUIC_DROP_BAD_IPV6);
        if (ip[6] != IPPROTO_UDP_)
            return NANOBPF_QUIC_STAT_NOT_QUIC; /* another protocol or an extension header */
        ip_end = o + 40 + plen;
        o += 40;
        pk->ipv6 = 1;
    } else {
        return NANOBPF_QUIC_STAT_NOT_QUIC;
    }
    o = quic_launder(c, o, QUIC_OFF_MASK);
    ip_end = quic_launder(c, ip_end, QUIC_OFF_MASK);
    pk->l4 = o;
    const __u8 *udp = data + o;
    if (udp + 8 > end || o + 8 > ip_end)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_TRUNCATED);
    __u32 ulen = quic_be16(udp + 4);
    if (ulen < 8 || o + ulen > ip_end)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_BAD_UDP_LENGTH);
    __u16 sport = quic_be16(udp), dport = quic_be16(udp + 2);
    /* the host's own port first (the source of what it sends, the destination of what it receives):
     * the QUIC port of the server a DPU fronts, so a server's seal does one hash lookup, not two. A
     * client host's seal (from an ephemeral port) does two, which a server's did before. */
    __u16 mine = missing ? sport : dport, peer = missing ? dport : sport;
    if (!quic_is_port(mine) && !quic_is_port(peer))
        return NANOBPF_QUIC_STAT_NOT_QUIC;
    pk->udp_end = quic_launder(c, o + ulen, QUIC_OFF_MASK);
    pk->q = o + 8;
    const __u8 *q = data + pk->q;
    if (pk->q >= pk->udp_end || q + 1 > end)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    if (q[0] & 0x80)
        return quic_parse_long(data, end, cfg, c, pk, missing);
    if (!(q[0] & 0x40))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_NO_FIXED_BIT);
    pk->pkt_end = pk->udp_end;
    if (short_cid_len == QUIC_CID_UNKNOWN)
        return QUIC_CANDIDATE;
    return quic_short_cid(data, end, pk, short_cid_len);
}

/* quic_short_cid for a frame PISA classified (NanoBPF only): the CID's length checked as quic_short_cid
 * checks it (the same drop where its copy would fail: past the frame's end or the datagram's), the CID
 * itself left in the frame, where bpf_quic_keys_of reads it; quic_seal copies it (pk->cid_at) only when
 * it has to look the keys up itself. Packet memory is uncached: each byte copied was a bus read. */
static __always_inline int quic_short_cid_at(const __u8 *data, const __u8 *end, struct quic_pkt *pk, __u32 len) {
    __u32 off = pk->q + 1;
    if (len > NANOBPF_KEYTABLE_CID_MAX || off > QUIC_MAX_FRAME || data + off + len > end || off + len > pk->udp_end)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    pk->cid.len = len;
    pk->cid_at = off;
    pk->pn_off = off + len;
    return QUIC_CANDIDATE;
}

/* Whether a short header's destination CID of l bytes has an OPEN entry, when pk->lens has bit l
 * (then pk->cid and pk->pn_off are set for it). */
__noinline int quic_try_open_cid(struct xdp_md *ctx, struct quic_pkt *pk, __u32 l) {
    if (!pk || l == 0 || l > NANOBPF_KEYTABLE_CID_MAX || !((pk->lens >> l) & 1))
        return 0;
    const __u8 *data = (const __u8 *)(long)ctx->data, *end = (const __u8 *)(long)ctx->data_end;
    __u32 q = pk->q & QUIC_OFF_MASK, udp_end = pk->udp_end & QUIC_OFF_MASK;
    if (q + 1 + l > udp_end)
        return 0;
    __builtin_memset(&pk->cid, 0, sizeof pk->cid);
    if (quic_copy_cid(data, end, q + 1, l, &pk->cid))
        return 0;
    pk->cid.dir = NANOBPF_QUIC_DIR_OPEN;
    if (!bpf_map_lookup_elem(&nanobpf_quic_keys, &pk->cid))
        return 0;
    pk->pn_off = q + 1 + l;
    return 1;
}

#ifdef QUIC_PISA_HINT

/* Classification by PISA's parse result (NanoBPF only: the context fields past xdp_md), for a frame
 * PISA parsed to a QUIC short header:
 *   from the network (shim 0), of a connection in its CID table (conn set). An IPv4 or IPv6 header
 *     there also means the frame carries no shim (its EtherType is IP or a VLAN tag);
 *   from the host (shim QUIC_SHIM_LEN), a frame to seal, behind the shim PISA stepped over and
 *     quic_take_shim has removed since (the offsets count it).
 * PISA has checked what quic_classify would - IP version and header length, IPv4 total length and
 * header checksum, no fragment, IPv6 payload length, UDP length (from the network, frames failing
 * those are dropped before any program runs; behind the shim they come unparsed, and quic_classify
 * drops them: docs/pisa.md "Parser") - and matched the UDP port to a QUIC profile of the logical port
 * (the destination from the network, the source from the host: the host's own), which takes the place
 * of the quic_ports lookup here. Only the IP version, the UDP length and the QUIC first byte are read:
 * pk as quic_classify sets it for a short header of unknown CID length; QUIC_CANDIDATE,
 * QUIC_DROPPED(NO_FIXED_BIT), or QUIC_NO_HINT (no such result: quic_classify decides). */
static __always_inline int quic_pisa_classify(struct xdp_md *ctx, struct quic_crypto *c, struct quic_pkt *pk, __u32 shim) {
    const struct nanobpf_xdp_ctx *pc = (const struct nanobpf_xdp_ctx *)(void *)ctx;
    __u32 conn = pc->conn, l3 = pc->l3_off, l4 = pc->l4_off, q = pc->quic_off, pn = pc->pn_off;
    if ((!shim && !conn) || l3 < ETH_HLEN_ + shim || !pn || l4 <= l3 || q != l4 + 8)
        return QUIC_NO_HINT;
    /* the checks above keep these from wrapping; the masks tell the verifier so */
    l3 = (l3 - shim) & QUIC_OFF_MASK, l4 = (l4 - shim) & QUIC_OFF_MASK, q = (q - shim) & QUIC_OFF_MASK;
    const __u8 *data = (const __u8 *)(long)ctx->data, *end = (const __u8 *)(long)ctx->data_end;
    if (data + QUIC_MAX_FRAME < end) /* PISA's max_frame is larger: quic_classify drops it (OVERSIZE) */
        return QUIC_NO_HINT;
    const __u8 *ip = data + l3, *udp = data + l4, *first = data + q;
    if (ip + 1 > end || udp + 8 > end || first + 1 > end)
        return QUIC_NO_HINT;
    __u32 ulen = quic_be16(udp + 4);
    if (q >= l4 + ulen || (first[0] & 0x80))
        return QUIC_NO_HINT;
    pk->l3 = l3;
    pk->l4 = l4;
    pk->q = q;
    pk->ipv6 = (ip[0] >> 4) == 6;
    pk->udp_end = quic_launder(c, l4 + ulen, QUIC_OFF_MASK);
    pk->pkt_end = pk->udp_end;
    if (!(first[0] & 0x40))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_NO_FIXED_BIT);
    pk->pisa = 1;
    return QUIC_CANDIDATE;
}

/* The keys of a short header quic_pisa_classify classified, by PISA's connection (NanoBPF only): the
 * device reads the key the frame names - the CID PISA read, or the peer's address id for length 0 -
 * and compares it with the entry at conn's slot (bpf_quic_keys_of), so no key is built here. An open
 * takes PISA's CID length only when quic_config lists it (lens) and sets pk->pn_off after it; a seal's
 * length is the shim's, which PISA read too. NULL: the caller builds the key and looks it up. */
static __always_inline const struct nanobpf_quic_keys *quic_pisa_keys(struct xdp_md *ctx, struct quic_pkt *pk, __u32 dir,
                                                                      __u32 lens) {
    if (!pk->pisa || pk->long_hdr)
        return NULL;
    const struct nanobpf_xdp_ctx *pc = (const struct nanobpf_xdp_ctx *)(void *)ctx;
    __u32 l = pc->cid_len, q = pk->q & QUIC_OFF_MASK;
    if (dir == NANOBPF_QUIC_DIR_OPEN && (l > NANOBPF_KEYTABLE_CID_MAX || !((lens >> l) & 1) || q + 1 + l > (pk->udp_end & QUIC_OFF_MASK)))
        return NULL;
    const struct nanobpf_quic_keys *keys = bpf_quic_keys_of(ctx, &nanobpf_quic_keys, dir);
    if (keys && dir == NANOBPF_QUIC_DIR_OPEN)
        pk->pn_off = q + 1 + l;
    return keys;
}

/* The fast path of a short header from the network (NanoBPF only: the context fields past xdp_md):
 * PISA's CID table matched the destination CID at its profile's length, or for length 0 the peer's
 * address id (conn set, and PISA's QUIC header is the one classification found). Sets pk->cid
 * (direction OPEN) and pk->pn_off for that
 * length and returns it; -1 without such a result, or for a length quic_config does not list (lens).
 * No lookup: the caller's one lookup decides, and a miss there takes the trials (quic_find_open).
 * A global function, so the caller sees one unknown result. */
__noinline int quic_pisa_cid(struct xdp_md *ctx, struct quic_pkt *pk, __u32 lens) {
    if (!pk || pk->long_hdr)
        return -1;
    const struct nanobpf_xdp_ctx *pc = (const struct nanobpf_xdp_ctx *)(void *)ctx;
    __u32 conn = pc->conn, l = pc->cid_len, pq = pc->quic_off;
    const __u8 *data = (const __u8 *)(long)ctx->data, *end = (const __u8 *)(long)ctx->data_end;
    __u32 q = pk->q & QUIC_OFF_MASK, udp_end = pk->udp_end & QUIC_OFF_MASK;
    if (!conn || l > NANOBPF_KEYTABLE_CID_MAX || pq != q || !((lens >> l) & 1) || q + 1 + l > udp_end)
        return -1;
    __builtin_memset(&pk->cid, 0, sizeof pk->cid);
    if (l == 0 ? quic_addr_id(ctx, pk, 1) : quic_copy_cid(data, end, q + 1, l, &pk->cid)) /* 0: by the peer's address */
        return -1;
    pk->cid.dir = NANOBPF_QUIC_DIR_OPEN;
    pk->pn_off = q + 1 + l;
    return l;
}
#endif

/* The OPEN entry of a packet from the network: its destination CID tried at each length
 * of lens (quic_config.open_cid_lens), longest first, then (bit 0) the peer's address for a
 * zero-length CID; a long header's own destination CID. Sets pk->cid (and a short header's pk->pn_off);
 * returns the CID length, or -1 (not ours). A global
 * function: the caller sees one unknown length, so what follows is verified once. */
__noinline int quic_find_open(struct xdp_md *ctx, struct quic_pkt *pk, __u32 lens) {
    if (!pk)
        return -1;
    if (pk->long_hdr) { /* the header says the length; zero-length: by address */
        if (pk->cid.len == 0 && quic_addr_id(ctx, pk, 1))
            return -1;
        pk->cid.dir = NANOBPF_QUIC_DIR_OPEN;
        return pk->cid.len;
    }
    pk->lens = lens;
    /* one global call per length: the verifier sees an unknown result each time, so the 2^20 ways
     * through the loop are one */
#pragma clang loop unroll(disable)
    for (__u32 l = NANOBPF_KEYTABLE_CID_MAX; l > 0; l--)
        if (quic_try_open_cid(ctx, pk, l))
            return l;
    if (!(pk->lens & 1))
        return -1;
    if (quic_addr_id(ctx, pk, 1))
        return -1;
    pk->cid.dir = NANOBPF_QUIC_DIR_OPEN;
    pk->pn_off = (pk->q & QUIC_OFF_MASK) + 1;
    return 0;
}

#endif
