/* QUIC packet protection offload (RFC 9001) on the device's AEAD helpers: the program of xdp_quic.c
 * (quic_protect.h: same parsing, header protection, packet numbers, key phase, lengths, checksums and
 * counters), with AES-128-GCM and the header-protection mask computed by quic_aead_open,
 * quic_aead_seal and quic_hp_mask instead of in eBPF. Load it instead of xdp_quic
 * (`nanobpf-load xdp_quic_hw.o`); the maps and results are the same. NanoBPF only: Linux has no such
 * helpers.
 *
 * The UDP checksum, which the eBPF crypto sums as it writes, is summed here by quic_csum. */
#include "quic_common.h"
#include "nanobpf_helpers.h"
#include "quic_protect.h"

/* Bytes summed by quic_csum at most: a header, the largest payload and the tag; and a mask above it. */
#define QUIC_CSUM_MAX (QUIC_MAX_AAD + QUIC_MAX_BLOCKS * 16 + QUIC_TAG_LEN)
#define QUIC_CSUM_MASK 0x1fff
_Static_assert(QUIC_CSUM_MAX <= QUIC_CSUM_MASK, "QUIC_CSUM_MASK bounds QUIC_CSUM_MAX");

/* Ones'-complement sum, folded, of the len bytes at frame offset off as big-endian 16-bit words from
 * off (an odd last byte is the high half of its word); -1 when they are not all in the frame or len
 * is above QUIC_CSUM_MAX. A global function: verified once, its loop at a few instructions per
 * iteration. The loop compares the word count, not len, and what follows it uses pointers of its own,
 * so the paths that leave the loop after different counts look alike to the verifier. */
__noinline int quic_csum(struct xdp_md *ctx, __u32 off, __u32 len) {
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    if (off > QUIC_MAX_FRAME || len > QUIC_CSUM_MAX)
        return -1;
    /* the masks change nothing after the checks, but give the verifier the bounds whatever register
     * clang derives the values from (the barriers keep clang from dropping them) */
    barrier_var(off);
    barrier_var(len);
    off &= QUIC_OFF_MASK;
    len &= QUIC_CSUM_MASK;
    const __u8 *p = data + off;
    __u32 words = len / 8;
    __u64 s = 0;
    for (__u32 i = 0; i < QUIC_CSUM_MAX / 8; i++) {
        if (i >= words)
            break;
        const __u8 *b = p + 8 * i;
        if (b + 8 > end)
            return -1;
        s += (__u64)quic_load_be32(b) + quic_load_be32(b + 4);
    }
    __u32 tail = len & 7, soff = off;
    barrier_var(soff); /* pointers of their own (see above) */
    if (tail && len >= 8) {
        /* the last tail bytes: the 8 bytes ending where the range ends, the ones the loop summed
         * masked off, moved to the start of a block (the tail starts at an even offset) */
        __u32 toff = soff + (len - 8);
        const __u8 *t = data + toff;
        if (t + 8 > end)
            return -1;
        __u64 w = ((__u64)quic_load_be32(t) << 32 | quic_load_be32(t + 4)) << (8 * (8 - tail));
        s += (w >> 32) + (w & 0xffffffff);
    } else if (tail) { /* fewer than 8 bytes in all */
        const __u8 *t = data + soff;
        for (__u32 j = 0; j < 7; j++) {
            if (j >= tail)
                break;
            const __u8 *b = t + j;
            barrier_var(b); /* else clang turns the check into arithmetic on data_end, which no verifier takes */
            if (b + 1 > end)
                return -1;
            s += (j & 1) ? *b : (__u32)*b << 8;
        }
    }
    return csum_fold(s);
}

static __always_inline int quic_hp_mask(struct quic_crypto *c, const struct nanobpf_quic_keys *keys, const __u8 *p,
                                        const __u8 *end, __u32 *m0, __u32 *m14) {
    (void)c;
    if (p + 16 > end)
        return -1;
    __u8 block[NANOBPF_AEAD_HP_BLOCK_LEN];
    __builtin_memcpy(block, p, sizeof block);
    if (bpf_quic_hp_mask(keys, block, sizeof block))
        return -1;
    *m0 = block[0];
    *m14 = quic_load_be32(block + 1);
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

static __always_inline int quic_open_payload(struct xdp_md *ctx, struct quic_crypto *c,
                                             const struct nanobpf_quic_keys *keys, int next, __u64 pn, __u32 q,
                                             __u32 hdr_len, __u32 ct_off, __u32 ct_len, __u32 pkt_end, __u64 *sum) {
    (void)c, (void)ct_off;
    struct nanobpf_aead_req req = {.hdr_off = q, .hdr_len = hdr_len, .payload_len = ct_len,
                                   .flags = next ? NANOBPF_AEAD_NEXT_PHASE : 0, .pn = pn};
    long rc = bpf_quic_aead_open(ctx, keys, &req, sizeof req);
    /* the frame ends where the ciphertext ends, whatever the tag said (as with xdp_quic) */
    if (quic_set_len(ctx, pkt_end - QUIC_TAG_LEN))
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_TRUNCATED);
    if (rc)
        return quic_helper_drop(rc);
    int s = quic_csum(ctx, q, hdr_len + ct_len);
    if (s < 0)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_TRUNCATED);
    *sum = s;
    return 0;
}

static __always_inline int quic_seal_payload(struct xdp_md *ctx, struct quic_crypto *c,
                                             const struct nanobpf_quic_keys *keys, int next, __u64 pn, __u32 q,
                                             __u32 hdr_len, __u32 ct_off, __u32 pt_len, __u32 pkt_end,
                                             __u64 *hdr_sum, __u64 *body_sum) {
    (void)c, (void)pkt_end;
    struct nanobpf_aead_req req = {.hdr_off = q, .hdr_len = hdr_len, .payload_len = pt_len,
                                   .flags = next ? NANOBPF_AEAD_NEXT_PHASE : 0, .pn = pn};
    long rc = bpf_quic_aead_seal(ctx, keys, &req, sizeof req);
    if (rc)
        return quic_helper_drop(rc);
    int h = quic_csum(ctx, q, hdr_len), b = quic_csum(ctx, ct_off, pt_len + QUIC_TAG_LEN);
    if (h < 0 || b < 0)
        return QUIC_DROPPED(NANOBPF_QUIC_DROP_TRUNCATED);
    *hdr_sum = h;
    *body_sum = swab16_if(b, hdr_len & 1);
    return 0;
}

SEC("xdp")
int xdp_quic_hw(struct xdp_md *ctx) {
    return quic_xdp(ctx);
}

char _license[] SEC("license") = "GPL";
