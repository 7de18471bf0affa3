/* Differential soundness fuzzer of the eBPF verifier: random packet-parsing-like XDP programs are
 * verified; every accepted one is resolved and run by the interpreter over frames of every length
 * 0..96 in buffers that end exactly at data_end (and, for half of the runs, start exactly at data),
 * with one-entry array maps whose storage is exactly value_size bytes. Built with AddressSanitizer, an
 * out-of-bounds packet or map access by an accepted program stops the run with a report; an
 * interpreter fault of an accepted program is reported as well.
 *
 *   fuzz_verifier [ITERATIONS] [SEED]     (built and run by run_verifier_tests.sh --fuzz)
 *
 * fuzz_runtime.c includes this file (FUZZ_VERIFIER_NO_MAIN) and runs program_iteration() with mutated
 * instructions besides its mutated device images. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ebpf.h"
#if defined(__has_include)
#if __has_include(<sanitizer/common_interface_defs.h>)
#include <sanitizer/common_interface_defs.h>
#define HAVE_SANITIZER 1
#endif
#endif


#define I(c, d, s, o, i) ((struct ebpf_insn){.code = (uint8_t)(c), .dst = (d), .src = (s), .off = (int16_t)(o), .imm = (int32_t)(i)})

static uint64_t rng_state;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
static uint32_t pick(uint32_t n) { return rnd() % n; }
static int32_t range(int32_t lo, int32_t hi) { return lo + (int32_t)pick((uint32_t)(hi - lo + 1)); }

#define MAXI 400
static struct ebpf_insn prog[MAXI];
static uint32_t n;
/* forward jumps to fix: insn index and target op number */
static uint32_t fix_at[MAXI], fix_op[MAXI], nfix;
static uint32_t op_start[200];
/* calls to the subprograms appended after the main program: insn index and subprogram number */
static uint32_t call_at[MAXI], call_fn[MAXI], ncalls;

static void emit(struct ebpf_insn in) {
    if (n < MAXI) prog[n++] = in;
}
static uint32_t anyreg(void) {
    static const uint8_t regs[] = {0, 2, 3, 4, 5, 7, 8, 9};
    return regs[pick(sizeof regs)];
}
static uint8_t size_code(void) {
    static const uint8_t s[] = {EBPF_SIZE_B, EBPF_SIZE_H, EBPF_SIZE_W, EBPF_SIZE_DW};
    return s[pick(4)];
}
static void jump_later(uint8_t code, uint32_t dst, uint32_t src, int32_t imm, uint32_t op, uint32_t nops) {
    fix_at[nfix] = n;
    fix_op[nfix++] = op + 1 + pick(nops - op);
    emit(I(code, dst, src, 0, imm));
}

/* Scalar arithmetic and comparisons (ALU, ALU32, MOVSX, JMP, JMP32, JSET) on a value from the packet, whose
 * result becomes a map value offset or steers a branch to a trap: a byte read just past the map value,
 * which the verifier refuses wherever it finds the trap reachable, and AddressSanitizer reports when it
 * runs. A wrong range, known bit or dead branch in the verifier shows as such a read. */
static const int32_t interesting[] = {0, 1, -1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 33, 63, 64, 127, 128, 255, 256,
                                      -2, -16, -128, 0xffff, 0x10000, 0x7fffffff, (int32_t)0x80000000, 0x7ffffff0};
static int32_t some_imm(void) {
    return pick(4) ? interesting[pick(sizeof interesting / sizeof interesting[0])] : (int32_t)rnd();
}
static void gen_scalar_op(uint32_t b, uint32_t c) {
    static const uint8_t ops[] = {EBPF_ALU_ADD, EBPF_ALU_SUB, EBPF_ALU_MUL, EBPF_ALU_DIV, EBPF_ALU_OR,  EBPF_ALU_AND,
                                  EBPF_ALU_LSH, EBPF_ALU_RSH, EBPF_ALU_NEG, EBPF_ALU_MOD, EBPF_ALU_XOR, EBPF_ALU_ARSH};
    uint8_t cls = pick(2) ? EBPF_CLS_ALU64 : EBPF_CLS_ALU, op = ops[pick(sizeof ops)];
    switch (pick(8)) {
    case 0: /* movsx */
        emit(I(cls | EBPF_SRC_X | EBPF_ALU_MOV, b, c, cls == EBPF_CLS_ALU64 && pick(3) == 0 ? 32 : pick(2) ? 8 : 16, 0));
        break;
    case 1: /* copies, and a constant added to one of them */
        emit(I(cls | EBPF_SRC_X | EBPF_ALU_MOV, pick(2) ? b : c, pick(2) ? b : c, 0, 0));
        if (pick(2)) emit(I((pick(2) ? EBPF_CLS_ALU64 : EBPF_CLS_ALU) | (pick(2) ? EBPF_ALU_ADD : EBPF_ALU_SUB),
                            pick(2) ? b : c, 0, 0, some_imm()));
        break;
    case 2: case 3:
        if (op != EBPF_ALU_NEG) {
            emit(I(cls | EBPF_SRC_X | op, b, c, 0, 0));
            break;
        }
        /* fall through */
    default:
        emit(I(cls | op, b, 0, 0, op == EBPF_ALU_NEG ? 0 : (op == EBPF_ALU_LSH || op == EBPF_ALU_RSH ||
                                                            op == EBPF_ALU_ARSH) ? range(0, 63) : some_imm()));
    }
}
static void gen_scalar_trap(void) {
    static const uint8_t jops[] = {EBPF_JMP_JEQ,  EBPF_JMP_JGT,  EBPF_JMP_JGE,  EBPF_JMP_JSET, EBPF_JMP_JNE, EBPF_JMP_JSGT,
                                   EBPF_JMP_JSGE, EBPF_JMP_JLT,  EBPF_JMP_JLE,  EBPF_JMP_JSLT, EBPF_JMP_JSLE};
    static const uint8_t loads[] = {EBPF_MODE_MEM | EBPF_SIZE_B, EBPF_MODE_MEM | EBPF_SIZE_H, EBPF_MODE_MEM | EBPF_SIZE_W,
                                    EBPF_MODE_MEM | EBPF_SIZE_DW, EBPF_MODE_MEMSX | EBPF_SIZE_B,
                                    EBPF_MODE_MEMSX | EBPF_SIZE_H, EBPF_MODE_MEMSX | EBPF_SIZE_W};
    uint32_t b = pick(2) ? 5 : 9, c = b == 5 ? 9 : 5;
    /* b, c := 8 packet bytes at data + 0 and + 8 as some load, or 0 when the packet is shorter */
    emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, b, 0, 0, 0));
    emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, c, 0, 0, 0));
    emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 1, 7, 0, 0));
    emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, 1, 0, 0, 16));
    emit(I(EBPF_CLS_JMP | EBPF_SRC_X | EBPF_JMP_JGT, 1, 8, 2, 0));
    emit(I(EBPF_CLS_LDX | loads[pick(sizeof loads)], b, 7, 0, 0));
    emit(I(EBPF_CLS_LDX | loads[pick(sizeof loads)], c, 7, 8, 0));
    for (uint32_t k = pick(4); k; k--) gen_scalar_op(b, c);
    for (uint32_t k = pick(3); k; k--) { /* comparisons that end the path or refine b and c (or copies of them) */
        uint8_t cls = pick(2) ? EBPF_CLS_JMP : EBPF_CLS_JMP32, op = jops[pick(sizeof jops)];
        uint32_t x = pick(3) ? b : c;
        if (pick(3)) emit(I(cls | op, x, 0, 2, some_imm()));
        else emit(I(cls | EBPF_SRC_X | op, x, x == b ? c : b, 2, 0));
        emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, 1));
        emit(I(EBPF_CLS_JMP | EBPF_JMP_EXIT, 0, 0, 0, 0));
        if (pick(4) == 0) gen_scalar_op(b, c);
    }
    if (pick(2)) { /* b as an offset into the 16-byte map value */
        emit(I(0x18, 1, EBPF_PSEUDO_MAP_IDX_VALUE, 0, 0));
        emit(I(0, 0, 0, 0, 0));
        emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_ADD, 1, b, 0, 0));
        emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_B, 0, 1, 0, 0));
        return;
    }
    /* if b op k: the trap */
    uint8_t cls = pick(2) ? EBPF_CLS_JMP : EBPF_CLS_JMP32;
    emit(I(cls | jops[pick(sizeof jops)], b, 0, 1, some_imm()));
    emit(I(EBPF_CLS_JMP | EBPF_JMP_JA, 0, 0, 3, 0));
    emit(I(0x18, 1, EBPF_PSEUDO_MAP_IDX_VALUE, 0, 0));
    emit(I(0, 0, 0, 0, 0));
    emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_B, 0, 1, 16, 0));
}

/* A loop of 1..6 iterations (counter r1) whose body is an if setting b to one of two constants (a
 * comparison of r9, b or the counter), then b as an offset into the 16-byte map value: an if whose two
 * sides the verifier follows to their join at once (explore_if in verifier.c). */
static void gen_loop_if(void) {
    static const uint8_t jops[] = {EBPF_JMP_JGT, EBPF_JMP_JGE, EBPF_JMP_JLT, EBPF_JMP_JLE, EBPF_JMP_JEQ,
                                   EBPF_JMP_JNE, EBPF_JMP_JSGT, EBPF_JMP_JSLT, EBPF_JMP_JSET};
    static const uint8_t cmp[] = {9, 1, 0};
    uint32_t b = pick(2) ? 0 : 9;
    emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 1, 0, 0, 0));
    uint32_t loop = n;
    if (pick(2)) emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, b, 0, 0, range(0, 20)));
    emit(I((pick(2) ? EBPF_CLS_JMP : EBPF_CLS_JMP32) | jops[pick(sizeof jops)], cmp[pick(3)], 0, 1, range(0, 8)));
    emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, b, 0, 0, pick(2) ? range(0, 15) : range(0, 90)));
    emit(I(EBPF_CLS_JMP | EBPF_JMP_JA, 0, 0, 0, 0)); /* the join: a prune point */
    if (pick(3)) {
        emit(I(0x18, 3, EBPF_PSEUDO_MAP_IDX_VALUE, 0, 0));
        emit(I(0, 0, 0, 0, 0));
        emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_ADD, 3, b, 0, 0));
        emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_B, 3, 3, 0, 0));
    }
    emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, 1, 0, 0, 1));
    emit(I(EBPF_CLS_JMP | EBPF_JMP_JLT, 1, 0, (int16_t)(loop - n - 1), range(1, 6)));
}

static void gen(void) {
    n = nfix = ncalls = 0;
    uint32_t scalar_only = pick(3) == 0; /* a third of the programs: scalar traps only */
    uint32_t nops = scalar_only ? 1 + pick(6) : 2 + pick(24);
    /* r6 = ctx, r7 = data, r8 = data_end */
    emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 6, 1, 0, 0));
    emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W, 7, 1, 0, 0));
    emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W, 8, 1, 4, 0));
    emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, 2));
    /* other registers start as data + small offsets or small scalars */
    static const uint8_t init[] = {2, 3, 4, 5, 9};
    for (uint32_t k = 0; k < sizeof init; k++) {
        if (k < 3 ? pick(8) != 0 : pick(8) == 0) {
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, init[k], 7, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, init[k], 0, 0, range(0, 40)));
        } else {
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W, init[k], 6, 12, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_AND, init[k], 0, 0, range(0, 63)));
        }
    }
    /* a first bounds check proves some bytes */
    emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 1, 7, 0, 0));
    emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, 1, 0, 0, range(0, 64)));
    emit(I(EBPF_CLS_JMP | EBPF_SRC_X | EBPF_JMP_JLE, 1, 8, 1, 0));
    emit(I(EBPF_CLS_JMP | EBPF_JMP_EXIT, 0, 0, 0, 0));
    for (uint32_t op = 0; op < nops; op++) {
        op_start[op] = n;
        /* a: usually a packet pointer register, b: usually a scalar register */
        static const uint8_t pregs[] = {2, 3, 4}, sregs[] = {0, 5, 9};
        uint32_t a = pick(10) ? pregs[pick(3)] : anyreg(), b = pick(10) ? sregs[pick(3)] : anyreg();
        static const uint8_t jops[] = {EBPF_JMP_JGT, EBPF_JMP_JGE, EBPF_JMP_JLT, EBPF_JMP_JLE, EBPF_JMP_JEQ, EBPF_JMP_JNE,
                                       EBPF_JMP_JSGT, EBPF_JMP_JSLT, EBPF_JMP_JSET};
        switch (scalar_only ? 24 : pick(34)) {
        case 0: case 1: /* a = data + k */
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, a, 7, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, a, 0, 0, range(-8, 80)));
            break;
        case 2: case 3: case 4: /* bounds check against data_end, any form */
            if (pick(2)) jump_later(EBPF_CLS_JMP | EBPF_SRC_X | jops[pick(6)], a, 8, 0, op, nops);
            else jump_later(EBPF_CLS_JMP | EBPF_SRC_X | jops[pick(6)], 8, a, 0, op, nops);
            break;
        case 5: case 6: case 7: /* load */
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | size_code(), b, a, range(-6, 70), 0));
            break;
        case 8: /* store */
            if (pick(2)) emit(I(EBPF_CLS_STX | EBPF_MODE_MEM | size_code(), a, b, range(-6, 70), 0));
            else emit(I(EBPF_CLS_ST | EBPF_MODE_MEM | size_code(), a, 0, range(-6, 70), range(-3, 300)));
            break;
        case 9: /* bound a scalar */
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_AND, b, 0, 0, (int32_t)((1u << pick(9)) - 1)));
            if (pick(2)) emit(I(EBPF_CLS_ALU64 | EBPF_ALU_LSH, b, 0, 0, range(0, 3)));
            break;
        case 10: /* pointer += scalar */
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_ADD, a, b, 0, 0));
            break;
        case 11: /* scalar comparisons */
            if (pick(3)) jump_later(EBPF_CLS_JMP | jops[pick(9)], b, 0, range(-2, 80), op, nops);
            else if (pick(2)) jump_later(EBPF_CLS_JMP32 | jops[pick(9)], b, 0, range(-2, 80), op, nops);
            else jump_later(EBPF_CLS_JMP | EBPF_SRC_X | jops[pick(9)], a, b, 0, op, nops);
            break;
        case 12: /* copies and arithmetic */
            switch (pick(6)) {
            case 0: emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, a, b, 0, 0)); break;
            case 1: emit(I(EBPF_CLS_ALU | EBPF_SRC_X | EBPF_ALU_MOV, a, b, 0, 0)); break;
            case 2: emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_SUB, a, b, 0, 0)); break;
            case 3: emit(I(EBPF_CLS_ALU | EBPF_ALU_ADD, a, 0, 0, range(-5, 20))); break;
            case 4: emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, a, 0, 0, range(-5, 70))); break;
            default: emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | (pick(2) ? EBPF_ALU_MUL : EBPF_ALU_RSH), a, b, 0, 0)); break;
            }
            break;
        case 13: { /* stack spill / fill */
            int32_t off = -8 * range(1, 4);
            if (pick(2)) emit(I(EBPF_CLS_STX | EBPF_MODE_MEM | EBPF_SIZE_DW, 10, a, off, 0));
            else emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_DW, b, 10, off, 0));
            break;
        }
        case 14: { /* map lookup, maybe null-checked, then a value access */
            emit(I(EBPF_CLS_ST | EBPF_MODE_MEM | EBPF_SIZE_W, 10, 0, -36, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 2, 10, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, 2, 0, 0, -36));
            emit(I(0x18, 1, EBPF_PSEUDO_MAP_IDX, 0, 0));
            emit(I(0, 0, 0, 0, 0));
            emit(I(EBPF_CLS_JMP | EBPF_JMP_CALL, 0, 0, 0, 1));
            if (pick(4)) jump_later(EBPF_CLS_JMP | EBPF_JMP_JEQ, 0, 0, 0, op, nops);
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 9, 0, 0, 0));
            if (pick(2)) emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | size_code(), 0, 9, range(-2, 20), 0));
            else emit(I(EBPF_CLS_ST | EBPF_MODE_MEM | size_code(), 9, 0, range(-2, 20), 7));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, 1));
            break;
        }
        case 15: /* packet resize: every packet pointer dies */
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 1, 6, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 2, 0, 0, range(-16, 16)));
            emit(I(EBPF_CLS_JMP | EBPF_JMP_CALL, 0, 0, 0, pick(2) ? 44 : 65));
            if (pick(2)) {
                emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W, 7, 6, 0, 0));
                emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W, 8, 6, 4, 0));
            }
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, 2));
            break;
        case 16: /* direct map value (array, one entry) */
            emit(I(0x18, a, EBPF_PSEUDO_MAP_IDX_VALUE, 0, 0));
            emit(I(0, 0, 0, 0, range(0, 15)));
            break;
        case 17: /* short bounded loop walking a pointer */
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 5, 0, 0, 0));
            /* loop: a += 1; b = *(u8 *)(a + 0) needs a check: if a + 1 > end goto out */
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, a, 0, 0, range(0, 3)));
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 4, a, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, 4, 0, 0, 1));
            emit(I(EBPF_CLS_JMP | EBPF_SRC_X | EBPF_JMP_JGT, 4, 8, pick(4) ? 4 : 3, 0));
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_B, b, a, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, 5, 0, 0, 1));
            emit(I(EBPF_CLS_JMP | EBPF_JMP_JLT, 5, 0, -7, range(1, 6)));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, 2));
            break;
        case 19: /* a diamond: b = one of two constants */
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, b, 0, 0, range(0, 90)));
            emit(I(EBPF_CLS_JMP | jops[pick(9)], anyreg(), 0, 1, range(0, 80)));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, b, 0, 0, range(0, 12)));
            break;
        case 20: case 21: { /* bpf-to-bpf call: r1 = pointer (packet or stack), r2 = scalar */
            if (pick(2)) {
                emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 1, 10, 0, 0));
                emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, 1, 0, 0, -8 * range(1, 4)));
            } else {
                emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 1, a, 0, 0));
            }
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 2, b, 0, 0));
            call_at[ncalls] = n;
            call_fn[ncalls++] = pick(5);
            emit(I(EBPF_CLS_JMP | EBPF_JMP_CALL, 0, EBPF_PSEUDO_CALL, 0, 0));
            if (pick(2)) emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_ADD, a, 0, 0, 0)); /* use the result */
            else emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, b, 0, 0, 0));
            break;
        }
        case 18: /* sign-extending and 32-bit ops */
            if (pick(2)) emit(I(EBPF_CLS_LDX | EBPF_MODE_MEMSX | (pick(2) ? EBPF_SIZE_B : EBPF_SIZE_H), b, a, range(-2, 40), 0));
            else emit(I(EBPF_CLS_ALU | EBPF_ALU_LSH, b, 0, 0, range(0, 31)));
            break;
        case 22: /* a pointer (maybe moved below its start) compared with NULL */
            if (pick(2)) emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, a, 0, 0, range(-64, 8)));
            jump_later(EBPF_CLS_JMP | (pick(2) ? EBPF_JMP_JEQ : EBPF_JMP_JNE), a, 0, 0, op, nops);
            break;
        case 29: /* metadata: bpf_xdp_adjust_meta (often a valid length), then a = data_meta (+ k) */
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 1, 6, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 2, 0, 0, pick(4) ? -4 * range(-2, 10) : range(-40, 8)));
            emit(I(EBPF_CLS_JMP | EBPF_JMP_CALL, 0, 0, 0, 54));
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W, 7, 6, 0, 0));
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W, 8, 6, 4, 0));
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W, a, 6, 8, 0));
            if (pick(2)) emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, a, 0, 0, range(-4, 40)));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, 2));
            if (pick(2)) { /* then, mostly, the usual check (r1 = a + k; if r1 > bound: exit) and an access */
                uint32_t bound = pick(4) ? 7 : pick(2) ? 8 : pregs[pick(3)];
                if (bound == a) bound = 7;
                emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 1, a, 0, 0));
                emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, 1, 0, 0, range(0, 40)));
                emit(I(EBPF_CLS_JMP | EBPF_SRC_X | (pick(4) ? EBPF_JMP_JGT : jops[pick(6)]), 1, bound, 1, 0));
                emit(I(EBPF_CLS_JMP | EBPF_JMP_JA, 0, 0, 1, 0));
                emit(I(EBPF_CLS_JMP | EBPF_JMP_EXIT, 0, 0, 0, 0));
                if (pick(2)) emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | size_code(), b, a, range(-6, 40), 0));
                else emit(I(EBPF_CLS_STX | EBPF_MODE_MEM | size_code(), a, b, range(-6, 40), 0));
            }
            break;
        case 30: { /* a bounds check against data (proves metadata), or against another packet pointer */
            uint32_t d = pick(3) ? 7 : pregs[pick(3)];
            if (pick(2)) jump_later(EBPF_CLS_JMP | EBPF_SRC_X | jops[pick(6)], a, d, 0, op, nops);
            else jump_later(EBPF_CLS_JMP | EBPF_SRC_X | jops[pick(6)], d, a, 0, op, nops);
            break;
        }
        case 31: { /* the context moved (by constants, maybe a scalar), maybe back, then a field read */
            int32_t k = range(-8, 24);
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 1, 6, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, 1, 0, 0, k));
            if (pick(4) == 0) emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_ADD, 1, b, 0, 0));
            if (pick(2)) emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, 1, 0, 0, pick(4) ? -k : range(-8, 8)));
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W, b, 1, 4 * range(-2, 12), 0));
            break;
        }
        case 32: case 33: /* bpf_loop: a few calls of a callback (r1 index, r2 a stack slot or NULL) */
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 1, 0, 0, range(0, 6)));
            call_at[ncalls] = n; /* the ld_imm64's offset is fixed up like a call's */
            call_fn[ncalls++] = 5 + pick(4);
            emit(I(0x18, 2, EBPF_PSEUDO_FUNC, 0, 0));
            emit(I(0, 0, 0, 0, 0));
            if (pick(6)) {
                emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 3, 10, 0, 0));
                emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, 3, 0, 0, -8 * range(1, 4)));
            } else {
                emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 3, 0, 0, 0));
            }
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 4, 0, 0, pick(8) == 0));
            emit(I(EBPF_CLS_JMP | EBPF_JMP_CALL, 0, 0, 0, NANOBPF_HELPER_LOOP));
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, b, 0, 0, 0));
            break;
        case 24: case 25: case 26: gen_scalar_trap(); break;
        case 27: case 28: gen_loop_if(); break;
        default: /* conditional early exit */
            emit(I(EBPF_CLS_JMP | jops[pick(9)], b, 0, 2, range(-2, 80)));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, range(0, 4)));
            emit(I(EBPF_CLS_JMP | EBPF_JMP_EXIT, 0, 0, 0, 0));
            break;
        }
    }
    op_start[nops] = n;
    emit(I(EBPF_CLS_JMP | EBPF_JMP_EXIT, 0, 0, 0, 0));
    for (uint32_t k = 0; k < nfix; k++) prog[fix_at[k]].off = (int16_t)(op_start[fix_op[k]] - fix_at[k] - 1);
    /* subprograms (r1 = pointer, r2 = scalar), only those called */
    uint32_t fstart[9];
    for (uint32_t f = 0; f < 9; f++) {
        int used = 0;
        for (uint32_t k = 0; k < ncalls; k++) used |= call_fn[k] == f;
        if (!used) continue;
        fstart[f] = n;
        switch (f) {
        case 0: /* pointer += scalar; read */
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_ADD, 1, 2, 0, 0));
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_B, 0, 1, 0, 0));
            break;
        case 1: /* returns one of two values */
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, 0, 2, 0, 0));
            emit(I(EBPF_CLS_JMP | EBPF_JMP_JGT, 2, 0, 1, range(0, 30)));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, range(0, 90)));
            break;
        case 2: /* write through the pointer */
            emit(I(EBPF_CLS_STX | EBPF_MODE_MEM | EBPF_SIZE_DW, 1, 2, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, 0));
            break;
        case 3: /* read through the pointer */
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_DW, 0, 1, 0, 0));
            break;
        case 4: /* conditional write of one of two values */
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 3, 0, 0, range(0, 90)));
            emit(I(EBPF_CLS_JMP | EBPF_JMP_JGT, 2, 0, 1, range(0, 30)));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 3, 0, 0, 0));
            emit(I(EBPF_CLS_STX | EBPF_MODE_MEM | EBPF_SIZE_DW, 1, 3, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, 0));
            break;
        /* bpf_loop callbacks: r1 the index, r2 the caller's slot (or NULL); return 0 or 1 */
        case 5: /* the slot used as a pointer (a packet pointer the caller spilled there), maybe then
                 * overwritten with the index (which the next call would use) */
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_DW, 3, 2, 0, 0));
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_B, 0, 3, range(-2, 8), 0));
            if (pick(2)) emit(I(EBPF_CLS_STX | EBPF_MODE_MEM | EBPF_SIZE_DW, 2, 1, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_AND, 0, 0, 0, 1));
            break;
        case 6: /* the index written over the slot */
            emit(I(EBPF_CLS_STX | EBPF_MODE_MEM | EBPF_SIZE_DW, 2, 1, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, pick(2)));
            break;
        case 7: /* the slot counted up: stop past a bound */
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_DW, 3, 2, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_ADD, 3, 0, 0, 1));
            emit(I(EBPF_CLS_STX | EBPF_MODE_MEM | EBPF_SIZE_DW, 2, 3, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, 0));
            emit(I(EBPF_CLS_JMP | EBPF_JMP_JLE, 3, 0, 1, range(0, 40)));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, 1));
            break;
        default: /* the pointer in the slot moved by the (masked) index */
            emit(I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_DW, 3, 2, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_AND, 1, 0, 0, range(0, 7)));
            emit(I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_ADD, 3, 1, 0, 0));
            emit(I(EBPF_CLS_STX | EBPF_MODE_MEM | EBPF_SIZE_DW, 2, 3, 0, 0));
            emit(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 0, 0, 0));
            break;
        }
        emit(I(EBPF_CLS_JMP | EBPF_JMP_EXIT, 0, 0, 0, 0));
    }
    for (uint32_t k = 0; k < ncalls; k++) prog[call_at[k]].imm = (int32_t)(fstart[call_fn[k]] - call_at[k] - 1);
}

static uint32_t cur_iter;
static void dump_prog(void) {
    fprintf(stderr, "iteration %u, program:\n", cur_iter);
    for (uint32_t k = 0; k < n; k++)
        fprintf(stderr, "  %3u: %02x %u %u %d %d\n", k, prog[k].code, prog[k].dst, prog[k].src, prog[k].off, prog[k].imm);
}

static uint64_t run_one(struct ebpf_prog *p, uint32_t len, int headroom, struct ebpf_error *err) {
    uint32_t head = headroom ? 32 : 0;
    uint8_t *buf = malloc(head + len + 1);
    for (uint32_t k = 0; k < head + len; k++) buf[k] = (uint8_t)rnd();
    struct ebpf_xdp_buff x = {0};
    x.data_hard_start = (uint64_t)(uintptr_t)buf;
    x.data = x.data_meta = (uint64_t)(uintptr_t)(buf + head);
    x.data_end = x.data + len;
    x.frame_end = x.data_end;
    uint64_t r = ebpf_xdp_run(p, &x, 0, err);
    free(buf);
    return r;
}

/* Counts of program iterations. */
struct prog_counts {
    uint32_t programs, accepted, runs;
    uint64_t processed, max_processed;
};

/* A random change to one field of `in` (kept to opcodes the runtime knows half of the time), or `in`
 * replaced by `other`. */
static void mutate_insn(struct ebpf_insn *in, const struct ebpf_insn *other) {
    static const uint8_t codes[] = {0x07, 0x0f, 0x04, 0x0c, 0x17, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x47, 0x4f, 0x57,
                                    0x5f, 0x67, 0x6f, 0x77, 0x7f, 0x87, 0x97, 0x9f, 0xa7, 0xaf, 0xb7, 0xbf, 0xbc,
                                    0xc7, 0xcf, 0xd4, 0xdc, 0xd7, 0x05, 0x06, 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x3d,
                                    0x45, 0x4d, 0x55, 0x5d, 0x65, 0x6d, 0x75, 0x7d, 0xa5, 0xad, 0xb5, 0xbd, 0xc5,
                                    0xcd, 0xd5, 0xdd, 0x16, 0x1e, 0x56, 0x5e, 0x85, 0x8d, 0x95, 0x9d, 0x0d, 0x18,
                                    0x61, 0x69, 0x71, 0x79, 0x81, 0x89, 0x91, 0x62, 0x6a, 0x72, 0x7a, 0x63, 0x6b,
                                    0x73, 0x7b, 0xc3, 0xdb, 0x20, 0x40};
    static const int32_t imms[] = {0, 1, -1, 2, 4, 8, 12, 14, 16, 32, 64, 0x7fff, -0x8000, 0x7fffffff,
                                   (int32_t)0x80000000, 1 << 29, -(1 << 29), 0x10000, 0x10001, 0x10003};
    switch (pick(6)) {
    case 0: in->code = pick(2) ? codes[pick(sizeof codes)] : (uint8_t)rnd(); break;
    case 1: in->dst = pick(12) & 15; break;
    case 2: in->src = pick(12) & 15; break;
    case 3: in->off = (int16_t)(pick(2) ? in->off + range(-4, 4) : (int32_t)rnd()); break;
    case 4: in->imm = pick(2) ? imms[pick(sizeof imms / sizeof imms[0])] : (int32_t)((uint32_t)in->imm + (uint32_t)range(-8, 8)); break;
    default: *in = *other; break;
    }
}

/* Random changes to `k` instructions of the generated program: programs the generator would not
 * write, most of them refused. */
static void mutate_prog(uint32_t k) {
    for (uint32_t j = 0; j < k && n; j++) mutate_insn(&prog[pick(n)], &prog[pick(n)]);
}

/* One random program from the current generator state: generated, `mutations` instructions changed,
 * verified with a one-entry array map of 16 bytes; an accepted one runs over frames of 0..96 bytes.
 * Returns 0, 1 when an accepted program faulted (printed), 2 on a setup error. */
static int program_iteration(uint32_t it, uint32_t mutations, struct prog_counts *c) {
    cur_iter = it;
    gen();
    mutate_prog(mutations);
    struct ebpf_map m = {0}, *maps[1] = {&m};
    struct ebpf_error err = {0};
    m.type = NANOBPF_MAP_TYPE_ARRAY;
    m.key_size = 4;
    m.value_size = 16;
    m.max_entries = 1;
    if (ebpf_map_create(&m, &err)) return fprintf(stderr, "map: %s\n", err.msg), 2;
    struct ebpf_prog p;
    memset(&p, 0, sizeof p);
    p.insns = malloc(n * sizeof *p.insns);
    memcpy(p.insns, prog, n * sizeof *prog);
    p.n_insns = n;
    p.maps = maps;
    p.n_maps = 1;
    int rc = ebpf_verify(&p, NULL, &err), result = 0;
    c->programs++;
    c->processed += ebpf_verify_last_stats.processed;
    if (ebpf_verify_last_stats.processed > c->max_processed) c->max_processed = ebpf_verify_last_stats.processed;
    if (rc && getenv("FUZZ_REASONS")) {
        for (char *ch = err.msg; *ch; ch++)
            if (*ch >= '0' && *ch <= '9') *ch = '#';
        printf("reason: %s\n", err.msg);
    }
    if (rc == 0) {
        c->accepted++;
        if (ebpf_prog_resolve(&p, &err)) {
            fprintf(stderr, "accepted program not resolved: %s\n", err.msg);
            dump_prog();
            result = 1;
        }
        for (uint32_t len = 0; len <= 96 && !result; len++)
            for (int h = 0; h < 2 && !result; h++) {
                memset(&err, 0, sizeof err);
                run_one(&p, len, h, &err);
                c->runs++;
                if (err.msg[0]) {
                    fprintf(stderr, "accepted program faulted (len %u): insn %d: %s\n", len, err.insn, err.msg);
                    dump_prog();
                    result = 1;
                }
            }
    }
    free(p.insns);
    free(p.insn_flags);
    ebpf_map_destroy(&m);
    return result;
}

#ifndef FUZZ_VERIFIER_NO_MAIN
int main(int argc, char **argv) {
    uint32_t iters = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 20000;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x1234567;
    if (!rng_state) rng_state = 1;
    struct prog_counts c = {0};
#ifdef HAVE_SANITIZER
    __sanitizer_set_death_callback(dump_prog);
#endif
    for (uint32_t it = 0; it < iters; it++) {
        int rc = program_iteration(it, 0, &c);
        if (rc) return rc;
    }
    printf("fuzz: %u programs, %u accepted (%u runs), %llu insns processed (max %llu per program)\n", iters, c.accepted,
           c.runs, (unsigned long long)c.processed, (unsigned long long)c.max_processed);
    return 0;
}
#endif
