/* JIT self-test: RV64 binary for qemu-riscv64 (platform/rv64linux*). Hand-written programs with r0
 * values worked out from RFC 9669, far branches, bpf-to-bpf and helper calls, refused instructions;
 * then a differential sweep (ALU, JMP, constants) against the interpreter. Every program also runs in
 * the interpreter, which must agree. One line per case; exit status 1 on any mismatch.
 *   jit-selftest [--rvc] [--zba] [--zbb] [-v] [--dump NAME]   (--dump prints NAME's code as .byte lines) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ebpf.h"

/* ---- Instruction builders ---- */
#define I(c, d, s, o, i) {.code = (uint8_t)(c), .dst = (d), .src = (s), .off = (int16_t)(o), .imm = (int32_t)(i)}
#define ALU64_K(op, d, i) I(EBPF_CLS_ALU64 | EBPF_SRC_K | (op), d, 0, 0, i)
#define ALU64_X(op, d, s) I(EBPF_CLS_ALU64 | EBPF_SRC_X | (op), d, s, 0, 0)
#define ALU32_K(op, d, i) I(EBPF_CLS_ALU | EBPF_SRC_K | (op), d, 0, 0, i)
#define ALU32_X(op, d, s) I(EBPF_CLS_ALU | EBPF_SRC_X | (op), d, s, 0, 0)
#define SALU64_K(op, d, i) I(EBPF_CLS_ALU64 | EBPF_SRC_K | (op), d, 0, 1, i) /* SDIV/SMOD */
#define SALU64_X(op, d, s) I(EBPF_CLS_ALU64 | EBPF_SRC_X | (op), d, s, 1, 0)
#define SALU32_K(op, d, i) I(EBPF_CLS_ALU | EBPF_SRC_K | (op), d, 0, 1, i)
#define SALU32_X(op, d, s) I(EBPF_CLS_ALU | EBPF_SRC_X | (op), d, s, 1, 0)
#define MOV64_K(d, i) ALU64_K(EBPF_ALU_MOV, d, i)
#define MOV64_X(d, s) ALU64_X(EBPF_ALU_MOV, d, s)
#define MOV32_K(d, i) ALU32_K(EBPF_ALU_MOV, d, i)
#define MOV32_X(d, s) ALU32_X(EBPF_ALU_MOV, d, s)
#define MOVSX64(d, s, bits) I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, d, s, bits, 0)
#define MOVSX32(d, s, bits) I(EBPF_CLS_ALU | EBPF_SRC_X | EBPF_ALU_MOV, d, s, bits, 0)
#define LE(d, bits) I(EBPF_CLS_ALU | EBPF_ALU_END, d, 0, 0, bits)
#define BE(d, bits) I(EBPF_CLS_ALU | EBPF_ALU_END | EBPF_SRC_X, d, 0, 0, bits)
#define BSWAP(d, bits) I(EBPF_CLS_ALU64 | EBPF_ALU_END, d, 0, 0, bits)
#define LDDW(d, v) I(EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW, d, 0, 0, (uint32_t)(v)), \
                   I(0, 0, 0, 0, (uint32_t)((uint64_t)(v) >> 32))
#define LDX(sz, d, s, o) I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_##sz, d, s, o, 0)
#define LDXSX(sz, d, s, o) I(EBPF_CLS_LDX | EBPF_MODE_MEMSX | EBPF_SIZE_##sz, d, s, o, 0)
#define ST(sz, d, o, i) I(EBPF_CLS_ST | EBPF_MODE_MEM | EBPF_SIZE_##sz, d, 0, o, i)
#define STX(sz, d, s, o) I(EBPF_CLS_STX | EBPF_MODE_MEM | EBPF_SIZE_##sz, d, s, o, 0)
#define ATOMIC(sz, d, s, o, op) I(EBPF_CLS_STX | EBPF_MODE_ATOMIC | EBPF_SIZE_##sz, d, s, o, op)
#define JMP_K(op, d, i, o) I(EBPF_CLS_JMP | EBPF_SRC_K | EBPF_JMP_##op, d, 0, o, i)
#define JMP_X(op, d, s, o) I(EBPF_CLS_JMP | EBPF_SRC_X | EBPF_JMP_##op, d, s, o, 0)
#define JMP32_K(op, d, i, o) I(EBPF_CLS_JMP32 | EBPF_SRC_K | EBPF_JMP_##op, d, 0, o, i)
#define JMP32_X(op, d, s, o) I(EBPF_CLS_JMP32 | EBPF_SRC_X | EBPF_JMP_##op, d, s, o, 0)
#define JA(o) I(EBPF_CLS_JMP | EBPF_JMP_JA, 0, 0, o, 0)
#define JA32(i) I(EBPF_CLS_JMP32 | EBPF_JMP_JA, 0, 0, 0, i)
#define CALL(id) I(EBPF_CLS_JMP | EBPF_JMP_CALL, 0, 0, 0, id)
#define CALLSUB(o) I(EBPF_CLS_JMP | EBPF_JMP_CALL, 0, EBPF_PSEUDO_CALL, 0, o)
#define EXIT I(EBPF_CLS_JMP | EBPF_JMP_EXIT, 0, 0, 0, 0)

enum { ADD = EBPF_ALU_ADD, SUB = EBPF_ALU_SUB, MUL = EBPF_ALU_MUL, DIV = EBPF_ALU_DIV, OR = EBPF_ALU_OR,
       AND = EBPF_ALU_AND, LSH = EBPF_ALU_LSH, RSH = EBPF_ALU_RSH, NEG = EBPF_ALU_NEG, MOD = EBPF_ALU_MOD,
       XOR = EBPF_ALU_XOR, ARSH = EBPF_ALU_ARSH, FETCH = EBPF_ATOMIC_FETCH, XCHG = EBPF_ATOMIC_XCHG,
       CMPXCHG = EBPF_ATOMIC_CMPXCHG };
#define AOR EBPF_ATOMIC_OR
#define AAND EBPF_ATOMIC_AND
#define AXOR EBPF_ATOMIC_XOR

struct tcase {
    const char *name;
    const struct ebpf_insn *insns;
    uint32_t n;
    uint64_t expect;
    int mem; /* r1 = a zeroed 8 KiB buffer, r2 = its size */
};
#define P(...) (const struct ebpf_insn[]){__VA_ARGS__}, sizeof((const struct ebpf_insn[]){__VA_ARGS__}) / sizeof(struct ebpf_insn)
#define T(name, expect, ...) {name, P(__VA_ARGS__), expect, 0}
#define TM(name, expect, ...) {name, P(__VA_ARGS__), expect, 1}

static const struct tcase cases[] = {
    /* ALU basics and 32-bit zero extension */
    T("add64", 3, MOV64_K(0, 1), ALU64_K(ADD, 0, 2), EXIT),
    T("add64 imm is sign-extended", 0xffffffffffffffff, MOV64_K(0, 0), ALU64_K(ADD, 0, -1), EXIT),
    T("add32 zero-extends", 0xffffffff, MOV64_K(0, -1), ALU32_K(ADD, 0, 0), EXIT),
    T("add32 wraps", 0, MOV64_K(0, -1), ALU32_K(ADD, 0, 1), EXIT),
    T("add64 big imm", 0x80000000, MOV64_K(0, 1), ALU64_K(ADD, 0, 0x7fffffff), EXIT),
    T("sub64 imm 2048", 0xfffffffffffff800, MOV64_K(0, 0), ALU64_K(SUB, 0, 2048), EXIT),
    T("sub64 imm -2048", 2048, MOV64_K(0, 0), ALU64_K(SUB, 0, -2048), EXIT),
    T("mov32 imm -1", 0xffffffff, MOV32_K(0, -1), EXIT),
    T("mov32 reg", 0xcafebabe, LDDW(1, 0xdeadbeefcafebabe), MOV32_X(0, 1), EXIT),
    T("sub32 reg", 0xfffffffe, LDDW(0, 0x100000005), LDDW(1, 0x200000007), ALU32_X(SUB, 0, 1), EXIT),
    T("mul32 truncates", 0x20001, LDDW(0, 0x700010001), MOV64_K(1, 0x10001), ALU32_X(MUL, 0, 1), EXIT),
    T("mul64 imm -1", 0xfffffffffffeffff, MOV64_K(0, 0x10001), ALU64_K(MUL, 0, -1), EXIT),
    T("neg64", 0xfffffffffffffffb, MOV64_K(0, 5), ALU64_K(NEG, 0, 0), EXIT),
    T("neg32", 0xfffffffb, LDDW(0, 0x100000005), ALU32_K(NEG, 0, 0), EXIT),
    T("and64 imm -256", 0x123456789abcde00, LDDW(0, 0x123456789abcdef0), ALU64_K(AND, 0, -256), EXIT),
    T("and32 imm 0x7ff", 0x7ff, MOV64_K(0, -1), ALU32_K(AND, 0, 0x7ff), EXIT),
    T("and32 imm -2", 0xfffffffe, MOV64_K(0, -1), ALU32_K(AND, 0, -2), EXIT),
    /* low-bit masks wider than 12 bits: two shifts (16 bits: a zero-extension) */
    T("and64 imm 0x3fff", 0x2bcd, LDDW(0, 0xfedcba9876546bcd), ALU64_K(AND, 0, 0x3fff), EXIT),
    T("and32 imm 0x3fff", 0x2bcd, LDDW(0, 0xfedcba9876546bcd), ALU32_K(AND, 0, 0x3fff), EXIT),
    T("and64 imm 0xfff", 0xbcd, LDDW(0, 0xfedcba9876546bcd), ALU64_K(AND, 0, 0xfff), EXIT),
    T("and64 imm 0xffff", 0x6bcd, LDDW(0, 0xfedcba9876546bcd), ALU64_K(AND, 0, 0xffff), EXIT),
    T("and64 imm 0x7fffffff", 0x76546bcd, LDDW(0, 0xfedcba9876546bcd), ALU64_K(AND, 0, 0x7fffffff), EXIT),
    T("and32 imm 0x7fffffff", 0x76546bcd, LDDW(0, 0xfedcba98f6546bcd), ALU32_K(AND, 0, 0x7fffffff), EXIT),
    T("and64 imm 0x3ffe is no mask", 0x2bcc, LDDW(0, 0xfedcba9876546bcd), ALU64_K(AND, 0, 0x3ffe), EXIT),
    T("or32 imm", 1, LDDW(0, 0xffffffff00000000), ALU32_K(OR, 0, 1), EXIT),
    T("xor64 big imm", 0xffffffffedcba988, MOV64_K(0, 0), ALU64_K(XOR, 0, -0x12345678), EXIT),
    T("xor32 reg", 0xffffffff, LDDW(0, 0xf0f0f0f0f0f0f0f0), LDDW(1, 0x0f0f0f0f0f0f0f0f), ALU32_X(XOR, 0, 1), EXIT),
    /* division and modulo */
    T("div64 by zero reg", 0, MOV64_K(0, 10), MOV64_K(1, 0), ALU64_X(DIV, 0, 1), EXIT),
    T("div64 by zero imm", 0, MOV64_K(0, 10), ALU64_K(DIV, 0, 0), EXIT),
    T("div32 by zero low half", 0, LDDW(0, 0xffffffff0000000a), LDDW(1, 0x100000000), ALU32_X(DIV, 0, 1), EXIT),
    T("div32 ignores high halves", 10, LDDW(0, 0x500000064), LDDW(1, 0x70000000a), ALU32_X(DIV, 0, 1), EXIT),
    T("div64 unsigned", 0x0fffffffffffffff, MOV64_K(0, -1), MOV64_K(1, 16), ALU64_X(DIV, 0, 1), EXIT),
    T("div64 imm -1 is unsigned", 0, MOV64_K(0, 5), ALU64_K(DIV, 0, -1), EXIT),
    T("div64 all ones by imm -1", 1, MOV64_K(0, -1), ALU64_K(DIV, 0, -1), EXIT),
    T("div32 imm -1", 1, MOV64_K(0, -1), ALU32_K(DIV, 0, -1), EXIT),
    T("div64 dst == src", 1, MOV64_K(0, 7), ALU64_X(DIV, 0, 0), EXIT),
    T("div64 zero dst == src", 0, MOV64_K(0, 0), ALU64_X(DIV, 0, 0), EXIT),
    T("mod64 unsigned", 5, MOV64_K(0, -1), MOV64_K(1, 10), ALU64_X(MOD, 0, 1), EXIT),
    T("mod64 by zero reg", 10, MOV64_K(0, 10), MOV64_K(1, 0), ALU64_X(MOD, 0, 1), EXIT),
    T("mod64 by zero imm", 0x100000005, LDDW(0, 0x100000005), ALU64_K(MOD, 0, 0), EXIT),
    T("mod32 by zero low half", 0xa, LDDW(0, 0xffffffff0000000a), LDDW(1, 0x100000000), ALU32_X(MOD, 0, 1), EXIT),
    T("mod32 by zero imm", 5, LDDW(0, 0x100000005), ALU32_K(MOD, 0, 0), EXIT),
    T("sdiv64 INT_MIN / -1", 0x8000000000000000, LDDW(0, 0x8000000000000000), MOV64_K(1, -1), SALU64_X(DIV, 0, 1), EXIT),
    T("smod64 INT_MIN % -1", 0, LDDW(0, 0x8000000000000000), MOV64_K(1, -1), SALU64_X(MOD, 0, 1), EXIT),
    T("sdiv32 INT_MIN / -1", 0x80000000, MOV32_K(0, INT32_MIN), MOV64_K(1, -1), SALU32_X(DIV, 0, 1), EXIT),
    T("smod32 INT_MIN % -1", 0, MOV32_K(0, INT32_MIN), SALU32_K(MOD, 0, -1), EXIT),
    T("sdiv64 -7 / 2", 0xfffffffffffffffd, MOV64_K(0, -7), SALU64_K(DIV, 0, 2), EXIT),
    T("smod64 -7 % 2", 0xffffffffffffffff, MOV64_K(0, -7), MOV64_K(1, 2), SALU64_X(MOD, 0, 1), EXIT),
    T("sdiv32 -7 / 2", 0xfffffffd, MOV32_K(0, -7), SALU32_K(DIV, 0, 2), EXIT),
    T("smod32 -7 % 2", 0xffffffff, MOV32_K(0, -7), MOV64_K(1, 2), SALU32_X(MOD, 0, 1), EXIT),
    T("sdiv64 by zero", 0, MOV64_K(0, -7), MOV64_K(1, 0), SALU64_X(DIV, 0, 1), EXIT),
    T("smod64 by zero", 0xfffffffffffffff9, MOV64_K(0, -7), MOV64_K(1, 0), SALU64_X(MOD, 0, 1), EXIT),
    T("sdiv32 by zero low half", 0, MOV64_K(0, -7), LDDW(1, 0x100000000), SALU32_X(DIV, 0, 1), EXIT),
    T("smod32 by zero", 0xfffffff9, LDDW(0, 0x12345678fffffff9), MOV64_K(1, 0), SALU32_X(MOD, 0, 1), EXIT),
    /* shifts mask the amount */
    T("lsh64 by 67", 8, MOV64_K(0, 1), MOV64_K(1, 67), ALU64_X(LSH, 0, 1), EXIT),
    T("lsh32 by 35", 8, MOV64_K(0, 1), MOV64_K(1, 35), ALU32_X(LSH, 0, 1), EXIT),
    T("lsh32 imm 4", 0xfffffff0, MOV64_K(0, -1), ALU32_K(LSH, 0, 4), EXIT),
    T("lsh32 imm 31", 0x80000000, MOV64_K(0, 3), ALU32_K(LSH, 0, 31), EXIT),
    T("rsh32 imm 31", 1, MOV32_K(0, INT32_MIN), ALU32_K(RSH, 0, 31), EXIT),
    T("rsh32 imm 0", 0xffffffff, MOV64_K(0, -1), ALU32_K(RSH, 0, 0), EXIT),
    T("rsh32 by 32", 0xffffffff, MOV64_K(0, -1), MOV64_K(1, 32), ALU32_X(RSH, 0, 1), EXIT),
    T("rsh64 by 64", 0xffffffffffffffff, MOV64_K(0, -1), MOV64_K(1, 64), ALU64_X(RSH, 0, 1), EXIT),
    T("rsh64 imm 63", 1, LDDW(0, 0x8000000000000000), ALU64_K(RSH, 0, 63), EXIT),
    T("arsh32 imm 31", 0xffffffff, MOV32_K(0, INT32_MIN), ALU32_K(ARSH, 0, 31), EXIT),
    T("arsh32 reg", 0xf8000000, LDDW(0, 0x80000000), MOV64_K(1, 4), ALU32_X(ARSH, 0, 1), EXIT),
    T("arsh64 imm 63", 0xffffffffffffffff, LDDW(0, 0x8000000000000000), ALU64_K(ARSH, 0, 63), EXIT),
    T("arsh64 by 65", 0xc000000000000000, LDDW(0, 0x8000000000000000), MOV64_K(1, 65), ALU64_X(ARSH, 0, 1), EXIT),
    /* sign-extending moves */
    T("movsx64 s8", 0xffffffffffffff80, MOV64_K(1, 0x180), MOVSX64(0, 1, 8), EXIT),
    T("movsx64 s8 positive", 0x7f, MOV64_K(1, 0x17f), MOVSX64(0, 1, 8), EXIT),
    T("movsx64 s16", 0xffffffffffff8000, MOV64_K(1, 0x18000), MOVSX64(0, 1, 16), EXIT),
    T("movsx64 s32", 0xffffffff80000000, LDDW(1, 0x180000000), MOVSX64(0, 1, 32), EXIT),
    T("movsx32 s8", 0xffffff80, LDDW(1, 0x100000080), MOVSX32(0, 1, 8), EXIT),
    T("movsx32 s16", 0xffff8000, LDDW(1, 0x100008000), MOVSX32(0, 1, 16), EXIT),
    /* byte order */
    T("le16", 0xcdef, LDDW(0, 0x0123456789abcdef), LE(0, 16), EXIT),
    T("le32", 0x89abcdef, LDDW(0, 0x0123456789abcdef), LE(0, 32), EXIT),
    T("le64", 0x0123456789abcdef, LDDW(0, 0x0123456789abcdef), LE(0, 64), EXIT),
    T("be16", 0xefcd, LDDW(0, 0x0123456789abcdef), BE(0, 16), EXIT),
    T("be32", 0xefcdab89, LDDW(0, 0x0123456789abcdef), BE(0, 32), EXIT),
    T("be64", 0xefcdab8967452301, LDDW(0, 0x0123456789abcdef), BE(0, 64), EXIT),
    T("bswap16", 0xefcd, LDDW(0, 0x0123456789abcdef), BSWAP(0, 16), EXIT),
    T("bswap32", 0xefcdab89, LDDW(0, 0x0123456789abcdef), BSWAP(0, 32), EXIT),
    T("bswap64", 0xefcdab8967452301, LDDW(0, 0x0123456789abcdef), BSWAP(0, 64), EXIT),
    T("bswap64 in r6", 0x0807060504030201, LDDW(6, 0x0102030405060708), BSWAP(6, 64), MOV64_X(0, 6), EXIT),
    /* loads and stores */
    TM("stdw/ldxdw", 0xfffffffffffffffe, ST(DW, 1, 0, -2), LDX(DW, 0, 1, 0), EXIT),
    TM("stb/ldxb", 0xff, ST(B, 1, 8, 0x1ff), LDX(B, 0, 1, 8), EXIT),
    TM("sth/ldxh", 0xffff, ST(H, 1, 16, -1), LDX(H, 0, 1, 16), EXIT),
    TM("stw/ldxw zero-extends", 0xffffffff, ST(W, 1, 24, -1), LDX(W, 0, 1, 24), EXIT),
    TM("stxdw/ldxw", 0x11223344, LDDW(2, 0x1122334455667788), STX(DW, 1, 2, 0), LDX(W, 0, 1, 4), EXIT),
    TM("stxw", 0x55667788, LDDW(2, 0x1122334455667788), STX(W, 1, 2, 8), LDX(DW, 0, 1, 8), EXIT),
    TM("stxh", 0x7788, LDDW(2, 0x1122334455667788), STX(H, 1, 2, 8), LDX(DW, 0, 1, 8), EXIT),
    TM("stxb", 0x88, LDDW(2, 0x1122334455667788), STX(B, 1, 2, 8), LDX(DW, 0, 1, 8), EXIT),
    TM("ldxsb", 0xffffffffffffff80, ST(B, 1, 0, 0x80), LDXSX(B, 0, 1, 0), EXIT),
    TM("ldxsb positive", 0x7f, ST(B, 1, 0, 0x7f), LDXSX(B, 0, 1, 0), EXIT),
    TM("ldxsh", 0xffffffffffff8000, ST(H, 1, 2, 0x8000), LDXSX(H, 0, 1, 2), EXIT),
    TM("ldxsw", 0xffffffff80000000, ST(W, 1, 4, INT32_MIN), LDXSX(W, 0, 1, 4), EXIT),
    TM("offsets beyond 12 bits", 16, ALU64_K(ADD, 1, 4096), ST(DW, 1, 3000, 7), ST(W, 1, -4000, 9),
       LDX(DW, 0, 1, 3000), LDX(W, 2, 1, -4000), ALU64_X(ADD, 0, 2), EXIT),
    TM("stx/ldxsh beyond 12 bits", 0xffffffffffff8001, MOV64_K(2, 0x8001), STX(H, 1, 2, 8190),
       LDXSX(H, 0, 1, 8190), EXIT),
    T("stack dw", 0xfffffffffffffffb, ST(DW, 10, -8, -5), LDX(DW, 0, 10, -8), EXIT),
    T("stack bottom", 3, ST(DW, 10, -512, 3), LDX(DW, 0, 10, -512), EXIT),
    T("stack w, ldxsw", 0xffffffffffffffff, ST(W, 10, -4, -1), LDXSX(W, 0, 10, -4), EXIT),
    T("stack w, ldxw", 0xffffffff, ST(W, 10, -4, -1), LDX(W, 0, 10, -4), EXIT),
    T("stack pointer in a register", 77, MOV64_X(1, 10), ALU64_K(ADD, 1, -16), ST(DW, 1, 0, 77),
      LDX(DW, 0, 10, -16), EXIT),
    /* jumps */
    T("jslt32 sees the low half", 1, LDDW(1, 0x1ffffffff), MOV64_K(0, 0), JMP32_K(JSLT, 1, 0, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jslt64", 0, LDDW(1, 0x1ffffffff), MOV64_K(0, 0), JMP_K(JSLT, 1, 0, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jgt32 unsigned", 0, LDDW(1, 0x100000000), MOV32_K(2, -1), MOV64_K(0, 0), JMP32_X(JGT, 1, 2, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jgt64 unsigned", 1, LDDW(1, 0x100000000), MOV32_K(2, -1), MOV64_K(0, 0), JMP_X(JGT, 1, 2, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jsgt32 imm -2", 1, MOV32_K(1, -1), MOV64_K(0, 0), JMP32_K(JSGT, 1, -2, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jsge32 reg", 0, MOV32_K(1, INT32_MIN), MOV64_K(2, 0), MOV64_K(0, 0), JMP32_X(JSGE, 1, 2, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jsge64 reg", 1, MOV32_K(1, INT32_MIN), MOV64_K(2, 0), MOV64_K(0, 0), JMP_X(JSGE, 1, 2, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jsle32 imm", 1, MOV32_K(1, INT32_MIN), MOV64_K(0, 0), JMP32_K(JSLE, 1, INT32_MIN, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jlt64 imm -1 is unsigned", 1, MOV64_K(1, 5), MOV64_K(0, 0), JMP_K(JLT, 1, -1, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jle32 imm -1", 1, MOV64_K(1, 5), MOV64_K(0, 0), JMP32_K(JLE, 1, -1, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jge64 reg", 0, MOV64_K(1, 5), MOV64_K(2, 6), MOV64_K(0, 0), JMP_X(JGE, 1, 2, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jset32 low half only", 0, LDDW(1, 0x100000000), MOV64_K(0, 0), JMP32_X(JSET, 1, 1, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jset64", 1, LDDW(1, 0x100000000), MOV64_K(0, 0), JMP_X(JSET, 1, 1, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jset64 imm -1", 1, LDDW(1, 0x100000000), MOV64_K(0, 0), JMP_K(JSET, 1, -1, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jset32 imm -1", 0, LDDW(1, 0x100000000), MOV64_K(0, 0), JMP32_K(JSET, 1, -1, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jne32 ignores the high half", 0, LDDW(1, 0x100000005), MOV64_K(0, 0), JMP32_K(JNE, 1, 5, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jeq32", 1, LDDW(1, 0x100000005), MOV64_K(0, 0), JMP32_K(JEQ, 1, 5, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("jeq 0", 1, MOV64_K(1, 0), MOV64_K(0, 0), JMP_K(JEQ, 1, 0, 1), EXIT, MOV64_K(0, 1), EXIT),
    T("loop sum 1..100", 5050, MOV64_K(0, 0), MOV64_K(1, 100), ALU64_X(ADD, 0, 1), ALU64_K(SUB, 1, 1),
      JMP_K(JNE, 1, 0, -3), EXIT),
    T("gotol (ja32)", 1, MOV64_K(0, 1), JA32(1), MOV64_K(0, 2), EXIT),
    T("exit before the end", 3, MOV64_K(0, 3), JMP_K(JNE, 0, 3, 1), EXIT, MOV64_K(0, 4), EXIT),
    /* atomics on the stack */
    T("atomic add64", 15, ST(DW, 10, -8, 10), MOV64_K(1, 5), ATOMIC(DW, 10, 1, -8, ADD), LDX(DW, 0, 10, -8), EXIT),
    T("atomic fetch_add64", 10015, ST(DW, 10, -8, 10), MOV64_K(1, 5), ATOMIC(DW, 10, 1, -8, ADD | FETCH),
      LDX(DW, 0, 10, -8), ALU64_K(MUL, 1, 1000), ALU64_X(ADD, 0, 1), EXIT),
    T("atomic add32", 0x100000001, LDDW(0, 0x1ffffffff), STX(DW, 10, 0, -8), MOV64_K(1, 2),
      ATOMIC(W, 10, 1, -8, ADD), LDX(DW, 0, 10, -8), EXIT),
    T("atomic fetch_or32 zero-extends", 0xffffffff, ST(W, 10, -4, -1), MOV64_K(1, 0), ATOMIC(W, 10, 1, -4, AOR | FETCH),
      MOV64_X(0, 1), EXIT),
    T("atomic and32", 0xf0, ST(W, 10, -4, 0xff0), MOV64_K(1, 0xff), ATOMIC(W, 10, 1, -4, AAND), LDX(W, 0, 10, -4), EXIT),
    T("atomic fetch_xor64", 0xf0000f, ST(DW, 10, -8, 0x0f), MOV64_K(1, 0xff), ATOMIC(DW, 10, 1, -8, AXOR | FETCH),
      LDX(DW, 0, 10, -8), ALU64_K(LSH, 0, 16), ALU64_X(OR, 0, 1), EXIT),
    T("atomic fetch_and64", 0xff00000f, ST(DW, 10, -8, 0xff), MOV64_K(1, 0x0f), ATOMIC(DW, 10, 1, -8, AAND | FETCH),
      LDX(DW, 0, 10, -8), MOV64_X(0, 1), ALU64_K(LSH, 0, 24), LDX(DW, 2, 10, -8), ALU64_X(OR, 0, 2), EXIT),
    T("atomic xchg64", 907, ST(DW, 10, -8, 7), MOV64_K(1, 9), ATOMIC(DW, 10, 1, -8, XCHG), LDX(DW, 0, 10, -8),
      ALU64_K(MUL, 0, 100), ALU64_X(ADD, 0, 1), EXIT),
    T("atomic xchg32 zero-extends", 0xffffffff, ST(W, 10, -4, -1), MOV64_K(1, 2), ATOMIC(W, 10, 1, -4, XCHG), MOV64_X(0, 1), EXIT),
    T("cmpxchg64 equal", 1020, ST(DW, 10, -8, 10), MOV64_K(0, 10), MOV64_K(1, 20), ATOMIC(DW, 10, 1, -8, CMPXCHG),
      LDX(DW, 2, 10, -8), ALU64_K(MUL, 0, 100), ALU64_X(ADD, 0, 2), EXIT),
    T("cmpxchg64 different", 1010, ST(DW, 10, -8, 10), MOV64_K(0, 11), MOV64_K(1, 20), ATOMIC(DW, 10, 1, -8, CMPXCHG),
      LDX(DW, 2, 10, -8), ALU64_K(MUL, 0, 100), ALU64_X(ADD, 0, 2), EXIT),
    T("cmpxchg32 compares the low half", 0x8000000003, ST(W, 10, -4, INT32_MIN), LDDW(0, 0x580000000), MOV64_K(1, 3),
      ATOMIC(W, 10, 1, -4, CMPXCHG), LDX(W, 2, 10, -4), ALU64_K(LSH, 0, 8), ALU64_X(OR, 0, 2), EXIT),
    T("cmpxchg32 different", 0x505, ST(W, 10, -4, 5), MOV64_K(0, 6), MOV64_K(1, 3), ATOMIC(W, 10, 1, -4, CMPXCHG),
      LDX(W, 2, 10, -4), ALU64_K(LSH, 0, 8), ALU64_X(OR, 0, 2), EXIT),
    T("atomic with offset", 3, MOV64_X(1, 10), ALU64_K(ADD, 1, -64), ST(DW, 1, 8, 1), MOV64_K(2, 2),
      ATOMIC(DW, 1, 2, 8, ADD), LDX(DW, 0, 10, -56), EXIT),
    TM("atomic beyond 12 bits", 0x2a, MOV64_K(2, 0x2a), ATOMIC(DW, 1, 2, 4000, ADD), LDX(DW, 0, 1, 4000), EXIT),
    /* bpf-to-bpf calls: own stack frames, R6-R9 kept */
    T("bpf2bpf call", 133, MOV64_K(6, 100), ST(DW, 10, -8, 11), MOV64_K(1, 5), CALLSUB(4), ALU64_X(ADD, 0, 6),
      LDX(DW, 1, 10, -8), ALU64_X(ADD, 0, 1), EXIT,
      MOV64_K(6, 7), ST(DW, 10, -8, 99), MOV64_X(0, 1), ALU64_K(MUL, 0, 3), ALU64_X(ADD, 0, 6), EXIT),
    T("nested calls", 1009, MOV64_K(1, 4), CALLSUB(1), EXIT,
      MOV64_K(6, 1000), ALU64_K(MUL, 1, 2), CALLSUB(2), ALU64_X(ADD, 0, 6), EXIT,
      MOV64_X(0, 1), ALU64_K(ADD, 0, 1), EXIT),
    T("callee writes the caller's stack", 42, MOV64_X(1, 10), ALU64_K(ADD, 1, -8), CALLSUB(2), LDX(DW, 0, 10, -8), EXIT,
      ST(DW, 1, 0, 42), MOV64_K(0, 0), EXIT),
    /* helpers: "%d %d %d\n" on the stack, five arguments; R6-R9 survive */
    T("helper trace_printk, 5 args", 17, LDDW(1, 0x6425206425206425), STX(DW, 10, 1, -16), ST(H, 10, -8, 0x0a),
      MOV64_X(1, 10), ALU64_K(ADD, 1, -16), MOV64_K(2, 10), MOV64_K(3, 1), MOV64_K(4, -22), MOV64_K(5, 333),
      MOV64_K(6, 7), CALL(NANOBPF_HELPER_TRACE_PRINTK), ALU64_X(ADD, 0, 6), EXIT),
    T("helper keeps R6-R9", 10, MOV64_K(6, 1), MOV64_K(7, 2), MOV64_K(8, 3), MOV64_K(9, 4),
      CALL(NANOBPF_HELPER_GET_SMP_PROCESSOR_ID), ALU64_X(ADD, 0, 6), ALU64_X(ADD, 0, 7), ALU64_X(ADD, 0, 8),
      ALU64_X(ADD, 0, 9), EXIT),
    /* bpf_tail_call with no program running (ebpf_current_prog NULL): it fails and the program goes on,
     * its registers (and the s6 the call site keeps the context in) intact */
    T("failed tail call goes on", 5, MOV64_K(6, 5), CALL(NANOBPF_HELPER_TAIL_CALL), MOV64_X(0, 6), EXIT),
};

/* Programs the JIT must refuse, and the instruction it must name. */
static const struct tcase refused[] = {
    T("ld abs", 1, MOV64_K(6, 0), I(EBPF_CLS_LD | EBPF_MODE_ABS | EBPF_SIZE_W, 0, 0, 0, 12), EXIT),
    T("ld ind", 0, I(EBPF_CLS_LD | EBPF_MODE_IND | EBPF_SIZE_B, 0, 1, 0, 0), EXIT),
    T("unresolved ld_imm64", 1, MOV64_K(0, 0), I(EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW, 1, 1, 0, 0), I(0, 0, 0, 0, 0), EXIT),
    T("unknown helper", 0, CALL(9999), EXIT),
    T("bad ALU opcode", 0, I(EBPF_CLS_ALU64 | 0xe0, 0, 0, 0, 0), EXIT),
    T("jump outside the program", 0, JA(5), EXIT),
    /* opcodes the verifier refuses as unknown (and the interpreter faults on): not compiled as something else */
    T("callx (0x8d)", 1, MOV64_K(0, 0), I(EBPF_CLS_JMP | EBPF_JMP_CALL | EBPF_SRC_X, 0, 0, 0, 7), EXIT),
    T("ja with src X (0x0d)", 0, I(EBPF_CLS_JMP | EBPF_JMP_JA | EBPF_SRC_X, 0, 0, 0, 0), MOV64_K(0, 0), EXIT),
    T("ja32 with src X (0x0e)", 0, I(EBPF_CLS_JMP32 | EBPF_JMP_JA | EBPF_SRC_X, 0, 0, 0, 0), MOV64_K(0, 0), EXIT),
    T("exit with src X (0x9d)", 1, MOV64_K(0, 0), I(EBPF_CLS_JMP | EBPF_JMP_EXIT | EBPF_SRC_X, 0, 0, 0, 0)),
    T("neg with src X (0x8f)", 1, MOV64_K(0, 1), I(EBPF_CLS_ALU64 | EBPF_ALU_NEG | EBPF_SRC_X, 0, 0, 0, 0), EXIT),
    T("neg32 with src X (0x8c)", 1, MOV64_K(0, 1), I(EBPF_CLS_ALU | EBPF_ALU_NEG | EBPF_SRC_X, 0, 0, 0, 0), EXIT),
    T("bswap with src X (0xdf)", 1, MOV64_K(0, 1), I(EBPF_CLS_ALU64 | EBPF_ALU_END | EBPF_SRC_X, 0, 0, 0, 16), EXIT),
};

/* ---- Running ---- */
static uint8_t mem[3 * 32768] __attribute__((aligned(64))); /* tests see the first 8 KiB; the offset sweep all */
static unsigned flags;
static int verbose, failures, checks, tally; /* tally: add the case's statistics to total */
static const char *dump;
static struct ebpf_jit_stats total;
static struct ebpf_map **run_maps; /* the maps the next programs reference (ld_imm64 of their address) */
static uint8_t *run_insn_flags; /* the verifier's facts the next programs get (EBPF_INSN_*; NULL: none) */
static uint32_t run_n_maps, last_inline_lookups;

/* Zero mem for a program that is given it (use_mem as run_sub's; the others have no pointer to it): a
 * word at a time, through a volatile pointer so that the compiler does not make it picolibc's memset
 * again, which stores a byte at a time;
 * under qemu-riscv64 that loop cost most of the run (96 KiB twice per program), and 7 times more
 * when the layout put it across a page boundary (qemu chains no jumps between pages). */
static void clear_mem(int use_mem) {
    volatile uint64_t *w = (volatile uint64_t *)(void *)mem;
    size_t words = use_mem ? sizeof mem / 8 : 0;
    for (size_t k = 0; k < words; k++) w[k] = 0;
}

static void print_code(const struct ebpf_prog *p) {
    const uint8_t *c = p->jit_code;
    for (uint32_t k = 0; k < p->jit_size; k++) printf("%s0x%02x%s", k % 16 ? ", " : ".byte ", c[k], k % 16 == 15 || k + 1 == p->jit_size ? "\n" : "");
}

/* JIT and interpreter on one program; returns 0 when both give `expect` (or agree, when !check).
 * use_mem: 1 = r1 is the buffer, 2 = r1 is its middle (+-32 KiB offsets); sub: verifier-style functions. */
static int run_sub(const char *name, const struct ebpf_insn *insns, uint32_t n, int use_mem, uint64_t expect,
                   int check, int quiet, const struct ebpf_subprog *sub, uint32_t n_sub) {
    struct ebpf_prog p;
    struct ebpf_error err = {0, ""};
    memset(&p, 0, sizeof p);
    p.insns = (struct ebpf_insn *)insns;
    p.n_insns = n;
    for (uint32_t k = 0; k < n_sub; k++) p.subprogs[k] = sub[k];
    p.n_subprogs = n_sub;
    p.maps = run_maps;
    p.n_maps = run_n_maps;
    p.insn_flags = run_insn_flags;
    uint64_t r1 = use_mem ? (uint64_t)(uintptr_t)mem + (use_mem == 2 ? 32768 : 0) : 0, r2 = use_mem == 1 ? 8192 : 0;
    checks++;
    if (ebpf_jit_compile(&p, flags, &err)) {
        printf("FAIL %s: JIT refused it: insn %d: %s\n", name, err.insn, err.msg);
        return failures++, -1;
    }
    if (dump && !strcmp(dump, name)) print_code(&p);
    clear_mem(use_mem);
    uint64_t jit = ebpf_jit_run(&p, r1, r2);
    clear_mem(use_mem);
    uint64_t interp;
    if (ebpf_interp(&p, r1, r2, &interp, &err)) {
        printf("FAIL %s: the interpreter faulted: insn %d: %s\n", name, err.insn, err.msg);
        ebpf_jit_free(p.jit_code, p.jit_size);
        return failures++, -1;
    }
    struct ebpf_jit_stats st;
    int stats_ok = !ebpf_jit_stats(&p, flags, &st, &err) && st.rv_bytes == p.jit_size;
    last_inline_lookups = st.inline_lookups;
    ebpf_jit_free(p.jit_code, p.jit_size);
    int ok = jit == interp && (!check || jit == expect) && stats_ok;
    if (!ok) {
        printf("FAIL %s: jit 0x%llx interp 0x%llx", name, (unsigned long long)jit, (unsigned long long)interp);
        if (check) printf(" expected 0x%llx", (unsigned long long)expect);
        if (!stats_ok) printf(" (stats disagree with the compile)");
        printf("\n");
        return failures++, -1;
    }
    if (!quiet) {
        uint32_t rv = 0, bpf = 0;
        for (int c = 0; c < 8; c++) {
            rv += st.rv_insns[c];
            bpf += st.bpf_insns[c];
            if (tally) total.rv_insns[c] += st.rv_insns[c], total.bpf_insns[c] += st.bpf_insns[c];
        }
        if (tally) total.rv_bytes += st.rv_bytes;
        printf("ok   %-36s r0=0x%llx  (%u eBPF -> %u RV insns in classes, %u bytes)\n", name,
               (unsigned long long)jit, bpf, rv, st.rv_bytes);
    } else if (verbose) {
        printf("ok   %s r0=0x%llx\n", name, (unsigned long long)jit);
    }
    return 0;
}
static int run(const char *name, const struct ebpf_insn *insns, uint32_t n, int use_mem, uint64_t expect, int check,
               int quiet) {
    return run_sub(name, insns, n, use_mem, expect, check, quiet, NULL, 0);
}

static void refuse(const struct tcase *t) {
    struct ebpf_prog p;
    struct ebpf_error err = {-2, ""};
    memset(&p, 0, sizeof p);
    p.insns = (struct ebpf_insn *)t->insns;
    p.n_insns = t->n;
    checks++;
    if (!ebpf_jit_compile(&p, flags, &err)) {
        printf("FAIL refuse %s: compiled\n", t->name);
        ebpf_jit_free(p.jit_code, p.jit_size);
        failures++;
    } else if (err.insn != (int)t->expect) {
        printf("FAIL refuse %s: error names insn %d, expected %d (%s)\n", t->name, err.insn, (int)t->expect, err.msg);
        failures++;
    } else {
        printf("ok   refuse %-29s insn %d: %s\n", t->name, err.insn, err.msg);
    }
}

/* Far branches: a countdown loop around n additions: the forward exit branch and the backward jump
 * span the whole body (n = 3000: 6-12 KiB of code, beyond B-type's 4 KiB). */
static void far_branches(uint32_t n, int use32) {
    uint32_t len = n + 6;
    struct ebpf_insn *p = ebpf_alloc(len * sizeof *p), *q = p;
    const struct ebpf_insn mov0 = MOV64_K(0, 0), mov1 = MOV64_K(1, 2), add = ALU64_K(ADD, 0, 1),
                           dec = ALU64_K(SUB, 1, 1), exit_ = EXIT;
    struct ebpf_insn jeq = JMP_K(JEQ, 1, 0, 0), ja = JA(0), ja32 = JA32(0);
    jeq.off = (int16_t)(n + 2);
    if (use32) jeq.code = EBPF_CLS_JMP32 | EBPF_SRC_K | EBPF_JMP_JEQ;
    ja.off = (int16_t)-(int32_t)(n + 3);
    ja32.imm = -(int32_t)(n + 3);
    *q++ = mov0;
    *q++ = mov1;
    *q++ = jeq;
    for (uint32_t k = 0; k < n; k++) *q++ = add;
    *q++ = dec;
    *q++ = use32 ? ja32 : ja;
    *q++ = exit_;
    char name[48];
    snprintf(name, sizeof name, "far branches, %u insns%s", n, use32 ? " (jmp32/gotol)" : "");
    run(name, p, (uint32_t)(q - p), 0, 2 * (uint64_t)n, 1, 0);
    ebpf_free(p);
}

/* bpf_map_lookup_elem on array maps whose address the program loads with ld_imm64: compiled inline
 * when the JIT knows the map (the program lists it, no jump lands between the load and the call) and
 * the key is 4-byte aligned on the stack, else the helper call; both must give the helper's value or
 * NULL. */
static void lookup_case(const char *what, struct ebpf_map *m, int listed, int32_t key_off, int32_t k, int target,
                        int via_r6, uint64_t expect, uint32_t inlined) {
    /* r1 = map; [r3 = 0; if r3 == 0 goto +0: a jump target at the call's set-up]; *(u32 *)(r10 + key_off) = k;
     * r2 = r10 + key_off (or r6 = r10 + key_off; r2 = r6, as clang keeps an address for several calls);
     * r0 = lookup(r1, r2); r0 ? *(u64 *)r0 : -1 */
    struct ebpf_insn p[] = {LDDW(1, 0), MOV64_K(3, 0), MOV64_K(3, 0), ST(W, 10, key_off, k), MOV64_X(2, 10),
                            ALU64_K(ADD, 2, key_off), MOV64_K(3, 0), CALL(NANOBPF_HELPER_MAP_LOOKUP_ELEM),
                            JMP_K(JEQ, 0, 0, 2), LDX(DW, 0, 0, 0), EXIT, MOV64_K(0, -1), EXIT};
    uint64_t a = (uint64_t)(uintptr_t)m;
    p[0].imm = (int32_t)(uint32_t)a;
    p[1].imm = (int32_t)(uint32_t)(a >> 32);
    static const struct ebpf_insn jump = JMP_K(JEQ, 3, 0, 0); /* lands on the store: R1 might come another way */
    static const struct ebpf_insn r6_fp = MOV64_X(6, 10), r2_r6 = MOV64_X(2, 6);
    if (target) p[3] = jump;
    if (via_r6) { /* p[0..1] is the ld_imm64, p[4] the store */
        p[5] = r6_fp;
        p[6].dst = 6;
        p[7] = r2_r6;
    }
    char name[96];
    snprintf(name, sizeof name, "map_lookup_elem, %s", what);
    run_maps = listed ? &m : NULL;
    run_n_maps = listed ? 1 : 0;
    if (!run(name, p, sizeof p / sizeof p[0], 0, expect, 1, 0) && last_inline_lookups != inlined) {
        printf("FAIL %s: %u lookups inline, expected %u\n", name, last_inline_lookups, inlined);
        failures++;
    }
    run_maps = NULL;
    run_n_maps = 0;
}
static void map_lookup(void) {
    static const struct {
        uint32_t type, value_size;
    } shapes[] = {{NANOBPF_MAP_TYPE_ARRAY, 8},   /* stride 8: a shift */
                  {NANOBPF_MAP_TYPE_ARRAY, 24},  /* stride 24: a multiply */
                  {NANOBPF_MAP_TYPE_PERCPU_ARRAY, 8}};
    for (uint32_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        struct ebpf_map map;
        struct ebpf_error err;
        memset(&map, 0, sizeof map);
        map.type = shapes[s].type;
        map.key_size = 4;
        map.value_size = shapes[s].value_size;
        map.max_entries = 4;
        strcpy(map.name, "selftest");
        if (ebpf_map_create(&map, &err)) {
            printf("FAIL map create: %s\n", err.msg);
            failures++;
            return;
        }
        uint8_t value[24];
        for (uint32_t key = 0; key < 4; key++) {
            for (uint32_t b = 0; b < sizeof value; b++) value[b] = (uint8_t)(0x11 * (key + 1) + b);
            ebpf_map_update(&map, &key, value, 0);
        }
        uint64_t v3;
        memcpy(&v3, ebpf_map_lookup(&map, &(uint32_t){3}), 8);
        char what[64];
        const char *kind = s == 0 ? "array/8" : s == 1 ? "array/24" : "percpu/8";
#define CASE(desc, listed, off, k, target, via_r6, expect, inlined) \
        (snprintf(what, sizeof what, "%s, %s", kind, desc), lookup_case(what, &map, listed, off, k, target, via_r6, expect, inlined))
        CASE("hit", 1, -4, 3, 0, 0, v3, 1);
        CASE("hit, key address copied from r6", 1, -12, 3, 0, 1, v3, 1);
        CASE("miss (index 4)", 1, -4, 4, 0, 0, UINT64_MAX, 1);
        CASE("miss (index 7)", 1, -4, 7, 0, 1, UINT64_MAX, 1);
        CASE("misaligned key (the helper)", 1, -6, 3, 0, 0, v3, 0);
        CASE("misaligned key copied from r6 (the helper)", 1, -10, 3, 0, 1, v3, 0);
        CASE("map not the program's (the helper)", 0, -4, 3, 0, 0, v3, 0);
        CASE("jump target before the call (the helper)", 1, -4, 3, 1, 0, v3, 0);
        CASE("jump target before the call, r6 (the helper)", 1, -4, 3, 1, 1, v3, 0);
#undef CASE
        ebpf_map_destroy(&map);
    }
}

/* Functions and stack depths as the verifier records them (frames of 16 and 32 bytes). */
static void verified_calls(void) {
    static const struct ebpf_insn p[] = {
        ST(DW, 10, -8, 5), ST(DW, 10, -16, 6), MOV64_X(1, 10), ALU64_K(ADD, 1, -16), CALLSUB(3),
        LDX(DW, 1, 10, -8), ALU64_X(ADD, 0, 1), EXIT,
        ST(DW, 10, -32, 100), LDX(DW, 0, 1, 0), LDX(DW, 2, 10, -32), ALU64_X(ADD, 0, 2), ST(DW, 1, 8, 0), EXIT};
    static const struct ebpf_subprog sub[] = {{0, 16}, {8, 32}};
    /* callee: r0 = *(r1) + 100 = 106, and it zeroes the caller's r10-8 through r1 + 8 */
    run_sub("verified functions, 16/32-byte frames", p, sizeof p / sizeof p[0], 0, 106, 1, 0, sub, 2);
}

/* ---- Differential sweeps against the interpreter ---- */
static uint64_t rng = 0x9e3779b97f4a7c15;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static const uint64_t edge_values[] = {
    0, 1, 2, 3, 7, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff,
    0x100000000, 0x1ffffffff, 0x7fffffffffffffff, 0x8000000000000000, 0xffffffffffffffff, 0xfffffffffffffffe,
    0xffffffff80000000, 0x123456789abcdef0, 0xfedcba9876543210,
};
static const int32_t edge_imms[] = {0, 1, -1, 2, 3, 5, 31, 32, 33, 63, 64, 2047, 2048, -2048, -2049, 0x7fffffff,
                                    INT32_MIN, 0x12345678, -0x1234567, 0xff, 0xffff};
#define NV (sizeof edge_values / sizeof edge_values[0])
#define NI (sizeof edge_imms / sizeof edge_imms[0])

static void sweep_alu(void) {
    static const int ops[] = {ADD, SUB, MUL, DIV, OR, AND, LSH, RSH, NEG, MOD, XOR, EBPF_ALU_MOV, ARSH};
    int before = failures, count = 0;
    for (int cls = 0; cls < 2; cls++)
        for (unsigned o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            int op = ops[o];
            /* off variants: signed division, sign-extending moves */
            int offs[4] = {0, -1, -1, -1};
            if (op == DIV || op == MOD) offs[1] = 1;
            if (op == EBPF_ALU_MOV) offs[1] = 8, offs[2] = 16, offs[3] = cls ? 32 : -1;
            for (int v = 0; v < 4; v++) {
                if (offs[v] < 0) continue;
                for (int x = 0; x < 3; x++) { /* K, X, X with dst == src */
                    if (x == 0 && op == EBPF_ALU_MOV && offs[v]) continue;
                    if (x && op == NEG) continue; /* neg has no source: 0x8c/0x8f are no opcodes */
                    unsigned nb = x == 0 ? NI + 8 : NV + 8;
                    for (unsigned a = 0; a < NV + 8; a++)
                        for (unsigned b = 0; b < (x == 2 ? 1 : nb); b++) {
                            uint64_t av = a < NV ? edge_values[a] : rnd();
                            uint64_t bv = x == 0 ? (uint64_t)(int64_t)(b < NI ? edge_imms[b] : (int32_t)rnd())
                                                 : b < NV ? edge_values[b] : rnd();
                            struct ebpf_insn op_insn = I((cls ? EBPF_CLS_ALU64 : EBPF_CLS_ALU) | (x ? EBPF_SRC_X : 0) | op,
                                                         0, x == 2 ? 0 : 1, offs[v], x ? 0 : (int32_t)bv);
                            struct ebpf_insn p[] = {LDDW(0, av), LDDW(1, bv), op_insn, EXIT};
                            char name[96];
                            snprintf(name, sizeof name, "alu%s op 0x%02x off %d %s a=0x%llx b=0x%llx", cls ? "64" : "32", op,
                                     offs[v], x == 0 ? "K" : x == 1 ? "X" : "X(dst)", (unsigned long long)av,
                                     (unsigned long long)bv);
                            run(name, p, 6, 0, 0, 0, 1);
                            count++;
                        }
                }
            }
        }
    /* byte order */
    for (int c = 0; c < 3; c++)
        for (int bits = 16; bits <= 64; bits *= 2)
            for (unsigned a = 0; a < NV + 8; a++) {
                uint64_t av = a < NV ? edge_values[a] : rnd();
                struct ebpf_insn e = c == 0 ? (struct ebpf_insn)LE(0, bits) : c == 1 ? (struct ebpf_insn)BE(0, bits)
                                                                                   : (struct ebpf_insn)BSWAP(0, bits);
                struct ebpf_insn p[] = {LDDW(0, av), e, EXIT};
                run("end", p, 4, 0, 0, 0, 1);
                count++;
            }
    printf("%s  sweep ALU: %d programs against the interpreter\n", failures == before ? "ok " : "FAIL", count);
}

static void sweep_jmp(void) {
    static const int ops[] = {EBPF_JMP_JEQ, EBPF_JMP_JGT, EBPF_JMP_JGE, EBPF_JMP_JSET, EBPF_JMP_JNE, EBPF_JMP_JSGT,
                              EBPF_JMP_JSGE, EBPF_JMP_JLT, EBPF_JMP_JLE, EBPF_JMP_JSLT, EBPF_JMP_JSLE};
    int before = failures, count = 0;
    for (int cls = 0; cls < 2; cls++)
        for (unsigned o = 0; o < sizeof ops / sizeof ops[0]; o++)
            for (int x = 0; x < 2; x++)
                for (unsigned a = 0; a < NV + 4; a++)
                    for (unsigned b = 0; b < (x ? NV : NI) + 4; b++) {
                        uint64_t av = a < NV ? edge_values[a] : rnd();
                        uint64_t bv = x ? (b < NV ? edge_values[b] : rnd())
                                        : (uint64_t)(int64_t)(b < NI ? edge_imms[b] : (int32_t)rnd());
                        struct ebpf_insn j = I((cls ? EBPF_CLS_JMP32 : EBPF_CLS_JMP) | (x ? EBPF_SRC_X : 0) | ops[o],
                                               1, x ? 2 : 0, 1, x ? 0 : (int32_t)bv);
                        struct ebpf_insn p[] = {LDDW(1, av), LDDW(2, bv), MOV64_K(0, 1), j, MOV64_K(0, 0), EXIT};
                        run("jmp", p, 8, 0, 0, 0, 1);
                        count++;
                    }
    printf("%s  sweep JMP: %d programs against the interpreter\n", failures == before ? "ok " : "FAIL", count);
}

/* Constants: ld_imm64 and mov imm, edge values and random bit patterns (runs of ones and zeros). */
static void sweep_imm(void) {
    int before = failures, count = 0;
    for (int k = 0; k < 600; k++) {
        uint64_t v;
        if (k < (int)NV) v = edge_values[k];
        else if (k < 200) v = rnd();
        else if (k < 400) v = (rnd() >> (rnd() % 64)) << (rnd() % 64);
        else v = ~((rnd() >> (rnd() % 64)) << (rnd() % 64)) ^ (rnd() % 4096);
        struct ebpf_insn p[] = {LDDW(0, v), EXIT};
        char name[48];
        snprintf(name, sizeof name, "lddw 0x%llx", (unsigned long long)v);
        run(name, p, 3, 0, v, 1, 1);
        struct ebpf_insn m[] = {MOV64_K(0, (int32_t)v), EXIT};
        run("mov imm", m, 2, 0, (uint64_t)(int64_t)(int32_t)v, 1, 1);
        count += 2;
    }
    printf("%s  sweep constants: %d programs\n", failures == before ? "ok " : "FAIL", count);
}

/* Loads and stores at random offsets (+-32 KiB around r1), every size, sign-extending loads, atomics. */
static void sweep_mem(void) {
    int before = failures, count = 0;
    static const int sizes[4] = {EBPF_SIZE_B, EBPF_SIZE_H, EBPF_SIZE_W, EBPF_SIZE_DW};
    static const uint8_t bytes[4] = {1, 2, 4, 8};
    for (int k = 0; k < 1500; k++) {
        int s = (int)(rnd() % 4);
        int16_t off = (int16_t)((int16_t)rnd() & ~(bytes[s] - 1));
        uint64_t v = rnd();
        int32_t imm = (int32_t)rnd();
        struct ebpf_insn stx = I(EBPF_CLS_STX | EBPF_MODE_MEM | sizes[s], 1, 2, off, 0);
        struct ebpf_insn st = I(EBPF_CLS_ST | EBPF_MODE_MEM | sizes[s], 1, 0, off, imm);
        struct ebpf_insn ldx = I(EBPF_CLS_LDX | EBPF_MODE_MEM | sizes[s], 0, 1, off, 0);
        struct ebpf_insn ldxsx = I(EBPF_CLS_LDX | EBPF_MODE_MEMSX | sizes[s], 0, 1, off, 0);
        struct ebpf_insn p[] = {LDDW(2, v), k & 1 ? st : stx, s < 3 && k & 2 ? ldxsx : ldx, EXIT};
        run("mem", p, 5, 2, 0, 0, 1);
        count++;
        if (s >= 2) {
            static const int32_t aops[] = {ADD, AOR, AAND, AXOR, ADD | FETCH, AOR | FETCH, AAND | FETCH, AXOR | FETCH, XCHG, CMPXCHG};
            int32_t aop = aops[rnd() % 10];
            struct ebpf_insn at = I(EBPF_CLS_STX | EBPF_MODE_ATOMIC | sizes[s], 1, 2, off, aop);
            struct ebpf_insn q[] = {LDDW(2, v), LDDW(0, k & 4 ? v : rnd()), stx, MOV64_K(2, imm), at, ldx, ALU64_X(XOR, 0, 2), EXIT};
            char name[64];
            snprintf(name, sizeof name, "atomic %s op 0x%x off %d v 0x%llx", s == 3 ? "dw" : "w", aop, off, (unsigned long long)v);
            run(name, q, 10, 2, 0, 0, 1);
            count++;
        }
    }
    printf("%s  sweep memory: %d programs against the interpreter\n", failures == before ? "ok " : "FAIL", count);
}

/* Packet loads the verifier flagged (EBPF_INSN_PKT_ACCESS: a run-time alignment test) at every offset
 * from an 8-byte boundary, every size, zero- and sign-extended, across or inside two known words (a
 * misaligned 4- or 8-byte load reads the two aligned words that hold its bytes and shifts them
 * together): the interpreter and the value expected here must agree. */
static void sweep_pkt_loads(void) {
    int before = failures, count = 0;
    static const int sizes[4] = {EBPF_SIZE_B, EBPF_SIZE_H, EBPF_SIZE_W, EBPF_SIZE_DW};
    static const uint8_t bytes[4] = {1, 2, 4, 8};
    uint8_t fl[8] = {0, 0, 0, 0, 0, 0, EBPF_INSN_PKT_ACCESS, 0};
    const uint64_t w0 = 0x8877665544332211ull, w1 = 0xf0e0d0c0b0a09080ull;
    uint8_t img[16];
    for (int b = 0; b < 8; b++) img[b] = (uint8_t)(w0 >> 8 * b), img[8 + b] = (uint8_t)(w1 >> 8 * b);
    run_insn_flags = fl;
    for (int s = 1; s < 4; s++)
        for (int sx = 0; sx < (s < 3 ? 2 : 1); sx++)
            for (int off = 0; off + bytes[s] <= 16; off++) {
                uint64_t v = 0;
                for (int b = 0; b < bytes[s]; b++) v |= (uint64_t)img[off + b] << 8 * b;
                if (sx && bytes[s] < 8 && (v >> (8 * bytes[s] - 1) & 1)) v |= ~0ull << 8 * bytes[s];
                struct ebpf_insn ld = I(EBPF_CLS_LDX | (sx ? EBPF_MODE_MEMSX : EBPF_MODE_MEM) | sizes[s], 0, 1, off, 0);
                struct ebpf_insn p[] = {LDDW(2, w0), STX(DW, 1, 2, 0), LDDW(2, w1), STX(DW, 1, 2, 8), ld, EXIT};
                char name[64];
                snprintf(name, sizeof name, "packet load %u bytes%s at offset %d", bytes[s], sx ? " (sign-extended)" : "", off);
                run(name, p, 8, 1, v, 1, 1);
                count++;
            }
    run_insn_flags = NULL;
    printf("%s  packet loads at every alignment: %d programs\n", failures == before ? "ok " : "FAIL", count);
}

/* Random programs with forward branches only (so they end): ALU on r0-r9, jumps of every distance,
 * stack loads, stores and atomics; r0 ^= r1..r9 at the end. The interpreter must agree. */
static void sweep_programs(int count) {
    static const int alu_ops[] = {ADD, SUB, MUL, DIV, OR, AND, LSH, RSH, NEG, MOD, XOR, EBPF_ALU_MOV, ARSH, EBPF_ALU_END};
    static const int jmp_ops[] = {EBPF_JMP_JEQ, EBPF_JMP_JGT, EBPF_JMP_JGE, EBPF_JMP_JSET, EBPF_JMP_JNE, EBPF_JMP_JSGT,
                                  EBPF_JMP_JSGE, EBPF_JMP_JLT, EBPF_JMP_JLE, EBPF_JMP_JSLT, EBPF_JMP_JSLE};
    static const int32_t aops[] = {ADD, AOR, AAND, AXOR, ADD | FETCH, AOR | FETCH, AAND | FETCH, AXOR | FETCH, XCHG, CMPXCHG};
    static const int sizes[4] = {EBPF_SIZE_B, EBPF_SIZE_H, EBPF_SIZE_W, EBPF_SIZE_DW};
    int before = failures;
    uint32_t total_insns = 0;
    for (int t = 0; t < count; t++) {
        uint32_t len = 10 + (uint32_t)(rnd() % (t % 4 == 3 ? 4000 : 300));
        uint32_t cap = len + 64, n = 0;
        struct ebpf_insn *p = ebpf_alloc(cap * sizeof *p);
        uint8_t *second = ebpf_alloc(cap);    /* second slot of an ld_imm64 */
        uint32_t *target = ebpf_alloc(cap * sizeof *target);
        for (int r = 0; r <= 9; r++) {
            uint64_t v = rnd() % 3 ? rnd() >> (rnd() % 64) : edge_values[rnd() % NV];
            struct ebpf_insn l[2] = {LDDW(r, v)};
            p[n++] = l[0];
            second[n] = 1;
            p[n++] = l[1];
        }
        for (int sl = 1; sl <= 8; sl++) {
            struct ebpf_insn z = ST(DW, 10, -8 * sl, 0);
            p[n++] = z;
        }
        uint32_t end = n + len;
        while (n < end) {
            uint32_t k = (uint32_t)(rnd() % 100), room = end - n - 1;
            uint8_t dst = (uint8_t)(rnd() % 10), src = (uint8_t)(rnd() % 10);
            int32_t imm = rnd() % 2 ? edge_imms[rnd() % NI] : (int32_t)rnd();
            int sz = (int)(rnd() % 4);
            int16_t slot = (int16_t)(-8 * (int)(1 + rnd() % 8) + (int)((rnd() % 8) & ~((1u << (3 - sz)) - 1) & 7));
            if (sz == 0) slot = (int16_t)(-1 - (int)(rnd() % 64));
            else if (sz == 1) slot = (int16_t)(-2 * (int)(1 + rnd() % 32));
            else if (sz == 2) slot = (int16_t)(-4 * (int)(1 + rnd() % 16));
            else slot = (int16_t)(-8 * (int)(1 + rnd() % 8));
            struct ebpf_insn in = I(0, 0, 0, 0, 0);
            if (k < 45) {
                int is64 = (int)(rnd() % 2), op = alu_ops[rnd() % 14], x = (int)(rnd() % 2), off = 0;
                if ((op == DIV || op == MOD) && rnd() % 2) off = 1;
                if (op == EBPF_ALU_MOV && x && rnd() % 3 == 0) off = 8 << (rnd() % (is64 ? 3 : 2));
                if (op == EBPF_ALU_END) imm = 16 << (rnd() % 3);
                if (op == NEG || (op == EBPF_ALU_END && is64)) x = 0; /* no X form (refused as unknown opcodes) */
                in = (struct ebpf_insn)I((is64 ? EBPF_CLS_ALU64 : EBPF_CLS_ALU) | op | (x ? EBPF_SRC_X : 0), dst, x ? src : 0, off, imm);
            } else if (k < 48 && room >= 2) {
                struct ebpf_insn l[2] = {LDDW(dst, rnd())};
                p[n++] = l[0];
                second[n] = 1;
                in = l[1];
            } else if (k < 68) {
                int is32 = (int)(rnd() % 2), x = (int)(rnd() % 2);
                in = (struct ebpf_insn)I((is32 ? EBPF_CLS_JMP32 : EBPF_CLS_JMP) | jmp_ops[rnd() % 11] | (x ? EBPF_SRC_X : 0), dst, x ? src : 0, 0, imm);
                uint32_t r = (uint32_t)(rnd() % 10);
                uint32_t d = room ? (uint32_t)(rnd() % (r < 7 ? (room < 16 ? room : 16) : r < 9 ? (room < 400 ? room : 400) : room)) : 0;
                target[n] = n + 1 + d;
            } else if (k < 72) {
                int is32 = (int)(rnd() % 2);
                in = (struct ebpf_insn)I(is32 ? EBPF_CLS_JMP32 | EBPF_JMP_JA : EBPF_CLS_JMP | EBPF_JMP_JA, 0, 0, 0, 0);
                target[n] = n + 1 + (room ? (uint32_t)(rnd() % (rnd() % 4 ? (room < 64 ? room : 64) : room)) : 0);
            } else if (k < 73) {
                in = (struct ebpf_insn)EXIT;
            } else if (k < 83) {
                in = rnd() % 2 ? (struct ebpf_insn)I(EBPF_CLS_STX | EBPF_MODE_MEM | sizes[sz], 10, src, slot, 0)
                               : (struct ebpf_insn)I(EBPF_CLS_ST | EBPF_MODE_MEM | sizes[sz], 10, 0, slot, imm);
            } else if (k < 93) {
                int sx = sz < 3 && rnd() % 2;
                in = (struct ebpf_insn)I(EBPF_CLS_LDX | (sx ? EBPF_MODE_MEMSX : EBPF_MODE_MEM) | sizes[sz], dst, 10, slot, 0);
            } else {
                int dw = (int)(rnd() % 2);
                in = (struct ebpf_insn)I(EBPF_CLS_STX | EBPF_MODE_ATOMIC | (dw ? EBPF_SIZE_DW : EBPF_SIZE_W), 10, src,
                                         -(dw ? 8 : 4) * (int)(1 + rnd() % (dw ? 8 : 16)), aops[rnd() % 10]);
            }
            p[n++] = in;
        }
        /* resolve jumps, stepping over second slots */
        for (uint32_t i = 0; i < end; i++)
            if (target[i]) {
                uint32_t tg = target[i] + (target[i] < end && second[target[i]]);
                if (EBPF_CLASS(p[i].code) == EBPF_CLS_JMP32 && EBPF_OP(p[i].code) == EBPF_JMP_JA) p[i].imm = (int32_t)(tg - i - 1);
                else p[i].off = (int16_t)(tg - i - 1);
            }
        for (int r = 1; r <= 9; r++) {
            struct ebpf_insn f = ALU64_X(XOR, 0, r);
            p[n++] = f;
        }
        struct ebpf_insn e = EXIT;
        p[n++] = e;
        char name[48];
        snprintf(name, sizeof name, "random program %d (%u insns)", t, n);
        run(name, p, n, 0, 0, 0, 1);
        total_insns += n;
        ebpf_free(p);
        ebpf_free(second);
        ebpf_free(target);
    }
    printf("%s  sweep random programs: %d programs, %u instructions, against the interpreter\n",
           failures == before ? "ok " : "FAIL", count, total_insns);
}

int main(int argc, char **argv) {
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--rvc")) flags |= EBPF_JIT_RVC;
        else if (!strcmp(argv[k], "--zba")) flags |= EBPF_JIT_ZBA;
        else if (!strcmp(argv[k], "--zbb")) flags |= EBPF_JIT_ZBB;
        else if (!strcmp(argv[k], "-v")) verbose = 1;
        else if (!strcmp(argv[k], "--dump") && k + 1 < argc) dump = argv[++k];
        else {
            fprintf(stderr, "usage: jit-selftest [--rvc] [--zba] [--zbb] [-v] [--dump NAME]\n");
            return 2;
        }
    }
    printf("JIT self-test, flags:%s%s%s%s\n", flags & EBPF_JIT_RVC ? " rvc" : "", flags & EBPF_JIT_ZBA ? " zba" : "",
           flags & EBPF_JIT_ZBB ? " zbb" : "", flags ? "" : " none");
    tally = 1;
    for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++)
        run(cases[k].name, cases[k].insns, cases[k].n, cases[k].mem, cases[k].expect, 1, 0);
    map_lookup();
    verified_calls();
    tally = 0;
    static const uint32_t far[] = {10, 100, 700, 1500, 3000};
    for (unsigned k = 0; k < sizeof far / sizeof far[0]; k++) far_branches(far[k], 0);
    far_branches(3000, 1);
    for (unsigned k = 0; k < sizeof refused / sizeof refused[0]; k++) refuse(&refused[k]);

    static const char *cls_names[8] = {"LD", "LDX", "ST", "STX", "ALU", "JMP", "JMP32", "ALU64"};
    printf("RV64 instructions per eBPF instruction over the hand-written cases (without the far branches);\n"
           "prologues and epilogues are in no class (%u bytes of code in all):\n", total.rv_bytes);
    for (int c = 0; c < 8; c++)
        if (total.bpf_insns[c])
            printf("  %-6s %6u eBPF -> %6u RV  (%u.%02u per insn)\n", cls_names[c], total.bpf_insns[c], total.rv_insns[c],
                   total.rv_insns[c] / total.bpf_insns[c], total.rv_insns[c] * 100 / total.bpf_insns[c] % 100);

    sweep_alu();
    sweep_jmp();
    sweep_imm();
    sweep_mem();
    sweep_pkt_loads();
    sweep_programs(400);
    printf("%s: %d checks, %d failures\n", failures ? "FAILED" : "PASSED", checks, failures);
    return failures ? 1 : 0;
}
