/* eBPF -> RV64 JIT (RV64IMAC, optional RVC/Zba/Zbb). Semantics follow RFC 9669 and match interp.c.
 * One file on purpose (about 1,150 lines): one emitter whose per-opcode cases share the register map,
 * the frame layout and the branch fix-ups; rv64_insn.h holds the encodings.
 *
 * Every eBPF function (the main program and each bpf-to-bpf subprogram) becomes an ordinary RV64
 * function: prologue, body, epilogue. Registers map as in Linux's RV64 JIT, so R1-R5 are the argument
 * registers of helper calls and R6-R10 survive them in callee-saved registers.
 *
 * Code size depends on branch distances (and RVC), so passes run until the layout is stable: each pass
 * records the RV offset of every eBPF instruction, and each branch picks the smallest form that reaches
 * its target as the last pass placed it. A branch's form only ever grows, so the passes converge; the
 * final pass writes the code. Only branches change size between passes: the passes after the first
 * emit them again and step over every other instruction by the size the first pass measured. */
#include <string.h>
#include "ebpf.h"
#include "rv64_insn.h"

#define ZERO RV_REG_ZERO
#define RA RV_REG_RA
#define SP RV_REG_SP
#define T0 RV_REG_T0
#define T1 RV_REG_T1
#define T2 RV_REG_T2
#define T3 RV_REG_T3
#define FP RV_REG_S5

static const uint8_t regmap[EBPF_NREGS] = {
    RV_REG_A5,                                                   /* R0: return value */
    RV_REG_A0, RV_REG_A1, RV_REG_A2, RV_REG_A3, RV_REG_A4,       /* R1-R5: arguments */
    RV_REG_S1, RV_REG_S2, RV_REG_S3, RV_REG_S4,                  /* R6-R9: callee-saved */
    RV_REG_S5,                                                   /* R10: frame pointer */
};
/* Callee-saved registers a function may need to save, in save-slot order; s6 keeps the context across a
 * tail call's helper. */
static const uint8_t saved_regs[] = {RA, RV_REG_S1, RV_REG_S2, RV_REG_S3, RV_REG_S4, RV_REG_S5, RV_REG_S6};
#define SAVE_S6 (1u << 6)

/* RV branch conditions (the B-type funct3); cond ^ 1 is the opposite condition. */
enum { BEQ = 0, BNE = 1, BLT = 4, BGE = 5, BLTU = 6, BGEU = 7 };

struct jit_func {
    uint32_t start, end;     /* eBPF instructions [start, end) */
    uint32_t entry, exit;    /* RV offsets of the prologue and the epilogue */
    uint32_t stack;          /* eBPF stack bytes (0 when R10 is unused) */
    uint32_t frame;          /* stack + save area, 16-byte aligned */
    uint32_t save;           /* bit per saved_regs[] entry */
    int main;                /* a program (the attached one, or one bpf_tail_call jumps to): returns R0 the C way */
    int callback;            /* its address is taken (bpf_loop): returns R0 the C way too */
};

struct jit {
    const struct ebpf_prog *prog;
    unsigned flags;
    struct ebpf_error *err;
    uint8_t *buf;            /* NULL while sizing */
    uint32_t cap, pos;
    uint32_t *offs;          /* RV offset of each eBPF instruction (last pass for targets ahead) */
    uint8_t *form;           /* per eBPF instruction: size class of its branch, only grows */
    int16_t *size;           /* per eBPF instruction: its bytes in the first pass, SIZE_BRANCH if a branch
                                distance decides them (the second slot of a pair: 0) */
    uint8_t *target;         /* per eBPF instruction: some jump lands on it */
    struct ebpf_prog sprog;  /* the program as compiled: loads scheduled (jit_schedule) */
    struct jit_func *funcs;
    uint32_t n_funcs;
    const struct jit_func *cur;
    int grow;                /* branches may pick a larger form (all passes but the first and last) */
    int final;               /* writing the code: every branch must reach */
    int changed;             /* a branch form grew during this pass */
    int branch;              /* the instruction being emitted chose a branch form */
    int cls;                 /* eBPF class charged for emitted instructions, -1: prologue/epilogue */
    const struct ebpf_map *r1_map; /* the map an ld_imm64 left in R1 on the only way here, or NULL */
    uint32_t fp_regs;        /* bit r: Rr = R10 + fp_off[r] on the only way here */
    int64_t fp_off[EBPF_NREGS];
    struct ebpf_jit_stats stats;
    struct imm_cache *imms;  /* emit_imm's sequences (NULL: worked out each time) */
    uint64_t base;           /* where the code will run (0: not known yet): constants near it pc-relative */
};

#define RVC(j) ((j)->flags & EBPF_JIT_RVC)
#define ZBA(j) ((j)->flags & EBPF_JIT_ZBA)
#define ZBB(j) ((j)->flags & EBPF_JIT_ZBB)

/* ---- Raw emission ---- */
static void count(struct jit *j) {
    if (j->cls >= 0) j->stats.rv_insns[j->cls]++;
}
static void emit32(struct jit *j, uint32_t insn) {
    if (j->buf && j->pos + 4 <= j->cap)
        for (int k = 0; k < 4; k++) j->buf[j->pos + k] = (uint8_t)(insn >> (8 * k));
    j->pos += 4;
    count(j);
}
static void emit16(struct jit *j, uint16_t insn) {
    if (j->buf && j->pos + 2 <= j->cap) {
        j->buf[j->pos] = (uint8_t)insn;
        j->buf[j->pos + 1] = (uint8_t)(insn >> 8);
    }
    j->pos += 2;
    count(j);
}

/* ---- One instruction, compressed when RVC is on and the operands allow it ---- */
static void emit_addi(struct jit *j, uint8_t rd, uint8_t rs, int32_t imm) {
    if (RVC(j) && rd != ZERO) {
        if (rd == rs && imm != 0 && rv_fits_signed(imm, 6)) return emit16(j, rv_c_addi(rd, imm));
        if (rs == ZERO && rv_fits_signed(imm, 6)) return emit16(j, rv_c_li(rd, imm));
        if (imm == 0 && rs != ZERO) return emit16(j, rv_c_mv(rd, rs));
        if (rd == SP && rs == SP && imm && imm % 16 == 0 && rv_fits_signed(imm, 10))
            return emit16(j, rv_c_addi16sp(imm));
        if (rs == SP && rv_is_creg(rd) && imm > 0 && imm < 1024 && imm % 4 == 0)
            return emit16(j, rv_c_addi4spn(rd, (uint32_t)imm));
    }
    emit32(j, rv_addi(rd, rs, imm));
}
static void emit_mv(struct jit *j, uint8_t rd, uint8_t rs) {
    if (rd != rs) emit_addi(j, rd, rs, 0);
}
static void emit_addiw(struct jit *j, uint8_t rd, uint8_t rs, int32_t imm) {
    if (RVC(j) && rd != ZERO && rd == rs && rv_fits_signed(imm, 6)) return emit16(j, rv_c_addiw(rd, imm));
    emit32(j, rv_addiw(rd, rs, imm));
}
static void emit_lui(struct jit *j, uint8_t rd, int32_t imm20) {
    int32_t s = ((imm20 & 0xfffff) ^ 0x80000) - 0x80000;
    if (RVC(j) && rd != ZERO && rd != SP && s && rv_fits_signed(s, 6)) return emit16(j, rv_c_lui(rd, s));
    emit32(j, rv_lui(rd, imm20));
}
static void emit_slli(struct jit *j, uint8_t rd, uint8_t rs, unsigned sh) {
    if (!sh) return emit_mv(j, rd, rs);
    if (RVC(j) && rd != ZERO && rd == rs) return emit16(j, rv_c_slli(rd, sh));
    emit32(j, rv_slli(rd, rs, sh));
}
static void emit_srli(struct jit *j, uint8_t rd, uint8_t rs, unsigned sh) {
    if (!sh) return emit_mv(j, rd, rs);
    if (RVC(j) && rv_is_creg(rd) && rd == rs) return emit16(j, rv_c_srli(rd, sh));
    emit32(j, rv_srli(rd, rs, sh));
}
static void emit_srai(struct jit *j, uint8_t rd, uint8_t rs, unsigned sh) {
    if (!sh) return emit_mv(j, rd, rs);
    if (RVC(j) && rv_is_creg(rd) && rd == rs) return emit16(j, rv_c_srai(rd, sh));
    emit32(j, rv_srai(rd, rs, sh));
}
static void emit_andi(struct jit *j, uint8_t rd, uint8_t rs, int32_t imm) {
    if (RVC(j) && rv_is_creg(rd) && rd == rs && rv_fits_signed(imm, 6)) return emit16(j, rv_c_andi(rd, imm));
    emit32(j, rv_andi(rd, rs, imm));
}
static void emit_add(struct jit *j, uint8_t rd, uint8_t rs1, uint8_t rs2) {
    if (RVC(j) && rd != ZERO) {
        if (rd == rs1 && rs2 != ZERO) return emit16(j, rv_c_add(rd, rs2));
        if (rd == rs2 && rs1 != ZERO) return emit16(j, rv_c_add(rd, rs1));
        if (rs1 == ZERO && rs2 != ZERO) return emit16(j, rv_c_mv(rd, rs2));
    }
    emit32(j, rv_add(rd, rs1, rs2));
}
/* Register-register operations with a CA form (rd' = rd' op rs2'); commuting ones may swap. */
static void emit_ca(struct jit *j, uint32_t insn, uint16_t (*c)(uint8_t, uint8_t), int commutes,
                    uint8_t rd, uint8_t rs1, uint8_t rs2) {
    if (RVC(j) && rv_is_creg(rd)) {
        if (rd == rs1 && rv_is_creg(rs2)) return emit16(j, c(rd, rs2));
        if (commutes && rd == rs2 && rv_is_creg(rs1)) return emit16(j, c(rd, rs1));
    }
    emit32(j, insn);
}
static void emit_sub(struct jit *j, uint8_t rd, uint8_t rs1, uint8_t rs2) { emit_ca(j, rv_sub(rd, rs1, rs2), rv_c_sub, 0, rd, rs1, rs2); }
static void emit_and(struct jit *j, uint8_t rd, uint8_t rs1, uint8_t rs2) { emit_ca(j, rv_and(rd, rs1, rs2), rv_c_and, 1, rd, rs1, rs2); }
static void emit_or(struct jit *j, uint8_t rd, uint8_t rs1, uint8_t rs2) { emit_ca(j, rv_or(rd, rs1, rs2), rv_c_or, 1, rd, rs1, rs2); }
static void emit_xor(struct jit *j, uint8_t rd, uint8_t rs1, uint8_t rs2) { emit_ca(j, rv_xor(rd, rs1, rs2), rv_c_xor, 1, rd, rs1, rs2); }
static void emit_addw(struct jit *j, uint8_t rd, uint8_t rs1, uint8_t rs2) { emit_ca(j, rv_addw(rd, rs1, rs2), rv_c_addw, 1, rd, rs1, rs2); }
static void emit_subw(struct jit *j, uint8_t rd, uint8_t rs1, uint8_t rs2) { emit_ca(j, rv_subw(rd, rs1, rs2), rv_c_subw, 0, rd, rs1, rs2); }

/* ---- Sequences ---- */
/* rd = zero-extended low 32 bits of rs */
static void emit_zext32(struct jit *j, uint8_t rd, uint8_t rs) {
    if (ZBA(j)) return emit32(j, rv_zext_w(rd, rs));
    emit_slli(j, rd, rs, 32);
    emit_srli(j, rd, rd, 32);
}
static void emit_zext16(struct jit *j, uint8_t rd, uint8_t rs) {
    if (ZBB(j)) return emit32(j, rv_zext_h(rd, rs));
    emit_slli(j, rd, rs, 48);
    emit_srli(j, rd, rd, 48);
}
/* rd = low `bits` bits of rs, sign-extended to 64 */
static void emit_sext(struct jit *j, uint8_t rd, uint8_t rs, int bits) {
    if (bits == 32) return emit_addiw(j, rd, rs, 0);
    if (ZBB(j)) return emit32(j, bits == 8 ? rv_sext_b(rd, rs) : rv_sext_h(rd, rs));
    emit_slli(j, rd, rs, 64 - (unsigned)bits);
    emit_srai(j, rd, rd, 64 - (unsigned)bits);
}

/* Constant materialisation: a short list of steps, built recursively (as LLVM's RISCVMatInt does):
 * 32-bit values are lui+addiw; wider ones are the upper part shifted left plus a 12-bit addend. */
enum { IMM_LI, IMM_LUI, IMM_ADDIW, IMM_ADDI, IMM_SLLI, IMM_SRLI };
struct imm_seq {
    int n;
    uint8_t op[12];
    int32_t arg[12];
};
static void seq_add(struct imm_seq *q, int op, int32_t arg) {
    if (q->n < 12) {
        q->op[q->n] = (uint8_t)op;
        q->arg[q->n] = arg;
    }
    q->n++;
}
static void imm_gen(struct imm_seq *q, int64_t v) {
    int32_t lo = (int32_t)((v & 0xfff) ^ 0x800) - 0x800;
    if (v >= INT32_MIN && v <= INT32_MAX) {
        int32_t hi = (int32_t)((((uint64_t)v + 0x800) >> 12) & 0xfffff);
        if (!hi) return seq_add(q, IMM_LI, lo);
        seq_add(q, IMM_LUI, hi);
        if (lo) seq_add(q, IMM_ADDIW, lo);
        return;
    }
    int64_t hi = (int64_t)((uint64_t)v - (uint64_t)(int64_t)lo) >> 12;
    int tz = __builtin_ctzll((uint64_t)hi);
    imm_gen(q, hi >> tz);
    seq_add(q, IMM_SLLI, 12 + tz);
    if (lo) seq_add(q, IMM_ADDI, lo);
}
static void imm_best(struct imm_seq *best, int64_t v) {
    best->n = 0;
    imm_gen(best, v);
    if (best->n <= 2 || v <= 0) return;
    /* Positive constants with leading zeros: build a shifted-up value and shift it back down. */
    int lz = __builtin_clzll((uint64_t)v);
    for (int ones = 0; ones < 2; ones++) {
        struct imm_seq q = {0};
        uint64_t up = (uint64_t)v << lz | (ones ? (UINT64_C(1) << lz) - 1 : 0);
        imm_gen(&q, (int64_t)up);
        seq_add(&q, IMM_SRLI, lz);
        if (q.n < best->n) *best = q;
    }
}
/* The sequences of the constants that need more than two steps (addresses above 2 GiB: helpers and
 * maps on the device), kept per compile: each pass emits the same ones again, and working one out
 * (three tries, clz/ctz in software on RV64IMAC) was a sixth of the JIT's time. */
#define IMM_CACHE 64
struct imm_cache {
    int64_t v[IMM_CACHE];
    struct imm_seq q[IMM_CACHE];
    uint8_t used[IMM_CACHE];
};
/* Constants within reach of an auipc from anywhere in the code (a margin of 1 MiB, far more than a
 * program's code, so that the choice cannot change between passes as the code shrinks): on the device
 * the helpers, the maps and the packet memory, whose absolute addresses (above 2 GiB) take 3-4
 * instructions, are an auipc and one more. Always 8 bytes, whatever the offset, for the same reason. */
static int pc_rel(const struct jit *j, int64_t v, int32_t *hi, int32_t *lo) {
    if (!j->base) return 0;
    int64_t d = v - (int64_t)(j->base + j->pos);
    if (d < -(INT64_C(1) << 31) + (1 << 20) || d >= (INT64_C(1) << 31) - (1 << 20)) return 0;
    *lo = (int32_t)((d & 0xfff) ^ 0x800) - 0x800;
    *hi = (int32_t)((uint64_t)(d - *lo) >> 12) & 0xfffff;
    return 1;
}
static void emit_seq(struct jit *j, uint8_t rd, const struct imm_seq *q);
/* The bytes q takes as emitted for rd (compressed forms depend on the register and the values, not on
 * where it goes): emitted into nothing and taken back. */
static uint32_t seq_bytes(struct jit *j, uint8_t rd, const struct imm_seq *q) {
    uint32_t pos = j->pos;
    uint8_t *buf = j->buf;
    struct ebpf_jit_stats stats = j->stats;
    j->buf = NULL;
    emit_seq(j, rd, q);
    uint32_t n = j->pos - pos;
    j->pos = pos, j->buf = buf, j->stats = stats;
    return n;
}
static void emit_imm(struct jit *j, uint8_t rd, int64_t v) {
    struct imm_seq q;
    if (v >= -2048 && v < 2048) {
        q.n = 0;
        seq_add(&q, IMM_LI, (int32_t)v);
    } else if (j->imms) {
        uint32_t h = (uint32_t)(((uint64_t)v * 0x9e3779b97f4a7c15ull) >> 58) % IMM_CACHE;
        if (!j->imms->used[h] || j->imms->v[h] != v) {
            imm_best(&j->imms->q[h], v);
            j->imms->v[h] = v;
            j->imms->used[h] = 1;
        }
        q = j->imms->q[h];
    } else {
        imm_best(&q, v);
    }
    int32_t hi, lo;
    if (q.n > 2 && pc_rel(j, v, &hi, &lo) && seq_bytes(j, rd, &q) > 8) {
        emit32(j, rv_auipc(rd, hi));
        emit32(j, rv_addi(rd, rd, lo));
        return;
    }
    emit_seq(j, rd, &q);
}
static void emit_seq(struct jit *j, uint8_t rd, const struct imm_seq *qp) {
    struct imm_seq q = *qp;
    for (int k = 0; k < q.n; k++) {
        int32_t a = q.arg[k];
        switch (q.op[k]) {
        case IMM_LI: emit_addi(j, rd, ZERO, a); break;
        case IMM_LUI: emit_lui(j, rd, a); break;
        case IMM_ADDIW: emit_addiw(j, rd, rd, a); break;
        case IMM_ADDI: emit_addi(j, rd, rd, a); break;
        case IMM_SLLI: emit_slli(j, rd, rd, (unsigned)a); break;
        case IMM_SRLI: emit_srli(j, rd, rd, (unsigned)a); break;
        }
    }
}
/* rd = rs + imm for any imm (tmp holds a constant that does not fit 12 bits; tmp != rs) */
static void emit_addi_any(struct jit *j, uint8_t rd, uint8_t rs, int64_t imm, uint8_t tmp) {
    if (rv_fits_imm12(imm)) {
        if (imm || rd != rs) emit_addi(j, rd, rs, (int32_t)imm);
        return;
    }
    emit_imm(j, tmp, imm);
    emit_add(j, rd, rs, tmp);
}

/* rd = byte swap of the low `bits` bits of rd, zero-extended. Without Zbb: swap bytes within each
 * halfword through the mask 0x00ff00ff.., then halfwords within words, then the two words. */
static void emit_bswap(struct jit *j, uint8_t rd, int bits) {
    if (ZBB(j)) {
        emit32(j, rv_rev8(rd, rd));
        if (bits < 64) emit_srli(j, rd, rd, 64 - (unsigned)bits);
        return;
    }
    if (bits == 16) {
        emit_slli(j, T1, rd, 56);
        emit_srli(j, T1, T1, 48); /* low byte, moved up */
        emit_srli(j, rd, rd, 8);
        emit_andi(j, rd, rd, 0xff);
        emit_or(j, rd, rd, T1);
        return;
    }
    emit_imm(j, T2, 0x00ff00ff);
    if (bits == 64) {
        emit_slli(j, T1, T2, 32);
        emit_or(j, T2, T2, T1);
    }
    emit_srli(j, T1, rd, 8);
    emit_and(j, T1, T1, T2);
    emit_and(j, rd, rd, T2);
    emit_slli(j, rd, rd, 8);
    emit_or(j, rd, rd, T1);
    if (bits == 32) {
        emit_slli(j, T1, rd, 48);
        emit_srli(j, T1, T1, 32);
        emit_srli(j, rd, rd, 16);
        emit_or(j, rd, rd, T1);
        return;
    }
    emit_imm(j, T2, 0xffff);
    emit_slli(j, T1, T2, 32);
    emit_or(j, T2, T2, T1);
    emit_srli(j, T1, rd, 16);
    emit_and(j, T1, T1, T2);
    emit_and(j, rd, rd, T2);
    emit_slli(j, rd, rd, 16);
    emit_or(j, rd, rd, T1);
    emit_slli(j, T1, rd, 32);
    emit_srli(j, rd, rd, 32);
    emit_or(j, rd, rd, T1);
}

/* ---- Memory ---- */
enum { SZ_W, SZ_H, SZ_B, SZ_DW }; /* EBPF_SIZE(code) >> 3 */

/* Offset from sp for the compressed sp forms, or -1. R10-relative accesses qualify too: R10 is
 * sp + stack for the whole function body. */
static int32_t sp_offset(const struct jit *j, uint8_t base, int32_t off) {
    if (!RVC(j)) return -1;
    if (base == FP && j->cur->stack) off += (int32_t)j->cur->stack;
    else if (base != SP) return -1;
    return off >= 0 ? off : -1;
}
/* Leaves base + off as *base + *off with *off within 12 bits (T1 holds a far base). */
static void emit_far_base(struct jit *j, uint8_t *base, int32_t *off) {
    if (rv_fits_imm12(*off)) return;
    int32_t lo = ((*off & 0xfff) ^ 0x800) - 0x800;
    emit_lui(j, T1, (int32_t)(((uint32_t)(*off - lo) >> 12) & 0xfffff));
    emit_add(j, T1, T1, *base);
    *base = T1;
    *off = lo;
}
static void emit_load(struct jit *j, int size, int sx, uint8_t rd, uint8_t base, int32_t off) {
    int32_t so = sp_offset(j, base, off);
    if (so >= 0 && rd != ZERO) {
        if (size == SZ_DW && so % 8 == 0 && so < 512) return emit16(j, rv_c_ldsp(rd, (uint32_t)so));
        if (size == SZ_W && sx && so % 4 == 0 && so < 256) return emit16(j, rv_c_lwsp(rd, (uint32_t)so));
    }
    emit_far_base(j, &base, &off);
    if (RVC(j) && rv_is_creg(rd) && rv_is_creg(base) && off >= 0) {
        if (size == SZ_DW && off % 8 == 0 && off < 256) return emit16(j, rv_c_ld(rd, base, (uint32_t)off));
        if (size == SZ_W && sx && off % 4 == 0 && off < 128) return emit16(j, rv_c_lw(rd, base, (uint32_t)off));
    }
    switch (size) {
    case SZ_B: emit32(j, sx ? rv_lb(rd, base, off) : rv_lbu(rd, base, off)); break;
    case SZ_H: emit32(j, sx ? rv_lh(rd, base, off) : rv_lhu(rd, base, off)); break;
    case SZ_W: emit32(j, sx ? rv_lw(rd, base, off) : rv_lwu(rd, base, off)); break;
    default: emit32(j, rv_ld(rd, base, off)); break;
    }
}
/* A packet access the verifier flagged: packet offsets have no known alignment and CVA6 traps on
 * misaligned loads and stores, so test the address and take another path when it is not aligned.
 * Fixed-size 32-bit instructions only, so the branch distances are known here.
 *   t1 = base + off; t0 = t1 & (n-1); bnez t0, slow; <access>; j done; slow: <...>; done:
 * A misaligned store goes byte by byte. A misaligned 4- or 8-byte load reads the two aligned 8-byte
 * words that hold its bytes (the same word twice when it does not cross one) and shifts them
 * together: two loads instead of 4 or 8, each a bus transaction in the device's uncached packet
 * memory. Those words hold the bytes asked for, so they lie inside the same aligned 8 bytes of the
 * buffer as they do, never in another page or slot. A 2-byte load takes two byte loads either way. */
static void emit_unaligned_access(struct jit *j, int size, int sx, int store, uint8_t reg, uint8_t base, int32_t off) {
    static const int bytes[4] = {4, 2, 1, 8};
    int n = bytes[size];
    j->stats.align_tests++;
    emit_addi_any(j, T1, base, off, T1);
    emit32(j, rv_andi(T0, T1, n - 1));
    int words = !store && n >= 4;
    int slow_len = store ? 1 + 2 * (n - 1) : words ? 11 + (n == 4 ? 2 : 0) + 1 : 1 + 3 * (n - 1) + (sx ? 2 : 0) + 1;
    emit32(j, rv_bne(T0, ZERO, 12));
    if (store) {
        uint32_t (*const st[4])(uint8_t, int32_t, uint8_t) = {rv_sw, rv_sh, rv_sb, rv_sd};
        emit32(j, st[size](T1, 0, reg));
        emit32(j, rv_jal(ZERO, 4 * (slow_len + 1)));
        emit32(j, rv_sb(T1, 0, reg));
        for (int k = 1; k < n; k++) {
            emit32(j, rv_srli(T0, reg, 8u * (unsigned)k));
            emit32(j, rv_sb(T1, k, T0));
        }
        return;
    }
    switch (size) {
    case SZ_H: emit32(j, sx ? rv_lh(reg, T1, 0) : rv_lhu(reg, T1, 0)); break;
    case SZ_W: emit32(j, sx ? rv_lw(reg, T1, 0) : rv_lwu(reg, T1, 0)); break;
    default: emit32(j, rv_ld(reg, T1, 0)); break;
    }
    emit32(j, rv_jal(ZERO, 4 * (slow_len + 1)));
    if (words) { /* t0 = (lo >> sh | hi << (64 - sh)), sh = 8 * (t1 & 7), never 0 here */
        emit32(j, rv_andi(T2, T1, -8));
        emit32(j, rv_ld(T2, T2, 0));
        emit32(j, rv_andi(T0, T1, 7));
        emit32(j, rv_slli(T0, T0, 3));
        emit32(j, rv_srl(T2, T2, T0));
        emit32(j, rv_addi(T1, T1, n - 1));
        emit32(j, rv_andi(T1, T1, -8));
        emit32(j, rv_ld(T1, T1, 0));
        emit32(j, rv_sub(T0, ZERO, T0)); /* sll takes the low 6 bits: 64 - sh */
        emit32(j, rv_sll(T1, T1, T0));
        emit32(j, rv_or(T0, T2, T1));
        if (n == 4) { /* the low 4 bytes, zero- or sign-extended */
            emit32(j, rv_slli(T0, T0, 32));
            emit32(j, sx ? rv_srai(T0, T0, 32) : rv_srli(T0, T0, 32));
        }
        emit32(j, rv_addi(reg, T0, 0));
        return;
    }
    emit32(j, rv_lbu(T0, T1, 0));
    for (int k = 1; k < n; k++) {
        emit32(j, rv_lbu(T2, T1, k));
        emit32(j, rv_slli(T2, T2, 8u * (unsigned)k));
        emit32(j, rv_or(T0, T0, T2));
    }
    if (sx) {
        emit32(j, rv_slli(T0, T0, 64u - 8u * (unsigned)n));
        emit32(j, rv_srai(T0, T0, 64u - 8u * (unsigned)n));
    }
    emit32(j, rv_addi(reg, T0, 0));
}

static int pkt_access(const struct jit *j, int i) {
    return j->prog->insn_flags && (j->prog->insn_flags[i] & EBPF_INSN_PKT_ACCESS);
}

static void emit_store(struct jit *j, int size, uint8_t base, int32_t off, uint8_t rs) {
    int32_t so = sp_offset(j, base, off);
    if (so >= 0) {
        if (size == SZ_DW && so % 8 == 0 && so < 512) return emit16(j, rv_c_sdsp((uint32_t)so, rs));
        if (size == SZ_W && so % 4 == 0 && so < 256) return emit16(j, rv_c_swsp((uint32_t)so, rs));
    }
    emit_far_base(j, &base, &off);
    if (RVC(j) && rv_is_creg(rs) && rv_is_creg(base) && off >= 0) {
        if (size == SZ_DW && off % 8 == 0 && off < 256) return emit16(j, rv_c_sd(base, (uint32_t)off, rs));
        if (size == SZ_W && off % 4 == 0 && off < 128) return emit16(j, rv_c_sw(base, (uint32_t)off, rs));
    }
    switch (size) {
    case SZ_B: emit32(j, rv_sb(base, off, rs)); break;
    case SZ_H: emit32(j, rv_sh(base, off, rs)); break;
    case SZ_W: emit32(j, rv_sw(base, off, rs)); break;
    default: emit32(j, rv_sd(base, off, rs)); break;
    }
}

/* ---- Branches ---- */
/* Size class of a branch from the current position over d bytes: 0 = compressed (when c_ok) or
 * B-type/JAL, 1 = B-type, 2 = inverted B-type over a JAL. Grows form[i] in sizing passes; in the
 * final pass a target the form cannot reach is an error. */
static int branch_form(struct jit *j, int i, int64_t d, int c_ok, int cbits, int bits) {
    j->branch = 1;
    int need = c_ok && rv_fits_signed(d, (unsigned)cbits) ? 0 : rv_fits_signed(d, (unsigned)bits) ? 1 : 2;
    if (!c_ok && need == 1) need = 0;
    if (need > j->form[i]) {
        if (j->final) return -1;
        if (j->grow) {
            j->form[i] = (uint8_t)need;
            j->changed = 1;
        }
    }
    return j->form[i];
}
static int too_far(struct jit *j, int i) {
    return ebpf_fail(j->err, i, "jump too far for the JIT (over 1 MiB of code)");
}
/* if (rs1 cond rs2) goto target (an RV offset) */
static int emit_bcond(struct jit *j, int i, int cond, uint8_t rs1, uint8_t rs2, uint32_t target) {
    int64_t d = (int64_t)target - j->pos;
    int c_ok = RVC(j) && (cond == BEQ || cond == BNE) &&
               ((rs2 == ZERO && rv_is_creg(rs1)) || (rs1 == ZERO && rv_is_creg(rs2)));
    int form = branch_form(j, i, d, c_ok, 9, 13);
    if (form < 0) return too_far(j, i);
    if (form == 0 && c_ok) {
        uint8_t r = rs2 == ZERO ? rs1 : rs2;
        emit16(j, cond == BEQ ? rv_c_beqz(r, (int32_t)d) : rv_c_bnez(r, (int32_t)d));
    } else if (form <= 1) {
        emit32(j, rv_b_insn((int32_t)d, rs2, rs1, (uint8_t)cond, 0x63));
    } else {
        emit32(j, rv_b_insn(8, rs2, rs1, (uint8_t)(cond ^ 1), 0x63));
        d -= 4;
        if (j->final && !rv_fits_signed(d, 21)) return too_far(j, i);
        emit32(j, rv_jal(ZERO, (int32_t)d));
    }
    return 0;
}
static int emit_jump(struct jit *j, int i, uint32_t target) {
    int64_t d = (int64_t)target - j->pos;
    int form = branch_form(j, i, d, RVC(j) != 0, 12, 21);
    if (form < 0 || (j->final && !rv_fits_signed(d, 21))) return too_far(j, i);
    if (form == 0 && RVC(j)) emit16(j, rv_c_j((int32_t)d));
    else emit32(j, rv_jal(ZERO, (int32_t)d));
    return 0;
}

/* ---- Prologue / epilogue ---- */
static void emit_prologue(struct jit *j, const struct jit_func *f) {
    if (!f->frame) return;
    emit_addi_any(j, SP, SP, -(int64_t)f->frame, T0);
    int32_t off = (int32_t)f->stack;
    for (unsigned k = 0; k < sizeof saved_regs; k++)
        if (f->save & (1u << k)) {
            emit_store(j, SZ_DW, SP, off, saved_regs[k]);
            off += 8;
        }
    if (f->stack) emit_addi_any(j, FP, SP, f->stack, T0);
}
/* The saved registers back, the frame gone: as the function found them. */
static void emit_teardown(struct jit *j, const struct jit_func *f) {
    int32_t off = (int32_t)f->stack;
    for (unsigned k = 0; k < sizeof saved_regs; k++)
        if (f->save & (1u << k)) {
            emit_load(j, SZ_DW, 0, saved_regs[k], SP, off);
            off += 8;
        }
    if (f->frame) emit_addi_any(j, SP, SP, f->frame, T0);
}
/* R0 stays in a5 for bpf-to-bpf returns; a program returns it the C way, and so does a callback, which
 * bpf_loop (a C helper) calls; a bpf-to-bpf call to it finds R0 in a5 as well. */
static void emit_epilogue(struct jit *j, const struct jit_func *f) {
    if (f->main || f->callback) emit_mv(j, RV_REG_A0, regmap[0]);
    emit_teardown(j, f);
    if (RVC(j)) emit16(j, rv_c_jr(RA));
    else emit32(j, rv_ret());
}

/* ---- ALU ---- */
static int emit_alu(struct jit *j, const struct ebpf_insn *in, int i) {
    int is64 = EBPF_CLASS(in->code) == EBPF_CLS_ALU64, op = EBPF_OP(in->code);
    int x = (in->code & EBPF_SRC_X) != 0;
    uint8_t rd = regmap[in->dst], rs = regmap[in->src];
    int64_t imm = in->imm;

    /* neg and the 64-bit bswap have no source operand: with the X bit they are no opcode (the verifier
     * and the interpreter refuse them too) */
    if (x && (op == EBPF_ALU_NEG || (is64 && op == EBPF_ALU_END)))
        return ebpf_fail(j->err, i, "unknown opcode 0x%02x", in->code);
    switch (op) {
    case EBPF_ALU_END:
        if (imm != 16 && imm != 32 && imm != 64) return ebpf_fail(j->err, i, "bad byte swap width %d", in->imm);
        if (is64 || x) emit_bswap(j, rd, (int)imm); /* bswap, or to big endian */
        else if (imm == 16) emit_zext16(j, rd, rd); /* to little endian: truncate */
        else if (imm == 32) emit_zext32(j, rd, rd);
        return 0;
    case EBPF_ALU_NEG:
        if (is64) emit_sub(j, rd, ZERO, rd);
        else {
            emit_subw(j, rd, ZERO, rd);
            emit_zext32(j, rd, rd);
        }
        return 0;
    case EBPF_ALU_MOV:
        if (in->off != 0 && in->off != 8 && in->off != 16 && !(in->off == 32 && is64))
            return ebpf_fail(j->err, i, "bad sign-extending move size %d", in->off);
        if (!x) {
            int64_t v = imm;
            if (in->off) v = (int64_t)((uint64_t)imm << (64 - in->off)) >> (64 - in->off);
            emit_imm(j, rd, is64 ? v : (int64_t)(uint32_t)v);
        } else if (in->off) {
            emit_sext(j, rd, rs, in->off);
            if (!is64) emit_zext32(j, rd, rd);
        } else if (is64) {
            emit_mv(j, rd, rs);
        } else {
            emit_zext32(j, rd, rs);
        }
        return 0;
    }

    if (!x) {
        /* Forms with the immediate in the instruction; everything else loads it into T1. */
        int fits = rv_fits_imm12(imm), sh = (int)(imm & (is64 ? 63 : 31));
        switch (op) {
        case EBPF_ALU_ADD:
        case EBPF_ALU_SUB: {
            int64_t a = op == EBPF_ALU_ADD ? imm : -imm;
            if (!rv_fits_imm12(a)) break;
            if (is64) {
                if (a) emit_addi(j, rd, rd, (int32_t)a);
            } else {
                if (a) emit_addiw(j, rd, rd, (int32_t)a);
                emit_zext32(j, rd, rd);
            }
            return 0;
        }
        case EBPF_ALU_AND:
            if (!fits && imm > 0 && !(imm & (imm + 1))) {
                /* the k low bits (an offset bound such as 0x3fff): two shifts instead of a constant
                 * built in a register and an and (both widths: the top 32 bits come out clear) */
                unsigned k = 64u - (unsigned)__builtin_clzll((uint64_t)imm);
                if (k == 16) emit_zext16(j, rd, rd);
                else {
                    emit_slli(j, rd, rd, 64u - k);
                    emit_srli(j, rd, rd, 64u - k);
                }
                return 0;
            }
            if (!fits) break;
            emit_andi(j, rd, rd, (int32_t)imm);
            if (!is64 && imm < 0) emit_zext32(j, rd, rd); /* a non-negative mask clears the top */
            return 0;
        case EBPF_ALU_OR:
        case EBPF_ALU_XOR:
            if (!fits) break;
            emit32(j, op == EBPF_ALU_OR ? rv_ori(rd, rd, (int32_t)imm) : rv_xori(rd, rd, (int32_t)imm));
            if (!is64) emit_zext32(j, rd, rd);
            return 0;
        case EBPF_ALU_LSH:
            if (is64) emit_slli(j, rd, rd, (unsigned)sh);
            else {
                emit_slli(j, rd, rd, 32 + (unsigned)sh);
                emit_srli(j, rd, rd, 32);
            }
            return 0;
        case EBPF_ALU_RSH:
            if (is64) emit_srli(j, rd, rd, (unsigned)sh);
            else if (sh) emit32(j, rv_srliw(rd, rd, (unsigned)sh)); /* bit 31 clear: already zero-extended */
            else emit_zext32(j, rd, rd);
            return 0;
        case EBPF_ALU_ARSH:
            if (is64) emit_srai(j, rd, rd, (unsigned)sh);
            else {
                emit32(j, rv_sraiw(rd, rd, (unsigned)sh));
                emit_zext32(j, rd, rd);
            }
            return 0;
        case EBPF_ALU_DIV:
            if (imm) break;
            emit_addi(j, rd, ZERO, 0); /* division by zero gives 0 */
            return 0;
        case EBPF_ALU_MOD:
            if (imm) break;
            if (!is64) emit_zext32(j, rd, rd); /* modulo by zero leaves dst */
            return 0;
        }
        emit_imm(j, T1, imm);
        rs = T1;
    }

    int sdiv = in->off == 1;
    switch (op) {
    case EBPF_ALU_ADD: is64 ? emit_add(j, rd, rd, rs) : emit_addw(j, rd, rd, rs); break;
    case EBPF_ALU_SUB: is64 ? emit_sub(j, rd, rd, rs) : emit_subw(j, rd, rd, rs); break;
    case EBPF_ALU_MUL: emit32(j, is64 ? rv_mul(rd, rd, rs) : rv_mulw(rd, rd, rs)); break;
    case EBPF_ALU_OR: emit_or(j, rd, rd, rs); break;
    case EBPF_ALU_AND: emit_and(j, rd, rd, rs); break;
    case EBPF_ALU_XOR: emit_xor(j, rd, rd, rs); break;
    case EBPF_ALU_LSH: emit32(j, is64 ? rv_sll(rd, rd, rs) : rv_sllw(rd, rd, rs)); break;
    case EBPF_ALU_RSH: emit32(j, is64 ? rv_srl(rd, rd, rs) : rv_srlw(rd, rd, rs)); break;
    case EBPF_ALU_ARSH: emit32(j, is64 ? rv_sra(rd, rd, rs) : rv_sraw(rd, rd, rs)); break;
    case EBPF_ALU_MOD: /* RISC-V's remainder by zero is the dividend, and INT_MIN % -1 is 0, as in eBPF */
        if (is64) emit32(j, sdiv ? rv_rem(rd, rd, rs) : rv_remu(rd, rd, rs));
        else emit32(j, sdiv ? rv_remw(rd, rd, rs) : rv_remuw(rd, rd, rs));
        break;
    case EBPF_ALU_DIV:
        if (x) {
            /* RISC-V's quotient by zero is all ones; eBPF's is 0: AND with (divisor != 0 ? ~0 : 0).
             * The 32-bit mask is 0xffffffff, which also zero-extends the quotient. */
            if (is64) emit32(j, rv_seqz(T0, rs));
            else {
                emit_slli(j, T0, rs, 32);
                emit32(j, rv_seqz(T0, T0));
            }
            emit_addi(j, T0, T0, -1);
            if (!is64) emit_srli(j, T0, T0, 32);
        }
        /* INT_MIN / -1 is INT_MIN on RISC-V, as in eBPF */
        if (is64) emit32(j, sdiv ? rv_div(rd, rd, rs) : rv_divu(rd, rd, rs));
        else emit32(j, sdiv ? rv_divw(rd, rd, rs) : rv_divuw(rd, rd, rs));
        if (x) {
            emit_and(j, rd, rd, T0);
            return 0;
        }
        break;
    default:
        return ebpf_fail(j->err, i, "unknown ALU opcode 0x%02x", in->code);
    }
    if (!is64) emit_zext32(j, rd, rd);
    return 0;
}

/* ---- Jumps and calls ---- */
static const struct jit_func *func_at(const struct jit *j, uint32_t start) {
    for (uint32_t k = 0; k < j->n_funcs; k++)
        if (j->funcs[k].start == start) return &j->funcs[k];
    return NULL;
}

/* The helper's C function with R1-R5 in a0-a4; its result becomes R0. */
static void emit_helper_call(struct jit *j, const struct ebpf_helper *h) {
    int32_t hi, lo;
    uint32_t pos = j->pos;
    uint8_t *buf = j->buf;
    struct ebpf_jit_stats stats = j->stats;
    j->buf = NULL; /* the absolute form's size, to take the shorter */
    emit_imm(j, T1, (int64_t)(uintptr_t)h->fn);
    uint32_t abs_bytes = j->pos - pos + (RVC(j) ? 2 : 4);
    j->pos = pos, j->buf = buf, j->stats = stats;
    if (abs_bytes > 8 && pc_rel(j, (int64_t)(uintptr_t)h->fn, &hi, &lo)) {
        emit32(j, rv_auipc(T1, hi));
        emit32(j, rv_jalr(RA, T1, lo));
    } else {
        emit_imm(j, T1, (int64_t)(uintptr_t)h->fn);
        if (RVC(j)) emit16(j, rv_c_jalr(T1));
        else emit32(j, rv_jalr(RA, T1, 0));
    }
    emit_mv(j, regmap[0], RV_REG_A0);
}

/* ---- Array lookups inline (as Linux's map_gen_lookup) ----
 * bpf_map_lookup_elem on an ARRAY or PERCPU_ARRAY whose map is known here is an index check and an
 * add: the helper call, its argument checks and the map's fields read from memory cost about 110
 * cycles on the device, several times a packet for a program's counters and scratch. Known means: on
 * the only way to the call (no jump target since), an ld_imm64 of the map put it in R1 and R2 is the
 * frame pointer plus a multiple of 4 (the key on the stack, where a 4-byte load cannot trap: the frame
 * is 16-byte aligned). Other calls take the helper. */
#define CSR_MHARTID 0xf14u
static const struct ebpf_map *map_of_imm64(const struct jit *j, const struct ebpf_insn *in) {
    if (in->src != EBPF_PSEUDO_IMM64) return NULL;
    uintptr_t v = (uintptr_t)((uint64_t)(uint32_t)in[1].imm << 32 | (uint32_t)in->imm);
    for (uint32_t k = 0; k < j->prog->n_maps; k++)
        if ((uintptr_t)j->prog->maps[k] == v) return j->prog->maps[k];
    return NULL;
}
static int inline_lookup_ok(const struct jit *j) {
    const struct ebpf_map *m = j->r1_map;
    if (!m || !m->storage || !(j->fp_regs & 1u << 2) || j->fp_off[2] % 4) return 0;
    if (m->type == NANOBPF_MAP_TYPE_ARRAY) return m->n_cpus == 1;
    return m->type == NANOBPF_MAP_TYPE_PERCPU_ARRAY && (m->n_cpus <= 1 || ebpf_jit_cpu_is_hartid());
}
/* rd *= k (tmp != rd is free to hold k) */
static void emit_scale(struct jit *j, uint8_t rd, uint64_t k, uint8_t tmp) {
    if (k && !(k & (k - 1))) return emit_slli(j, rd, rd, (unsigned)__builtin_ctzll(k));
    emit_imm(j, tmp, (int64_t)k);
    emit32(j, rv_mul(rd, rd, tmp));
}
/* Branch-free, so that its size needs no second look:
 *   t0 = *(u32 *)R2;  t2 = -(t0 < max_entries);  R0 = (storage + t0 * stride [+ cpu copy]) & t2 */
static void emit_array_lookup(struct jit *j, const struct ebpf_map *m) {
    uint8_t r0 = regmap[0];
    emit32(j, rv_lwu(T0, regmap[2], 0));
    emit_imm(j, T1, (int64_t)m->max_entries);
    emit32(j, rv_sltu(T2, T0, T1));
    emit_scale(j, T0, m->value_stride, T1);
    emit_imm(j, r0, (int64_t)(uintptr_t)m->storage);
    emit_add(j, r0, r0, T0);
    if (m->n_cpus > 1) { /* values are cpu-major: copy `cpu` starts n_slots * stride further (maps.c value_of) */
        emit32(j, CSR_MHARTID << 20 | 2u << 12 | (uint32_t)T1 << 7 | 0x73u); /* csrr t1, mhartid */
        emit_scale(j, T1, (uint64_t)m->n_slots * m->value_stride, T3);
        emit_add(j, r0, r0, T1);
    }
    emit_sub(j, T2, ZERO, T2);
    emit_and(j, r0, r0, T2);
    j->stats.inline_lookups++;
}

/* What the registers hold after instruction `in`, as far as the inline lookups need to know: the map
 * an ld_imm64 loads into R1, and which registers are R10 plus a constant (clang often keeps the key's
 * address in a callee-saved register and copies it to R2 for each call). Forgotten when written
 * otherwise, by a call (R0-R5), or at a jump target (another way in; jit_pass). */
static void track_regs(struct jit *j, const struct ebpf_insn *in) {
    int cls = EBPF_CLASS(in->code), writes = -1;
    if (in->code == (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW)) {
        writes = in->dst;
    } else if (cls == EBPF_CLS_ALU64 && !in->off && in->code == (EBPF_CLS_ALU64 | EBPF_ALU_MOV | EBPF_SRC_X)) {
        uint32_t from_fp = in->src == EBPF_REG_FP || (j->fp_regs >> in->src & 1);
        int64_t off = in->src == EBPF_REG_FP ? 0 : j->fp_off[in->src];
        if (in->dst == 1) j->r1_map = NULL;
        j->fp_regs = (j->fp_regs & ~(1u << in->dst)) | from_fp << in->dst;
        j->fp_off[in->dst] = off;
        return;
    } else if (cls == EBPF_CLS_ALU64 && !in->off && in->code == (EBPF_CLS_ALU64 | EBPF_ALU_ADD | EBPF_SRC_K) &&
               (j->fp_regs >> in->dst & 1)) {
        j->fp_off[in->dst] += in->imm;
        return;
    } else if (cls == EBPF_CLS_ALU || cls == EBPF_CLS_ALU64 || cls == EBPF_CLS_LDX) {
        writes = in->dst;
    } else if (cls == EBPF_CLS_JMP || cls == EBPF_CLS_JMP32) {
        if (EBPF_OP(in->code) == EBPF_JMP_CALL) j->r1_map = NULL, j->fp_regs &= ~0x3fu; /* R0-R5 */
        return;
    } else if (cls == EBPF_CLS_STX && EBPF_MODE(in->code) == EBPF_MODE_ATOMIC) {
        j->fp_regs &= ~(1u << in->src | 1u); /* a fetch writes src, a compare-exchange R0 */
        if (in->src == 1) j->r1_map = NULL;
        return;
    }
    if (writes < 0 || writes >= EBPF_NREGS) return;
    j->fp_regs &= ~(1u << writes);
    if (writes == 1) j->r1_map = in->code == (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW) ? map_of_imm64(j, in) : NULL;
}

/* Helper calls: R1-R5 already sit in a0-a4, R6-R10 in callee-saved registers; the helper's result
 * becomes R0. bpf-to-bpf calls: the callee is one of our functions and leaves R0 in a5 itself. */
static int emit_call(struct jit *j, const struct ebpf_insn *in, int i) {
    if (in->src == EBPF_PSEUDO_CALL) {
        const struct jit_func *f = func_at(j, (uint32_t)(i + 1 + in->imm));
        int64_t d = (int64_t)f->entry - j->pos;
        if (j->final && !rv_fits_signed(d, 21)) return too_far(j, i);
        emit32(j, rv_jal(RA, (int32_t)d));
        return 0;
    }
    if (in->src != 0) return ebpf_fail(j->err, i, "unsupported call (src %d)", in->src);
    const struct ebpf_helper *h = ebpf_helper_find((uint32_t)in->imm);
    if (!h) return ebpf_fail(j->err, i, "call to unknown helper %d", in->imm);
    if (in->imm == NANOBPF_HELPER_MAP_LOOKUP_ELEM && inline_lookup_ok(j)) {
        emit_array_lookup(j, j->r1_map);
        return 0;
    }
    int tail = in->imm == NANOBPF_HELPER_TAIL_CALL;
    if (tail) emit_mv(j, RV_REG_S6, RV_REG_A0); /* the context (R1, checked by the verifier) */
    emit_helper_call(j, h);
    if (tail) { /* a0: the entry of the program to go to, or 0 (go on): there with the context, this frame gone */
        uint32_t pos = j->pos, size;
        uint8_t *buf = j->buf;
        struct ebpf_jit_stats stats = j->stats;
        j->buf = NULL; /* the jump's size, to branch over it */
        emit_mv(j, T1, RV_REG_A0);
        emit_mv(j, RV_REG_A0, RV_REG_S6);
        emit_teardown(j, j->cur);
        emit32(j, rv_jalr(ZERO, T1, 0));
        size = j->pos - pos;
        j->pos = pos, j->buf = buf, j->stats = stats;
        emit32(j, rv_beq(RV_REG_A0, ZERO, (int32_t)(4 + size)));
        emit_mv(j, T1, RV_REG_A0);
        emit_mv(j, RV_REG_A0, RV_REG_S6);
        emit_teardown(j, j->cur);
        emit32(j, rv_jalr(ZERO, T1, 0));
    }
    return 0;
}

static int emit_jmp(struct jit *j, const struct ebpf_insn *in, int i) {
    int is32 = EBPF_CLASS(in->code) == EBPF_CLS_JMP32, op = EBPF_OP(in->code);
    int x = (in->code & EBPF_SRC_X) != 0;
    uint8_t a = regmap[in->dst], b = regmap[in->src];

    /* callx (0x8d) and ja/exit with the X bit: refused like the verifier and the interpreter do */
    if (x && (op == EBPF_JMP_JA || op == EBPF_JMP_CALL || op == EBPF_JMP_EXIT))
        return ebpf_fail(j->err, i, "unknown opcode 0x%02x", in->code);
    if (op == EBPF_JMP_JA) {
        int64_t off = is32 ? in->imm : in->off;
        return off ? emit_jump(j, i, j->offs[i + 1 + off]) : 0;
    }
    if (op == EBPF_JMP_EXIT && !is32) {
        if ((uint32_t)i + 1 == j->cur->end) return 0; /* the epilogue follows */
        return emit_jump(j, i, j->cur->exit);
    }
    if (op == EBPF_JMP_CALL && !is32) return emit_call(j, in, i);

    int cond;
    switch (op) {
    case EBPF_JMP_JEQ: cond = BEQ; break;
    case EBPF_JMP_JNE: case EBPF_JMP_JSET: cond = BNE; break;
    case EBPF_JMP_JGT: case EBPF_JMP_JLT: cond = BLTU; break;
    case EBPF_JMP_JGE: case EBPF_JMP_JLE: cond = BGEU; break;
    case EBPF_JMP_JSGT: case EBPF_JMP_JSLT: cond = BLT; break;
    case EBPF_JMP_JSGE: case EBPF_JMP_JSLE: cond = BGE; break;
    default: return ebpf_fail(j->err, i, "unknown jump opcode 0x%02x", in->code);
    }
    if (!in->off) return 0; /* to the next instruction either way */

    if (op == EBPF_JMP_JSET) {
        if (!x && rv_fits_imm12(in->imm)) emit_andi(j, T1, a, in->imm);
        else {
            if (!x) emit_imm(j, T2, in->imm);
            emit_and(j, T1, a, x ? b : T2);
        }
        if (is32) emit_slli(j, T1, T1, 32); /* only the low half counts */
        a = T1;
        b = ZERO;
    } else {
        if (!x) {
            /* the immediate is the same sign-extended constant for JMP and JMP32 */
            if (in->imm) emit_imm(j, T2, in->imm);
            b = in->imm ? T2 : ZERO;
        }
        if (is32) {
            /* Sign-extending both low halves keeps both signed and unsigned 32-bit order. */
            emit_sext(j, T1, a, 32);
            a = T1;
            if (x) {
                emit_sext(j, T2, b, 32);
                b = T2;
            }
        }
        if (op == EBPF_JMP_JGT || op == EBPF_JMP_JLE || op == EBPF_JMP_JSGT || op == EBPF_JMP_JSLE) {
            uint8_t t = a;
            a = b;
            b = t;
        }
    }
    return emit_bcond(j, i, cond, a, b, j->offs[i + 1 + in->off]);
}

/* ---- Atomics ---- */
static int emit_atomic(struct jit *j, const struct ebpf_insn *in, int i) {
    int dw = EBPF_SIZE(in->code) == EBPF_SIZE_DW;
    if (!dw && EBPF_SIZE(in->code) != EBPF_SIZE_W) return ebpf_fail(j->err, i, "atomic operation on 1 or 2 bytes");
    uint8_t addr = regmap[in->dst], rs = regmap[in->src];
    if (in->off) {
        emit_addi_any(j, T1, addr, in->off, T1);
        addr = T1;
    }
    uint32_t insn;
    switch (in->imm) {
    case EBPF_ATOMIC_CMPXCHG: {
        /* if (*addr == R0) *addr = src; R0 = old, in an lr/sc loop (lr.w sign-extends, so the 32-bit
         * compare uses R0 sign-extended too) */
        uint8_t expect = regmap[0];
        if (!dw) {
            emit_sext(j, T2, regmap[0], 32);
            expect = T2;
        }
        emit32(j, dw ? rv_lr_d(T0, addr, 1, 1) : rv_lr_w(T0, addr, 1, 1));
        emit32(j, rv_bne(T0, expect, 12));
        emit32(j, dw ? rv_sc_d(T3, rs, addr, 0, 1) : rv_sc_w(T3, rs, addr, 0, 1));
        emit32(j, rv_bne(T3, ZERO, -12));
        if (dw) emit_mv(j, regmap[0], T0);
        else emit_zext32(j, regmap[0], T0);
        return 0;
    }
    case EBPF_ATOMIC_XCHG:
        insn = dw ? rv_amoswap_d(rs, rs, addr, 1, 1) : rv_amoswap_w(rs, rs, addr, 1, 1);
        break;
    default: {
        int fetch = in->imm & EBPF_ATOMIC_FETCH;
        uint8_t rd = fetch ? rs : ZERO;
        switch (in->imm & ~EBPF_ATOMIC_FETCH) {
        case EBPF_ATOMIC_ADD: insn = dw ? rv_amoadd_d(rd, rs, addr, 1, 1) : rv_amoadd_w(rd, rs, addr, 1, 1); break;
        case EBPF_ATOMIC_OR: insn = dw ? rv_amoor_d(rd, rs, addr, 1, 1) : rv_amoor_w(rd, rs, addr, 1, 1); break;
        case EBPF_ATOMIC_AND: insn = dw ? rv_amoand_d(rd, rs, addr, 1, 1) : rv_amoand_w(rd, rs, addr, 1, 1); break;
        case EBPF_ATOMIC_XOR: insn = dw ? rv_amoxor_d(rd, rs, addr, 1, 1) : rv_amoxor_w(rd, rs, addr, 1, 1); break;
        default: return ebpf_fail(j->err, i, "unknown atomic operation 0x%x", in->imm);
        }
        emit32(j, insn);
        if (fetch && !dw) emit_zext32(j, rs, rs);
        return 0;
    }
    }
    emit32(j, insn);
    if (!dw) emit_zext32(j, rs, rs);
    return 0;
}

/* ---- One eBPF instruction ---- */
static int emit_insn(struct jit *j, int i) {
    const struct ebpf_insn *in = &j->prog->insns[i];
    uint8_t rd = regmap[in->dst], rs = regmap[in->src];
    int size = EBPF_SIZE(in->code) >> 3, mode = EBPF_MODE(in->code);

    switch (EBPF_CLASS(in->code)) {
    case EBPF_CLS_ALU:
    case EBPF_CLS_ALU64:
        return emit_alu(j, in, i);
    case EBPF_CLS_JMP:
    case EBPF_CLS_JMP32:
        return emit_jmp(j, in, i);
    case EBPF_CLS_LD:
        if (mode == EBPF_MODE_ABS || mode == EBPF_MODE_IND)
            return ebpf_fail(j->err, i, "legacy packet access (ABS/IND) is not supported");
        if (in->code != (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW))
            return ebpf_fail(j->err, i, "unknown load opcode 0x%02x", in->code);
        if (in->src == EBPF_PSEUDO_FUNC) { /* a callback's entry, PC-relative: 8 bytes in every pass */
            const struct jit_func *f = func_at(j, (uint32_t)(i + 1 + in->imm));
            if (!f) return ebpf_fail(j->err, i, "ld_imm64 of insn %d, which is not a function", i + 1 + in->imm);
            int64_t d = (int64_t)f->entry - j->pos;
            int32_t hi = (int32_t)((d + 0x800) >> 12), lo = (int32_t)(d - ((int64_t)hi << 12));
            emit32(j, rv_auipc(rd, hi));
            emit32(j, rv_addi(rd, rd, lo));
            return 0;
        }
        if (in->src != EBPF_PSEUDO_IMM64)
            return ebpf_fail(j->err, i, "unresolved ld_imm64 (src %d): resolve map references first", in->src);
        emit_imm(j, rd, (int64_t)((uint64_t)(uint32_t)in[1].imm << 32 | (uint32_t)in->imm));
        return 0;
    case EBPF_CLS_LDX:
        if (mode != EBPF_MODE_MEM && !(mode == EBPF_MODE_MEMSX && size != SZ_DW))
            return ebpf_fail(j->err, i, "unknown load opcode 0x%02x", in->code);
        if (size != SZ_B && pkt_access(j, i)) emit_unaligned_access(j, size, mode == EBPF_MODE_MEMSX, 0, rd, rs, in->off);
        else emit_load(j, size, mode == EBPF_MODE_MEMSX, rd, rs, in->off);
        return 0;
    case EBPF_CLS_ST:
        if (mode != EBPF_MODE_MEM) return ebpf_fail(j->err, i, "unknown store opcode 0x%02x", in->code);
        if (in->imm) emit_imm(j, T2, in->imm);
        if (size != SZ_B && pkt_access(j, i)) emit_unaligned_access(j, size, 0, 1, in->imm ? T2 : ZERO, rd, in->off);
        else emit_store(j, size, rd, in->off, in->imm ? T2 : ZERO);
        return 0;
    default: /* STX */
        if (mode == EBPF_MODE_ATOMIC) return emit_atomic(j, in, i);
        if (mode != EBPF_MODE_MEM) return ebpf_fail(j->err, i, "unknown store opcode 0x%02x", in->code);
        if (size != SZ_B && pkt_access(j, i)) emit_unaligned_access(j, size, 0, 1, rs, rd, in->off);
        else emit_store(j, size, rd, in->off, rs);
        return 0;
    }
}

/* Two-address pairs clang emits all the time, `d = s; d op= x` (ALU64: add, sub, and, or, xor,
 * shifts; x a register other than d or a 12-bit immediate), become one three-operand RV64
 * instruction. The second must not be a jump target (a jump there would skip the move). Returns 1
 * when it emitted the pair. */
static int emit_fused(struct jit *j, uint32_t i) {
    const struct ebpf_insn *a = &j->prog->insns[i], *b = a + 1;
    if (i + 1 >= j->cur->end || j->target[i + 1]) return 0;
    if (a->code != (EBPF_CLS_ALU64 | EBPF_ALU_MOV | EBPF_SRC_X) || a->off || a->dst == a->src) return 0;
    if (EBPF_CLASS(b->code) != EBPF_CLS_ALU64 || b->dst != a->dst || b->off) return 0;
    uint8_t rd = regmap[a->dst], rs = regmap[a->src];
    int op = EBPF_OP(b->code);
    if (b->code & EBPF_SRC_X) {
        if (b->src == b->dst) return 0;
        uint8_t rx = regmap[b->src];
        switch (op) {
        case EBPF_ALU_ADD: emit_add(j, rd, rs, rx); return 1;
        case EBPF_ALU_SUB: emit_sub(j, rd, rs, rx); return 1;
        case EBPF_ALU_AND: emit_and(j, rd, rs, rx); return 1;
        case EBPF_ALU_OR: emit_or(j, rd, rs, rx); return 1;
        case EBPF_ALU_XOR: emit_xor(j, rd, rs, rx); return 1;
        case EBPF_ALU_LSH: emit32(j, rv_sll(rd, rs, rx)); return 1;
        case EBPF_ALU_RSH: emit32(j, rv_srl(rd, rs, rx)); return 1;
        case EBPF_ALU_ARSH: emit32(j, rv_sra(rd, rs, rx)); return 1;
        }
        return 0;
    }
    int32_t imm = b->imm;
    int fits = rv_fits_imm12(imm);
    switch (op) {
    case EBPF_ALU_ADD: if (!fits) return 0; emit_addi(j, rd, rs, imm); return 1;
    case EBPF_ALU_SUB: if (!rv_fits_imm12(-(int64_t)imm)) return 0; emit_addi(j, rd, rs, -imm); return 1;
    case EBPF_ALU_AND: if (!fits) return 0; emit_andi(j, rd, rs, imm); return 1;
    case EBPF_ALU_OR: if (!fits) return 0; emit32(j, rv_ori(rd, rs, imm)); return 1;
    case EBPF_ALU_XOR: if (!fits) return 0; emit32(j, rv_xori(rd, rs, imm)); return 1;
    case EBPF_ALU_LSH: emit_slli(j, rd, rs, (unsigned)imm & 63); return 1;
    case EBPF_ALU_RSH: emit_srli(j, rd, rs, (unsigned)imm & 63); return 1;
    case EBPF_ALU_ARSH: emit_srai(j, rd, rs, (unsigned)imm & 63); return 1;
    }
    return 0;
}

#define SIZE_BRANCH (-1)
/* One pass over the program. A growing pass (j->grow: only the sizes matter) emits the branches again and
 * steps over the rest by their first-pass sizes: nothing else depends on where the code lands. */
static int jit_pass(struct jit *j) {
    const struct ebpf_insn *insns = j->prog->insns;
    int step = j->grow && !j->final;
    j->pos = 0;
    j->changed = 0;
    memset(&j->stats, 0, sizeof j->stats);
    for (uint32_t k = 0; k < j->n_funcs; k++) {
        struct jit_func *f = &j->funcs[k];
        j->cur = f;
        j->cls = -1;
        f->entry = j->pos;
        emit_prologue(j, f);
        j->r1_map = NULL, j->fp_regs = 0;
        for (uint32_t i = f->start; i < f->end; i++) {
            j->offs[i] = j->pos;
            if (step && j->size[i] != SIZE_BRANCH) {
                j->pos += (uint32_t)j->size[i];
                continue;
            }
            uint32_t at = i;
            j->branch = 0;
            j->cls = EBPF_CLASS(insns[i].code);
            j->stats.bpf_insns[j->cls]++;
            if (j->target[i]) j->r1_map = NULL, j->fp_regs = 0; /* another way in */
            if (emit_fused(j, i)) {
                j->stats.bpf_insns[j->cls]++; /* both are ALU64 */
                track_regs(j, &insns[i]);
                track_regs(j, &insns[i + 1]);
                j->offs[++i] = j->pos;        /* not a jump target */
                j->size[i] = 0;
            } else {
                if (emit_insn(j, (int)i)) return -1;
                track_regs(j, &insns[i]);
                if (insns[i].code == (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW)) {
                    j->offs[++i] = j->pos;
                    j->size[i] = 0;
                }
            }
            if (!step) j->size[at] = j->branch ? SIZE_BRANCH : (int16_t)(j->pos - j->offs[at]);
        }
        j->cls = -1;
        f->exit = j->pos;
        emit_epilogue(j, f);
    }
    j->stats.rv_bytes = j->pos;
    return 0;
}

/* ---- Load scheduling ----
 * clang's BPF backend puts each load right before its first use; on CVA6 a load's result is ready
 * three cycles later, so every such pair stalls. Within a basic block, move each load up to three
 * instructions earlier, past instructions it does not depend on: not past jumps, calls, exits, stores,
 * atomics or ld_imm64, and not above a jump target (a load may move onto a target: whoever jumps
 * there still runs the same instructions). The JIT then compiles this reordered copy; the verifier's
 * per-instruction facts travel with their instructions. */
static uint32_t reads_of(const struct ebpf_insn *in) {
    int cls = EBPF_CLASS(in->code);
    uint32_t r = 1u << in->dst; /* ALU reads dst (MOV does not, conservatively counted) */
    if (cls == EBPF_CLS_LDX || ((cls == EBPF_CLS_ALU || cls == EBPF_CLS_ALU64) && (in->code & EBPF_SRC_X)))
        r |= 1u << in->src;
    return r;
}
static int movable_past(const struct ebpf_insn *load, const struct ebpf_insn *q) {
    int cls = EBPF_CLASS(q->code);
    if (cls != EBPF_CLS_ALU && cls != EBPF_CLS_ALU64 && cls != EBPF_CLS_LDX) return 0;
    uint32_t q_writes = 1u << q->dst;
    uint32_t load_reads = 1u << load->src, load_writes = 1u << load->dst;
    return !(q_writes & (load_reads | load_writes)) && !(reads_of(q) & load_writes);
}
static int jit_schedule(struct jit *j, struct ebpf_error *err) {
    const struct ebpf_prog *prog = j->prog;
    uint32_t n = prog->n_insns;
    j->sprog = *prog;
    j->sprog.insns = ebpf_alloc(n * sizeof *prog->insns);
    j->sprog.insn_flags = ebpf_alloc(n);
    if (!j->sprog.insns || !j->sprog.insn_flags) return ebpf_fail(err, -1, "out of memory");
    memcpy(j->sprog.insns, prog->insns, n * sizeof *prog->insns);
    if (prog->insn_flags) memcpy(j->sprog.insn_flags, prog->insn_flags, n);
    j->prog = &j->sprog;
    struct ebpf_insn *in = j->sprog.insns;
    uint8_t *fl = j->sprog.insn_flags;
    for (uint32_t k = 0; k < j->n_funcs; k++) {
        const struct jit_func *f = &j->funcs[k];
        for (uint32_t p = f->start + 1; p < f->end; p++) {
            int mode = EBPF_MODE(in[p].code);
            if (EBPF_CLASS(in[p].code) != EBPF_CLS_LDX || (mode != EBPF_MODE_MEM && mode != EBPF_MODE_MEMSX)) continue;
            if (in[p - 1].code == (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW)) continue; /* p is its 2nd slot */
            for (uint32_t at = p, moved = 0; moved < 3 && at > f->start && !j->target[at]; moved++, at--) {
                if (at >= 2 && in[at - 2].code == (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW)) break;
                if (!movable_past(&in[at], &in[at - 1])) break;
                struct ebpf_insn t = in[at];
                uint8_t tf = fl[at];
                in[at] = in[at - 1];
                fl[at] = fl[at - 1];
                in[at - 1] = t;
                fl[at - 1] = tf;
            }
        }
    }
    return 0;
}

/* ---- Set-up: functions, frames, checks that keep the passes in bounds ---- */
static int jit_init(struct jit *j, const struct ebpf_prog *prog, unsigned flags, struct ebpf_error *err) {
    uint32_t n = prog->n_insns;
    memset(j, 0, sizeof *j);
    j->prog = prog;
    j->flags = flags;
    j->err = err;
    if (!n || !prog->insns) return ebpf_fail(err, -1, "empty program");
    uint8_t *start = ebpf_alloc(n);
    j->offs = ebpf_alloc(((size_t)n + 1) * sizeof *j->offs);
    j->form = ebpf_alloc(n);
    j->size = ebpf_alloc(n * sizeof *j->size);
    j->target = ebpf_alloc(n);
    j->imms = ebpf_alloc(sizeof *j->imms); /* optional: emit_imm works without it */
    if (!start || !j->offs || !j->form || !j->size || !j->target) {
        ebpf_free(start);
        return ebpf_fail(err, -1, "out of memory");
    }

    /* Function starts: the verifier's list, else instruction 0 and every bpf-to-bpf call target. */
    start[0] = 1;
    if (prog->n_subprogs) {
        for (uint32_t k = 0; k < prog->n_subprogs && k < EBPF_MAX_SUBPROGS; k++) {
            uint32_t s = prog->subprogs[k].start;
            if (s >= n || (k == 0) != (s == 0)) {
                ebpf_free(start);
                return ebpf_fail(err, -1, "bad subprogram start %u", s);
            }
            start[s] = 1;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct ebpf_insn *in = &prog->insns[i];
        int cls = EBPF_CLASS(in->code);
        int fail = 0;
        if (in->dst >= EBPF_NREGS || in->src >= EBPF_NREGS) {
            ebpf_free(start);
            return ebpf_fail(err, (int)i, "bad register");
        }
        if (in->code == (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW)) {
            if (i + 1 >= n) fail = ebpf_fail(err, (int)i, "ld_imm64 without its second slot");
            else if (in->src == EBPF_PSEUDO_FUNC) { /* a callback: a function of its own */
                int64_t t = (int64_t)i + 1 + in->imm;
                if (t <= 0 || t >= n) fail = ebpf_fail(err, (int)i, "callback %lld out of the program", (long long)t);
                else if (prog->n_subprogs && !start[t])
                    fail = ebpf_fail(err, (int)i, "callback %lld is not a subprogram", (long long)t);
                else start[t] = 1;
            }
            i++;
        } else if (cls == EBPF_CLS_JMP && EBPF_OP(in->code) == EBPF_JMP_CALL && in->src == EBPF_PSEUDO_CALL) {
            int64_t t = (int64_t)i + 1 + in->imm;
            if (t < 0 || t >= n) fail = ebpf_fail(err, (int)i, "call target %lld out of the program", (long long)t);
            else if (prog->n_subprogs && !start[t])
                fail = ebpf_fail(err, (int)i, "call target %lld is not a subprogram", (long long)t);
            else start[t] = 1;
        }
        if (fail) {
            ebpf_free(start);
            return -1;
        }
    }
    for (uint32_t i = 0; i < n; i++) j->n_funcs += start[i];
    j->funcs = ebpf_alloc(j->n_funcs * sizeof *j->funcs);
    if (!j->funcs) {
        ebpf_free(start);
        return ebpf_fail(err, -1, "out of memory");
    }
    for (uint32_t i = 0, k = 0; i < n; i++)
        if (start[i]) {
            if (k) j->funcs[k - 1].end = i;
            j->funcs[k++].start = i;
        }
    j->funcs[j->n_funcs - 1].end = n;
    ebpf_free(start);
    for (uint32_t i = 0; i + 1 < n; i++) {
        const struct ebpf_insn *in = &prog->insns[i];
        if (in->code != (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW)) continue;
        if (in->src == EBPF_PSEUDO_FUNC) {
            struct jit_func *f = (struct jit_func *)func_at(j, (uint32_t)(i + 1 + in->imm));
            if (f) f->callback = 1;
        }
        i++;
    }

    /* Frames, and jumps that stay inside their function (offs[] is indexed by their targets). */
    for (uint32_t k = 0; k < j->n_funcs; k++) {
        struct jit_func *f = &j->funcs[k];
        uint32_t used = 0, depth = EBPF_STACK_SIZE;
        f->main = k == 0;
        for (uint32_t p = 1; p < prog->n_progs && p <= NANOBPF_IMAGE_MAX_FUNCS; p++) f->main |= prog->prog_start[p] == f->start;
        for (uint32_t i = f->start; i < f->end; i++) {
            const struct ebpf_insn *in = &prog->insns[i];
            int cls = EBPF_CLASS(in->code), op = EBPF_OP(in->code);
            used |= 1u << in->dst | 1u << in->src;
            if (in->code == (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW)) {
                if (++i >= f->end) return ebpf_fail(err, (int)i - 1, "ld_imm64 split by a function start");
                continue;
            }
            if (cls != EBPF_CLS_JMP && cls != EBPF_CLS_JMP32) continue;
            if (op == EBPF_JMP_CALL) {
                f->save |= 1; /* ra */
                if (in->src == 0 && in->imm == NANOBPF_HELPER_TAIL_CALL) f->save |= SAVE_S6;
                continue;
            }
            if (op == EBPF_JMP_EXIT) continue;
            int64_t t = (int64_t)i + 1 + (cls == EBPF_CLS_JMP32 && op == EBPF_JMP_JA ? in->imm : in->off);
            if (t < f->start || t >= f->end)
                return ebpf_fail(err, (int)i, "jump target %lld outside its function", (long long)t);
            j->target[t] = 1;
        }
        for (int r = 6; r <= 10; r++)
            if (used & (1u << r)) f->save |= 1u << (r - 5);
        for (uint32_t s = 0; s < prog->n_subprogs && s < EBPF_MAX_SUBPROGS; s++)
            if (prog->subprogs[s].start == f->start && prog->subprogs[s].stack_depth)
                depth = prog->subprogs[s].stack_depth;
        if (depth > EBPF_STACK_SIZE) return ebpf_fail(err, (int)f->start, "stack depth %u over %d", depth, EBPF_STACK_SIZE);
        f->stack = used & (1u << EBPF_REG_FP) ? (depth + 15) & ~15u : 0;
        uint32_t saves = (uint32_t)__builtin_popcount(f->save);
        f->frame = f->stack + ((saves * 8 + 15) & ~15u);
    }
    return jit_schedule(j, err);
}

static void jit_fini(struct jit *j) {
    ebpf_free(j->sprog.insns);
    ebpf_free(j->sprog.insn_flags);
    ebpf_free(j->offs);
    ebpf_free(j->form);
    ebpf_free(j->size);
    ebpf_free(j->target);
    ebpf_free(j->funcs);
    ebpf_free(j->imms);
}

/* Sizing passes until no branch form changes; returns the code size, or -1. */
static int64_t jit_size(struct jit *j) {
    for (uint32_t pass = 0;; pass++) {
        j->grow = pass > 0; /* the first pass has no offsets for targets ahead */
        if (jit_pass(j)) return -1;
        if (pass > 0 && !j->changed) return j->pos;
        if (pass > 2 * j->prog->n_insns + 2) return ebpf_fail(j->err, -1, "JIT passes did not converge");
    }
}

/* The final pass into buf (size bytes). */
static int jit_write(struct jit *j, uint8_t *buf, uint32_t size) {
    j->buf = buf;
    j->cap = size;
    j->grow = 0;
    j->final = 1;
    if (jit_pass(j)) return -1;
    if (j->pos != size) return ebpf_fail(j->err, -1, "JIT code size changed in the final pass (%u != %u)", j->pos, size);
    return 0;
}

int ebpf_jit_compile(struct ebpf_prog *prog, unsigned flags, struct ebpf_error *err) {
    struct jit j;
    if (jit_init(&j, prog, flags, err)) {
        jit_fini(&j);
        return -1;
    }
    int64_t size = jit_size(&j), used = -1;
    uint8_t *code = NULL;
    int rc = -1;
    if (size >= 0) {
        /* sized with absolute constants; where the code lands, those within reach become pc-relative
         * (shorter: the code only shrinks, so every branch form already reaches) and it is sized again */
        code = ebpf_jit_alloc((size_t)size);
        if (!code) ebpf_fail(err, -1, "no executable memory for %lld bytes of JIT code (this platform cannot run RV64 code)", (long long)size);
        else {
            j.base = (uint64_t)(uintptr_t)code;
            used = jit_size(&j);
            if (used > size) used = ebpf_fail(err, -1, "JIT code grew when placed (%lld > %lld bytes)", (long long)used, (long long)size);
            if (used < 0 || jit_write(&j, code, (uint32_t)used)) ebpf_jit_free(code, (size_t)size);
            else rc = 0;
        }
    }
    if (!rc) /* the programs bpf_tail_call may jump to (functions of their own when verified) */
        for (uint32_t p = 0; p < prog->n_progs && p <= NANOBPF_IMAGE_MAX_FUNCS; p++) {
            const struct jit_func *f = func_at(&j, prog->prog_start[p]);
            prog->jit_prog_off[p] = f ? f->entry : 0;
        }
    jit_fini(&j);
    if (rc) return -1;
    ebpf_jit_flush(code, (size_t)size);
    if (prog->jit_code) ebpf_jit_free(prog->jit_code, prog->jit_size);
    prog->jit_code = code;
    prog->jit_size = (uint32_t)size;
    return 0;
}

int ebpf_jit_stats(const struct ebpf_prog *prog, unsigned flags, struct ebpf_jit_stats *stats,
                   struct ebpf_error *err) {
    struct jit j;
    int rc = -1;
    if (!jit_init(&j, prog, flags, err)) {
        int64_t size = jit_size(&j);
        uint8_t *scratch = size >= 0 ? ebpf_alloc((size_t)size) : NULL;
        if (size >= 0 && !scratch) ebpf_fail(err, -1, "out of memory");
        else if (scratch && !jit_write(&j, scratch, (uint32_t)size)) {
            *stats = j.stats;
            rc = 0;
        }
        ebpf_free(scratch);
    }
    jit_fini(&j);
    return rc;
}
