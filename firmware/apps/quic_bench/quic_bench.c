/* QUIC packet protection on the CVA6 model: sw/ebpf/bench/bench_quic.c (AES-128-GCM and header
 * protection, the per-packet work of xdp_quic.c) sealed then opened at 64, 512 and 1200-byte payloads,
 * natively (riscv64 gcc -O2), through the JIT and through the interpreter. Prints one BENCH line per
 * measurement (parsed by nanobpf-bench-ebpf) and fails unless every mode seals to the same bytes as
 * native code and opens them back to the plaintext. Hart 0 only.
 * Builds: quic_bench (make bench), quic_bench-quick (QUIC_BENCH_QUICK: two sizes, one round; the system
 * test) and quic_rfc (QUIC_BENCH_RFC: instead, the whole protection program sw/ebpf/quic/xdp_quic.c
 * verified and JIT-compiled on the core, and RFC 9001's Initial packets (A.2 client, A.3 server) run
 * through the JIT: opened and sealed bit-exactly; verifying 31K instructions on the core is slow). */
#include <stdio.h>
#include <string.h>
#include "ebpf.h"
#include "nanobpf.h"
#include "nanobpf_aead.h"
#include "nanobpf_xdp.h"
#include "nanobpf_ctrl.h" /* the seal request shim */

int bench_quic(struct xdp_md *ctx);
extern const uint8_t bench_quic_image[], bench_quic_image_end[];
extern const uint8_t bench_quic_hw_image[], bench_quic_hw_image_end[];

#define HDR 55 /* Ethernet, IPv4, UDP, first byte, 8-byte CID, 4-byte packet number */
#define MAXLEN (HDR + 1200 + 16)
#ifdef QUIC_BENCH_QUICK /* the system test: two sizes, one round */
static const unsigned sizes[] = {64, 200};
#define ROUNDS 1
#else
static const unsigned sizes[] = {64, 512, 1200};
#define ROUNDS 2 /* the second round is measured (warm caches) */
#endif
enum { NATIVE, INTERP, JIT, MODES };
static const char *const mode_names[MODES] = {"native", "interp", "jit"};
static uint8_t plain[MAXLEN], native_sealed[MAXLEN];
static uint8_t buf[256 + MAXLEN + 256] __attribute__((aligned(8)));

static void build_plain(unsigned size) {
    memset(plain, 0, sizeof plain);
    static const uint8_t eth_ip_udp[42] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 0, 0, 0, 0x40, 0,
                                           64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0xc3, 0x50, 0x01, 0xbb};
    memcpy(plain, eth_ip_udp, sizeof eth_ip_udp);
    plain[42] = 0x43; /* short header, fixed bit, 4-byte packet number */
    for (int k = 0; k < 8; k++) plain[43 + k] = (uint8_t)(0x11 * k);
    plain[51] = 0, plain[52] = 0, plain[53] = 0x12, plain[54] = 0x34;
    for (unsigned k = 0; k < size; k++) plain[HDR + k] = (uint8_t)(7 * k + size);
}

/* One run over buf holding len bytes; returns the action, cycles in *cyc, the frame length in *out_len. */
static int run(struct ebpf_prog *prog, int mode, size_t len, uint32_t ifindex, uint64_t *cyc, size_t *out_len) {
    uint8_t *data = buf + 256;
    struct ebpf_error err = {-1, ""};
    uint64_t c0 = nb_cycles(), a;
    if (mode == NATIVE) {
        struct xdp_md md = {(uint32_t)(uintptr_t)data, (uint32_t)(uintptr_t)(data + len), (uint32_t)(uintptr_t)data, ifindex, 0, 0};
        a = (uint64_t)bench_quic(&md);
        *out_len = md.data_end - md.data;
    } else {
        struct ebpf_xdp_buff xdp = {.data = (uintptr_t)data, .data_end = (uintptr_t)(data + len), .data_meta = (uintptr_t)data,
                                    .data_hard_start = (uintptr_t)buf, .frame_end = (uintptr_t)(buf + sizeof buf),
                                    .ingress_ifindex = ifindex};
        a = ebpf_xdp_run(prog, &xdp, mode == JIT, &err);
        *out_len = (size_t)(xdp.data_end - xdp.data);
    }
    *cyc = nb_cycles() - c0;
    return (int)a;
}

#ifdef QUIC_BENCH_RFC
#include "quic_vectors.h"
extern const uint8_t xdp_quic_image[], xdp_quic_image_end[];

static struct ebpf_map *map_named(const struct ebpf_prog *p, const char *name) {
    for (uint32_t i = 0; i < p->n_maps; i++)
        if (!strcmp(p->maps[i]->name, name)) return p->maps[i];
    return NULL;
}

/* The key table entry of a connection for one direction. A zero-length CID is keyed by the peer's
 * address and the ports (NANOBPF_QUIC_ADDR_*), taken from frame: its source for OPEN (a frame from
 * the network), its destination for SEAL (a frame from the host); an untagged IPv4 frame. */
static int add_keys(struct ebpf_prog *p, const uint8_t *cid, unsigned cid_len, unsigned dir, const uint8_t *frame,
                    const uint8_t *key, const uint8_t *iv, const uint8_t *hp) {
    struct nanobpf_quic_cid k;
    struct nanobpf_quic_keys v;
    memset(&k, 0, sizeof k);
    memset(&v, 0, sizeof v);
    k.len = (uint8_t)cid_len;
    k.dir = (uint8_t)dir;
    memcpy(k.id, cid, cid_len);
    if (cid_len == 0) {
        const uint8_t *ip = frame + 14, *udp = ip + 20, *peer = dir == NANOBPF_QUIC_DIR_OPEN ? ip + 12 : ip + 16;
        const uint8_t *peer_port = dir == NANOBPF_QUIC_DIR_OPEN ? udp : udp + 2;
        const uint8_t *local_port = dir == NANOBPF_QUIC_DIR_OPEN ? udp + 2 : udp;
        k.id[NANOBPF_QUIC_ADDR_IP_OFF + 10] = k.id[NANOBPF_QUIC_ADDR_IP_OFF + 11] = 0xff;
        memcpy(k.id + NANOBPF_QUIC_ADDR_IP_OFF + 12, peer, 4);
        memcpy(k.id + NANOBPF_QUIC_ADDR_PEER_PORT_OFF, peer_port, 2);
        memcpy(k.id + NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF, local_port, 2);
    }
    v.cid_len = (uint8_t)cid_len;
    memcpy(v.key, key, 16);
    memcpy(v.iv, iv, 12);
    memcpy(v.hp, hp, 16);
    return ebpf_map_update(map_named(p, "nanobpf_quic_keys"), &k, &v, 0);
}

#define HOST_IFINDEX 9 /* frames from this port are the host's: marked with the shim, sealed */

/* One RFC vector through the JIT: `in` on ingress port `ifindex` must give `action` and `want`. */
static int vector(struct ebpf_prog *p, const char *name, const uint8_t *in, size_t in_len, uint32_t ifindex, int action,
                  const uint8_t *want, size_t want_len) {
    uint8_t *data = buf + 256;
    if (ifindex == HOST_IFINDEX) { /* the host marks what it wants sealed: the shim after the MACs */
        static const uint8_t shim[4] = {NANOBPF_SHIM_ETHERTYPE >> 8, NANOBPF_SHIM_ETHERTYPE & 0xff, NANOBPF_SHIM_F_ENCRYPT, 0};
        memcpy(data, in, 12);
        memcpy(data + 12, shim, 4);
        data[15] = in[14 + 20 + 8] & 0x80 ? in[14 + 20 + 8 + 5] : 0; /* long header: its DCID length */
        memcpy(data + 16, in + 12, in_len - 12);
        in_len += 4;
    } else {
        memcpy(data, in, in_len);
    }
    struct ebpf_xdp_buff xdp = {.data = (uintptr_t)data, .data_end = (uintptr_t)(data + in_len), .data_meta = (uintptr_t)data,
                                .data_hard_start = (uintptr_t)buf, .frame_end = (uintptr_t)(buf + sizeof buf),
                                .ingress_ifindex = ifindex};
    struct ebpf_error err = {-1, ""};
    uint64_t c0 = nb_cycles();
    int a = (int)ebpf_xdp_run(p, &xdp, 1, &err);
    uint64_t c = nb_cycles() - c0;
    size_t len = (size_t)(xdp.data_end - xdp.data);
    /* a dropped frame's bytes do not matter (the program may have unmasked its header) */
    int ok = a == action && (action == NANOBPF_XDP_DROP ||
                             (len == want_len && !memcmp((const void *)(uintptr_t)xdp.data, want, want_len)));
    printf("%s xdp_quic %s: action %d (expected %d), %u bytes, %llu cycles\n", ok ? "ok  " : "FAIL", name, a, action,
           (unsigned)len, (unsigned long long)c);
    return !ok;
}

/* xdp_quic.c itself on the core: verified, JIT-compiled, RFC 9001 A.2 and A.3 opened and sealed. */
static int rfc_vectors(void) {
    struct ebpf_prog p;
    struct ebpf_error err = {-1, ""};
    uint64_t t0 = nb_cycles();
    if (ebpf_image_load(xdp_quic_image, (size_t)(xdp_quic_image_end - xdp_quic_image), &p, &err)) goto fail;
    uint64_t t1 = nb_cycles();
    if (ebpf_verify(&p, NULL, &err)) goto fail;
    uint64_t t2 = nb_cycles();
    if (ebpf_prog_resolve(&p, &err) || ebpf_jit_compile(&p, 0, &err)) goto fail;
    printf("BENCH workload=xdp_quic insns=%u verify_cycles=%llu verify_insns=%u jit_cycles=%llu jit_bytes=%u\n", p.n_insns,
           (unsigned long long)(t2 - t1), ebpf_verify_last_stats.processed, (unsigned long long)(nb_cycles() - t2),
           p.jit_size);
    (void)t0;
    uint32_t zero = 0, one = 1;
    uint16_t port = 443;
    /* frames from port 9 are the host's (sealed); long headers offloaded for the RFC's Initial packets */
    struct nanobpf_quic_config cfg = {.host_ifindex = HOST_IFINDEX, .net_ifindex = 0, .open_cid_lens = 1u << 8,
                                      .flags = NANOBPF_QUIC_CFG_OFFLOAD_LONG};
    if (!map_named(&p, "quic_config") || !map_named(&p, "quic_ports") || !map_named(&p, "nanobpf_quic_keys") ||
        ebpf_map_update(map_named(&p, "quic_config"), &zero, &cfg, 0) ||
        ebpf_map_update(map_named(&p, "quic_ports"), &port, &one, 0) ||
        add_keys(&p, quic_a2_dcid, 8, NANOBPF_QUIC_DIR_OPEN, quic_a2_protected, quic_client_key, quic_client_iv, quic_client_hp) ||
        add_keys(&p, quic_a2_dcid, 8, NANOBPF_QUIC_DIR_SEAL, quic_a2_plain, quic_client_key, quic_client_iv, quic_client_hp) ||
        add_keys(&p, quic_a2_dcid, 0, NANOBPF_QUIC_DIR_OPEN, quic_a3_protected, quic_server_key, quic_server_iv, quic_server_hp) ||
        add_keys(&p, quic_a2_dcid, 0, NANOBPF_QUIC_DIR_SEAL, quic_a3_plain, quic_server_key, quic_server_iv, quic_server_hp)) {
        printf("FAIL xdp_quic: map setup\n");
        ebpf_prog_free(&p);
        return 1;
    }
    int bad = 0;
    bad |= vector(&p, "RFC 9001 A.2 open", quic_a2_protected, sizeof quic_a2_protected, 1, NANOBPF_XDP_PASS,
                  quic_a2_plain, sizeof quic_a2_plain);
    bad |= vector(&p, "RFC 9001 A.2 seal", quic_a2_plain, sizeof quic_a2_plain, HOST_IFINDEX, NANOBPF_XDP_TX, quic_a2_protected,
                  sizeof quic_a2_protected);
    bad |= vector(&p, "RFC 9001 A.3 open", quic_a3_protected, sizeof quic_a3_protected, 1, NANOBPF_XDP_PASS,
                  quic_a3_plain, sizeof quic_a3_plain);
    bad |= vector(&p, "RFC 9001 A.3 seal", quic_a3_plain, sizeof quic_a3_plain, HOST_IFINDEX, NANOBPF_XDP_TX, quic_a3_protected,
                  sizeof quic_a3_protected);
    uint8_t forged[sizeof quic_a3_protected];
    memcpy(forged, quic_a3_protected, sizeof forged);
    forged[sizeof forged - 1] ^= 1; /* the last tag byte; the UDP checksum is not checked by the program */
    bad |= vector(&p, "RFC 9001 A.3 forged tag", forged, sizeof forged, 1, NANOBPF_XDP_DROP, NULL, 0);
    ebpf_prog_free(&p);
    return bad;
fail:
    printf("FAIL xdp_quic: insn %d: %s\n", err.insn, err.msg);
    return 1;
}
#endif

/* bench_quic_hw: the same work through the device helpers, keys from the key table (bench_quic's fixed
 * keys, under the frame's connection ID). Its frame sits in packet memory (the AEAD engine does the
 * crypto) or in main memory (AES-GCM falls back to software; the header protection block is staged in
 * packet memory, so the engine still makes the mask); both must give native bench_quic's
 * sealed bytes and open them back. */
static const uint8_t bq_key[16] = {0x1f, 0x36, 0x96, 0x13, 0xdd, 0x76, 0xd5, 0x46, 0x77, 0x30, 0xef, 0xcb, 0xe3, 0xb1, 0xa2, 0x2d};
static const uint8_t bq_hp[16] = {0x9f, 0x50, 0x44, 0x9e, 0x04, 0xa0, 0xe8, 0x10, 0x28, 0x3a, 0x1e, 0x99, 0x33, 0xad, 0xed, 0xd2};
static const uint8_t bq_iv[12] = {0xfa, 0x04, 0x4b, 0x2f, 0x42, 0xa3, 0xfd, 0x3b, 0x46, 0xfb, 0x25, 0x5c};
enum { HW_ENGINE, HW_SOFT, HW_MODES };
static const char *const hw_mode_names[HW_MODES] = {"jit_engine", "jit_aead_sw"};
/* packet memory is device memory: byte copies */
static void copy_bytes(volatile uint8_t *d, const volatile uint8_t *s, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = s[i];
}
static int equal_bytes(const volatile uint8_t *a, const volatile uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static int hw_load(struct ebpf_prog *p) {
    struct ebpf_error err = {-1, ""};
    uint64_t t0 = nb_cycles();
    if (ebpf_image_load(bench_quic_hw_image, (size_t)(bench_quic_hw_image_end - bench_quic_hw_image), p, &err) ||
        ebpf_verify(p, NULL, &err)) {
        printf("FAIL quic_hw: insn %d: %s\n", err.insn, err.msg);
        return 1;
    }
    uint64_t t1 = nb_cycles();
    if (ebpf_prog_resolve(p, &err) || ebpf_jit_compile(p, 0, &err)) {
        printf("FAIL quic_hw: %s\n", err.msg);
        return 1;
    }
    struct nanobpf_quic_cid k;
    struct nanobpf_quic_keys v;
    memset(&k, 0, sizeof k);
    memset(&v, 0, sizeof v);
    k.len = 8;
    for (int i = 0; i < 8; i++) k.id[i] = (uint8_t)(0x11 * i); /* build_plain's connection ID */
    v.cid_len = 8;
    memcpy(v.key, bq_key, 16);
    memcpy(v.iv, bq_iv, 12);
    memcpy(v.hp, bq_hp, 16);
    if (p->n_maps != 1 || ebpf_map_update(p->maps[0], &k, &v, 0)) {
        puts("FAIL quic_hw: key table setup");
        return 1;
    }
    printf("BENCH workload=quic_hw insns=%u verify_cycles=%llu verify_insns=%u jit_cycles=%llu\n", p->n_insns,
           (unsigned long long)(t1 - t0), ebpf_verify_last_stats.processed, (unsigned long long)(nb_cycles() - t1));
    return 0;
}

/* One run of bench_quic_hw over len bytes at frame (headroom and tailroom of 256 around it). */
static int hw_run(struct ebpf_prog *p, uint8_t *frame, size_t len, uint32_t ifindex, uint64_t *cyc) {
    struct ebpf_xdp_buff xdp = {.data = (uintptr_t)frame, .data_end = (uintptr_t)(frame + len), .data_meta = (uintptr_t)frame,
                                .data_hard_start = (uintptr_t)(frame - 256), .frame_end = (uintptr_t)(frame + len + 256),
                                .ingress_ifindex = ifindex};
    struct ebpf_error err = {-1, ""};
    uint64_t c0 = nb_cycles();
    int a = (int)ebpf_xdp_run(p, &xdp, 1, &err);
    *cyc = nb_cycles() - c0;
    return xdp.data_end - xdp.data == len ? a : -1;
}

/* Seal and open one size both ways; native_sealed holds native bench_quic's result. */
static int hw_size(struct ebpf_prog *p, unsigned size, size_t len) {
    int bad = 0;
    uint64_t before = nb_aead_counter(NANOBPF_AEAD_COUNTER_REQUESTS);
    for (int mode = 0; mode < HW_MODES; mode++) {
        /* packet memory: 256 bytes in, at an odd offset as a received frame may be */
        uint8_t *frame = mode == HW_ENGINE ? (uint8_t *)(uintptr_t)(NANOBPF_PACKET_MEM_BASE + 256 + 2) : buf + 256;
        uint64_t seal_cyc = 0, open_cyc = 0;
        for (int round = 0; round < ROUNDS; round++) {
            copy_bytes(frame, plain, len);
            int a = hw_run(p, frame, len, 2, &seal_cyc);
            if (a != NANOBPF_XDP_TX || !equal_bytes(frame, native_sealed, len)) {
                printf("FAIL quic_hw %u %s: seal gave action %d or not native bench_quic's bytes\n", size, hw_mode_names[mode], a);
                bad = 1;
            }
            a = hw_run(p, frame, len, 1, &open_cyc);
            if (a != NANOBPF_XDP_PASS || !equal_bytes(frame, plain, len - 16)) {
                printf("FAIL quic_hw %u %s: open gave action %d or not the plaintext\n", size, hw_mode_names[mode], a);
                bad = 1;
            }
        }
        printf("BENCH workload=quic_hw size=%u mode=%s seal_cycles=%llu open_cycles=%llu\n", size, hw_mode_names[mode],
               (unsigned long long)seal_cyc, (unsigned long long)open_cyc);
        copy_bytes(frame, native_sealed, len);
        frame[len - 1] ^= 1;
        uint64_t c;
        if (hw_run(p, frame, len, 1, &c) != NANOBPF_XDP_DROP) {
            printf("FAIL quic_hw %u %s: a forged tag was accepted\n", size, hw_mode_names[mode]);
            bad = 1;
        }
    }
    /* engine requests: from packet memory a seal and an open of 2 each (AEAD + mask) per round and the
     * forgery's 2; from main memory only the masks (1 per run) */
    uint64_t used = nb_aead_counter(NANOBPF_AEAD_COUNTER_REQUESTS) - before;
    if (used != (4u * ROUNDS + 2u) + (2u * ROUNDS + 1u)) {
        printf("FAIL quic_hw %u: %llu engine requests, expected the engine path only for packet memory\n", size,
               (unsigned long long)used);
        bad = 1;
    }
    return bad;
}

int hart_main(unsigned hart) {
    if (hart != 0) return 0;
    int bad = 0;
#ifdef QUIC_BENCH_RFC
    bad = rfc_vectors();
    puts(bad ? "quic_rfc: FAIL" : "quic_rfc: PASS");
    return bad;
#endif
    struct ebpf_prog prog;
    struct ebpf_error err = {-1, ""};
    uint64_t t0 = nb_cycles();
    if (ebpf_image_load(bench_quic_image, (size_t)(bench_quic_image_end - bench_quic_image), &prog, &err)) goto fail;
    uint64_t t1 = nb_cycles();
    if (ebpf_verify(&prog, NULL, &err)) goto fail;
    uint64_t t2 = nb_cycles();
    if (ebpf_prog_resolve(&prog, &err) || ebpf_jit_compile(&prog, 0, &err)) goto fail;
    uint64_t t3 = nb_cycles();
    printf("BENCH workload=quic insns=%u load_cycles=%llu verify_cycles=%llu verify_insns=%u jit_cycles=%llu jit_bytes=%u\n",
           prog.n_insns, (unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1), ebpf_verify_last_stats.processed,
           (unsigned long long)(t3 - t2), prog.jit_size);
    struct ebpf_prog hw;
    if (hw_load(&hw)) {
        puts("quic_bench: FAIL");
        return 1;
    }
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t len = HDR + sizes[s] + 16, out;
        build_plain(sizes[s]);
        for (int mode = 0; mode < MODES; mode++) {
            uint64_t seal_cyc = 0, open_cyc = 0;
            for (int round = 0; round < ROUNDS; round++) {
                memcpy(buf + 256, plain, len);
                int a = run(&prog, mode, len, 2, &seal_cyc, &out);
                if (a != NANOBPF_XDP_TX || out != len) {
                    printf("FAIL quic %u %s: seal gave action %d, %u bytes\n", sizes[s], mode_names[mode], a, (unsigned)out);
                    bad = 1;
                }
                if (mode == NATIVE) memcpy(native_sealed, buf + 256, len);
                else if (memcmp(native_sealed, buf + 256, len)) {
                    printf("FAIL quic %u %s: sealed bytes differ from native code's\n", sizes[s], mode_names[mode]);
                    bad = 1;
                }
                if (!memcmp(plain + HDR, buf + 256 + HDR, sizes[s])) {
                    printf("FAIL quic %u %s: the payload was not encrypted\n", sizes[s], mode_names[mode]);
                    bad = 1;
                }
                a = run(&prog, mode, len, 1, &open_cyc, &out);
                if (a != NANOBPF_XDP_PASS || memcmp(plain, buf + 256, len - 16)) {
                    printf("FAIL quic %u %s: open gave action %d or not the plaintext\n", sizes[s], mode_names[mode], a);
                    bad = 1;
                }
            }
            printf("BENCH workload=quic size=%u mode=%s seal_cycles=%llu open_cycles=%llu\n", sizes[s], mode_names[mode],
                   (unsigned long long)seal_cyc, (unsigned long long)open_cyc);
        }
        /* a forged tag is refused */
        memcpy(buf + 256, native_sealed, len);
        buf[256 + len - 1] ^= 1;
        uint64_t c;
        if (run(&prog, JIT, len, 1, &c, &out) != NANOBPF_XDP_DROP) {
            printf("FAIL quic %u: a forged tag was accepted\n", sizes[s]);
            bad = 1;
        }
        bad |= hw_size(&hw, sizes[s], len);
    }
    ebpf_prog_free(&hw);
    ebpf_prog_free(&prog);
    puts(bad ? "quic_bench: FAIL" : "quic_bench: PASS");
    return bad;
fail:
    printf("FAIL quic: insn %d: %s\n", err.insn, err.msg);
    puts("quic_bench: FAIL");
    return 1;
}
