/* Software AES-128 and AES-128-GCM (the aead.h interface) for every platform.
 *
 * AES: the four-round-table formulation of FIPS 197 (state as four big-endian 32-bit columns; each table
 * entry is SubBytes followed by one MixColumns column), the last round with the S-box. GHASH: Shoup's
 * 4-bit method, 16 multiples of H built per call and a 16-entry reduction table, 32 table steps per
 * block. The tables are computed from their definitions by nanobpf-gen-aes-tables (sw/python/nanobpf/gen/aes_tables.py)
 * (nanobpf_aes_tables.h, `make defs`). Not constant-time (cache timing): cores share no caches with
 * other tenants.
 *
 * Bytes are loaded and stored one at a time: packet data has no alignment and CVA6 traps on misaligned
 * accesses; compilers merge them where the target allows. */
#include "aead.h"
#include "nanobpf_aes_tables.h"

static const uint32_t aes_te[4][256] = {NANOBPF_AES_TE0_INIT, NANOBPF_AES_TE1_INIT, NANOBPF_AES_TE2_INIT,
                                        NANOBPF_AES_TE3_INIT};
static const uint8_t aes_sbox[256] = NANOBPF_AES_SBOX_INIT;
static const uint32_t aes_rcon[10] = NANOBPF_AES_RCON_INIT;
static const uint64_t ghash_last4[16] = NANOBPF_GHASH_LAST4_INIT;

static uint32_t load_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static void store_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static uint64_t load_be64(const uint8_t *p) { return (uint64_t)load_be32(p) << 32 | load_be32(p + 4); }
static void store_be64(uint8_t *p, uint64_t v) {
    store_be32(p, (uint32_t)(v >> 32));
    store_be32(p + 4, (uint32_t)v);
}

/* ---- AES-128 ---- */
#define aes128 ebpf_aes128 /* aead.h: round keys, big-endian words */

static uint32_t sub_word(uint32_t w) {
    return (uint32_t)aes_sbox[w >> 24] << 24 | (uint32_t)aes_sbox[(w >> 16) & 0xff] << 16 |
           (uint32_t)aes_sbox[(w >> 8) & 0xff] << 8 | aes_sbox[w & 0xff];
}

/* FIPS 197 section 5.2. */
static void aes128_expand(struct aes128 *a, const uint8_t key[16]) {
    uint32_t *rk = a->rk;
    for (int i = 0; i < 4; i++) rk[i] = load_be32(key + 4 * i);
    for (int i = 4; i < 44; i++) {
        uint32_t t = rk[i - 1];
        if (i % 4 == 0) t = sub_word(t << 8 | t >> 24) ^ aes_rcon[i / 4 - 1];
        rk[i] = rk[i - 4] ^ t;
    }
}

#define TE(k, x) aes_te[k][(x) & 0xff]

static void aes128_encrypt(const struct aes128 *a, const uint8_t in[16], uint8_t out[16]) {
    const uint32_t *rk = a->rk;
    uint32_t s0 = load_be32(in) ^ rk[0], s1 = load_be32(in + 4) ^ rk[1], s2 = load_be32(in + 8) ^ rk[2],
             s3 = load_be32(in + 12) ^ rk[3];
    for (int r = 1; r < 10; r++) {
        const uint32_t *k = rk + 4 * r;
        uint32_t t0 = TE(0, s0 >> 24) ^ TE(1, s1 >> 16) ^ TE(2, s2 >> 8) ^ TE(3, s3) ^ k[0];
        uint32_t t1 = TE(0, s1 >> 24) ^ TE(1, s2 >> 16) ^ TE(2, s3 >> 8) ^ TE(3, s0) ^ k[1];
        uint32_t t2 = TE(0, s2 >> 24) ^ TE(1, s3 >> 16) ^ TE(2, s0 >> 8) ^ TE(3, s1) ^ k[2];
        uint32_t t3 = TE(0, s3 >> 24) ^ TE(1, s0 >> 16) ^ TE(2, s1 >> 8) ^ TE(3, s2) ^ k[3];
        s0 = t0, s1 = t1, s2 = t2, s3 = t3;
    }
    /* last round: SubBytes and ShiftRows only */
#define LAST(w0, w1, w2, w3)                                                                            \
    ((uint32_t)aes_sbox[(w0) >> 24] << 24 | (uint32_t)aes_sbox[((w1) >> 16) & 0xff] << 16 |              \
     (uint32_t)aes_sbox[((w2) >> 8) & 0xff] << 8 | aes_sbox[(w3) & 0xff])
    store_be32(out, LAST(s0, s1, s2, s3) ^ rk[40]);
    store_be32(out + 4, LAST(s1, s2, s3, s0) ^ rk[41]);
    store_be32(out + 8, LAST(s2, s3, s0, s1) ^ rk[42]);
    store_be32(out + 12, LAST(s3, s0, s1, s2) ^ rk[43]);
#undef LAST
}

#ifndef EBPF_AEAD_OPENSSL /* the host-fast build takes these three from aead_openssl.c (libcrypto) */
void ebpf_aes128_encrypt_block(const uint8_t key[16], const uint8_t in[16], uint8_t out[16]) {
    struct aes128 a;
    aes128_expand(&a, key);
    aes128_encrypt(&a, in, out);
}
#endif

/* ---- GCM (SP 800-38D) ---- */
/* Field elements of GF(2^128) as two big-endian halves: bit 0 of byte 0 (the MSB of hi) is the
 * coefficient of x^0, so multiplying by x is a right shift. */
/* The key's part (struct ebpf_gcm_key, aead.h): the AES schedule and mh/ml, n * H for the 4-bit
 * values n, the MSB of n being x^0. */
void ebpf_gcm_key_init(struct ebpf_gcm_key *k, const uint8_t key[16]) {
    static const uint8_t zero[16];
    uint8_t h[16];
    aes128_expand(&k->aes, key);
    aes128_encrypt(&k->aes, zero, h);
    uint64_t vh = load_be64(h), vl = load_be64(h + 8);
    k->mh[0] = k->ml[0] = 0;
    k->mh[8] = vh, k->ml[8] = vl;
    for (int i = 4; i > 0; i >>= 1) { /* H * x, H * x^2, H * x^3 */
        uint64_t reduce = (vl & 1) ? UINT64_C(0xe1) << 56 : 0;
        vl = vh << 63 | vl >> 1;
        vh = (vh >> 1) ^ reduce;
        k->mh[i] = vh, k->ml[i] = vl;
    }
    for (int i = 2; i <= 8; i <<= 1) /* the rest by linearity */
        for (int j = 1; j < i; j++) {
            k->mh[i + j] = k->mh[i] ^ k->mh[j];
            k->ml[i + j] = k->ml[i] ^ k->ml[j];
        }
}

/* One message's state. */
struct gcm {
    const struct ebpf_gcm_key *k;
    uint64_t xh, xl; /* GHASH accumulator */
    uint8_t j0[16];  /* nonce || 0^31 || 1 */
};

static void gcm_start(struct gcm *g, const struct ebpf_gcm_key *k, const uint8_t nonce[12]) {
    g->k = k;
    g->xh = g->xl = 0;
    for (int i = 0; i < 12; i++) g->j0[i] = nonce[i];
    store_be32(g->j0 + 12, 1);
}

/* X = X * H: Horner over the 32 nibbles from the highest power of x (the low nibble of byte 15). */
static void ghash_mul(struct gcm *g) {
    uint64_t zh = 0, zl = 0;
    for (int half = 0; half < 2; half++) {
        uint64_t x = half ? g->xh : g->xl;
        for (int k = 0; k < 16; k++, x >>= 4) {
            uint64_t rem = zl & 0xf, n = x & 0xf;
            zl = zh << 60 | zl >> 4; /* Z * x^4, the 4 bits shifted out reduced */
            zh = (zh >> 4) ^ (ghash_last4[rem] << 48);
            zh ^= g->k->mh[n];
            zl ^= g->k->ml[n];
        }
    }
    g->xh = zh, g->xl = zl;
}

/* Hash n bytes (1..16) at p, zero-padded to a block. */
static void ghash_block(struct gcm *g, const uint8_t *p, size_t n) {
    uint8_t b[16] = {0};
    for (size_t i = 0; i < n; i++) b[i] = p[i];
    g->xh ^= load_be64(b);
    g->xl ^= load_be64(b + 8);
    ghash_mul(g);
}

static void ghash_bytes(struct gcm *g, const uint8_t *p, size_t len) {
    for (size_t o = 0; o < len; o += 16) ghash_block(g, p + o, len - o < 16 ? len - o : 16);
}

/* Counter mode from J0 + 1 over text in place, hashing the ciphertext (after encrypting when sealing,
 * before decrypting when opening). */
static void gcm_crypt(struct gcm *g, uint8_t *text, size_t len, int seal) {
    uint8_t ctr[16], ks[16];
    uint32_t n = 1;
    for (int i = 0; i < 12; i++) ctr[i] = g->j0[i];
    for (size_t o = 0; o < len; o += 16) {
        size_t m = len - o < 16 ? len - o : 16;
        store_be32(ctr + 12, ++n); /* inc32: the first counter block is J0 + 1 */
        aes128_encrypt(&g->k->aes, ctr, ks);
        if (!seal) ghash_block(g, text + o, m);
        for (size_t i = 0; i < m; i++) text[o + i] ^= ks[i];
        if (seal) ghash_block(g, text + o, m);
    }
}

/* The tag: GHASH of the length block, XOR AES(J0). */
static void gcm_tag(struct gcm *g, size_t aad_len, size_t len, uint8_t tag[16]) {
    uint8_t ek[16];
    g->xh ^= (uint64_t)aad_len * 8;
    g->xl ^= (uint64_t)len * 8;
    ghash_mul(g);
    aes128_encrypt(&g->k->aes, g->j0, ek);
    store_be64(tag, g->xh ^ load_be64(ek));
    store_be64(tag + 8, g->xl ^ load_be64(ek + 8));
}

#ifndef EBPF_AEAD_OPENSSL
void ebpf_aead_seal(const uint8_t key[16], const uint8_t nonce[12], const uint8_t *aad, size_t aad_len, uint8_t *text,
                    size_t len, uint8_t tag[16]) {
    struct ebpf_gcm_key k;
    struct gcm g;
    ebpf_gcm_key_init(&k, key);
    gcm_start(&g, &k, nonce);
    ghash_bytes(&g, aad, aad_len);
    gcm_crypt(&g, text, len, 1);
    gcm_tag(&g, aad_len, len, tag);
}

int ebpf_aead_open(const uint8_t key[16], const uint8_t nonce[12], const uint8_t *aad, size_t aad_len, uint8_t *text,
                   size_t len, const uint8_t tag[16]) {
    struct ebpf_gcm_key k;
    ebpf_gcm_key_init(&k, key);
    return ebpf_aead_open_key(&k, nonce, aad, aad_len, text, len, tag);
}
#endif

int ebpf_aead_open_key(const struct ebpf_gcm_key *k, const uint8_t nonce[12], const uint8_t *aad, size_t aad_len,
                       uint8_t *text, size_t len, const uint8_t tag[16]) {
    struct gcm g;
    uint8_t want[16], diff = 0;
    gcm_start(&g, k, nonce);
    ghash_bytes(&g, aad, aad_len);
    gcm_crypt(&g, text, len, 0);
    gcm_tag(&g, aad_len, len, want);
    for (int i = 0; i < 16; i++) diff |= (uint8_t)(want[i] ^ tag[i]);
    return diff ? -1 : 0;
}

/* ---- CMAC (NIST SP 800-38B, RFC 4493): the control channel's response tags ---- */
/* b * x in GF(2^128), the CMAC subkey step. */
static void cmac_double(uint8_t b[16]) {
    uint8_t carry = b[0] >> 7;
    for (int i = 0; i < 15; i++) b[i] = (uint8_t)(b[i] << 1 | b[i + 1] >> 7);
    b[15] = (uint8_t)(b[15] << 1) ^ (carry ? 0x87 : 0);
}

void ebpf_cmac_key_init(struct ebpf_cmac_key *k, const uint8_t key[16]) {
    for (int i = 0; i < 16; i++) k->k1[i] = 0;
    aes128_expand(&k->aes, key);
    aes128_encrypt(&k->aes, k->k1, k->k1);
    cmac_double(k->k1); /* K1 */
    for (int i = 0; i < 16; i++) k->k2[i] = k->k1[i];
    cmac_double(k->k2); /* K2 */
}

void ebpf_cmac(const struct ebpf_cmac_key *k, const uint8_t *msg, size_t len, uint8_t tag[16]) {
    uint8_t x[16] = {0};
    size_t before = len ? (len - 1) / 16 : 0, rest = len - 16 * before; /* the last block has rest bytes, 0..16 */
    for (size_t b = 0; b < before; b++) {
        for (int i = 0; i < 16; i++) x[i] ^= msg[16 * b + i];
        aes128_encrypt(&k->aes, x, x);
    }
    const uint8_t *sub = k->k1;
    if (rest < 16) { /* an incomplete (or empty) last block: padded with 10*, K2 */
        sub = k->k2;
        x[rest] ^= 0x80;
    }
    for (size_t i = 0; i < rest; i++) x[i] ^= msg[16 * before + i];
    for (int i = 0; i < 16; i++) x[i] ^= sub[i];
    aes128_encrypt(&k->aes, x, tag);
}

void ebpf_aes128_cmac(const uint8_t key[16], const uint8_t *msg, size_t len, uint8_t tag[16]) {
    struct ebpf_cmac_key k;
    ebpf_cmac_key_init(&k, key);
    ebpf_cmac(&k, msg, len, tag);
}
