/* QUIC packet protection offload (RFC 9001) as one XDP program, with AES-128-GCM computed in eBPF
 * (quic_crypto.h). What the program does is in quic_protect.h, shared with xdp_quic_hw.c, which does the
 * same on the device's AEAD helpers. This one loads in Linux too.
 *
 * Like quic_open and quic_seal, the crypto's loops are global functions: each is verified once
 * (docs/ebpf-quic.md). */
#include "quic_crypto.h"
#include "quic_protect.h"

/* AES-ECB of the 16-byte sample under the header-protection key (a working block of the scratch value). */
/* By the connection's key: quic_pn is a hash map under Linux (on NanoBPF the device's, keyed alike). */
static __always_inline struct nanobpf_quic_pn_state *quic_pn_of(const struct nanobpf_quic_keys *keys,
                                                                const struct quic_pkt *pk) {
    (void)keys;
    return quic_pn_state(&pk->cid);
}

static __always_inline int quic_hp_mask(struct xdp_md *ctx, struct quic_crypto *c, const struct nanobpf_quic_keys *keys,
                                        __u32 off, __u32 *m0, __u32 *m14) {
    const __u8 *p = (const __u8 *)(long)ctx->data + (off & QUIC_OFF_MASK), *end = (const __u8 *)(long)ctx->data_end;
    if (p + 16 > end)
        return -1;
    struct quic_block *s = &c->blk[0];
    s->w[0] = quic_load_be32(p);
    s->w[1] = quic_load_be32(p + 4);
    s->w[2] = quic_load_be32(p + 8);
    s->w[3] = quic_load_be32(p + 12);
    aes128_expand(c, (const struct quic_key *)keys->hp);
    aes128_encrypt(c, s);
    *m0 = s->w[0] >> 24;
    *m14 = s->w[0] << 8 | s->w[1] >> 24;
    return 0;
}

/* Expand the AEAD key of the selected phase, build the GHASH tables, start the operation for pn and
 * hash the header (AAD) at hdr, hdr_len bytes (16 readable bytes must follow it). */
static __always_inline int quic_aead_start(struct xdp_md *ctx, struct quic_crypto *c, const struct nanobpf_quic_keys *keys,
                                           int next, __u64 pn, __u32 hdr_off, __u32 hdr_len) {
    aes128_expand(c, (const struct quic_key *)(keys->key + (next ? 16 : 0)));
    ghash_init(c);
    gcm_start(&c->g, keys->iv + (next ? 12 : 0), pn);
    return gcm_aad(ctx, c, hdr_off, hdr_len);
}

static __always_inline int quic_open_payload(struct xdp_md *ctx, struct quic_crypto *c,
                                             const struct nanobpf_quic_keys *keys, int next, __u64 pn, __u32 q,
                                             __u32 hdr_len, __u32 ct_off, __u32 ct_len, __u32 pkt_end, __u64 *sum) {
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    __u8 *t = data + BOUND(ct_off + ct_len);
    if (t + 16 > end)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u32 want[4] = {quic_load_be32(t), quic_load_be32(t + 4), quic_load_be32(t + 8), quic_load_be32(t + 12)};
    struct gcm_state *g = &c->g;
    if (quic_aead_start(ctx, c, keys, next, pn, q, hdr_len))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    __u64 hdr_sum = g->csum; /* the unprotected header: what leaves */
    g->csum = 0;
    /* the frame now ends where the ciphertext ends */
    if (quic_set_len(ctx, pkt_end - QUIC_TAG_LEN))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_TRUNCATED);
    if (gcm_crypt_all(ctx, c, ct_off, 0) < 0)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_OVERSIZE);
    __u64 payload_sum = g->csum;
    struct quic_block *tag = &c->blk[1];
    gcm_tag(c, g, hdr_len, ct_len, tag);
    if ((want[0] ^ tag->w[0]) | (want[1] ^ tag->w[1]) | (want[2] ^ tag->w[2]) | (want[3] ^ tag->w[3]))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_TAG_MISMATCH);
    *sum = csum_fold(hdr_sum) + swab16_if(csum_fold(payload_sum), hdr_len & 1);
    return 0;
}

static __always_inline int quic_seal_payload(struct xdp_md *ctx, struct quic_crypto *c,
                                             const struct nanobpf_quic_keys *keys, int next, __u64 pn, __u32 q,
                                             __u32 hdr_len, __u32 ct_off, __u32 pt_len, __u32 pkt_end,
                                             __u64 *hdr_sum, __u64 *body_sum, __u32 *m0, __u32 *m14) {
    (void)m0, (void)m14; /* the mask: quic_hp_mask, afterwards */
    struct gcm_state *g = &c->g;
    if (quic_aead_start(ctx, c, keys, next, pn, q, hdr_len))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    *hdr_sum = g->csum; /* the unprotected header; header protection changes it afterwards */
    g->csum = 0;
    /* encrypt with the frame ending where the plaintext ends, then add the tag */
    if (quic_set_len(ctx, pkt_end))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_TRUNCATED);
    if (gcm_crypt_all(ctx, c, ct_off, 1) < 0)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_OVERSIZE);
    __u64 payload_sum = g->csum;
    struct quic_block *tag = &c->blk[1];
    gcm_tag(c, g, hdr_len, pt_len, tag);
    if (quic_set_len(ctx, pkt_end + QUIC_TAG_LEN))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_OVERSIZE);
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    __u8 *t = data + BOUND(ct_off + pt_len);
    if (t + 16 > end)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    *(__u32 *)t = bpf_htonl(tag->w[0]);
    *(__u32 *)(t + 4) = bpf_htonl(tag->w[1]);
    *(__u32 *)(t + 8) = bpf_htonl(tag->w[2]);
    *(__u32 *)(t + 12) = bpf_htonl(tag->w[3]);
    __u64 tag_sum = (__u64)tag->w[0] + tag->w[1] + tag->w[2] + tag->w[3];
    /* payload and tag sums, each swapped when it starts at an odd offset of the UDP payload */
    *body_sum = swab16_if(csum_fold(payload_sum), hdr_len & 1) + swab16_if(csum_fold(tag_sum), (hdr_len + pt_len) & 1);
    return 0;
}

SEC("xdp")
int xdp_quic(struct xdp_md *ctx) {
    return quic_xdp(ctx);
}

char _license[] SEC("license") = "GPL";
