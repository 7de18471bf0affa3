/* The crypto behind the QUIC packet protection helpers (quic_aead_seal, quic_aead_open, quic_hp_mask):
 * AES-128 of one block and AES-128-GCM with a 96-bit nonce and a 16-byte tag, as RFC 9001 sections 5.3
 * and 5.4.3 use them (NIST SP 800-38D). helpers.c builds the nonce and checks every range; the
 * functions here only compute.
 *
 * One implementation is linked per platform: aead_soft.c (software, every platform today); the host-fast
 * build of the runtime (the device model's native data path) takes AES-128 and AES-128-GCM from the
 * host's libcrypto instead (aead_openssl.c, aead_soft.c built with EBPF_AEAD_OPENSSL). The device
 * can swap it for the AEAD engine (issue 7) without touching the helpers. Keys are passed as bytes on
 * every call; an implementation may cache expanded keys, callers keep no state between calls. */
#ifndef NANOBPF_EBPF_AEAD_H
#define NANOBPF_EBPF_AEAD_H

#include <stddef.h>
#include <stdint.h>

#define EBPF_AEAD_KEY_LEN 16
#define EBPF_AEAD_NONCE_LEN 12
#define EBPF_AEAD_TAG_LEN 16

/* out = AES-128 of in under key (FIPS 197); in and out may be the same block. */
void ebpf_aes128_encrypt_block(const uint8_t key[EBPF_AEAD_KEY_LEN], const uint8_t in[16], uint8_t out[16]);
/* The header-protection mask of a sample computed here, as the engine's scratch holds it: bytes 0..4
 * of AES-128-ECB(hp, sample) as one word, byte 0 the lowest (ebpf_hp_engine_at's *mask). */
static inline uint64_t ebpf_hp_mask_soft(const uint8_t hp[EBPF_AEAD_KEY_LEN], const uint8_t sample[16]) {
    uint8_t m[16];
    ebpf_aes128_encrypt_block(hp, sample, m);
    return (uint64_t)m[0] | (uint64_t)m[1] << 8 | (uint64_t)m[2] << 16 | (uint64_t)m[3] << 24 | (uint64_t)m[4] << 32;
}

/* AES-CMAC (NIST SP 800-38B, RFC 4493) of len bytes at msg under key: the control channel's response
 * tags (docs/control.md "The device key"). */
void ebpf_aes128_cmac(const uint8_t key[EBPF_AEAD_KEY_LEN], const uint8_t *msg, size_t len, uint8_t tag[16]);

/* Keys prepared once for many messages (the control channel's two keys): the AES key schedule, GCM's
 * hash-key table, CMAC's subkeys; then each message costs only its blocks. */
struct ebpf_aes128 {
    uint32_t rk[44]; /* round keys, big-endian words */
};
struct ebpf_gcm_key {
    struct ebpf_aes128 aes;
    uint64_t mh[16], ml[16]; /* n * H for the 4-bit values n (GHASH, Shoup's method) */
};
struct ebpf_cmac_key {
    struct ebpf_aes128 aes;
    uint8_t k1[16], k2[16]; /* the subkeys */
};
void ebpf_gcm_key_init(struct ebpf_gcm_key *k, const uint8_t key[EBPF_AEAD_KEY_LEN]);
/* ebpf_aead_open with a prepared key. */
int ebpf_aead_open_key(const struct ebpf_gcm_key *k, const uint8_t nonce[EBPF_AEAD_NONCE_LEN], const uint8_t *aad,
                       size_t aad_len, uint8_t *text, size_t len, const uint8_t tag[EBPF_AEAD_TAG_LEN]);
void ebpf_cmac_key_init(struct ebpf_cmac_key *k, const uint8_t key[EBPF_AEAD_KEY_LEN]);
/* ebpf_aes128_cmac with a prepared key. */
void ebpf_cmac(const struct ebpf_cmac_key *k, const uint8_t *msg, size_t len, uint8_t tag[16]);

/* AES-128-GCM encryption: text (len bytes) is encrypted in place, the tag over aad (aad_len bytes,
 * may be 0) and the ciphertext is written to tag. aad, text and tag must not overlap. */
void ebpf_aead_seal(const uint8_t key[EBPF_AEAD_KEY_LEN], const uint8_t nonce[EBPF_AEAD_NONCE_LEN],
                    const uint8_t *aad, size_t aad_len, uint8_t *text, size_t len, uint8_t tag[EBPF_AEAD_TAG_LEN]);

/* AES-128-GCM decryption: text (len bytes of ciphertext) is decrypted in place. Returns 0 when tag
 * authenticates aad and the ciphertext, -1 otherwise; text then holds unauthenticated plaintext, which
 * the caller must not deliver. */
int ebpf_aead_open(const uint8_t key[EBPF_AEAD_KEY_LEN], const uint8_t nonce[EBPF_AEAD_NONCE_LEN],
                   const uint8_t *aad, size_t aad_len, uint8_t *text, size_t len, const uint8_t tag[EBPF_AEAD_TAG_LEN]);

/* The platform's AEAD engine, which the helpers try first (platform/device.c: the hardware engine of
 * docs/aead.md; elsewhere there is none). keys is the key table value (struct nanobpf_quic_keys) the
 * program passed, next selects its next-phase key and IV, pn the packet number (the engine makes the
 * nonce). Seal with a sample (else NULL): then also the header-protection mask of the 16 bytes at
 * sample once sealed, into *mask as ebpf_hp_engine_at gives it. Returns 0 when done (open: the tag
 * verified), 1 when open found a tag mismatch (the text then holds unauthenticated plaintext), -1 when
 * the engine cannot take the request (no engine, keys outside its key table storage, data outside its
 * packet memory; nothing was written): the caller computes in software. */
int ebpf_aead_engine(int seal, const void *keys, int next, uint64_t pn, const uint8_t *aad, size_t aad_len,
                     uint8_t *text, size_t len, const uint8_t *sample, uint64_t *mask);
/* Seal with header protection applied (the engine's seal_hp; the helper checked that the header holds
 * the first byte and the packet number and that the sample lies in the packet). With pending NULL it
 * waits: 0 when done. Otherwise it returns 0 as soon as the engine has the request and puts 1 + its id
 * in *pending: the caller collects it with ebpf_aead_finish before the frame leaves. -1 when the engine
 * cannot take it (nothing written): the caller computes in software. */
int ebpf_aead_engine_seal_hp(const void *keys, int next, uint64_t pn, uint8_t *aad, size_t aad_len, uint8_t *text,
                             size_t len, uint32_t *pending);
/* Open, left to finish after the program as ebpf_aead_engine_seal_hp does (pending not NULL, and no
 * request left pending for this frame yet; otherwise -1): 0 once the engine has the request. When the
 * engine finds the tag authentic, the connection's packet-number state (state: keys' entry's, as
 * ebpf_keytable_pn gives it) records pn (ebpf_quic_pn_record(state, pn, phase), as soon as this hart
 * collects the completion); a forged tag makes ebpf_aead_finish return -1. -1 when the engine cannot
 * take it (nothing written): the caller opens another way. */
int ebpf_aead_engine_open_commit(const void *keys, void *state, int next, uint64_t pn, const uint8_t *aad, size_t aad_len,
                                 uint8_t *text, size_t len, int phase, uint32_t *pending);
/* The result of a request ebpf_aead_engine_seal_hp or ebpf_aead_engine_open_commit left pending (1 + its
 * id), waiting for it if need be: 0 when the engine completed it (an open: the tag authentic), -1 when it
 * refused it or found the tag forged (the frame must be dropped). */
int ebpf_aead_finish(uint32_t pending);
/* An authentic open's packet number pn recorded in the packet-number state of the key table value keys
 * (quic_aead_open with NANOBPF_AEAD_COMMIT, hw/defs/ebpf.toml): what xdp_quic does after an open. phase:
 * the key phase bit of the current keys the open used (a short header), or -1 (next keys, a long
 * header: no phase to record). */
void ebpf_quic_pn_commit(const void *keys, uint64_t pn, int phase);
/* The same in the packet-number state state (NULL: none kept, nothing recorded). */
void ebpf_quic_pn_record(void *state, uint64_t pn, int phase);
/* block := AES-128-ECB(keys->hp, block) on the engine: 0, or -1 (compute in software). */
int ebpf_hp_engine(const void *keys, uint8_t block[16]);
/* The first 8 bytes of AES-128-ECB(keys->hp, the 16 bytes at sample) on the engine, which reads the
 * sample where it lies (packet memory, any alignment), as one word (byte 0 the lowest): 0, or -1
 * (compute in software). */
int ebpf_hp_engine_at(const void *keys, const uint8_t *sample, uint64_t *mask);
/* The same in two steps, so that the caller works while the engine computes: submit (a ticket, or -1:
 * compute in software), then collect the mask (0, or -1: compute in software). No other engine request
 * of this hart's between them. */
int ebpf_hp_engine_submit(const void *keys, const uint8_t *sample);
int ebpf_hp_engine_collect(int ticket, uint64_t *mask);
/* Device: bytes of the shared memory region in use (maps), for the control plane's reports. */
size_t ebpf_shared_in_use(void);

#endif
