/* QUIC packet protection offload (RFC 9001) on the device's AEAD helpers: the program of xdp_quic.c
 * (quic_protect.h: same parsing, header protection, packet numbers, key phase, lengths, checksums and
 * counters), with AES-128-GCM and the header-protection mask computed by quic_aead_open,
 * quic_aead_seal and quic_hp_mask instead of in eBPF. Load it instead of xdp_quic
 * (`nanobpf-load xdp_quic_hw.o`); the maps and results are the same. NanoBPF only: Linux has no such
 * helpers.
 *
 * Checksums: the program fixes the UDP and IP lengths and leaves the IPv4 header checksum and the UDP
 * checksum to the device's egress (bpf_xdp_csum_offload, docs/pisa.md "Deparser"), so no payload byte
 * crosses a core's bus for them. */
#define QUIC_CSUM_BY_EGRESS
/* Packets from the network: PISA's parse result (conn, cid_len) names the CID length to look up
 * first; without it, or on a miss, each length of quic_config.open_cid_lens is tried. */
#define QUIC_PISA_HINT
/* Frames PISA classified with their connection: the device seals or opens them in one helper call
 * (quic_seal_conn, quic_open_conn). */
#define QUIC_BY_CONN
/* Those sealed in one call keep the host's ENCRYPT shim: the device's egress leaves it out on the way
 * to the network (the data-plane firmware checks it is the one that came, unchanged), so no MAC
 * address is moved here for it. The general way removes it first, as xdp_quic does. */
#define QUIC_SHIM_BY_EGRESS
#include "quic_common.h"
#include "nanobpf_helpers.h"
#include "quic_protect.h"

/* By the key table entry's slot (bpf_quic_pn_of): no second search for the connection ID. */
static __always_inline struct nanobpf_quic_pn_state *quic_pn_of(const struct nanobpf_quic_keys *keys,
                                                                const struct quic_pkt *pk) {
    (void)pk;
    return bpf_quic_pn_of(&quic_pn, keys);
}

/* The engine reads the sample in the frame itself (bpf_quic_hp_mask_at): nothing is copied out and
 * back through the core. */
static __always_inline int quic_hp_mask(struct xdp_md *ctx, struct quic_crypto *c, const struct nanobpf_quic_keys *keys,
                                        __u32 off, __u32 *m0, __u32 *m14) {
    (void)c;
    long m = bpf_quic_hp_mask_at(ctx, keys, off);
    if (m < 0)
        return -1;
    *m0 = (__u64)m >> 32;
    *m14 = (__u32)m;
    return 0;
}

/* A helper's error as the drop reason xdp_quic gives for the same frame. The program's own checks
 * come first, so only a forged tag (EBADMSG) reaches the helpers in practice. */
static __always_inline int quic_helper_drop(long rc) {
    if (rc == -NANOBPF_EBADMSG)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_TAG_MISMATCH);
    if (rc == -NANOBPF_ENOKEY)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_NO_KEYS);
    return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED); /* -EINVAL: a range outside the frame */
}

/* The tag decides the frame and the packet number is recorded by the device (NANOBPF_AEAD_COMMIT): the
 * data-plane firmware lets the engine finish while the core runs the next frame, holds this one until
 * the engine's verdict, and drops it if the tag is forged (counted as if the program had dropped it:
 * TAG_MISMATCH). Elsewhere (the helper waits) -EBADMSG comes back as before. */
static __always_inline int quic_open_payload(struct xdp_md *ctx, struct quic_crypto *c,
                                             const struct nanobpf_quic_keys *keys, int next, __u64 pn, __u32 q,
                                             __u32 hdr_len, __u32 ct_off, __u32 ct_len, __u32 pkt_end, __u64 *sum) {
    (void)c, (void)ct_off;
    struct nanobpf_aead_req req = {.hdr_off = q, .hdr_len = hdr_len, .payload_len = ct_len,
                                   .flags = (next ? NANOBPF_AEAD_NEXT_PHASE : 0) | NANOBPF_AEAD_COMMIT, .pn = pn};
    long rc = bpf_quic_aead_open(ctx, keys, &req, sizeof req);
    /* the frame ends where the ciphertext ends, whatever the tag said (as with xdp_quic) */
    if (quic_set_len(ctx, pkt_end - QUIC_TAG_LEN))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_TRUNCATED);
    if (rc)
        return quic_helper_drop(rc);
    *sum = 0; /* the egress sums (QUIC_CSUM_BY_EGRESS) */
    return QUIC_COMMITTED;
}

/* Header protection comes with the seal (NANOBPF_AEAD_HP_APPLY): the engine seals, computes the mask of
 * the sealed sample and applies it in one request, and the data-plane firmware lets it finish while
 * the core goes on: nothing of the QUIC packet is read or written here after the call. */
static __always_inline int quic_seal_payload(struct xdp_md *ctx, struct quic_crypto *c,
                                             const struct nanobpf_quic_keys *keys, int next, __u64 pn, __u32 q,
                                             __u32 hdr_len, __u32 ct_off, __u32 pt_len, __u32 pkt_end,
                                             __u64 *hdr_sum, __u64 *body_sum, __u32 *m0, __u32 *m14) {
    (void)c, (void)pkt_end, (void)m0, (void)m14;
    struct nanobpf_aead_req req = {.hdr_off = q, .hdr_len = hdr_len, .payload_len = pt_len,
                                   .flags = (next ? NANOBPF_AEAD_NEXT_PHASE : 0) | NANOBPF_AEAD_HP_APPLY, .pn = pn};
    long rc = bpf_quic_aead_seal(ctx, keys, &req, sizeof req);
    if (rc < 0)
        return quic_helper_drop(rc);
    *hdr_sum = *body_sum = 0; /* the egress sums (QUIC_CSUM_BY_EGRESS) */
    return QUIC_PROTECTED;
}

/* bpf_quic_seal_conn and bpf_quic_open_conn do quic_seal's and quic_open's steps for a frame PISA
 * classified with its connection, in their order and with their drop reasons (and those of
 * quic_pisa_classify before them); the counters are the program's. Frames longer than QUIC_MAX_FRAME
 * take the general path, which drops them (OVERSIZE). A result: 0, NANOBPF_QUIC_SEAL_SLOW, or
 * -(1 + reason), with NANOBPF_QUIC_SEAL_KEYED in reason once the keys were found. done: what the
 * frame is then (QUIC_SEALED or XDP_PASS), counted as stat. */
static __always_inline int quic_by_conn(struct xdp_md *ctx, int seal, __u32 arg, int done, __u32 stat) {
    if (quic_frame_len(ctx) > QUIC_MAX_FRAME)
        return QUIC_NO_HINT;
    long rc = seal ? bpf_quic_seal_conn(ctx, &nanobpf_quic_keys, arg, QUIC_MAX_BLOCKS * 16, QUIC_MAX_AAD)
                   : bpf_quic_open_conn(ctx, &nanobpf_quic_keys, arg, QUIC_MAX_BLOCKS * 16, QUIC_MAX_AAD);
    if (rc == NANOBPF_QUIC_SEAL_SLOW)
        return QUIC_NO_HINT;
    __u32 why = (__u32)(-1 - rc);
    if (rc == 0 || (rc < 0 && (why & NANOBPF_QUIC_SEAL_KEYED)))
        quic_count(&quic_stats, NANOBPF_QUIC_STAT_ONE_RTT);
    if (rc == 0) {
        quic_count(&quic_stats, stat);
        return done;
    }
    return quic_drop(rc < 0 ? why & ~NANOBPF_QUIC_SEAL_KEYED : NANOBPF_QUIC_DROP_NOT_SEALABLE);
}
static __always_inline int quic_seal_conn(struct xdp_md *ctx, __u32 cid_len) {
    return quic_by_conn(ctx, 1, cid_len, QUIC_SEALED, NANOBPF_QUIC_STAT_SEALED);
}
static __always_inline int quic_open_conn(struct xdp_md *ctx, __u32 lens) {
    return quic_by_conn(ctx, 0, lens, XDP_PASS, NANOBPF_QUIC_STAT_OPENED);
}

SEC("xdp")
int xdp_quic_hw(struct xdp_md *ctx) {
    return quic_xdp(ctx);
}

char _license[] SEC("license") = "GPL";
