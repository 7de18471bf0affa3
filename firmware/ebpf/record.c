/* Verification records: what ebpf_verify() concluded about one device image (its instructions with the
 * context accesses rewritten, the per-instruction facts for the JIT, the functions and their stack
 * depths), written by the same verifier on the build host (nanobpf-run --image F --write-record OUT) so
 * that firmware whose built-in program was verified at build time need not verify it again at boot: on
 * CVA6 verifying xdp_quic_hw costs tens of millions of cycles (docs/ebpf.md). A record is bound to its
 * image by size and CRC-32, and applying it may change nothing but what the verifier itself changes
 * (the code and offset of context loads): a stale or foreign record is refused, never half-applied.
 *
 * Layout (little-endian, like both hosts): "NBVR", u32 version, u32 image CRC-32, u32 image size,
 * u32 instruction count n, u32 function count f; f x (u32 start, u32 stack depth); n instructions
 * (8 bytes each); n flag bytes (EBPF_INSN_*). */
#include <string.h>
#include "ebpf.h"

#define RECORD_MAGIC "NBVR"
#define RECORD_VERSION 1
#define RECORD_HEAD 24

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32), four bytes a step from four tables made on first
 * use ("slicing by 4"): bit by bit it cost 3.5M cycles on CVA6 for xdp_quic_hw's image, a byte a step
 * 10 cycles a byte (400K for its 40 KB). The control plane checks PROG_LOAD images with it too. */
uint32_t ebpf_crc32(const void *data, size_t n) {
    static uint32_t t[4][256];
    if (!t[0][1]) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
            t[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; i++)
            for (int k = 1; k < 4; k++) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
    }
    const uint8_t *p = data;
    uint32_t c = 0xffffffffu;
    for (; n >= 4; n -= 4, p += 4) {
        c ^= (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        c = t[3][c & 0xff] ^ t[2][(c >> 8) & 0xff] ^ t[1][(c >> 16) & 0xff] ^ t[0][c >> 24];
    }
    while (n--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
    return ~c;
}

static void put32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t ebpf_record_crc(const void *record) { return get32((const uint8_t *)record + 8); }

size_t ebpf_record_size(const struct ebpf_prog *prog) {
    return RECORD_HEAD + 8u * prog->n_subprogs + 9u * prog->n_insns;
}

int ebpf_record_write(const struct ebpf_prog *prog, const void *image, size_t image_size, void *out, size_t out_size,
                      struct ebpf_error *err) {
    if (!prog->verified || prog->resolved) return ebpf_fail(err, -1, "record: the program must be verified and not resolved");
    if (out_size < ebpf_record_size(prog)) return ebpf_fail(err, -1, "record: %lu bytes of room, %lu needed",
                                                            (unsigned long)out_size, (unsigned long)ebpf_record_size(prog));
    uint8_t *p = out;
    memcpy(p, RECORD_MAGIC, 4);
    put32(p + 4, RECORD_VERSION);
    put32(p + 8, ebpf_crc32(image, image_size));
    put32(p + 12, (uint32_t)image_size);
    put32(p + 16, prog->n_insns);
    put32(p + 20, prog->n_subprogs);
    p += RECORD_HEAD;
    for (uint32_t f = 0; f < prog->n_subprogs; f++, p += 8) {
        put32(p, prog->subprogs[f].start);
        put32(p + 4, prog->subprogs[f].stack_depth);
    }
    memcpy(p, prog->insns, 8u * prog->n_insns);
    p += 8u * prog->n_insns;
    for (uint32_t i = 0; i < prog->n_insns; i++) p[i] = prog->insn_flags ? prog->insn_flags[i] : 0;
    return 0;
}

static int same_insn(const struct ebpf_insn *a, const struct ebpf_insn *b) {
    /* inline word loads of a known type (memcmp is a byte loop in picolibc: 60 instructions each) */
    uint64_t x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    return x == y;
}

/* The only change the verifier makes to an instruction: a 4-byte load of a context field gets the
 * runtime's field offset and width (verifier.c rewrite_ctx), exactly that: a record cannot point a load
 * anywhere else, not at another field of the runtime context, nor past a map value. */
static int allowed_change(const struct ebpf_insn *was, const struct ebpf_insn *now) {
    if (same_insn(was, now)) return 1;
    uint8_t code;
    int16_t off;
    return was->code == (EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W) && was->off >= 0 && was->off % 4 == 0 &&
           !ebpf_ctx_field_load((uint32_t)was->off / 4, &code, &off) && now->code == code && now->off == off &&
           was->dst == now->dst && was->src == now->src && was->imm == now->imm;
}

int ebpf_record_apply(struct ebpf_prog *prog, const void *image, size_t image_size, const void *record, size_t size,
                      struct ebpf_error *err) {
    const uint8_t *r = record;
    if (prog->verified || prog->resolved || !prog->insns) return ebpf_fail(err, -1, "record: the program is not freshly loaded");
    if (size < RECORD_HEAD || memcmp(r, RECORD_MAGIC, 4)) return ebpf_fail(err, -1, "record: no NBVR header");
    if (get32(r + 4) != RECORD_VERSION) return ebpf_fail(err, -1, "record: version %u, not %u", get32(r + 4), RECORD_VERSION);
    if (get32(r + 12) != image_size || get32(r + 8) != ebpf_crc32(image, image_size))
        return ebpf_fail(err, -1, "record: made for another image (size or CRC-32 differs)");
    uint32_t n = get32(r + 16), nf = get32(r + 20);
    if (n != prog->n_insns) return ebpf_fail(err, -1, "record: %u instructions, the program has %u", n, prog->n_insns);
    if (nf == 0 || nf > EBPF_MAX_SUBPROGS) return ebpf_fail(err, -1, "record: %u functions (1..%d)", nf, EBPF_MAX_SUBPROGS);
    if (size != RECORD_HEAD + 8ull * nf + 9ull * n) return ebpf_fail(err, -1, "record: %lu bytes, not what its counts say",
                                                                     (unsigned long)size);
    const uint8_t *fn = r + RECORD_HEAD, *insns = fn + 8u * nf, *flags = insns + 8u * n;
    for (uint32_t f = 0; f < nf; f++) {
        uint32_t start = get32(fn + 8 * f), depth = get32(fn + 8 * f + 4);
        if (start >= n || (f == 0) != (start == 0) || depth > EBPF_STACK_SIZE || depth % 16)
            return ebpf_fail(err, -1, "record: bad function %u (start %u, stack %u)", f, start, depth);
    }
    /* the record's instructions copied once (the record may sit at any alignment), then checked */
    struct ebpf_insn *now = ebpf_alloc(8u * n);
    uint8_t *fl = ebpf_alloc(n);
    if (!now || !fl) {
        ebpf_free(now);
        ebpf_free(fl);
        return ebpf_fail(err, -1, "record: out of memory");
    }
    memcpy(now, insns, 8u * n);
    memcpy(fl, flags, n);
    int bad = 0;
    for (uint32_t i = 0; i < n && !bad; i++) {
        if (!allowed_change(&prog->insns[i], &now[i])) bad = ebpf_fail(err, (int)i, "record: instruction differs from the image's");
        else if (fl[i] & ~(EBPF_INSN_PKT_ACCESS | EBPF_INSN_READS_META))
            bad = ebpf_fail(err, (int)i, "record: unknown instruction flags 0x%x", fl[i]);
    }
    if (bad) {
        ebpf_free(now);
        ebpf_free(fl);
        return -1;
    }
    ebpf_free(prog->insns);
    prog->insns = now;
    for (uint32_t f = 0; f < nf; f++) {
        prog->subprogs[f].start = get32(fn + 8 * f);
        prog->subprogs[f].stack_depth = get32(fn + 8 * f + 4);
    }
    prog->n_subprogs = nf;
    prog->insn_flags = fl;
    prog->verified = 1;
    return 0;
}
