/* What the QUIC XDP programs share besides parsing (quic_parse.h) and protection (quic_protect.h): the
 * size limits, the per-CPU scratch value (struct quic_crypto: the eBPF AES-GCM state of quic_crypto.h,
 * and the cell quic_launder() passes values through) and big-endian byte access to packet data. Built
 * as eBPF and natively (the benchmark's baseline includes quic_crypto.h). */
#ifndef NANOBPF_QUIC_COMMON_H
#define NANOBPF_QUIC_COMMON_H

#include "nanobpf_xdp.h"

#ifndef QUIC_MAX_PAYLOAD
#define QUIC_MAX_PAYLOAD 1504 /* largest protected payload handled (bytes; a 1500-byte MTU fits) */
#endif
#define QUIC_MAX_BLOCKS ((QUIC_MAX_PAYLOAD + 15) / 16)
#define QUIC_TAG_LEN 16
#define QUIC_MAX_AAD 64 /* largest header (associated data) handled; longer long headers pass */

/* One GCM operation in progress: counter block and GHASH accumulator. */
struct gcm_state {
    __u32 n[3];   /* nonce (iv XOR packet number) as big-endian words */
    __u32 ctr;    /* next counter value */
    __u64 xh, xl; /* GHASH accumulator */
    __u64 csum;   /* ones'-complement sum of the 32-bit words written (output side), unfolded */
};

/* An AES block (big-endian 32-bit columns) and an AES-128 key, as sized types for global functions. */
struct quic_block {
    __u32 w[4];
};
struct quic_key {
    __u8 b[16];
};

/* Per-CPU working state of one AEAD operation. */
struct quic_crypto {
    __u32 rk[44];         /* AES-128 round keys */
    __u64 hh[16], hl[16]; /* GHASH: high/low halves of i * H, i = 0..15 (GCM bit order) */
    struct gcm_state g;   /* in the map value, not on the stack: the verifier does not track its values */
    struct quic_block blk[3]; /* working blocks (header-protection sample, tag, keystream): off the stack,
                               * which the call chain to aes128_encrypt keeps within 512 bytes */
    __u64 launder64;      /* see quic_launder() */
    __u32 launder;
};

/* v, read back through memory: the verifier then knows only the bound, so the states of different
 * parsing paths (VLAN tags, IPv4 options, IPv6) become alike and it explores what follows once. */
static __always_inline __u32 quic_launder(struct quic_crypto *c, __u32 v, __u32 mask) {
    *(volatile __u32 *)&c->launder = v;
    return *(volatile __u32 *)&c->launder & mask;
}

static __always_inline __u64 quic_launder64(struct quic_crypto *c, __u64 v) {
    *(volatile __u64 *)&c->launder64 = v;
    return *(volatile __u64 *)&c->launder64;
}

/* Packet data is read and written by bytes: QUIC payloads start at any offset and CVA6 traps on
 * misaligned loads (the JIT makes eBPF accesses safe; native code must not rely on alignment either). */
static __always_inline __u32 quic_load_be32(const __u8 *p) {
    return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static __always_inline void quic_store_be32(__u8 *p, __u32 v) {
    p[0] = v >> 24;
    p[1] = v >> 16;
    p[2] = v >> 8;
    p[3] = v;
}

#endif
