/* AES-128 and AES-128-GCM of the QUIC packet protection helpers (aead.h: ebpf_aes128_encrypt_block,
 * ebpf_aead_seal, ebpf_aead_open) on the host's OpenSSL libcrypto, which uses AES-NI and carry-less
 * multiplication where the CPU has them: the host-fast build of the runtime
 * ($(O)/host-fast/libnanobpf-ebpf.a), which the device model's native data path links (nanobpf-run
 * --serve, docs/control.md). aead_soft.c, built with EBPF_AEAD_OPENSSL, still gives the control
 * channel's functions (prepared keys, CMAC); the device and every other build keep its software AES.
 *
 * Keys come as bytes on every call (aead.h). A connection uses the same few keys for many packets, so
 * each function keeps a small direct-mapped cache of cipher contexts by key bytes: a hit costs only
 * the nonce (GCM) or nothing (ECB), a miss expands the key into the slot. One thread (the runtime's
 * host build is single-threaded); a failure of libcrypto itself (out of memory) stops the process:
 * these functions cannot report one and must never return wrong bytes. */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aead.h"

#define CACHE_SLOTS 16 /* a power of two; contexts per use (seal, open, block) */

struct slot {
    EVP_CIPHER_CTX *ctx;
    uint8_t key[EBPF_AEAD_KEY_LEN];
};

static void fail(const char *what) {
    fprintf(stderr, "aead_openssl: %s failed (libcrypto)\n", what);
    abort();
}

/* The context of key in cache, set up for cipher (enc: encrypt) with its key expanded. */
static EVP_CIPHER_CTX *ctx_for(struct slot *cache, const EVP_CIPHER *cipher, int enc, const uint8_t key[16]) {
    uint32_t h = 2166136261u; /* FNV-1a over the key: picks the slot */
    for (int i = 0; i < EBPF_AEAD_KEY_LEN; i++) h = (h ^ key[i]) * 16777619u;
    struct slot *s = &cache[h & (CACHE_SLOTS - 1)];
    if (s->ctx && !memcmp(s->key, key, EBPF_AEAD_KEY_LEN)) return s->ctx;
    if (!s->ctx && !(s->ctx = EVP_CIPHER_CTX_new())) fail("EVP_CIPHER_CTX_new");
    if (!EVP_CipherInit_ex(s->ctx, cipher, NULL, key, NULL, enc)) fail("EVP_CipherInit_ex (key)");
    if (cipher == EVP_aes_128_ecb()) EVP_CIPHER_CTX_set_padding(s->ctx, 0);
    memcpy(s->key, key, EBPF_AEAD_KEY_LEN);
    return s->ctx;
}

void ebpf_aes128_encrypt_block(const uint8_t key[16], const uint8_t in[16], uint8_t out[16]) {
    static struct slot cache[CACHE_SLOTS];
    EVP_CIPHER_CTX *c = ctx_for(cache, EVP_aes_128_ecb(), 1, key);
    uint8_t b[16];
    int n;
    if (!EVP_EncryptUpdate(c, b, &n, in, 16) || n != 16) fail("AES-128-ECB");
    memcpy(out, b, 16); /* in and out may be the same block */
}

/* Nonce and AAD into c (a GCM context of the right direction and key). */
static void gcm_start(EVP_CIPHER_CTX *c, const uint8_t nonce[12], const uint8_t *aad, size_t aad_len) {
    int n;
    if (!EVP_CipherInit_ex(c, NULL, NULL, NULL, nonce, -1)) fail("EVP_CipherInit_ex (nonce)");
    if (aad_len && !EVP_CipherUpdate(c, NULL, &n, aad, (int)aad_len)) fail("GCM AAD");
}

void ebpf_aead_seal(const uint8_t key[16], const uint8_t nonce[12], const uint8_t *aad, size_t aad_len, uint8_t *text,
                    size_t len, uint8_t tag[16]) {
    static struct slot cache[CACHE_SLOTS];
    EVP_CIPHER_CTX *c = ctx_for(cache, EVP_aes_128_gcm(), 1, key);
    uint8_t end[16];
    int n;
    gcm_start(c, nonce, aad, aad_len);
    if (len && (!EVP_EncryptUpdate(c, text, &n, text, (int)len) || (size_t)n != len)) fail("GCM encrypt");
    if (!EVP_EncryptFinal_ex(c, end, &n)) fail("GCM encrypt final");
    if (!EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, EBPF_AEAD_TAG_LEN, tag)) fail("GCM tag");
}

int ebpf_aead_open(const uint8_t key[16], const uint8_t nonce[12], const uint8_t *aad, size_t aad_len, uint8_t *text,
                   size_t len, const uint8_t tag[16]) {
    static struct slot cache[CACHE_SLOTS];
    EVP_CIPHER_CTX *c = ctx_for(cache, EVP_aes_128_gcm(), 0, key);
    uint8_t want[EBPF_AEAD_TAG_LEN], end[16];
    int n;
    memcpy(want, tag, sizeof want); /* SET_TAG takes a non-const buffer */
    gcm_start(c, nonce, aad, aad_len);
    /* decrypted in place whatever the tag: aead.h leaves the unauthenticated plaintext in text */
    if (len && (!EVP_DecryptUpdate(c, text, &n, text, (int)len) || (size_t)n != len)) fail("GCM decrypt");
    if (!EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, EBPF_AEAD_TAG_LEN, want)) fail("GCM set tag");
    return EVP_DecryptFinal_ex(c, end, &n) > 0 ? 0 : -1;
}
