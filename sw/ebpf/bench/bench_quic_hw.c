/* Benchmark workload: bench_quic.c's per-packet QUIC protection on the same fixed frame layout
 * (Ethernet, IPv4, UDP, short header with an 8-byte connection ID and a 4-byte packet number, payload,
 * room for or the 16-byte tag), but with the device helpers (quic_aead_seal/open, quic_hp_mask) and
 * the keys from the key table, looked up by the connection ID:
 *   ingress port 2: seal - AES-128-GCM over the payload, tag written, header protection applied;
 *   otherwise:      open - header protection removed, payload decrypted, tag checked
 *                   (XDP_PASS when authentic, XDP_DROP when not).
 * With the same keys it gives bench_quic's bytes. On the device the helpers use the AEAD engine when
 * the frame is in packet memory and software otherwise (firmware/apps/quic_bench compares both). */
#include "nanobpf_xdp.h"
#include "nanobpf_helpers.h"

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_keys);
} nanobpf_quic_keys SEC(".maps");

#define BQ_Q 42              /* the QUIC packet: after Ethernet (14), IPv4 (20) and UDP (8) */
#define BQ_CID (BQ_Q + 1)    /* 8-byte destination connection ID */
#define BQ_PN (BQ_CID + 8)   /* 4-byte packet number */
#define BQ_CT (BQ_PN + 4)    /* payload */
#define BQ_TAG 16

static __always_inline __u32 load_be32(const __u8 *p) {
    return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

/* mask := AES(hp, the 16-byte sample 4 bytes after the packet number); unmask or mask the header */
static __always_inline int protect_header(const struct nanobpf_quic_keys *k, __u8 *data) {
    __u8 block[16];
    for (int i = 0; i < 16; i++) block[i] = data[BQ_PN + 4 + i];
    if (bpf_quic_hp_mask(k, block, sizeof block)) return -1;
    data[BQ_Q] ^= block[0] & 0x1f;
    for (int i = 0; i < 4; i++) data[BQ_PN + i] ^= block[1 + i];
    return 0;
}

SEC("xdp")
int bench_quic_hw(struct xdp_md *ctx) {
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    if (data + BQ_CT + 4 + BQ_TAG > end) /* the sample needs 16 bytes after pn + 4 */
        return XDP_DROP;
    struct nanobpf_quic_cid cid = {.len = 8};
    for (int i = 0; i < 8; i++) cid.id[i] = data[BQ_CID + i];
    struct nanobpf_quic_keys *k = bpf_map_lookup_elem(&nanobpf_quic_keys, &cid);
    if (!k)
        return XDP_PASS;
    struct nanobpf_aead_req req = {.hdr_off = BQ_Q, .hdr_len = BQ_CT - BQ_Q,
                                   .payload_len = (__u32)(end - data) - BQ_CT - BQ_TAG};
    if (ctx->ingress_ifindex != 2) { /* open */
        if (protect_header(k, data))
            return XDP_ABORTED;
        req.pn = load_be32(data + BQ_PN);
        return bpf_quic_aead_open(ctx, k, &req, sizeof req) ? XDP_DROP : XDP_PASS;
    }
    req.pn = load_be32(data + BQ_PN);
    if (bpf_quic_aead_seal(ctx, k, &req, sizeof req))
        return XDP_ABORTED;
    return protect_header(k, data) ? XDP_ABORTED : XDP_TX;
}

char _license[] SEC("license") = "GPL";
