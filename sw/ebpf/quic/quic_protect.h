/* QUIC packet protection (RFC 9001) as an XDP program, written once for two crypto backends: xdp_quic.c
 * computes AES-128-GCM in eBPF (quic_crypto.h), xdp_quic_hw.c calls the device helpers quic_aead_seal,
 * quic_aead_open and quic_hp_mask (nanobpf_helpers.h). Everything else is here and shared: the
 * classification (quic_parse.h), header protection removal and application, packet number decoding,
 * key phase selection, lengths, checksums, counters and the program's decisions.
 *
 * The key table has an entry per connection and direction (struct nanobpf_quic_cid.dir); a zero-length
 * connection ID is keyed by the peer's address and the ports (quic_addr_id).
 *
 *   From the network (ingress port != quic_config.host_ifindex): open. Frames are classified as in
 *     xdp_quic_classify.c; a short header's destination CID is looked up among the OPEN entries at each
 *     length of quic_config.open_cid_lens, longest first (quic_find_open). Known: header protection is
 *     removed (AES-ECB mask of the 16-byte sample, section 5.4), the packet number decoded against the
 *     connection's largest one (RFC 9000 appendix A.3), the key phase bit and the packet number pick
 *     the keys (quic_open_slot: current, next, or the previous phase's kept after a key update),
 *     AES-128-GCM decrypts in place and checks the tag. Success: the frame leaves as XDP_PASS holding
 *     the unprotected header and the plaintext, the tag removed, UDP/IP lengths and the UDP checksum
 *     fixed. Tag failure: XDP_DROP (nothing decrypted is ever delivered). Unknown connections, other
 *     traffic and datagrams of several QUIC packets (coalesced) pass untouched: the host opens them.
 *   From the host (ingress port == host_ifindex), the seal contract: a frame that carries the metadata
 *     shim (EtherType 0x88B6) with flag ENCRYPT asks to be sealed, and the shim's cid_len names the
 *     length of its destination CID (the peer's choice, which the device cannot guess). The program
 *     removes the shim and seals the packet with the SEAL entry of that CID: it appends the tag,
 *     encrypts in place, applies header protection, fixes lengths and checksum and redirects the frame
 *     to quic_config.net_ifindex (XDP_TX when 0). A marked frame that cannot be sealed - unknown
 *     connection, key phase without keys, a packet number that may have been sealed already for the
 *     connection (the AES-GCM nonce would repeat: quic_claim_pn), anything but one 1-RTT (or offloaded long-header)
 *     packet, malformed - is dropped and counted by reason: it never leaves in plaintext. Frames without
 *     the shim are the host's own (it protected them) and are forwarded unchanged (FORWARDED).
 *   A shim arriving from the network is dropped (BAD_SHIM).
 * Long-header packets (Initial, 0-RTT, Handshake) take the same paths with long-header masks when
 * NANOBPF_QUIC_CFG_OFFLOAD_LONG is set and their destination CID is in the key table; their Length
 * field always counts the tag (unchanged by open and seal).
 *
 * quic_open and quic_seal are global functions: each is verified once, whatever way the frame was
 * parsed (docs/ebpf-quic.md). They look the connection's keys up themselves, so that the helpers of
 * xdp_quic_hw.c get the key table value as the lookup returned it (a global function's pointer
 * arguments are plain memory to the verifier, which those helpers refuse).
 *
 * The including program defines the backend below after including this file. Both backends leave the
 * same bytes in every frame, dropped ones included, and count the same. */
#ifndef NANOBPF_QUIC_PROTECT_H
#define NANOBPF_QUIC_PROTECT_H

#include "quic_parse.h"

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, NANOBPF_KEYTABLE_ENTRIES);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_pn_state);
} quic_pn SEC(".maps");

/* ---- The crypto backend (defined by the including program) ---- */

/* Header-protection mask of the 16-byte sample at frame offset off: mask byte 0 in *m0, bytes 1..4 in
 * *m14 (big-endian). 0, or -1 when the sample is not inside the frame. */
static __always_inline int quic_hp_mask(struct xdp_md *ctx, struct quic_crypto *c, const struct nanobpf_quic_keys *keys,
                                        __u32 off, __u32 *m0, __u32 *m14);

/* Open the payload of a packet whose header (hdr_len bytes at frame offset q, already unmasked) is
 * followed by ct_len bytes of ciphertext at ct_off and the tag, ending at pkt_end: decrypt in place
 * with the current (next = 0) or next keys and nonce IV XOR pn, check the tag, and leave the frame
 * ending where the ciphertext ends (pkt_end - 16) - also when the tag fails, the frame is dropped
 * then. *sum: the ones'-complement sum of the header and the plaintext (folded, from an even offset).
 * Returns 0, QUIC_COMMITTED (the backend records the packet number in the connection's state itself,
 * once the tag proved authentic, and the tag decides the frame: the program must not read or write
 * the QUIC packet any more, nor record the number) or QUIC_DROPPED(reason). */
#define QUIC_COMMITTED 3
static __always_inline int quic_open_payload(struct xdp_md *ctx, struct quic_crypto *c,
                                             const struct nanobpf_quic_keys *keys, int next, __u64 pn, __u32 q,
                                             __u32 hdr_len, __u32 ct_off, __u32 ct_len, __u32 pkt_end, __u64 *sum);

/* Seal: the frame (pkt_end + 16 bytes long) holds the unprotected header at q, pt_len bytes of
 * plaintext at ct_off and room for the tag. Encrypt in place and write the tag after the ciphertext;
 * the frame keeps its length. *hdr_sum: the sum of the unprotected header; *body_sum: the sum of the
 * ciphertext and the tag, both folded and placed as they are in the UDP payload (the header at an even
 * offset). Returns 0, QUIC_MASKED (the header-protection mask of the sealed packet's sample is in *m0
 * and *m14 too, as quic_hp_mask gives it), QUIC_PROTECTED (header protection applied too, and the
 * checksum left to the egress: nothing is left to do to the QUIC packet, whose bytes the program must
 * not touch any more) or QUIC_DROPPED(reason). */
#define QUIC_MASKED 1
#define QUIC_PROTECTED 2
static __always_inline int quic_seal_payload(struct xdp_md *ctx, struct quic_crypto *c,
                                             const struct nanobpf_quic_keys *keys, int next, __u64 pn, __u32 q,
                                             __u32 hdr_len, __u32 ct_off, __u32 pt_len, __u32 pkt_end,
                                             __u64 *hdr_sum, __u64 *body_sum, __u32 *m0, __u32 *m14);

/* The packet-number state of the connection whose key table value keys is (key pk->cid): NULL when none
 * can be kept (the caller drops). */
static __always_inline struct nanobpf_quic_pn_state *quic_pn_of(const struct nanobpf_quic_keys *keys,
                                                                const struct quic_pkt *pk);

#ifdef QUIC_BY_CONN
/* A frame to seal (the shim taken, naming a CID of cid_len bytes) sealed whole by the backend when PISA
 * classified it with its connection: QUIC_SEALED, XDP_DROP (counted), or QUIC_NO_HINT when the general
 * path seals it (nothing was done or counted). */
static __always_inline int quic_seal_conn(struct xdp_md *ctx, __u32 cid_len);
/* A frame from the network opened whole by the backend when PISA classified it with its connection
 * (lens: quic_config.open_cid_lens): XDP_PASS (opened), XDP_DROP (counted), or QUIC_NO_HINT as above. */
static __always_inline int quic_open_conn(struct xdp_md *ctx, __u32 lens);
#endif

/* ---- Shared by both backends ---- */

/* RFC 9000 appendix A.3: the packet number closest to expected whose low bits are truncated. */
static __always_inline __u64 quic_decode_pn(__u64 expected, __u64 truncated, __u32 pn_len) {
    __u64 win = 1ull << (8 * pn_len), hwin = win / 2, mask = win - 1;
    __u64 cand = (expected & ~mask) | truncated;
    if (cand + hwin <= expected && cand < (1ull << 62) - win)
        return cand + win;
    if (cand > expected + hwin && cand >= win)
        return cand - win;
    return cand;
}

static __always_inline __u64 csum_fold(__u64 s) {
    s = (s & 0xffffffff) + (s >> 32);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    return (s & 0xffff) + (s >> 16);
}

/* The packet number field (pn_len bytes at p; 4 bytes readable) XORed with the mask's bytes 1..pn_len
 * (m14, big-endian), in place; returns the new field's value. Branch-free: the bytes after the field
 * are XORed with zero. */
static __always_inline __u32 quic_pn_xor(__u8 *p, __u32 pn_len, __u32 m14) {
    __u32 shift = 8 * (4 - pn_len), keep = ~0u << shift;
    __u32 v = quic_load_be32(p) ^ (m14 & keep);
    quic_store_be32(p, v);
    return v >> shift;
}

#define QUIC_SEALED 100   /* quic_seal's success (its failures return XDP_DROP) */
#define QUIC_NOT_MINE 101 /* quic_open/quic_seal: no keys for the packet, it goes on unchanged */

/* Offsets bounded for the verifier: every offset of a frame is below QUIC_MAX_FRAME. */
#define BOUND(x) ((x) & 0x3fff)

/* Sum of n big-endian 32-bit words at p (inside the packet: the caller checked). */
static __always_inline __u64 csum_words(const __u8 *p, __u32 n) {
    __u64 s = 0;
    NB_UNROLL
    for (__u32 i = 0; i < n; i++)
        s += bpf_ntohl(*(__u32 *)(p + 4 * i));
    return s;
}

/* Lengths and checksums after the QUIC packet changed size by delta bytes (+16 seal, -16 open):
 * UDP length, IPv4 total length (header checksum updated incrementally, RFC 1624) or IPv6 payload
 * length, then the UDP checksum from the pseudo-header, the UDP header and the given sum of the UDP
 * payload (folded, as if it started at an even offset). Returns 0 or -1 (bounds). */
static __always_inline int quic_fix_lengths(struct xdp_md *ctx, const struct quic_pkt *pk, int delta, __u64 payload_sum) {
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    __u8 *ip = data + BOUND(pk->l3), *udp = data + BOUND(pk->l4);
    /* each family's own header size: an IPv4 packet may end less than 40 bytes after its header start */
    if (udp + 8 > end || ip + 20 > end || (pk->ipv6 && ip + 40 > end))
        return -1;
    __u32 ulen = quic_be16(udp + 4) + delta;
    quic_put_be16(udp + 4, ulen);
#ifdef QUIC_CSUM_BY_EGRESS
    /* the lengths only: the device's egress recomputes the IPv4 header checksum and the UDP checksum
     * over the bytes that leave (bpf_xdp_csum_offload), so the payload is never read for them here */
    (void)payload_sum;
    if (pk->ipv6)
        quic_put_be16(ip + 4, quic_be16(ip + 4) + delta);
    else
        quic_put_be16(ip + 2, quic_be16(ip + 2) + delta);
    return bpf_xdp_csum_offload(ctx) ? -1 : 0;
#else
    /* pseudo-header length and protocol, then the UDP header: ports and length, checksum zero */
    __u64 s = payload_sum + ulen + IPPROTO_UDP_ + ((__u32)udp[0] << 8 | udp[1]) + ((__u32)udp[2] << 8 | udp[3]) + ulen;
    if (pk->ipv6) {
        if (ip + 40 > end)
            return -1;
        __u32 plen = ((__u32)ip[4] << 8 | ip[5]) + delta;
        ip[4] = plen >> 8;
        ip[5] = plen;
        s += csum_words(ip + 8, 8); /* source and destination addresses */
    } else {
        __u32 old = (__u32)ip[2] << 8 | ip[3], total = old + delta;
        ip[2] = total >> 8;
        ip[3] = total;
        __u64 hc = (__u16) ~((__u32)ip[10] << 8 | ip[11]);
        hc = csum_fold(hc + (__u16)~old + total);
        hc = (__u16)~hc;
        ip[10] = hc >> 8;
        ip[11] = hc;
        s += csum_words(ip + 12, 2);
    }
    /* UDP sends a computed zero as 0xffff (zero means "no checksum"). Branch-free: a branch on the sum
     * would make the verifier track every accumulator's range, and no two paths would look alike. */
    __u32 c = (__u16)~csum_fold(s);
    c |= ((c - 1) >> 16) & 0xffff;
    udp[6] = c >> 8;
    udp[7] = c;
    return 0;
#endif
}

/* Bytes in the frame. The barrier keeps clang from folding the difference into a later expression
 * (scalar - pointer), which no verifier accepts. */
static __always_inline long quic_frame_len(struct xdp_md *ctx) {
    long len = (long)ctx->data_end - (long)ctx->data;
    barrier_var(len);
    return len;
}

/* A folded sum of bytes placed at an odd offset, moved to its place in a sum from an even one. */
static __always_inline __u64 swab16_if(__u64 folded, __u32 odd) {
    return odd ? ((folded & 0xff) << 8 | folded >> 8) : folded;
}

/* Which key slot seals a packet: 0 (current keys) when the packet's key phase bit is the current one,
 * 1 (the second slot) when it names the next phase and the next keys are installed, -1 otherwise (the
 * previous phase's keys never seal). Long headers always use the current keys. */
static __always_inline int quic_seal_slot(const struct nanobpf_quic_keys *keys, __u32 first, __u32 long_hdr) {
    if (long_hdr || ((first >> 2) & 1) == (keys->key_phase & 1))
        return 0;
    return (keys->flags & NANOBPF_QUIC_KEY_NEXT) ? 1 : -1;
}

/* Which key slot opens a packet (RFC 9001 section 6): the current keys for the current key phase bit;
 * for the other bit the second slot when it holds the next keys, or when it holds the previous keys
 * and the packet is older than the current phase (its packet number below the smallest one opened
 * with the current keys, st->phase_pn; before any, every such packet may be an old one). -1: no keys
 * for that phase (a phase flip before the host installed next keys). The tag decides the rest. */
static __always_inline int quic_open_slot(const struct nanobpf_quic_keys *keys, const struct nanobpf_quic_pn_state *st,
                                          __u32 first, __u32 long_hdr, __u64 pn) {
    __u32 kp = keys->key_phase & 1;
    if (long_hdr || ((first >> 2) & 1) == kp)
        return 0;
    if (keys->flags & NANOBPF_QUIC_KEY_NEXT)
        return 1;
    if ((keys->flags & NANOBPF_QUIC_KEY_PREV) && (st->phase != (2 | kp) || pn < st->phase_pn))
        return 1;
    return -1;
}

/* The keys of the packet's key table entry (pk->cid, direction set), or NULL. Counts the packet as
 * ONE_RTT or UNKNOWN_CID. */
static __always_inline const struct nanobpf_quic_keys *quic_keys(const struct quic_pkt *pk) {
    const struct nanobpf_quic_keys *keys = bpf_map_lookup_elem(&nanobpf_quic_keys, &pk->cid);
    quic_count(&quic_stats, keys ? NANOBPF_QUIC_STAT_ONE_RTT : NANOBPF_QUIC_STAT_UNKNOWN_CID);
    return keys;
}

/* The entry's packet-number state by its key, created on first use; NULL when quic_pn is full (the
 * caller drops: without it neither nonce uniqueness nor decoding can be kept). The control plane
 * removes it with the key table entry. On NanoBPF the device's quic_pn holds a state for every key table
 * entry (zero until used): the lookup finds it, and NULL means the entry is gone. */
static const struct nanobpf_quic_pn_state quic_pn_fresh; /* zero; not on the stack, which is short */

static __always_inline struct nanobpf_quic_pn_state *quic_pn_state(const struct nanobpf_quic_cid *cid) {
    struct nanobpf_quic_pn_state *st = bpf_map_lookup_elem(&quic_pn, cid);
    if (!st) {
        bpf_map_update_elem(&quic_pn, cid, &quic_pn_fresh, BPF_NOEXIST);
        st = bpf_map_lookup_elem(&quic_pn, cid);
    }
    return st;
}

/* Claim packet number pn of a SEAL entry (its quic_pn value is a struct nanobpf_quic_seal_pn) for one
 * nonce: 0, or -1 when it may have been used. Several cores may seal one connection's packets at once
 * (JBSQ spreads them), so the claim is one atomic compare-and-swap on the word of pn's class modulo
 * NANOBPF_QUIC_PN_CLAIMS, which only ever grows (one past the largest number of the class claimed): a
 * number is claimed at most once, and numbers that cores reach a little out of order (less than
 * NANOBPF_QUIC_PN_CLAIMS apart) are all sealed. A number below its class's word is refused, also when
 * it was never sealed: too late. */
static __always_inline int quic_claim_word(__u64 *word, __u64 pn) {
    NB_UNROLL
    for (int i = 0; i < 2; i++) { /* a failed swap: another core claimed in this class meanwhile */
        __u64 old = *word;
        if (pn < old)
            return -1;
        if (__sync_val_compare_and_swap(word, old, pn + 1) == old)
            return 0;
    }
    return -1;
}
static __always_inline int quic_claim_pn(struct nanobpf_quic_seal_pn *sp, __u64 pn) {
    /* each word at a constant offset: the verifier proves an atomic access aligned only so */
    _Static_assert(NANOBPF_QUIC_PN_CLAIMS == 8, "a case per claim word");
    switch (pn & (NANOBPF_QUIC_PN_CLAIMS - 1)) {
    case 0: return quic_claim_word(&sp->claim0, pn);
    case 1: return quic_claim_word(&sp->claim1, pn);
    case 2: return quic_claim_word(&sp->claim2, pn);
    case 3: return quic_claim_word(&sp->claim3, pn);
    case 4: return quic_claim_word(&sp->claim4, pn);
    case 5: return quic_claim_word(&sp->claim5, pn);
    case 6: return quic_claim_word(&sp->claim6, pn);
    default: return quic_claim_word(&sp->claim7, pn);
    }
}
/* The largest packet number sealed + 1 (0: none): the reference for decoding the host's numbers. */
static __always_inline __u64 quic_max(__u64 a, __u64 b) { return a > b ? a : b; }
static __always_inline __u64 quic_sealed_next(const struct nanobpf_quic_seal_pn *sp) {
    return quic_max(quic_max(quic_max(sp->claim0, sp->claim1), quic_max(sp->claim2, sp->claim3)),
                    quic_max(quic_max(sp->claim4, sp->claim5), quic_max(sp->claim6, sp->claim7)));
}
_Static_assert(sizeof(struct nanobpf_quic_seal_pn) == sizeof(struct nanobpf_quic_pn_state), "one quic_pn value");

/* Make the frame exactly len bytes long (drops Ethernet padding, removes or adds room at the end). */
static __always_inline int quic_set_len(struct xdp_md *ctx, __u32 len) {
    return bpf_xdp_adjust_tail(ctx, (int)len - (int)quic_frame_len(ctx));
}

/* Open a protected packet (pk: what classification found, in the scratch value c; lens:
 * quic_config.open_cid_lens). */
__noinline int quic_open(struct xdp_md *ctx, struct quic_pkt *pk, struct quic_crypto *c, __u32 lens) {
    if (!pk || !c)
        return XDP_ABORTED;
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    const struct nanobpf_quic_keys *keys = NULL;
#ifdef QUIC_PISA_HINT
    /* PISA's parse result first: its connection, checked by the device; else one lookup at the length
     * its CID table matched */
    keys = quic_pisa_keys(ctx, pk, NANOBPF_QUIC_DIR_OPEN, lens);
    if (!keys && quic_pisa_cid(ctx, pk, lens) >= 0)
        keys = bpf_map_lookup_elem(&nanobpf_quic_keys, &pk->cid);
#endif
    if (!keys) { /* each length of lens (the slow path) */
        if (quic_find_open(ctx, pk, lens) < 0) {
            quic_count(&quic_stats, NANOBPF_QUIC_STAT_UNKNOWN_CID);
            return QUIC_NOT_MINE;
        }
        keys = bpf_map_lookup_elem(&nanobpf_quic_keys, &pk->cid);
    }
    quic_count(&quic_stats, keys ? NANOBPF_QUIC_STAT_ONE_RTT : NANOBPF_QUIC_STAT_UNKNOWN_CID);
    if (!keys)
        return QUIC_NOT_MINE;
    struct nanobpf_quic_pn_state *st = quic_pn_of(keys, pk);
    if (!st)
        return quic_drop(NANOBPF_QUIC_DROP_NO_PN_STATE);
    data = (__u8 *)(long)ctx->data;
    end = (__u8 *)(long)ctx->data_end;
    __u32 q = BOUND(pk->q), pn_off = BOUND(pk->pn_off), pkt_end = BOUND(pk->pkt_end);
    if (pn_off + 4 + 16 > pkt_end) /* the sample must exist (RFC 9001 section 5.4.2) */
        return quic_drop(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u32 m0, m14;
    if (quic_hp_mask(ctx, c, keys, pn_off + 4, &m0, &m14))
        return quic_drop(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u8 *first = data + q, *pnp = data + pn_off;
    if (first + 1 > end || pnp + 4 > end)
        return quic_drop(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u32 b0 = first[0] ^ (m0 & (pk->long_hdr ? 0x0f : 0x1f));
    __u32 pn_len = (b0 & 3) + 1;
    /* Unmask the header in place: the AAD is the unprotected header. If the tag fails the frame is
     * dropped, so nothing modified here leaves. */
    first[0] = b0;
    __u64 trunc = quic_pn_xor(pnp, pn_len, m14);
    __u64 pn = quic_decode_pn(st->rx_next, trunc, pn_len);
    int next = quic_open_slot(keys, st, b0, pk->long_hdr, pn);
    if (next < 0)
        return quic_drop(NANOBPF_QUIC_DROP_NO_KEYS);
    /* the header is parsed: what follows is the same for every packet-number length, key phase and
     * decoding case, and is verified once (quic_launder) */
    pn = quic_launder64(c, pn);
    next = quic_launder(c, next, 1);
    __u32 ct_off = quic_launder(c, pn_off + pn_len, QUIC_OFF_MASK), hdr_len = quic_launder(c, ct_off - q, 0xff);
    if (ct_off + QUIC_TAG_LEN > pkt_end)
        return quic_drop(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u32 ct_len = pkt_end - QUIC_TAG_LEN - ct_off;
    if (ct_len > QUIC_MAX_BLOCKS * 16)
        return quic_drop(NANOBPF_QUIC_DROP_OVERSIZE);
    if (hdr_len > QUIC_MAX_AAD)
        return quic_drop(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u64 sum;
    int rc = quic_open_payload(ctx, c, keys, next, pn, q, hdr_len, ct_off, ct_len, pkt_end, &sum);
    if (rc < 0)
        return quic_drop(QUIC_DROPPED(0) - rc);

    /* Authentic (or, QUIC_COMMITTED, the tag decides later): fix lengths and checksum, then remember the
     * packet number and, for the current keys, where their phase began (quic_open_slot). */
    if (quic_fix_lengths(ctx, pk, -QUIC_TAG_LEN, sum))
        return quic_drop(NANOBPF_QUIC_DROP_TRUNCATED);
    if (rc == QUIC_COMMITTED) {
        quic_count(&quic_stats, NANOBPF_QUIC_STAT_OPENED);
        return XDP_PASS;
    }
    /* st is the state looked up above: the control plane removes an entry's state only after every
     * data core has finished the packet it had (ebpf_quiesce), so it is still this entry's */
    if (pn + 1 > st->rx_next)
        st->rx_next = pn + 1;
    if (!next && !pk->long_hdr) {
        __u32 cur = 2 | (keys->key_phase & 1);
        if (st->phase != cur) {
            st->phase = cur;
            st->phase_pn = pn;
        } else if (pn < st->phase_pn) {
            st->phase_pn = pn;
        }
    }
    quic_count(&quic_stats, NANOBPF_QUIC_STAT_OPENED);
    return XDP_PASS;
}

/* Seal a packet from the host that asked for it (the shim removed; pk->cid: its destination CID, as
 * long as the shim said). Every failure drops: a frame to seal never leaves in plaintext. */
__noinline int quic_seal(struct xdp_md *ctx, struct quic_pkt *pk, struct quic_crypto *c) {
    if (!pk || !c)
        return XDP_ABORTED;
    const struct nanobpf_quic_keys *keys = NULL;
#ifdef QUIC_PISA_HINT
    keys = quic_pisa_keys(ctx, pk, NANOBPF_QUIC_DIR_SEAL, 0); /* PISA's connection: no key built */
    if (keys)
        quic_count(&quic_stats, NANOBPF_QUIC_STAT_ONE_RTT);
#endif
    if (!keys) {
        /* the CID PISA's classification left in the frame (quic_short_cid_at), copied for the lookup */
        if (pk->cid_at && quic_copy_cid((const __u8 *)(long)ctx->data, (const __u8 *)(long)ctx->data_end, pk->cid_at,
                                        pk->cid.len, &pk->cid))
            return quic_drop(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
        if (pk->cid.len == 0 && quic_addr_id(ctx, pk, 0))
            return quic_drop(NANOBPF_QUIC_DROP_TRUNCATED);
        pk->cid.dir = NANOBPF_QUIC_DIR_SEAL;
        keys = quic_keys(pk);
        if (!keys)
            return quic_drop(NANOBPF_QUIC_DROP_NO_SEAL_KEYS);
    }
    __u32 q = BOUND(pk->q), pn_off = BOUND(pk->pn_off), pkt_end = BOUND(pk->pkt_end);
    /* room for the tag: the AAD reads whole blocks, 16 bytes must follow the header */
    if (quic_set_len(ctx, pkt_end + QUIC_TAG_LEN))
        return quic_drop(NANOBPF_QUIC_DROP_OVERSIZE);
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    __u8 *first = data + q, *pnp = data + pn_off;
    if (first + 1 > end || pnp + 4 > end)
        return quic_drop(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u32 b0 = first[0], pn_len = (b0 & 3) + 1;
    /* the sample (16 bytes from 4 bytes after the packet number starts) must lie inside the packet */
    if (pn_off + 4 + 16 > pkt_end + QUIC_TAG_LEN)
        return quic_drop(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u64 trunc = quic_load_be32(pnp) >> (8 * (4 - pn_len));
    int next = quic_seal_slot(keys, b0, pk->long_hdr);
    if (next < 0)
        return quic_drop(NANOBPF_QUIC_DROP_NO_KEYS);
    struct nanobpf_quic_pn_state *st = quic_pn_of(keys, pk);
    if (!st)
        return quic_drop(NANOBPF_QUIC_DROP_NO_PN_STATE);
    /* Nonce uniqueness: a packet number is sealed once per connection, across key phases (the packet
     * number space goes on increasing). The decoded number is what the nonce uses, whatever the host
     * meant. It is claimed before anything else can fail, so no later failure lets it be used again. */
    struct nanobpf_quic_seal_pn *sp = (struct nanobpf_quic_seal_pn *)st;
    __u64 pn = quic_decode_pn(quic_sealed_next(sp), trunc, pn_len);
    if (quic_claim_pn(sp, pn))
        return quic_drop(NANOBPF_QUIC_DROP_PN_REUSED);
    /* verified once from here on, whatever the packet-number length, key phase and decoding case */
    pn = quic_launder64(c, pn);
    next = quic_launder(c, next, 1);
    pn_len = quic_launder(c, pn_len - 1, 3) + 1;
    __u32 ct_off = quic_launder(c, pn_off + pn_len, QUIC_OFF_MASK), hdr_len = quic_launder(c, ct_off - q, 0xff);
    if (ct_off > pkt_end)
        return quic_drop(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u32 pt_len = pkt_end - ct_off;
    if (pt_len > QUIC_MAX_BLOCKS * 16)
        return quic_drop(NANOBPF_QUIC_DROP_OVERSIZE);
    if (hdr_len > QUIC_MAX_AAD)
        return quic_drop(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u64 hdr_sum, body_sum;
    __u32 m0 = 0, m14 = 0;
    int rc = quic_seal_payload(ctx, c, keys, next, pn, q, hdr_len, ct_off, pt_len, pkt_end, &hdr_sum, &body_sum, &m0, &m14);
    if (rc < 0)
        return quic_drop(QUIC_DROPPED(0) - rc);
    __u64 sum = 0;
    if (rc != QUIC_PROTECTED) {
        data = (__u8 *)(long)ctx->data;
        end = (__u8 *)(long)ctx->data_end;
        if (rc != QUIC_MASKED && quic_hp_mask(ctx, c, keys, BOUND(pn_off + 4), &m0, &m14))
            return quic_drop(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
        first = data + q;
        pnp = data + pn_off;
        if (first + 1 > end || pnp + 4 > end)
            return quic_drop(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
        /* apply header protection; the header sum takes each changed byte out (adding its complement)
         * and the new one in, at its position (the first byte is at an even offset of the payload) */
        __u32 nb0 = b0 ^ (m0 & (pk->long_hdr ? 0x0f : 0x1f));
        first[0] = nb0;
        hdr_sum += (nb0 << 8) + (0xffff - (b0 << 8));
        /* the packet number bytes as two 16-bit words from pnp, swapped when pnp is at an odd offset */
        __u32 ob = quic_load_be32(pnp), nbw = quic_pn_xor(pnp, pn_len, m14) << (8 * (4 - pn_len));
        nbw |= ob & ~(~0u << (8 * (4 - pn_len)));
        __u64 pn_sum = (nbw >> 16) + (nbw & 0xffff) + (0xffff - (ob >> 16)) + (0xffff - (ob & 0xffff));
        hdr_sum += swab16_if(csum_fold(pn_sum), (pn_off - q) & 1);
        sum = csum_fold(hdr_sum) + body_sum;
    }
    if (quic_fix_lengths(ctx, pk, QUIC_TAG_LEN, sum))
        return quic_drop(NANOBPF_QUIC_DROP_TRUNCATED);
    quic_count(&quic_stats, NANOBPF_QUIC_STAT_SEALED);
    return QUIC_SEALED;
}

/* Where frames from the host go when they are not dropped. */
static __always_inline int quic_to_network(const struct nanobpf_quic_config *cfg) {
    return cfg->net_ifindex ? bpf_redirect(cfg->net_ifindex, 0) : XDP_TX;
}

#if defined(QUIC_SHIM_BY_EGRESS) && !defined(QUIC_BY_CONN)
#error "QUIC_SHIM_BY_EGRESS: only frames sealed in one call (QUIC_BY_CONN) keep their shim"
#endif
#define QUIC_SHIM_LEN (2 + NANOBPF_SHIM_SIZE) /* EtherType 0x88B6, then struct nanobpf_shim: flags, cid_len (hw/defs/ctrl.toml) */

/* A frame from the host that carries the shim asking for sealing: the destination CID length it names
 * (0..20); QUIC_CID_UNKNOWN when there is no shim (the frame is the host's own, forwarded unchanged);
 * QUIC_DROPPED(BAD_SHIM) for a malformed one. Nothing is moved (quic_strip_shim). */
static __always_inline int quic_read_shim(struct xdp_md *ctx) {
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    if (data + ETH_HLEN_ + QUIC_SHIM_LEN > end)
        return QUIC_CID_UNKNOWN;
    /* one load: EtherType, flags, cid_len, as a little-endian word (byte 12 the lowest, as quic_parse.h
     * builds its keys: no byte swap, which is 11 instructions on a core without Zbb) */
    __u32 shim = *(__u32 *)(data + 12);
    if ((shim & 0xffff) != ((NANOBPF_SHIM_ETHERTYPE >> 8) | (NANOBPF_SHIM_ETHERTYPE & 0xff) << 8))
        return QUIC_CID_UNKNOWN;
    __u32 flags = (shim >> 16) & 0xff, cid_len = shim >> 24;
    if (flags != NANOBPF_SHIM_F_ENCRYPT || cid_len > NANOBPF_KEYTABLE_CID_MAX)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_BAD_SHIM);
    return cid_len;
}

/* Removes the shim quic_read_shim found: 0, or QUIC_DROPPED(BAD_SHIM). */
static __always_inline int quic_strip_shim(struct xdp_md *ctx) {
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    if (data + ETH_HLEN_ + QUIC_SHIM_LEN > end)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_BAD_SHIM);
    /* The MAC addresses move up over the shim (all read before any is written: the ranges overlap).
     * Bytes 0..3 go to 4..7, bytes 4..11 to 8..15: a 4-byte and an 8-byte store that are aligned where
     * the frame is (the slot's headroom), where 8 bytes at data + 4 would be split into byte stores. */
    __u64 macs = *(__u64 *)data;
    __u32 tail = *(__u32 *)(data + 8);
    *(__u64 *)(data + 8) = macs >> 32 | (__u64)tail << 32; /* little-endian (quic_parse.h) */
    *(__u32 *)(data + QUIC_SHIM_LEN) = (__u32)macs;
    if (bpf_xdp_adjust_head(ctx, QUIC_SHIM_LEN))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_BAD_SHIM);
    return 0;
}

/* quic_read_shim, and the shim removed when it asks for sealing. */
static __always_inline int quic_take_shim(struct xdp_md *ctx) {
    int cid_len = quic_read_shim(ctx);
    if (cid_len < 0 || cid_len == QUIC_CID_UNKNOWN)
        return cid_len;
    int rc = quic_strip_shim(ctx);
    return rc ? rc : cid_len;
}

/* The XDP program. From the host: seal what the shim asks to (or drop), forward the rest unchanged.
 * From the network: open the packets whose connection has keys, pass the rest. */
static __always_inline int quic_xdp(struct xdp_md *ctx) {
    __u32 zero = 0;
    struct nanobpf_quic_config *cfg = bpf_map_lookup_elem(&quic_config, &zero);
    if (!cfg)
        return XDP_ABORTED;
    int from_host = cfg->host_ifindex && ctx->ingress_ifindex == cfg->host_ifindex;
    int cid_len = QUIC_CID_UNKNOWN;
    if (from_host) {
#ifdef QUIC_SHIM_BY_EGRESS
        cid_len = quic_read_shim(ctx);
#else
        cid_len = quic_take_shim(ctx);
#endif
        if (cid_len < 0)
            return quic_drop(QUIC_DROPPED(0) - cid_len);
        if (cid_len == QUIC_CID_UNKNOWN) {
            quic_count(&quic_stats, NANOBPF_QUIC_STAT_FORWARDED);
            return quic_to_network(cfg);
        }
    }
#ifdef QUIC_BY_CONN
    if (from_host) {
        int rc = quic_seal_conn(ctx, cid_len);
        if (rc != QUIC_NO_HINT)
            return rc == QUIC_SEALED ? quic_to_network(cfg) : XDP_DROP;
#ifdef QUIC_SHIM_BY_EGRESS
        /* the general way below works on the frame without its shim */
        int rc2 = quic_strip_shim(ctx);
        if (rc2)
            return quic_drop(QUIC_DROPPED(0) - rc2);
#endif
    } else {
        int rc = quic_open_conn(ctx, cfg->open_cid_lens);
        if (rc != QUIC_NO_HINT)
            return rc;
    }
#endif
    struct quic_crypto *c = bpf_map_lookup_elem(&quic_scratch, &zero); /* the working memory: not needed above */
    if (!c)
        return XDP_ABORTED;
    struct quic_pkt pk = {};
    int cls = QUIC_NO_HINT;
#ifdef QUIC_PISA_HINT
    /* PISA's parse result: no parse here, no quic_ports lookup; a frame to seal takes its CID length
     * from the shim */
    if (!from_host) {
        cls = quic_pisa_classify(ctx, c, &pk, 0);
    } else {
        cls = quic_pisa_classify(ctx, c, &pk, QUIC_SHIM_LEN);
        if (cls == QUIC_CANDIDATE)
            cls = quic_short_cid_at((const __u8 *)(long)ctx->data, (const __u8 *)(long)ctx->data_end, &pk, cid_len);
    }
#endif
    if (cls == QUIC_NO_HINT) {
        if (!from_host) {
            __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
            if (data + ETH_HLEN_ <= end && quic_be16(data + 12) == NANOBPF_SHIM_ETHERTYPE)
                return quic_drop(NANOBPF_QUIC_DROP_BAD_SHIM); /* host-link metadata has no business here */
        }
        /* one classification for both paths: what differs is laundered, so it is verified once */
        from_host = quic_launder(c, from_host, 1);
        cid_len = quic_launder(c, cid_len, 0xff);
        cls = quic_classify(ctx, cfg, c, &pk, from_host ? QUIC_TAG_LEN : 0, cid_len);
    }
    if (cls < 0)
        return quic_drop(QUIC_DROPPED(0) - cls);
    if (from_host) {
        if (cls != QUIC_CANDIDATE)
            return quic_drop(NANOBPF_QUIC_DROP_NOT_SEALABLE);
        return quic_seal(ctx, &pk, c) == QUIC_SEALED ? quic_to_network(cfg) : XDP_DROP;
    }
    if (cls != QUIC_CANDIDATE) {
        quic_count(&quic_stats, cls);
        return XDP_PASS;
    }
    int rc = quic_open(ctx, &pk, c, cfg->open_cid_lens);
    return rc == QUIC_NOT_MINE ? XDP_PASS : rc;
}

#endif
