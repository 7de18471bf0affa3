/* The device (vendor) helpers for eBPF programs, declared as libbpf's bpf_helper_defs.h declares the
 * Linux ones. Ids, the request struct, flags and error numbers come from the generated ABI header
 * (hw/defs/ebpf.toml, docs/ebpf-abi.md); this file only gives them C prototypes. Linux has none of
 * these helpers: a program that calls one loads on NanoBPF only. */
#ifndef NANOBPF_HELPERS_H
#define NANOBPF_HELPERS_H

#include <linux/bpf.h>
#include "nanobpf_ebpf_defs.h"

/* The core's cycle counter. */
static __u64 (*bpf_nanobpf_cycles)(void) = (void *)NANOBPF_HELPER_NANOBPF_CYCLES;

/* The device's egress recomputes this frame's IPv4 header checksum and UDP checksum (IPv4 and IPv6,
 * also behind the host link's shim) over the bytes that leave, so the program need not sum what it
 * changed; for this packet only. Returns 0. */
static long (*bpf_xdp_csum_offload)(struct xdp_md *ctx) = (void *)NANOBPF_HELPER_XDP_CSUM_OFFLOAD;

/* AES-128-GCM seal in place (RFC 9001 5.3) with the keys of a key table value (keys: the non-NULL
 * result of bpf_map_lookup_elem(&nanobpf_quic_keys, ...), unmodified): encrypts req->payload_len bytes
 * following the header at req->hdr_off (req->hdr_len bytes, the associated data) and writes the 16-byte
 * tag after them. req_size must be sizeof(struct nanobpf_aead_req). Returns 0, -NANOBPF_EINVAL or
 * -NANOBPF_ENOKEY; nothing is written on an error. */
static long (*bpf_quic_aead_seal)(struct xdp_md *ctx, const struct nanobpf_quic_keys *keys,
                                  const struct nanobpf_aead_req *req, __u32 req_size) =
    (void *)NANOBPF_HELPER_QUIC_AEAD_SEAL;

/* AES-128-GCM open in place: decrypts req->payload_len bytes after the header and checks the tag
 * that follows them. Returns 0, -NANOBPF_EBADMSG (the payload then holds unauthenticated plaintext:
 * drop the packet), -NANOBPF_EINVAL or -NANOBPF_ENOKEY (nothing written). */
static long (*bpf_quic_aead_open)(struct xdp_md *ctx, const struct nanobpf_quic_keys *keys,
                                  const struct nanobpf_aead_req *req, __u32 req_size) =
    (void *)NANOBPF_HELPER_QUIC_AEAD_OPEN;

/* Header protection (RFC 9001 5.4.3): block := AES-128-ECB(keys->hp, block), block being 16 bytes
 * (size must be NANOBPF_AEAD_HP_BLOCK_LEN). Returns 0 or -NANOBPF_EINVAL. */
static long (*bpf_quic_hp_mask)(const struct nanobpf_quic_keys *keys, void *block, __u32 size) =
    (void *)NANOBPF_HELPER_QUIC_HP_MASK;

/* Header protection of the 16-byte sample at packet offset off (from ctx->data), which the engine
 * reads where it lies: returns the mask's first 5 bytes, byte 0 in bits 39..32 down to byte 4 in bits
 * 7..0 (RFC 9001 5.4.1: byte 0 masks the first byte, bytes 1..4 the packet number), or -NANOBPF_EINVAL
 * when the sample is not inside the frame. */
static long (*bpf_quic_hp_mask_at)(struct xdp_md *ctx, const struct nanobpf_quic_keys *keys, __u32 off) =
    (void *)NANOBPF_HELPER_QUIC_HP_MASK_AT;

/* The packet-number state of the key table entry whose value keys is (the non-NULL result of
 * bpf_map_lookup_elem(&nanobpf_quic_keys, ...)): what bpf_map_lookup_elem(&quic_pn, key) returns, found
 * by the entry's slot instead of a second search for its connection ID. map must be the device's
 * packet-number map quic_pn (the verifier checks). NULL only when quic_pn is not bound. */
static void *(*bpf_quic_pn_of)(void *map, const struct nanobpf_quic_keys *keys) = (void *)NANOBPF_HELPER_QUIC_PN_OF;

/* The key table value (map: the device's nanobpf_quic_keys) of the frame's connection as PISA's CID
 * table found it (the context's conn): what bpf_map_lookup_elem(map, &key) returns for the key the frame
 * names with direction dir (NANOBPF_QUIC_DIR_*) - the destination CID of cid_len bytes after the short
 * header's first byte at quic_off, or for cid_len 0 the peer's address id (the source of a frame from
 * the network, the destination of one to seal) - read from the frame by the device, so the program
 * builds no key. NULL when PISA found no connection, for a long header, when those bytes are no longer
 * in the frame, or when the slot holds another key: then look the key up. */
static void *(*bpf_quic_keys_of)(struct xdp_md *ctx, void *map, __u32 dir) = (void *)NANOBPF_HELPER_QUIC_KEYS_OF;

/* Seal a frame to seal that PISA classified, whole, with the SEAL entry at PISA's connection (map: the
 * device's nanobpf_quic_keys; cid_len: the shim's, which the program removed): xdp_quic's quic_seal in
 * one call, with the limits max_payload (plaintext bytes) and max_hdr (header bytes). 0 when sealed
 * (the checksums left to the egress), NANOBPF_QUIC_SEAL_SLOW when nothing was done (seal it the general
 * way), else -(1 + reason): a NANOBPF_QUIC_DROP_* reason, with NANOBPF_QUIC_SEAL_KEYED when the keys
 * were found first (docs/ebpf.md). */
static long (*bpf_quic_seal_conn)(struct xdp_md *ctx, void *map, __u32 cid_len, __u32 max_payload, __u32 max_hdr) =
    (void *)NANOBPF_HELPER_QUIC_SEAL_CONN;

/* Open a frame from the network that PISA classified with its connection, whole, with the OPEN entry at
 * PISA's connection (lens: quic_config.open_cid_lens): xdp_quic's quic_open in one call, with the
 * limits max_payload (ciphertext bytes) and max_hdr (header bytes). 0 when opened (on the device the
 * tag may decide after the program: NANOBPF_AEAD_COMMIT), NANOBPF_QUIC_SEAL_SLOW when nothing was
 * done, else -(1 + reason) as bpf_quic_seal_conn. */
static long (*bpf_quic_open_conn)(struct xdp_md *ctx, void *map, __u32 lens, __u32 max_payload, __u32 max_hdr) =
    (void *)NANOBPF_HELPER_QUIC_OPEN_CONN;

#endif
