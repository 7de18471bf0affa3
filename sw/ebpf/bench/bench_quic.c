/* Benchmark workload: the per-packet work of QUIC packet protection (xdp_quic.c's quic_open and
 * quic_seal without classification, maps or checksums), on a frame of fixed layout: Ethernet, IPv4
 * without options, UDP, a short header with an 8-byte connection ID and a 4-byte packet number, the
 * payload, then room for (seal) or the (open) 16-byte tag.
 *   ingress port 2: seal - AES-128-GCM over the payload, tag written, header protection applied;
 *   otherwise:      open - header protection removed, payload decrypted, tag checked
 *                   (XDP_PASS when authentic, XDP_DROP when not).
 * Per packet, like xdp_quic.c: both keys expanded, the GHASH table built, one AES block for the
 * header-protection mask, one per 16 payload bytes, one for the tag, one GHASH multiply per block.
 * Built as eBPF (clang) and natively (riscv64 gcc) from this one source: quic_crypto.h is shared. */
#include "nanobpf_xdp.h"
#include "../quic/quic_crypto.h"

#ifndef __bpf__
/* natively, the frame's end is a plain field */
static long bpf_xdp_adjust_tail(struct xdp_md *ctx, int delta) {
    ctx->data_end += delta;
    return 0;
}
#endif

#define BQ_Q 42              /* the QUIC packet: after Ethernet (14), IPv4 (20) and UDP (8) */
#define BQ_PN (BQ_Q + 1 + 8) /* packet number, after the first byte and the connection ID */
#define BQ_CT (BQ_PN + 4)    /* payload */

/* Fixed keys (the benchmark checks that seal then open gives the plaintext back); in .data, not
 * .rodata: a global function's memory argument must be writable (Linux). */
static struct {
    struct quic_key key, hp;
    __u8 iv[12];
} bq_keys = {{{0x1f, 0x36, 0x96, 0x13, 0xdd, 0x76, 0xd5, 0x46, 0x77, 0x30, 0xef, 0xcb, 0xe3, 0xb1, 0xa2, 0x2d}},
             {{0x9f, 0x50, 0x44, 0x9e, 0x04, 0xa0, 0xe8, 0x10, 0x28, 0x3a, 0x1e, 0x99, 0x33, 0xad, 0xed, 0xd2}},
             {0xfa, 0x04, 0x4b, 0x2f, 0x42, 0xa3, 0xfd, 0x3b, 0x46, 0xfb, 0x25, 0x5c}};

static struct quic_crypto bq_scratch;

SEC("xdp")
int bench_quic(struct xdp_md *ctx) {
    struct quic_crypto *c = &bq_scratch;
    int seal = ctx->ingress_ifindex == 2;
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    if (data + BQ_CT + 4 + QUIC_TAG_LEN > end) /* the sample needs 16 bytes after pn + 4 */
        return XDP_DROP;
    __u32 text_len = (__u32)(end - data) - BQ_CT - QUIC_TAG_LEN;
    if (text_len > QUIC_MAX_BLOCKS * 16)
        return XDP_DROP;
    struct quic_block *s = &c->blk[0], *tag = &c->blk[1];
    __u8 *t = data + BQ_CT + (text_len & 0x7ff); /* the tag */
    if (t + QUIC_TAG_LEN > end)
        return XDP_DROP;
    /* header protection mask from the sample (open: before anything changes; seal: after) */
    if (!seal) {
        __u8 *sp = data + BQ_PN + 4;
        s->w[0] = quic_load_be32(sp), s->w[1] = quic_load_be32(sp + 4), s->w[2] = quic_load_be32(sp + 8),
        s->w[3] = quic_load_be32(sp + 12);
        aes128_expand(c, &bq_keys.hp);
        aes128_encrypt(c, s);
        data[BQ_Q] ^= (s->w[0] >> 24) & 0x1f;
        __u32 pn = quic_load_be32(data + BQ_PN) ^ (s->w[0] << 8 | s->w[1] >> 24);
        quic_store_be32(data + BQ_PN, pn);
    }
    __u32 want[4] = {quic_load_be32(t), quic_load_be32(t + 4), quic_load_be32(t + 8), quic_load_be32(t + 12)};
    aes128_expand(c, &bq_keys.key);
    ghash_init(c);
    gcm_start(&c->g, bq_keys.iv, quic_load_be32(data + BQ_PN));
    if (gcm_aad(ctx, c, BQ_Q, BQ_CT - BQ_Q))
        return XDP_ABORTED;
    if (bpf_xdp_adjust_tail(ctx, -QUIC_TAG_LEN))
        return XDP_ABORTED;
    if (gcm_crypt_all(ctx, c, BQ_CT, seal) < 0)
        return XDP_ABORTED;
    gcm_tag(c, &c->g, BQ_CT - BQ_Q, text_len, tag);
    if (bpf_xdp_adjust_tail(ctx, QUIC_TAG_LEN))
        return XDP_ABORTED;
    data = (__u8 *)(long)ctx->data;
    end = (__u8 *)(long)ctx->data_end;
    t = data + BQ_CT + (text_len & 0x7ff);
    if (data + BQ_CT + 4 + QUIC_TAG_LEN > end || t + QUIC_TAG_LEN > end)
        return XDP_ABORTED;
    if (!seal)
        return ((want[0] ^ tag->w[0]) | (want[1] ^ tag->w[1]) | (want[2] ^ tag->w[2]) | (want[3] ^ tag->w[3])) ? XDP_DROP
                                                                                                               : XDP_PASS;
    for (int k = 0; k < 4; k++)
        quic_store_be32(t + 4 * k, tag->w[k]);
    __u8 *sp = data + BQ_PN + 4;
    s->w[0] = quic_load_be32(sp), s->w[1] = quic_load_be32(sp + 4), s->w[2] = quic_load_be32(sp + 8),
    s->w[3] = quic_load_be32(sp + 12);
    aes128_expand(c, &bq_keys.hp);
    aes128_encrypt(c, s);
    data[BQ_Q] ^= (s->w[0] >> 24) & 0x1f;
    __u32 pn = quic_load_be32(data + BQ_PN) ^ (s->w[0] << 8 | s->w[1] >> 24);
    quic_store_be32(data + BQ_PN, pn);
    return XDP_TX;
}

char _license[] SEC("license") = "GPL";
