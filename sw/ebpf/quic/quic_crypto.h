/* AES-128-GCM and the QUIC header-protection mask in restricted C (RFC 9001 section 5; NIST SP 800-38D).
 *
 * Built as eBPF (clang -target bpf) for the XDP programs and natively (riscv64 gcc) for the benchmark's
 * baseline. Constraints of eBPF shape it:
 *   - no large stack: the expanded key and the GHASH table live in a per-CPU scratch map value
 *     (struct quic_crypto, quic_common.h), the constant tables in .rodata (generated: nanobpf_aes_tables.h);
 *   - bounded loops only: the block loop runs at most QUIC_MAX_BLOCKS times;
 *   - at most 5 arguments per function and 4096 instructions per program (the device's limit): the AES
 *     block, the GHASH multiply and the block loop are separate (bpf-to-bpf) functions, with loops
 *     over rounds and nibbles rather than unrolled code;
 *   - verification cost: the functions are global (not static), so a verifier (Linux's or the
 *     device's) checks each once on its own rather than along every call and loop iteration. Their
 *     arguments are what a global function may take: integers, the context, and pointers to sized
 *     types (struct quic_block, struct quic_key, the map values), which they check for NULL; packet
 *     data is reached from the context and an offset.
 * AES is the classic four-round-table implementation (state as big-endian 32-bit columns); GHASH uses
 * 4-bit tables of multiples of H (16 entries, rebuilt per key) and a 16-entry reduction table. Neither is
 * constant-time with respect to cache timing; the device has no shared caches between tenants.
 *
 * Packet memory is reached through (p, end) pointer pairs with a bounds check before every access, so
 * the verifier can prove each one; natively the same code runs over ordinary buffers. */
#ifndef NANOBPF_QUIC_CRYPTO_H
#define NANOBPF_QUIC_CRYPTO_H

#include "quic_common.h"
#include "nanobpf_aes_tables.h"

static const __u32 aes_te[4][256] = {NANOBPF_AES_TE0_INIT, NANOBPF_AES_TE1_INIT, NANOBPF_AES_TE2_INIT,
                                     NANOBPF_AES_TE3_INIT};
static const __u8 aes_sbox[256] = NANOBPF_AES_SBOX_INIT;
static const __u32 aes_rcon[10] = NANOBPF_AES_RCON_INIT;
static const __u64 ghash_last4[16] = NANOBPF_GHASH_LAST4_INIT;

/* AES-128 key expansion (FIPS 197 section 5.2) of key into c->rk. */
__noinline int aes128_expand(struct quic_crypto *c, const struct quic_key *key) {
    if (!c || !key)
        return -1;
    __u32 w0 = quic_load_be32(key->b), w1 = quic_load_be32(key->b + 4), w2 = quic_load_be32(key->b + 8),
          w3 = quic_load_be32(key->b + 12);
    c->rk[0] = w0;
    c->rk[1] = w1;
    c->rk[2] = w2;
    c->rk[3] = w3;
    for (int i = 0; i < 10; i++) {
        __u32 t = (__u32)aes_sbox[(w3 >> 16) & 0xff] << 24 | (__u32)aes_sbox[(w3 >> 8) & 0xff] << 16 |
                  (__u32)aes_sbox[w3 & 0xff] << 8 | aes_sbox[w3 >> 24];
        w0 ^= t ^ aes_rcon[i];
        w1 ^= w0;
        w2 ^= w1;
        w3 ^= w2;
        c->rk[4 * i + 4] = w0;
        c->rk[4 * i + 5] = w1;
        c->rk[4 * i + 6] = w2;
        c->rk[4 * i + 7] = w3;
    }
    return 0;
}

#define AES_TE(k, x) aes_te[k][(x) & 0xff]

/* Encrypt the block b in place with c->rk. */
__noinline int aes128_encrypt(const struct quic_crypto *c, struct quic_block *b) {
    if (!c || !b)
        return -1;
    __u32 *s = b->w;
    __u32 s0 = s[0] ^ c->rk[0], s1 = s[1] ^ c->rk[1], s2 = s[2] ^ c->rk[2], s3 = s[3] ^ c->rk[3];
    for (int r = 1; r < 10; r++) {
        __u32 t0 = AES_TE(0, s0 >> 24) ^ AES_TE(1, s1 >> 16) ^ AES_TE(2, s2 >> 8) ^ AES_TE(3, s3) ^ c->rk[4 * r];
        __u32 t1 = AES_TE(0, s1 >> 24) ^ AES_TE(1, s2 >> 16) ^ AES_TE(2, s3 >> 8) ^ AES_TE(3, s0) ^ c->rk[4 * r + 1];
        __u32 t2 = AES_TE(0, s2 >> 24) ^ AES_TE(1, s3 >> 16) ^ AES_TE(2, s0 >> 8) ^ AES_TE(3, s1) ^ c->rk[4 * r + 2];
        __u32 t3 = AES_TE(0, s3 >> 24) ^ AES_TE(1, s0 >> 16) ^ AES_TE(2, s1 >> 8) ^ AES_TE(3, s2) ^ c->rk[4 * r + 3];
        s0 = t0;
        s1 = t1;
        s2 = t2;
        s3 = t3;
    }
#define AES_LAST(a, b, cc, d)                                                                              \
    ((__u32)aes_sbox[(a) >> 24] << 24 | (__u32)aes_sbox[((b) >> 16) & 0xff] << 16 |                         \
     (__u32)aes_sbox[((cc) >> 8) & 0xff] << 8 | aes_sbox[(d) & 0xff])
    s[0] = AES_LAST(s0, s1, s2, s3) ^ c->rk[40];
    s[1] = AES_LAST(s1, s2, s3, s0) ^ c->rk[41];
    s[2] = AES_LAST(s2, s3, s0, s1) ^ c->rk[42];
    s[3] = AES_LAST(s3, s0, s1, s2) ^ c->rk[43];
#undef AES_LAST
    return 0;
}

/* Fill the GHASH tables from H = AES_K(0^128) (c->rk must hold K). */
__noinline int ghash_init(struct quic_crypto *c) {
    if (!c)
        return -1;
    struct quic_block h = {{0, 0, 0, 0}};
    aes128_encrypt(c, &h);
    __u64 vh = (__u64)h.w[0] << 32 | h.w[1], vl = (__u64)h.w[2] << 32 | h.w[3];
    c->hh[0] = 0;
    c->hl[0] = 0;
    c->hh[8] = vh;
    c->hl[8] = vl;
    /* i * H for i = 4, 2, 1: each a multiplication by x (a right shift in GCM's bit order) */
    NB_UNROLL
    for (int i = 4; i > 0; i >>= 1) {
        __u64 red = (vl & 1) ? 0xe100000000000000ull : 0;
        vl = vh << 63 | vl >> 1;
        vh = (vh >> 1) ^ red;
        c->hh[i] = vh;
        c->hl[i] = vl;
    }
    /* the other entries by linearity: (i + j) * H = i * H ^ j * H */
    NB_UNROLL
    for (int i = 2; i <= 8; i <<= 1) {
        NB_UNROLL
        for (int j = 1; j < i; j++) {
            c->hh[i + j] = c->hh[i] ^ c->hh[j];
            c->hl[i + j] = c->hl[i] ^ c->hl[j];
        }
    }
    return 0;
}

/* g->x = g->x * H in GF(2^128), four bits at a time from the last byte to the first. */
__noinline int ghash_mul(const struct quic_crypto *c, struct gcm_state *g) {
    if (!c || !g)
        return -1;
    __u64 zh = 0, zl = 0, xl = g->xl, xh = g->xh;
#define GHASH_STEP(nib)                                                                                    \
    do {                                                                                                   \
        __u64 rem = zl & 0xf, n = (nib) & 0xf;                                                             \
        zl = zh << 60 | zl >> 4;                                                                           \
        zh = (zh >> 4) ^ (ghash_last4[rem] << 48) ^ c->hh[n];                                              \
        zl ^= c->hl[n];                                                                                    \
    } while (0)
    for (int k = 0; k < 16; k++, xl >>= 4)
        GHASH_STEP(xl);
    for (int k = 0; k < 16; k++, xh >>= 4)
        GHASH_STEP(xh);
#undef GHASH_STEP
    g->xh = zh;
    g->xl = zl;
    return 0;
}

/* Keystream block for counter value g->ctr (then incremented) into ks. */
static __always_inline void gcm_keystream(const struct quic_crypto *c, struct gcm_state *g, struct quic_block *ks) {
    ks->w[0] = g->n[0];
    ks->w[1] = g->n[1];
    ks->w[2] = g->n[2];
    ks->w[3] = g->ctr++;
    aes128_encrypt(c, ks);
}

/* The frame's bytes [off, end) (off bounded for the verifier), or NULL when off is past the end. */
static __always_inline __u8 *quic_frame_at(struct xdp_md *ctx, __u32 off, __u8 **end) {
    __u8 *data = (__u8 *)(long)ctx->data, *p = data + (off & 0x3fff);
    *end = (__u8 *)(long)ctx->data_end;
    return p > *end ? (__u8 *)0 : p;
}

/* The first n bytes (1..16) of the 16-byte block at b as two big-endian halves, the rest zero. */
static __always_inline void gcm_load_block(const __u8 *b, __u32 n, __u64 *h, __u64 *l) {
    __u64 hi = (__u64)quic_load_be32(b) << 32 | quic_load_be32(b + 4),
          lo = (__u64)quic_load_be32(b + 8) << 32 | quic_load_be32(b + 12);
    if (n < 8) {
        hi &= ~(~0ull >> (8 * n));
        lo = 0;
    } else if (n < 16) {
        lo &= ~(~0ull >> (8 * (n - 8)));
    }
    *h = hi;
    *l = lo;
}

/* GHASH (state c->g) of the len bytes (len <= QUIC_MAX_AAD) at frame offset off, the last block
 * zero-padded: the associated data. Their big-endian 32-bit words are added to g->csum. Reads whole
 * 16-byte blocks: the caller guarantees 16 readable bytes after the last one (the ciphertext and tag
 * follow the header). Returns 0, or -1 when a block is not inside the packet. */
__noinline int gcm_aad(struct xdp_md *ctx, struct quic_crypto *c, __u32 off, __u32 len) {
    __u8 *end, *p = quic_frame_at(ctx, off, &end);
    if (!c || !p || len > QUIC_MAX_AAD)
        return -1;
    struct gcm_state *g = &c->g;
    for (__u32 i = 0; i < QUIC_MAX_AAD / 16; i++) {
        if (i * 16 >= len)
            break;
        const __u8 *b = p + i * 16;
        if (b + 16 > end)
            return -1;
        __u64 h, l;
        gcm_load_block(b, len - i * 16, &h, &l);
        g->csum += (h >> 32) + (h & 0xffffffff) + (l >> 32) + (l & 0xffffffff);
        g->xh ^= h;
        g->xl ^= l;
        ghash_mul(c, g);
    }
    return 0;
}

/* The last, partial block (1..15 bytes from frame offset off to the end of the frame) of a text whose
 * whole blocks gcm_crypt() did: zero-padded for GHASH, its output bytes added to g->csum at their
 * positions from the text's start (which is 16-byte aligned to it). */
__noinline int gcm_crypt_last(struct xdp_md *ctx, struct quic_crypto *c, __u32 off, __u32 seal) {
    __u8 *end, *t = quic_frame_at(ctx, off, &end);
    if (!c || !t)
        return -1;
    struct gcm_state *g = &c->g;
    __u32 sel = -(seal & 1);
    struct quic_block ks;
    gcm_keystream(c, g, &ks);
    __u64 bh = 0, bl = 0; /* the ciphertext block, zero-padded */
    for (__u32 j = 0; j < 15; j++) {
        if (t + j + 1 > end)
            break;
        __u8 in = t[j], k = ks.w[j / 4] >> (24 - 8 * (j % 4)), out = in ^ k;
        t[j] = out;
        g->csum += (j & 1) ? out : (__u32)out << 8;
        __u64 ct = in ^ (k & sel);
        if (j < 8)
            bh |= ct << (56 - 8 * j);
        else
            bl |= ct << (56 - 8 * (j - 8));
    }
    g->xh ^= bh;
    g->xl ^= bl;
    ghash_mul(c, g);
    return 0;
}

/* One block of gcm_crypt(): the 16 bytes at frame offset off, or 1 when they are not all in the frame.
 * A global function, so that a verifier walks the block loop at a few instructions per iteration. */
__noinline int gcm_block(struct xdp_md *ctx, struct quic_crypto *c, __u32 off, __u32 seal) {
    __u8 *end, *b = quic_frame_at(ctx, off, &end);
    if (!c || !b || b + 16 > end)
        return 1;
    struct gcm_state *g = &c->g;
    __u32 sel = -(seal & 1);
    struct quic_block *ks = &c->blk[2]; /* keystream, then the ciphertext words (few live registers) */
    gcm_keystream(c, g, ks);
    __u64 sum = 0;
    NB_UNROLL
    for (int k = 0; k < 4; k++) {
        __u32 in = quic_load_be32(b + 4 * k), out = in ^ ks->w[k];
        quic_store_be32(b + 4 * k, out);
        sum += out;
        ks->w[k] = in ^ (ks->w[k] & sel);
    }
    g->csum += sum;
    g->xh ^= (__u64)ks->w[0] << 32 | ks->w[1];
    g->xl ^= (__u64)ks->w[2] << 32 | ks->w[3];
    ghash_mul(c, g);
    return 0;
}

/* Decrypt (open, seal = 0) or encrypt (seal = 1) the whole 16-byte blocks from frame offset off to the
 * end of the frame in place with the counter mode of c->g, hashing the ciphertext. The caller trims
 * the frame so that it ends where the text ends: the loop stops at the first block not in the frame. Open and seal share one branch-free path (the ciphertext is in
 * ^ (keystream & sel), sel = 0 or all ones). The output is added to g->csum as big-endian 32-bit words.
 * Returns the text's length (a final partial block is left to gcm_crypt_last(), called by the caller
 * to keep the call chain short), or -1 when it is longer than QUIC_MAX_BLOCKS blocks. */
__noinline int gcm_crypt(struct xdp_md *ctx, struct quic_crypto *c, __u32 off, __u32 seal) {
    __u8 *end, *p = quic_frame_at(ctx, off, &end);
    if (!c || !p)
        return -1;
    __u32 i;
    for (i = 0; i < QUIC_MAX_BLOCKS; i++)
        if (gcm_block(ctx, c, (off & 0x3fff) + 16 * i, seal))
            break;
    /* from the frame and the offset, not from the loop, so that the loop's exits look alike */
    __u64 len = (__u64)(end - p);
    barrier_var(len);
    if (len > QUIC_MAX_BLOCKS * 16)
        return -1;
    return (int)len;
}

/* The text from frame offset off to the end of the frame: gcm_crypt() and gcm_crypt_last(). Returns
 * its length or -1. */
static __always_inline int gcm_crypt_all(struct xdp_md *ctx, struct quic_crypto *c, __u32 off, __u32 seal) {
    int len = gcm_crypt(ctx, c, off, seal);
    if (len > 0 && len % 16 && gcm_crypt_last(ctx, c, (off & 0x3fff) + ((__u32)len & ~15u), seal))
        return -1;
    return len;
}

/* Tag of a GCM operation after the AAD and the text were hashed: GHASH of the length block, then
 * XOR with AES_K(J0). tag[0..3] are big-endian words. */
static __always_inline void gcm_tag(const struct quic_crypto *c, struct gcm_state *g, __u32 aad_len, __u32 text_len,
                                    struct quic_block *tag) {
    g->xh ^= (__u64)aad_len * 8;
    g->xl ^= (__u64)text_len * 8;
    ghash_mul(c, g);
    tag->w[0] = g->n[0];
    tag->w[1] = g->n[1];
    tag->w[2] = g->n[2];
    tag->w[3] = 1;
    aes128_encrypt(c, tag);
    tag->w[0] ^= (__u32)(g->xh >> 32);
    tag->w[1] ^= (__u32)g->xh;
    tag->w[2] ^= (__u32)(g->xl >> 32);
    tag->w[3] ^= (__u32)g->xl;
}

/* Start a GCM operation: nonce = iv XOR packet number (RFC 9001 section 5.3), counter 2 (J0 + 1;
 * 96-bit IV, SP 800-38D 7.1). The key must already be expanded and ghash_init() done. */
static __always_inline void gcm_start(struct gcm_state *g, const __u8 *iv, __u64 pn) {
    g->n[0] = quic_load_be32(iv);
    g->n[1] = quic_load_be32(iv + 4) ^ (__u32)(pn >> 32);
    g->n[2] = quic_load_be32(iv + 8) ^ (__u32)pn;
    g->ctr = 2;
    g->xh = 0;
    g->xl = 0;
    g->csum = 0;
}

#endif
