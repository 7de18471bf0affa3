/* nanobpf-fuzz: differential fuzzer, interpreter vs RV64 JIT. Generates random programs that are valid
 * by construction (every memory access inside a 256-byte buffer or the initialised part of the stack,
 * forward jumps and counted loops only), runs each through ebpf_interp and through the JIT code with
 * the same initial memory, and compares r0 and the final memory. Runs where the JIT's code can execute:
 * RV64 Linux user mode (qemu-riscv64) or the device. A mismatch prints the program as hex (replayable
 * with nanobpf-run) and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ebpf.h"

static const char usage[] =
    "usage: nanobpf-fuzz [--seed N] [--count N] [--length N] [--rvc] [--zba] [--zbb] [--verbose]\n"
    "Differential fuzzing of the interpreter against the RV64 JIT (run under qemu-riscv64 or on RISC-V).\n"
    "  --seed N     first seed (default 1); program i uses seed N+i, so a failure is reproducible\n"
    "  --count N    programs to run (default 1000)\n"
    "  --length N   random instructions per program (default 64)\n"
    "  --rvc/--zba/--zbb  JIT extensions\n"
    "Exit status: 0 all agree, 1 a mismatch (program printed), 2 usage or JIT error.\n";

#define MEM 256
#define STACK_USED 64 /* bytes below r10 initialised by the prologue */
#define MAXI 1024

static uint64_t rng;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static uint32_t pick(uint32_t n) { return (uint32_t)(rnd() % n); }

static struct ebpf_insn prog[MAXI];
static uint32_t n;
static void emit(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
    prog[n++] = (struct ebpf_insn){code, dst, src, off, imm};
}
static void emit_lddw(uint8_t dst, uint64_t v) {
    emit(EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW, dst, 0, 0, (int32_t)(uint32_t)v);
    emit(0, 0, 0, 0, (int32_t)(uint32_t)(v >> 32));
}

/* Registers the random code may write: r0, r2..r8 (r1 = memory base, r9 = loop counter, r10 = fp). */
static uint8_t wreg(void) {
    static const uint8_t r[] = {0, 2, 3, 4, 5, 6, 7, 8};
    return r[pick(8)];
}
static uint8_t rreg(void) { return (uint8_t)pick(10); }

static int32_t interesting_imm(void) {
    static const int32_t v[] = {0, 1, -1, 2, 7, 8, 31, 32, 33, 63, 64, 65, 0x7fffffff, (int32_t)0x80000000, 0xff, 0xffff, -8};
    return pick(3) ? v[pick(sizeof v / sizeof v[0])] : (int32_t)rnd();
}

static void random_insn(uint32_t body_end, int in_loop) {
    static const uint8_t sizes[4] = {EBPF_SIZE_B, EBPF_SIZE_H, EBPF_SIZE_W, EBPF_SIZE_DW};
    static const uint8_t nbytes[4] = {1, 2, 4, 8};
    switch (pick(in_loop ? 7 : 9)) {
    case 0: case 1: case 2: { /* ALU / ALU64 */
        static const uint8_t ops[] = {EBPF_ALU_ADD, EBPF_ALU_SUB, EBPF_ALU_MUL, EBPF_ALU_DIV, EBPF_ALU_OR, EBPF_ALU_AND,
                                      EBPF_ALU_LSH, EBPF_ALU_RSH, EBPF_ALU_NEG, EBPF_ALU_MOD, EBPF_ALU_XOR, EBPF_ALU_MOV, EBPF_ALU_ARSH};
        uint8_t cls = pick(2) ? EBPF_CLS_ALU64 : EBPF_CLS_ALU, op = ops[pick(sizeof ops)];
        int16_t off = 0;
        if ((op == EBPF_ALU_DIV || op == EBPF_ALU_MOD) && pick(2)) off = 1;
        if (op == EBPF_ALU_MOV && pick(4) == 0) {
            static const int16_t sx[] = {8, 16, 32};
            off = sx[pick(cls == EBPF_CLS_ALU64 ? 3 : 2)];
            emit(cls | op | EBPF_SRC_X, wreg(), rreg(), off, 0);
        } else if (op == EBPF_ALU_MOV && cls == EBPF_CLS_ALU64 && pick(2) && n + 2 < body_end) {
            /* `d = s; d op= x`: the pair the JIT fuses into one three-operand instruction */
            static const uint8_t fops[] = {EBPF_ALU_ADD, EBPF_ALU_SUB, EBPF_ALU_AND, EBPF_ALU_OR, EBPF_ALU_XOR,
                                           EBPF_ALU_LSH, EBPF_ALU_RSH, EBPF_ALU_ARSH};
            uint8_t d = wreg(), fop = fops[pick(sizeof fops)];
            emit(EBPF_CLS_ALU64 | EBPF_ALU_MOV | EBPF_SRC_X, d, rreg(), 0, 0);
            if (pick(2)) emit(EBPF_CLS_ALU64 | fop | EBPF_SRC_X, d, rreg(), 0, 0);
            else emit(EBPF_CLS_ALU64 | fop | EBPF_SRC_K, d, 0, 0, interesting_imm());
        } else if (pick(2) && op != EBPF_ALU_NEG) emit(cls | op | EBPF_SRC_X, wreg(), rreg(), off, 0); /* neg: no X form */
        else emit(cls | op | EBPF_SRC_K, wreg(), 0, off, interesting_imm());
        break;
    }
    case 3: { /* byte order */
        static const int32_t w[] = {16, 32, 64};
        uint8_t c = pick(3);
        emit((c == 2 ? EBPF_CLS_ALU64 : EBPF_CLS_ALU) | EBPF_ALU_END | (c == 1 ? EBPF_SRC_X : 0), wreg(), 0, 0, w[pick(3)]);
        break;
    }
    case 4: { /* load from memory or stack */
        uint32_t s = pick(4);
        int sx = s < 3 && pick(3) == 0;
        uint8_t mode = sx ? EBPF_MODE_MEMSX : EBPF_MODE_MEM;
        if (pick(2)) emit(EBPF_CLS_LDX | mode | sizes[s], wreg(), 1, (int16_t)(pick(MEM / nbytes[s]) * nbytes[s]), 0);
        else emit(EBPF_CLS_LDX | mode | sizes[s], wreg(), 10, (int16_t)-(int)((1 + pick(STACK_USED / nbytes[s])) * nbytes[s]), 0);
        break;
    }
    case 5: { /* store to memory or stack */
        uint32_t s = pick(4);
        uint8_t base = pick(2) ? 1 : 10;
        int16_t off = base == 1 ? (int16_t)(pick(MEM / nbytes[s]) * nbytes[s])
                                : (int16_t)-(int)((1 + pick(STACK_USED / nbytes[s])) * nbytes[s]);
        if (pick(2)) emit(EBPF_CLS_STX | EBPF_MODE_MEM | sizes[s], base, rreg(), off, 0);
        else emit(EBPF_CLS_ST | EBPF_MODE_MEM | sizes[s], base, 0, off, interesting_imm());
        break;
    }
    case 6: { /* atomic on memory */
        static const int32_t ops[] = {EBPF_ATOMIC_ADD, EBPF_ATOMIC_OR, EBPF_ATOMIC_AND, EBPF_ATOMIC_XOR};
        int dw = pick(2);
        int32_t op = pick(6) == 0 ? EBPF_ATOMIC_XCHG : pick(6) == 0 ? EBPF_ATOMIC_CMPXCHG : ops[pick(4)] | (int32_t)pick(2);
        uint8_t src = wreg();
        if (src == 0 && op == EBPF_ATOMIC_CMPXCHG) src = 2;
        emit(EBPF_CLS_STX | EBPF_MODE_ATOMIC | (dw ? EBPF_SIZE_DW : EBPF_SIZE_W), 1, src,
             (int16_t)(pick(MEM / (dw ? 8 : 4)) * (dw ? 8 : 4)), op);
        break;
    }
    case 7: case 8: { /* forward conditional jump inside the body */
        static const uint8_t ops[] = {EBPF_JMP_JEQ, EBPF_JMP_JGT, EBPF_JMP_JGE, EBPF_JMP_JSET, EBPF_JMP_JNE, EBPF_JMP_JSGT,
                                      EBPF_JMP_JSGE, EBPF_JMP_JLT, EBPF_JMP_JLE, EBPF_JMP_JSLT, EBPF_JMP_JSLE};
        if (n + 2 >= body_end) {
            emit(EBPF_CLS_ALU64 | EBPF_ALU_MOV | EBPF_SRC_X, 0, rreg(), 0, 0);
            break;
        }
        uint8_t cls = pick(2) ? EBPF_CLS_JMP : EBPF_CLS_JMP32, op = ops[pick(sizeof ops)];
        int16_t off = (int16_t)pick(body_end - n - 1 < 20 ? body_end - n - 1 : 20);
        if (pick(2)) emit(cls | op | EBPF_SRC_X, rreg(), rreg(), off, 0);
        else emit(cls | op | EBPF_SRC_K, rreg(), 0, off, interesting_imm());
        break;
    }
    }
}

/* Program: initialise r0, r2..r8 and the stack; random body (with a counted loop and a call to a
 * subprogram now and then); fold every register into r0; exit. Subprogram after the main exit. */
static void generate(uint32_t length) {
    n = 0;
    for (uint8_t r = 0; r <= 9; r++)
        if (r != 1) emit_lddw(r, rnd());
    /* the memory base survives calls in a stack slot below the random code's area */
    emit(EBPF_CLS_STX | EBPF_MODE_MEM | EBPF_SIZE_DW, 10, 1, -(STACK_USED + 8), 0);
    for (int s = 1; s <= STACK_USED / 8; s++) emit(EBPF_CLS_ST | EBPF_MODE_MEM | EBPF_SIZE_DW, 10, 0, (int16_t)(-8 * s), (int32_t)rnd());
    uint32_t call_at = pick(2) ? n + pick(length) : UINT32_MAX, loop_at = pick(2) ? n + pick(length) : UINT32_MAX;
    uint32_t calls[4], ncalls = 0;
    uint32_t start = n;
    while (n < start + length) {
        if (n >= call_at && ncalls < 4) {
            calls[ncalls++] = n;
            emit(EBPF_CLS_JMP | EBPF_JMP_CALL, 0, EBPF_PSEUDO_CALL, 0, 0); /* target patched below */
            call_at = UINT32_MAX;
            /* r1..r5 are undefined after a call (RFC 9669 / Linux): reload the base, reset the rest */
            emit(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_DW, 1, 10, -(STACK_USED + 8), 0);
            for (uint8_t r = 2; r <= 5; r++) emit(EBPF_CLS_ALU64 | EBPF_ALU_MOV | EBPF_SRC_K, r, 0, 0, (int32_t)rnd());
            continue;
        }
        if (n >= loop_at) { /* r9 = k; loop: body; r9 -= 1; if r9 != 0 goto loop */
            loop_at = UINT32_MAX;
            emit(EBPF_CLS_ALU64 | EBPF_ALU_MOV | EBPF_SRC_K, 9, 0, 0, 1 + (int32_t)pick(5));
            uint32_t head = n, body = 1 + pick(8);
            for (uint32_t i = 0; i < body; i++) random_insn(head + body, 1);
            emit(EBPF_CLS_ALU64 | EBPF_ALU_SUB | EBPF_SRC_K, 9, 0, 0, 1);
            emit(EBPF_CLS_JMP | EBPF_JMP_JNE | EBPF_SRC_K, 9, 0, (int16_t)(head - n - 1), 0);
            continue;
        }
        /* forward jumps must not land inside the counted loop (its counter would be unset) */
        random_insn(loop_at < start + length ? loop_at : start + length, 0);
    }
    for (uint8_t r = 2; r <= 9; r++) emit(EBPF_CLS_ALU64 | EBPF_ALU_XOR | EBPF_SRC_X, 0, r, 0, 0);
    emit(EBPF_CLS_JMP | EBPF_JMP_EXIT, 0, 0, 0, 0);
    uint32_t sub = n; /* subprogram: mixes r1..r5 into r0, uses its own stack, returns */
    emit(EBPF_CLS_ST | EBPF_MODE_MEM | EBPF_SIZE_DW, 10, 0, -8, (int32_t)rnd());
    emit(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_DW, 0, 10, -8, 0);
    for (uint8_t r = 2; r <= 5; r++) emit(EBPF_CLS_ALU64 | EBPF_ALU_ADD | EBPF_SRC_X, 0, r, 0, 0);
    emit(EBPF_CLS_ALU64 | EBPF_ALU_MOV | EBPF_SRC_K, 6, 0, 0, (int32_t)rnd()); /* callee-saved: caller keeps its r6 */
    emit(EBPF_CLS_JMP | EBPF_JMP_EXIT, 0, 0, 0, 0);
    for (uint32_t i = 0; i < ncalls; i++) prog[calls[i]].imm = (int32_t)(sub - calls[i] - 1);
}

static void dump(const char *why, uint64_t seed) {
    printf("MISMATCH seed %llu: %s\nprogram:", (unsigned long long)seed, why);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *b = (const uint8_t *)&prog[i];
        printf("%s", i % 4 ? " " : "\n  ");
        for (int j = 0; j < 8; j++) printf("%02x", b[j]);
    }
    printf("\n");
}

int main(int argc, char **argv) {
    uint64_t seed = 1, count = 1000;
    uint32_t length = 64;
    unsigned flags = 0;
    int verbose = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--count") && i + 1 < argc) count = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--length") && i + 1 < argc) length = (uint32_t)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--rvc")) flags |= EBPF_JIT_RVC;
        else if (!strcmp(argv[i], "--zba")) flags |= EBPF_JIT_ZBA;
        else if (!strcmp(argv[i], "--zbb")) flags |= EBPF_JIT_ZBB;
        else if (!strcmp(argv[i], "--verbose")) verbose = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 0;
        } else {
            fprintf(stderr, "nanobpf-fuzz: bad argument '%s'\n%s", argv[i], usage);
            return 2;
        }
    }
    if (length < 1 || length > 600) {
        fprintf(stderr, "nanobpf-fuzz: --length must be 1..600\n");
        return 2;
    }
    static uint8_t init[MEM], mem_i[MEM], mem_j[MEM];
    uint64_t insns = 0;
    for (uint64_t k = 0; k < count; k++) {
        rng = seed + k;
        generate(length);
        insns += n;
        for (int i = 0; i < MEM; i++) init[i] = (uint8_t)rnd();
        struct ebpf_prog p;
        memset(&p, 0, sizeof p);
        p.insns = prog;
        p.n_insns = n;
        struct ebpf_error err = {-1, ""};
        memcpy(mem_i, init, MEM);
        uint64_t ri;
        if (ebpf_interp(&p, (uintptr_t)mem_i, MEM, &ri, &err)) {
            dump(err.msg, seed + k);
            return 1;
        }
        if (ebpf_jit_compile(&p, flags, &err)) {
            dump(err.msg, seed + k);
            printf("JIT error at insn %d: %s\n", err.insn, err.msg);
            return 2;
        }
        /* same buffer for both runs: programs may compute with r1 (the buffer address) */
        memcpy(mem_j, mem_i, MEM);
        memcpy(mem_i, init, MEM);
        uint64_t rj = ebpf_jit_run(&p, (uintptr_t)mem_i, MEM);
        ebpf_jit_free(p.jit_code, p.jit_size);
        if (ri != rj || memcmp(mem_i, mem_j, MEM)) { /* mem_j: interpreter's result, mem_i: JIT's */
            char why[96];
            snprintf(why, sizeof why, "r0 interp=%llx jit=%llx, memory %s", (unsigned long long)ri,
                     (unsigned long long)rj, memcmp(mem_i, mem_j, MEM) ? "differs" : "equal");
            dump(why, seed + k);
            for (int i = 0; i < MEM; i++)
                if (mem_i[i] != mem_j[i]) printf("  mem[%d]: interp %02x jit %02x (initial %02x)\n", i, mem_j[i], mem_i[i], init[i]);
            return 1;
        }
        if (verbose) printf("seed %llu: %u insns, r0 %llx\n", (unsigned long long)(seed + k), n, (unsigned long long)ri);
    }
    printf("nanobpf-fuzz: %llu programs (%llu instructions), interpreter and JIT agree\n", (unsigned long long)count,
           (unsigned long long)insns);
    return 0;
}
