/* The QUIC packet protection helpers (RFC 9001 section 5; hw/defs/ebpf.toml ids 0x10001..): the AEAD
 * and header-protection helpers on the crypto backend of aead.h, the key table entry of PISA's
 * connection, and a frame PISA classified sealed or opened in one call. helpers.c lists them with the
 * others. */
#include <string.h>
#include "aead.h"
#include "ebpf.h"
#include "helpers.h"

/* A header-protection mask's bytes 0..4 (a word, byte 0 the lowest) as the helpers return them: byte
 * 0 in bits 39..32 down to byte 4 in bits 7..0 (a memcpy to bytes was a call to memmove). */
static U64 mask_be40(uint64_t w) {
    return (w & 0xff) << 32 | (w >> 8 & 0xff) << 24 | (w >> 16 & 0xff) << 16 | (w >> 24 & 0xff) << 8 | (w >> 32 & 0xff);
}

/* The key of the phase (next: the value's second slot) and the nonce: IV XOR the packet number,
 * big-endian and left-padded to 12 bytes (RFC 9001 5.3). */
static const uint8_t *quic_key_nonce(const struct nanobpf_quic_keys *k, int next, uint64_t pn, uint8_t nonce[EBPF_AEAD_NONCE_LEN]) {
    const uint8_t *iv = k->iv + (next ? 12 : 0);
    for (int i = 0; i < EBPF_AEAD_NONCE_LEN; i++) nonce[i] = iv[i] ^ (i < 4 ? 0 : (uint8_t)(pn >> (8 * (11 - i))));
    return k->key + (next ? 16 : 0);
}

void ebpf_quic_pn_commit(const void *keys, uint64_t pn, int phase) { ebpf_quic_pn_record(ebpf_keytable_pn(keys), pn, phase); }
void ebpf_quic_pn_record(void *state, uint64_t pn, int phase) {
    volatile struct nanobpf_quic_pn_state *st = state;
    if (!st) return; /* no state kept for the entry (the program could not have decoded pn) */
    if (pn + 1 > st->rx_next) st->rx_next = pn + 1;
    if (phase >= 0) { /* where the current keys' phase began (quic_open_slot in quic_protect.h) */
        uint32_t cur = 2 | (uint32_t)phase;
        if (st->phase != cur) st->phase = cur, st->phase_pn = pn;
        else if (pn < st->phase_pn) st->phase_pn = pn;
    }
}

/* Seal with header protection applied (NANOBPF_AEAD_HP_APPLY), the request checked: the header's last
 * pn_len bytes are the packet number, the sample 4 bytes after it lies before the tag's end. One engine
 * request; where the caller lets it (aead_defer), it finishes after the program. Returns 0. */
static __attribute__((noinline)) void seal_hp_soft(const struct nanobpf_quic_keys *k, int next, uint64_t pn, uint8_t *hdr,
                                                   uint32_t hdr_len, uint32_t payload_len, uint32_t pn_len);
static inline int64_t seal_hp_apply(struct ebpf_xdp_buff *x, const struct nanobpf_quic_keys *k, int next, uint64_t pn, uint8_t *hdr,
                                    uint32_t hdr_len, uint32_t payload_len, uint32_t pn_len) {
    if (ebpf_aead_engine_seal_hp(k, next, pn, hdr, hdr_len, hdr + hdr_len, payload_len, x->aead_defer ? &x->aead_pending : NULL))
        seal_hp_soft(k, next, pn, hdr, hdr_len, payload_len, pn_len); /* out of line: the engine's way keeps few registers */
    return 0;
}
/* The same in software (no engine, or it refused the request). */
static void seal_hp_soft(const struct nanobpf_quic_keys *k, int next, uint64_t pn, uint8_t *hdr, uint32_t hdr_len,
                         uint32_t payload_len, uint32_t pn_len) {
    uint8_t *payload = hdr + hdr_len;
    uint8_t nonce[EBPF_AEAD_NONCE_LEN];
    ebpf_aead_seal(quic_key_nonce(k, next, pn, nonce), nonce, hdr, hdr_len, payload, payload_len, payload + payload_len);
    uint64_t m = ebpf_hp_mask_soft(k->hp, hdr + hdr_len - pn_len + 4); /* byte 0 the lowest */
    hdr[0] ^= (uint8_t)m & (hdr[0] & 0x80 ? 0x0f : 0x1f);
    for (uint32_t i = 0; i < pn_len; i++) hdr[hdr_len - pn_len + i] ^= (uint8_t)(m >> (8 * (i + 1)));
}

/* An open whose tag decides the frame and records pn in the packet-number state (NANOBPF_AEAD_COMMIT),
 * the request checked: where the caller lets it (aead_defer) the engine's verdict comes after the
 * program (the firmware holds the frame until then and records the number when it is authentic);
 * otherwise now, on the engine or in software. 0, or -EBADMSG for a forged tag (nothing recorded). */
static __attribute__((noinline)) int64_t open_now(const struct nanobpf_quic_keys *k, void *state, int next, uint64_t pn,
                                                  uint8_t *hdr, uint32_t hdr_len, uint32_t len, int phase);
static inline int64_t open_commit(struct ebpf_xdp_buff *x, const struct nanobpf_quic_keys *k, void *state, int next, uint64_t pn,
                                  uint8_t *hdr, uint32_t hdr_len, uint32_t len, int phase) {
    if (x->aead_defer && ebpf_aead_engine_open_commit(k, state, next, pn, hdr, hdr_len, hdr + hdr_len, len, phase, &x->aead_pending) == 0)
        return 0;
    return open_now(k, state, next, pn, hdr, hdr_len, len, phase); /* out of line: the deferred way keeps few registers */
}
/* The open and its verdict now: on the engine, or in software. */
static int64_t open_now(const struct nanobpf_quic_keys *k, void *state, int next, uint64_t pn, uint8_t *hdr, uint32_t hdr_len,
                        uint32_t len, int phase) {
    uint8_t *payload = hdr + hdr_len;
    uint64_t mask = 0;
    int hw = ebpf_aead_engine(0, k, next, pn, hdr, hdr_len, payload, len, NULL, &mask);
    if (hw < 0) {
        uint8_t nonce[EBPF_AEAD_NONCE_LEN];
        const uint8_t *key = quic_key_nonce(k, next, pn, nonce);
        hw = ebpf_aead_open(key, nonce, hdr, hdr_len, payload, len, payload + len) ? 1 : 0;
    }
    if (hw) return -NANOBPF_EBADMSG;
    ebpf_quic_pn_record(state, pn, phase);
    return 0;
}

/* The verifier proved the key table value (keytable_value: a whole struct nanobpf_quic_keys) and the
 * request or block (mem: size bytes). The request's packet ranges are checked here against
 * [data, data_end) with 64-bit sums of 32-bit fields, which cannot overflow. Checks come in this order:
 * the request (-EINVAL), then the next keys (-ENOKEY); nothing is written on an error. state: the
 * entry's packet-number state an open with NANOBPF_AEAD_COMMIT records in, when the caller has it
 * (NULL: found from k). */
static int64_t quic_aead_req(struct ebpf_xdp_buff *x, const struct nanobpf_quic_keys *k, struct nanobpf_aead_req r, int seal,
                             void *state) {
    uint32_t known = NANOBPF_AEAD_NEXT_PHASE | (seal ? NANOBPF_AEAD_HP_MASK | NANOBPF_AEAD_HP_APPLY : NANOBPF_AEAD_COMMIT);
    uint32_t hp = r.flags & (NANOBPF_AEAD_HP_MASK | NANOBPF_AEAD_HP_APPLY);
    if ((r.flags & ~known) || hp == (NANOBPF_AEAD_HP_MASK | NANOBPF_AEAD_HP_APPLY) || r.hdr_len == 0 || r.hdr_len > NANOBPF_AEAD_HDR_MAX ||
        r.payload_len > NANOBPF_AEAD_PAYLOAD_MAX || (r.pn >> NANOBPF_AEAD_PN_BITS))
        return -NANOBPF_EINVAL;
    uint64_t len = x->data_end - x->data;
    if ((uint64_t)r.hdr_off + r.hdr_len + r.payload_len + NANOBPF_AEAD_TAG_LEN > len)
        return -NANOBPF_EINVAL;
    uint8_t *hdr = PTR(x->data + r.hdr_off), *payload = hdr + r.hdr_len, *tag = payload + r.payload_len;
    /* the mask's sample: 4 bytes after the packet number, the header's last (first byte & 3) + 1 bytes */
    const uint8_t *sample = NULL;
    uint32_t pn_len = 0;
    if (hp) {
        pn_len = (hdr[0] & 3) + 1;
        uint64_t at = (uint64_t)r.hdr_off + r.hdr_len - pn_len + 4;
        if (pn_len > r.hdr_len || at + NANOBPF_AEAD_HP_BLOCK_LEN > len) return -NANOBPF_EINVAL;
        /* applied: the first byte and the packet number are both in the header, the sample in the
         * packet (it ends at the tag's end at the latest), as the engine's seal_hp requires */
        if (hp == NANOBPF_AEAD_HP_APPLY &&
            (pn_len + 1 > r.hdr_len || at + NANOBPF_AEAD_HP_BLOCK_LEN > (uint64_t)r.hdr_off + r.hdr_len + r.payload_len + NANOBPF_AEAD_TAG_LEN))
            return -NANOBPF_EINVAL;
        sample = PTR(x->data + at);
    }
    int next = (r.flags & NANOBPF_AEAD_NEXT_PHASE) != 0;
    if (next && !(k->flags & (NANOBPF_QUIC_KEY_NEXT | NANOBPF_QUIC_KEY_PREV))) return -NANOBPF_ENOKEY; /* second slot empty */
    if (hp == NANOBPF_AEAD_HP_APPLY) return seal_hp_apply(x, k, next, r.pn, hdr, r.hdr_len, r.payload_len, pn_len);
    /* the phase the open records: the current keys' (as they are now: a key update may come before a
     * deferred verdict) for a short header opened with them, else none */
    int phase = !next && !(hdr[0] & 0x80) ? k->key_phase & 1 : -1;
    if (r.flags & NANOBPF_AEAD_COMMIT)
        return open_commit(x, k, state ? state : ebpf_keytable_pn(k), next, r.pn, hdr, r.hdr_len, r.payload_len, phase);
    uint64_t mask = 0;
    int hw = ebpf_aead_engine(seal, k, next, r.pn, hdr, r.hdr_len, payload, r.payload_len, sample, &mask);
    if (hw < 0) {
        uint8_t nonce[EBPF_AEAD_NONCE_LEN];
        const uint8_t *key = quic_key_nonce(k, next, r.pn, nonce);
        if (!seal) hw = ebpf_aead_open(key, nonce, hdr, r.hdr_len, payload, r.payload_len, tag) ? 1 : 0;
        else ebpf_aead_seal(key, nonce, hdr, r.hdr_len, payload, r.payload_len, tag);
        if (seal && sample) mask = ebpf_hp_mask_soft(k->hp, sample);
    }
    if (!seal) return hw ? -NANOBPF_EBADMSG : 0;
    return sample ? (int64_t)mask_be40(mask) : 0;
}
static int64_t quic_aead(U64 ctx, U64 keys, U64 req_addr, U64 req_size, int seal) {
    struct nanobpf_aead_req r;
    if (req_size != sizeof r) return -NANOBPF_EINVAL;
    /* anywhere the verifier allows: on the program's stack (aligned: one copy of words, where a memcpy
     * of unknown alignment was a call to memmove), or in the packet (no alignment) */
    if (req_addr & 7) memcpy(&r, PTR(req_addr), sizeof r);
    else r = *(const struct nanobpf_aead_req *)PTR(req_addr);
    return quic_aead_req(PTR(ctx), PTR(keys), r, seal, NULL);
}
U64 h_quic_aead_seal(U64 ctx, U64 keys, U64 req, U64 req_size, U64 a5) {
    (void)a5;
    return (U64)quic_aead(ctx, keys, req, req_size, 1);
}
U64 h_quic_aead_open(U64 ctx, U64 keys, U64 req, U64 req_size, U64 a5) {
    (void)a5;
    return (U64)quic_aead(ctx, keys, req, req_size, 0);
}
/* The header-protection mask (RFC 9001 5.4.3): the block (the sample) encrypted in place with hp. */
U64 h_quic_hp_mask(U64 keys, U64 block, U64 size, U64 a4, U64 a5) {
    (void)a4; (void)a5;
    if (size != NANOBPF_AEAD_HP_BLOCK_LEN) return (U64)(int64_t)-NANOBPF_EINVAL;
    const struct nanobpf_quic_keys *k = PTR(keys);
    if (ebpf_hp_engine(k, PTR(block)) == 0) return 0;
    ebpf_aes128_encrypt_block(k->hp, PTR(block), PTR(block));
    return 0;
}

/* The same mask, of the sample where it lies in the packet (off from data), as a number: bytes 0..4
 * big-endian in bits 39..0. */
U64 h_quic_hp_mask_at(U64 ctx, U64 keys, U64 off, U64 a4, U64 a5) {
    (void)a4; (void)a5;
    const struct ebpf_xdp_buff *x = PTR(ctx);
    if (off > x->data_end - x->data || x->data_end - x->data - off < NANOBPF_AEAD_HP_BLOCK_LEN)
        return (U64)(int64_t)-NANOBPF_EINVAL;
    const struct nanobpf_quic_keys *k = PTR(keys);
    const uint8_t *sample = PTR(x->data + off);
    uint64_t w;
    if (ebpf_hp_engine_at(k, sample, &w) != 0) w = ebpf_hp_mask_soft(k->hp, sample);
    return mask_be40(w);
}

/* The key table entry's packet-number state, by the slot its value names (maps.c); the verifier checked
 * that map is the packet-number map and keys a key table value. */
U64 h_quic_pn_of(U64 map, U64 keys, U64 a3, U64 a4, U64 a5) {
    (void)a3; (void)a4; (void)a5;
    if (!ebpf_map_is_keytable_pn(PTR(map))) return 0;
    return (U64)(uintptr_t)ebpf_keytable_pn(PTR(keys));
}

/* n (1..8) bytes at address a, byte 0 lowest, by one or two aligned word loads (packet memory is
 * uncached: every load is a bus transaction). The caller checked that the words lie in the frame's
 * buffer [data_hard_start, frame_end); the bytes may lie past the frame there. */
static inline __attribute__((always_inline)) uint64_t buf_bytes(uint64_t a, unsigned n) {
    const uint64_t *w = PTR(a & ~7ull);
    unsigned sh = (unsigned)(a & 7) * 8;
    uint64_t v = w[0] >> sh;
    if (sh && sh + 8 * n > 64) v |= w[1] << (64 - sh);
    return n >= 8 ? v : v & ((1ull << 8 * n) - 1);
}
/* n bytes v (byte 0 lowest) at byte pos of a key's three little-endian words. */
static inline __attribute__((always_inline)) void key_put(uint64_t k[3], unsigned pos, uint64_t v, unsigned n) {
    unsigned w = pos / 8, sh = (pos % 8) * 8;
    k[w] |= v << sh;
    if (sh && sh + 8 * n > 64) k[w + 1] |= v >> (64 - sh);
}

/* The key table key the frame names for PISA's connection (bpf_quic_keys_of), as struct
 * nanobpf_quic_cid's words: len and the CID PISA read (cid_len bytes after the short header's first
 * byte), or for cid_len 0 the peer's address id (NANOBPF_QUIC_ADDR_*: its IPv6 address, IPv4 as
 * ::ffff:a.b.c.d, its UDP port, the local one; the peer is the source of a frame to open, the
 * destination of one to seal), then dir. The bytes are read where PISA parsed them and must still be
 * inside the frame, and the words holding them inside its buffer: -1 otherwise. */
#define KEY_ID 1 /* struct nanobpf_quic_cid: len, id[20], dir */
#define KEY_DIR (KEY_ID + NANOBPF_KEYTABLE_CID_MAX)
_Static_assert(offsetof(struct nanobpf_quic_cid, id) == KEY_ID && offsetof(struct nanobpf_quic_cid, dir) == KEY_DIR,
               "the key's bytes");
static int quic_frame_key(const struct ebpf_xdp_buff *x, uint32_t dir, uint64_t k[3]) {
    uint64_t base = x->parse_data;
    uint32_t len = x->cid_len;
#define IN_FRAME(off, n) (base + (off) >= x->data && base + (off) + (n) <= x->data_end && \
                          ((base + (off)) & ~7ull) >= x->data_hard_start && ((base + (off) + (n) + 7) & ~7ull) <= x->frame_end)
    k[0] = len, k[1] = 0, k[2] = (uint64_t)dir << 8 * (KEY_DIR - 16);
    if (len) {
        /* the first byte and the CID are the key's bytes 0..len, byte 0 replaced by len: word by word */
        uint64_t at = base + x->quic_off;
        unsigned n = len + 1;
        _Static_assert(KEY_ID == 1 && KEY_DIR == 21, "the key's bytes 0..len in its first words, dir after them");
        if (len > NANOBPF_KEYTABLE_CID_MAX || !IN_FRAME(x->quic_off, n)) return -1;
        k[0] = (buf_bytes(at, n < 8 ? n : 8) & ~0xffull) | len;
        if (n > 8) k[1] = buf_bytes(at + 8, n < 16 ? n - 8 : 8);
        if (n > 16) k[2] |= buf_bytes(at + 16, n - 16);
        return 0;
    }
    /* the IP header and the UDP header's ports, PISA's: [l3, l4 + 4) holds both */
    uint32_t l3 = x->l3_off, l4 = x->l4_off;
    if (!l3 || l4 < l3 + 20 || !IN_FRAME(l3, l4 + 4 - l3)) return -1;
    int v6 = *(const uint8_t *)PTR(base + l3) >> 4 == 6, peer_is_src = dir == NANOBPF_QUIC_DIR_OPEN;
    if (v6) {
        if (l4 < l3 + 40) return -1;
        uint64_t a = base + l3 + (peer_is_src ? 8 : 24);
        key_put(k, KEY_ID + NANOBPF_QUIC_ADDR_IP_OFF, buf_bytes(a, 8), 8);
        key_put(k, KEY_ID + NANOBPF_QUIC_ADDR_IP_OFF + 8, buf_bytes(a + 8, 8), 8);
    } else { /* ::ffff:a.b.c.d */
        key_put(k, KEY_ID + NANOBPF_QUIC_ADDR_IP_OFF + 10, 0xffff, 2);
        key_put(k, KEY_ID + NANOBPF_QUIC_ADDR_IP_OFF + 12, buf_bytes(base + l3 + (peer_is_src ? 12 : 16), 4), 4);
    }
    uint64_t ports = buf_bytes(base + l4, 4); /* source, destination: as on the wire */
    key_put(k, KEY_ID + NANOBPF_QUIC_ADDR_PEER_PORT_OFF, peer_is_src ? ports & 0xffff : ports >> 16, 2);
    key_put(k, KEY_ID + NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF, peer_is_src ? ports >> 16 : ports & 0xffff, 2);
    return 0;
#undef IN_FRAME
}

/* The key table value of the frame's connection as PISA found it, checked against the key the frame
 * names (the slot may hold another entry since: the control plane replaced it while the frame waited,
 * or it is the other direction's); the verifier checked that ctx is the context. */
U64 h_quic_keys_of(U64 ctx, U64 map, U64 dir, U64 a4, U64 a5) {
    (void)a4; (void)a5;
    const struct ebpf_xdp_buff *x = PTR(ctx);
    uint64_t k[3];
    _Static_assert(sizeof k == NANOBPF_QUIC_CID_SIZE, "the key's words");
    if (!x->conn || !x->pn_off || (dir != NANOBPF_QUIC_DIR_OPEN && dir != NANOBPF_QUIC_DIR_SEAL) ||
        !ebpf_map_is_keytable(PTR(map)) || quic_frame_key(x, (uint32_t)dir, k))
        return 0;
    return (U64)(uintptr_t)ebpf_keytable_at(k, ebpf_conn_slot(x->conn));
}

/* ---- bpf_quic_seal_conn: a frame to seal that PISA classified, sealed in one call (quic_seal of
 * sw/ebpf/quic/quic_protect.h, step for step and drop for drop) ---- */

/* 16 bits big-endian at a: one access when aligned (packet memory is uncached). */
static inline __attribute__((always_inline)) uint32_t ld_be16(uint64_t a) {
    if (a & 1) return (uint32_t)*(const uint8_t *)PTR(a) << 8 | *(const uint8_t *)PTR(a + 1);
    uint32_t v = *(const volatile uint16_t *)PTR(a); /* volatile: one load, not one per byte swapped */
    return (v >> 8 | v << 8) & 0xffff;
}

/* Bytes 0..3 (byte 0 the lowest) as a big-endian number: shifts, not libgcc's __bswapsi2 (no Zbb). */
static inline __attribute__((always_inline)) uint32_t be32_of_bytes(uint32_t v) {
    return v << 24 | (v & 0xff00) << 8 | (v >> 8 & 0xff00) | v >> 24;
}

/* RFC 9000 appendix A.3 (quic_decode_pn in quic_protect.h). */
static uint64_t quic_decode_pn(uint64_t expected, uint64_t truncated, uint32_t pn_len) {
    uint64_t win = 1ull << (8 * pn_len), hwin = win / 2, mask = win - 1, cand = (expected & ~mask) | truncated;
    if (cand + hwin <= expected && cand < (1ull << 62) - win) return cand + win;
    if (cand > expected + hwin && cand >= win) return cand - win;
    return cand;
}

/* The claim of a SEAL entry's packet number (quic_claim_pn): the largest claim word is one past the
 * largest number sealed, the reference for decoding; pn is claimed by one compare-and-swap on its
 * class's word, which only grows. 0, or -1 when pn may have been sealed (the nonce could repeat). */
static uint64_t seal_next(volatile uint64_t *w) {
    uint64_t m = 0;
    for (unsigned i = 0; i < NANOBPF_QUIC_PN_CLAIMS; i++) {
        uint64_t v = w[i];
        m = v > m ? v : m;
    }
    return m;
}
static int seal_claim(volatile uint64_t *w, uint64_t pn) {
    uint64_t *word = (uint64_t *)(uintptr_t)&w[pn & (NANOBPF_QUIC_PN_CLAIMS - 1)];
#if defined(__riscv) && __riscv_xlen == 64
    /* The word becomes max(word, pn + 1) in one atomic operation (on the device: one bus transaction,
     * where the load and the LR/SC pair of a compare-and-swap were three): pn is claimed when the word
     * was at most pn, and a word above pn is left as it was, so the outcome is the swap's. */
    uint64_t old;
    __asm__ volatile("amomaxu.d.aqrl %0, %2, %1" : "=r"(old), "+A"(*word) : "r"(pn + 1) : "memory");
    return old <= pn ? 0 : -1;
#else
    for (int i = 0; i < 2; i++) { /* a failed swap: another core claimed in this class meanwhile */
        uint64_t old = __atomic_load_n(word, __ATOMIC_RELAXED);
        if (pn < old) return -1;
        if (__atomic_compare_exchange_n(word, &old, pn + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return 0;
    }
    return -1;
#endif
}
_Static_assert(sizeof(struct nanobpf_quic_seal_pn) == NANOBPF_QUIC_PN_CLAIMS * 8, "the claim words, in order");

#define SEAL_DROP(reason) ((U64) - (int64_t)(1 + (reason)))
#define SEAL_DROP_KEYED(reason) SEAL_DROP(NANOBPF_QUIC_SEAL_KEYED | (reason))
/* The checks come in quic_xdp's order for such a frame (quic_pisa_classify, quic_short_cid_at,
 * quic_pisa_keys, quic_seal, quic_fix_lengths): a frame the general path would treat otherwise before
 * its keys are known gets SLOW with nothing changed, and every later failure is the general path's drop
 * with the frame as it leaves it. Offsets count from where PISA parsed the frame (parse_data): the shim
 * the program removed was before the IP header, whose bytes stay where they were. */
U64 h_quic_seal_conn(U64 ctx, U64 map, U64 cid_len, U64 max_payload, U64 max_hdr) {
    struct ebpf_xdp_buff *x = PTR(ctx);
    const uint64_t base = x->parse_data;
    const uint32_t l3 = x->l3_off, l4 = x->l4_off, q = x->quic_off, pn_off = x->pn_off;
    if (!x->conn || !pn_off || cid_len != x->cid_len || l4 < l3 + 20 || q != l4 + 8 || pn_off != q + 1 + cid_len ||
        base + l3 < x->data + 14 || base + q + 1 > x->data_end || !ebpf_map_is_keytable(PTR(map)))
        return NANOBPF_QUIC_SEAL_SLOW;
    /* quic_pisa_classify: a short header inside the UDP datagram, the fixed bit set */
    const uint32_t ulen = ld_be16(base + l4 + 4), pkt_end = l4 + ulen, b0 = *(const uint8_t *)PTR(base + q);
    const int v6 = *(const uint8_t *)PTR(base + l3) >> 4 == 6;
    if (q >= pkt_end || (b0 & 0x80) || (v6 && l4 < l3 + 40)) return NANOBPF_QUIC_SEAL_SLOW;
    if (!(b0 & 0x40)) return SEAL_DROP(NANOBPF_QUIC_DROP_NO_FIXED_BIT);
    /* quic_short_cid_at: the CID inside the frame and the datagram */
    if (base + pn_off > x->data_end || pn_off > pkt_end) return SEAL_DROP(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    /* quic_pisa_keys: the SEAL entry PISA matched the frame to, if its slot still holds it */
    const struct nanobpf_quic_keys *keys = ebpf_keytable_by_conn(x->conn, NANOBPF_QUIC_DIR_SEAL);
    if (!keys) return NANOBPF_QUIC_SEAL_SLOW;
    /* quic_seal: room for the tag, the header's bytes inside the frame, the sample inside the packet */
    const uint64_t end = base + pkt_end + NANOBPF_AEAD_TAG_LEN;
    if (end > x->frame_end || end < x->data + 14) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_OVERSIZE);
    x->data_end = end;
    const uint64_t pnp = base + pn_off;
    if (pnp + 4 > end || pn_off + 4 + 16 > pkt_end + NANOBPF_AEAD_TAG_LEN)
        return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    const uint32_t pn_len = (b0 & 3) + 1;
    /* the 4 bytes from the packet number on: by aligned word loads where those words lie in the frame's
     * buffer (the device's slots are whole words), else two by two */
    const uint32_t pnw = (pnp & ~7ull) >= x->data_hard_start && ((pnp + 4 + 7) & ~7ull) <= x->frame_end
                             ? be32_of_bytes((uint32_t)buf_bytes(pnp, 4))
                             : ld_be16(pnp) << 16 | ld_be16(pnp + 2);
    const uint64_t trunc = pnw >> (8 * (4 - pn_len));
    /* quic_seal_slot: the current keys for their key phase bit, the next ones when installed */
    const uint32_t kw = *(const volatile uint32_t *)&keys->key_phase; /* key_phase, flags: one load */
    _Static_assert(offsetof(struct nanobpf_quic_keys, flags) == 1, "key_phase and flags in one word");
    int next = ((b0 >> 2) & 1) != (kw & 1);
    if (next && !((kw >> 8) & NANOBPF_QUIC_KEY_NEXT)) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_NO_KEYS);
    volatile uint64_t *claims = ebpf_keytable_pn_at(ebpf_conn_slot(x->conn)); /* the slot that holds the key */
    if (!claims) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_NO_PN_STATE);
    const uint64_t pn = quic_decode_pn(seal_next(claims), trunc, pn_len);
    if (seal_claim(claims, pn)) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_PN_REUSED);
    const uint32_t ct_off = pn_off + pn_len, hdr_len = ct_off - q;
    if (ct_off > pkt_end) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    if (pkt_end - ct_off > max_payload) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_OVERSIZE);
    if (hdr_len > max_hdr) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    /* quic_seal_payload of xdp_quic_hw.c: what bpf_quic_aead_seal would refuse (-EINVAL, which the
     * program drops as QUIC_TRUNCATED), then the one request, header protection applied; the frame's
     * ranges are the ones checked above */
    if (hdr_len > NANOBPF_AEAD_HDR_MAX || pkt_end - ct_off > NANOBPF_AEAD_PAYLOAD_MAX || (pn >> NANOBPF_AEAD_PN_BITS))
        return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    seal_hp_apply(x, keys, next, pn, PTR(base + q), hdr_len, pkt_end - ct_off, pn_len);
    /* quic_fix_lengths (QUIC_CSUM_BY_EGRESS): the lengths grow by the tag; the egress sets them from the
     * frame's end, which is the datagram's (above), and sums (pkt_comp.fix_len) */
    x->csum_offload = EBPF_XDP_OFFLOAD_CSUM | EBPF_XDP_OFFLOAD_LEN;
    return 0;
}

/* bpf_quic_open_conn: a frame from the network that PISA classified with its connection, opened in one
 * call (quic_open of quic_protect.h, step for step and drop for drop, with xdp_quic_hw's backend: the
 * mask by the masker beside the engine, the open committed by the device). The same rules as h_quic_seal_conn's. */
U64 h_quic_open_conn(U64 ctx, U64 map, U64 lens, U64 max_payload, U64 max_hdr) {
    struct ebpf_xdp_buff *x = PTR(ctx);
    const uint64_t base = x->parse_data;
    const uint32_t l3 = x->l3_off, l4 = x->l4_off, q = x->quic_off, pn_off = x->pn_off, l = x->cid_len;
    if (!x->conn || !pn_off || l4 < l3 + 20 || q != l4 + 8 || pn_off != q + 1 + l || base + l3 < x->data + 14 ||
        base + q + 1 > x->data_end || !((lens >> l) & 1) || !ebpf_map_is_keytable(PTR(map)))
        return NANOBPF_QUIC_SEAL_SLOW;
    /* quic_pisa_classify */
    const uint32_t ulen = ld_be16(base + l4 + 4), pkt_end = l4 + ulen;
    uint8_t *const first = PTR(base + q);
    const uint32_t b0m = *first;
    if (q >= pkt_end || (b0m & 0x80)) return NANOBPF_QUIC_SEAL_SLOW;
    if (!(b0m & 0x40)) return SEAL_DROP(NANOBPF_QUIC_DROP_NO_FIXED_BIT);
    /* quic_pisa_keys: PISA's CID length inside the datagram, the OPEN entry PISA matched */
    if (pn_off > pkt_end || base + pn_off > x->data_end) return NANOBPF_QUIC_SEAL_SLOW;
    const struct nanobpf_quic_keys *keys = ebpf_keytable_by_conn(x->conn, NANOBPF_QUIC_DIR_OPEN);
    if (!keys) return NANOBPF_QUIC_SEAL_SLOW;
    /* quic_open */
    volatile struct nanobpf_quic_pn_state *st = ebpf_keytable_pn_at(ebpf_conn_slot(x->conn)); /* the slot that holds the key */
    if (!st) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_NO_PN_STATE);
    if (pn_off + 4 + 16 > pkt_end) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    const uint8_t *sample = PTR(base + pn_off + 4);
    if (base + pn_off + 4 + NANOBPF_AEAD_HP_BLOCK_LEN > x->data_end) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    /* the mask by the masker beside the engine, which computes it while the keys' phase word and the
     * largest number opened are read (uncached loads each) */
    const int hp = ebpf_hp_engine_submit(keys, sample);
    const uint64_t rx_next = st->rx_next;
    const uint32_t kw = *(const volatile uint32_t *)&keys->key_phase, kp = kw & 1, kf = kw >> 8;
    uint64_t m;
    if (hp < 0 || ebpf_hp_engine_collect(hp, &m) != 0) m = ebpf_hp_mask_soft(keys->hp, sample); /* byte 0 the lowest */
    /* the header unmasked in place (the AAD is the unprotected header; a dropped frame never leaves) */
    const uint32_t b0 = b0m ^ ((uint32_t)m & 0x1f), pn_len = (b0 & 3) + 1;
    *first = (uint8_t)b0;
    uint8_t *const pnp = PTR(base + pn_off);
    uint64_t trunc = 0;
    for (uint32_t i = 0; i < pn_len; i++) {
        uint8_t v = pnp[i] ^ (uint8_t)(m >> (8 * (i + 1)));
        pnp[i] = v;
        trunc = trunc << 8 | v;
    }
    /* RFC 9000 A.3 against the largest number opened; quic_open_slot (RFC 9001 section 6) */
    const uint64_t pn = quic_decode_pn(rx_next, trunc, pn_len);
    int next = ((b0 >> 2) & 1) != kp;
    if (next && !(kf & NANOBPF_QUIC_KEY_NEXT) && !((kf & NANOBPF_QUIC_KEY_PREV) && (st->phase != (2 | kp) || pn < st->phase_pn)))
        return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_NO_KEYS);
    const uint32_t ct_off = pn_off + pn_len, hdr_len = ct_off - q;
    if (ct_off + NANOBPF_AEAD_TAG_LEN > pkt_end) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    const uint32_t ct_len = pkt_end - NANOBPF_AEAD_TAG_LEN - ct_off;
    if (ct_len > max_payload) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_OVERSIZE);
    if (hdr_len > max_hdr) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    /* quic_open_payload of xdp_quic_hw.c: what bpf_quic_aead_open would refuse (-EINVAL, which the
     * program drops as QUIC_TRUNCATED; the frame's ranges are the ones checked above), else the open,
     * committed by the device; then the frame ends where the ciphertext ends, whatever the tag said */
    const int64_t rc = hdr_len > NANOBPF_AEAD_HDR_MAX || ct_len > NANOBPF_AEAD_PAYLOAD_MAX || (pn >> NANOBPF_AEAD_PN_BITS)
                           ? -NANOBPF_EINVAL
                           : open_commit(x, keys, (void *)(uintptr_t)st, next, pn, first, hdr_len, ct_len, next ? -1 : (int)kp);
    const uint64_t end = base + pkt_end - NANOBPF_AEAD_TAG_LEN;
    if (end > x->frame_end || end < x->data + 14) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_TRUNCATED);
    x->data_end = end;
    if (rc < 0)
        return SEAL_DROP_KEYED(rc == -NANOBPF_EBADMSG  ? NANOBPF_QUIC_DROP_TAG_MISMATCH
                               : rc == -NANOBPF_ENOKEY ? NANOBPF_QUIC_DROP_NO_KEYS
                                                       : NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    /* quic_fix_lengths (QUIC_CSUM_BY_EGRESS): the headers inside the frame (PISA's UDP header lies after
     * the whole IP header, 20 or 40 bytes), the lengths shrink by the tag; the egress sets them from the
     * frame's end, which is the datagram's (above), and sums (pkt_comp.fix_len) */
    if (base + l4 + 8 > end) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_TRUNCATED);
    x->csum_offload = EBPF_XDP_OFFLOAD_CSUM | EBPF_XDP_OFFLOAD_LEN;
    return 0;
}

