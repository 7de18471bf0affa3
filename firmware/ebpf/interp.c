/* eBPF interpreter (RFC 9669): base64, divmul64, atomic64 and the v4 additions (MOVSX, MEMSX, SDIV/SMOD,
 * BSWAP, JA32). Expects a resolved program (ld_imm64 src 0); a verified program cannot fault, so the
 * checks here are for raw programs run by nanobpf-run and the fuzzer. A fault is reported by the return
 * status (any r0, -1 included, is a program's result), and every opcode the verifier refuses as unknown
 * faults here too (callx, ja/exit with the X bit, neg with the X bit, bswap with the X bit). */
#include <string.h>
#include "ebpf.h"

const struct ebpf_bounds *ebpf_interp_bounds;

struct frame {
    uint64_t saved[4]; /* r6..r9 of the caller */
    uint32_t return_pc;
    uint64_t saved_fp;
    /* a bpf_loop callback's frame: the calls left to make (the frame is entered again after each) */
    uint32_t loop, loop_i, loop_nr, loop_fn;
    uint64_t loop_ctx;
};

static int mem_ok(uint64_t addr, uint32_t size, uint64_t stack_lo, uint64_t stack_hi) {
    const struct ebpf_bounds *b = ebpf_interp_bounds;
    if (!b) return 1;
    if (addr >= stack_lo && addr + size <= stack_hi) return 1;
    return addr >= b->base && addr + size <= b->base + b->size && addr + size >= addr;
}

static uint64_t bswap(uint64_t v, int bits) {
    switch (bits) {
    case 16: return __builtin_bswap16((uint16_t)v);
    case 32: return __builtin_bswap32((uint32_t)v);
    default: return __builtin_bswap64(v);
    }
}

static uint64_t sext(uint64_t v, int bits) {
    return (uint64_t)((int64_t)(v << (64 - bits)) >> (64 - bits));
}

static uint64_t atomic_op(uint64_t addr, int dw, int32_t op, uint64_t src, uint64_t *r0, int *bad) {
    if (dw) {
        uint64_t *p = (uint64_t *)(uintptr_t)addr;
        switch (op) {
        case EBPF_ATOMIC_ADD: case EBPF_ATOMIC_ADD | EBPF_ATOMIC_FETCH: return __atomic_fetch_add(p, src, __ATOMIC_SEQ_CST);
        case EBPF_ATOMIC_OR: case EBPF_ATOMIC_OR | EBPF_ATOMIC_FETCH: return __atomic_fetch_or(p, src, __ATOMIC_SEQ_CST);
        case EBPF_ATOMIC_AND: case EBPF_ATOMIC_AND | EBPF_ATOMIC_FETCH: return __atomic_fetch_and(p, src, __ATOMIC_SEQ_CST);
        case EBPF_ATOMIC_XOR: case EBPF_ATOMIC_XOR | EBPF_ATOMIC_FETCH: return __atomic_fetch_xor(p, src, __ATOMIC_SEQ_CST);
        case EBPF_ATOMIC_XCHG: return __atomic_exchange_n(p, src, __ATOMIC_SEQ_CST);
        case EBPF_ATOMIC_CMPXCHG: {
            uint64_t expected = *r0;
            __atomic_compare_exchange_n(p, &expected, src, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return expected;
        }
        }
    } else {
        uint32_t *p = (uint32_t *)(uintptr_t)addr, s = (uint32_t)src;
        switch (op) {
        case EBPF_ATOMIC_ADD: case EBPF_ATOMIC_ADD | EBPF_ATOMIC_FETCH: return __atomic_fetch_add(p, s, __ATOMIC_SEQ_CST);
        case EBPF_ATOMIC_OR: case EBPF_ATOMIC_OR | EBPF_ATOMIC_FETCH: return __atomic_fetch_or(p, s, __ATOMIC_SEQ_CST);
        case EBPF_ATOMIC_AND: case EBPF_ATOMIC_AND | EBPF_ATOMIC_FETCH: return __atomic_fetch_and(p, s, __ATOMIC_SEQ_CST);
        case EBPF_ATOMIC_XOR: case EBPF_ATOMIC_XOR | EBPF_ATOMIC_FETCH: return __atomic_fetch_xor(p, s, __ATOMIC_SEQ_CST);
        case EBPF_ATOMIC_XCHG: return __atomic_exchange_n(p, s, __ATOMIC_SEQ_CST);
        case EBPF_ATOMIC_CMPXCHG: {
            /* riscv64 gcc 12 compares lr.w's sign-extended word with the untruncated 64-bit R0, so the CAS
             * fails when bit 31 is set: go through a 32-bit signed value it cannot look through. */
            volatile int32_t in = (int32_t)*r0; /* volatile: forces a sign-extended 32-bit value */
            int32_t expected = in;
            __atomic_compare_exchange_n((int32_t *)p, &expected, (int32_t)s, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return (uint32_t)expected;
        }
        }
    }
    *bad = 1;
    return 0;
}

/* ALU on 64-bit values; `is32` selects the 32-bit class (operands truncated, result zero-extended). */
static int alu(const struct ebpf_insn *in, uint64_t *dstp, uint64_t src, int is32) {
    uint64_t dst = *dstp;
    int op = EBPF_OP(in->code);
    if (is32) {
        uint32_t d = (uint32_t)dst, s = (uint32_t)src, r;
        switch (op) {
        case EBPF_ALU_ADD: r = d + s; break;
        case EBPF_ALU_SUB: r = d - s; break;
        case EBPF_ALU_MUL: r = d * s; break;
        case EBPF_ALU_DIV:
            if (in->off == 1) {
                int32_t sd = (int32_t)d, ss = (int32_t)s;
                r = ss == 0 ? 0 : (ss == -1 ? (uint32_t)(-(int64_t)sd) : (uint32_t)(sd / ss));
            } else {
                r = s ? d / s : 0;
            }
            break;
        case EBPF_ALU_MOD:
            if (in->off == 1) {
                int32_t sd = (int32_t)d, ss = (int32_t)s;
                r = ss == 0 ? d : (ss == -1 ? 0 : (uint32_t)(sd % ss));
            } else {
                r = s ? d % s : d;
            }
            break;
        case EBPF_ALU_OR: r = d | s; break;
        case EBPF_ALU_AND: r = d & s; break;
        case EBPF_ALU_XOR: r = d ^ s; break;
        case EBPF_ALU_LSH: r = d << (s & 31); break;
        case EBPF_ALU_RSH: r = d >> (s & 31); break;
        case EBPF_ALU_ARSH: r = (uint32_t)((int32_t)d >> (s & 31)); break;
        case EBPF_ALU_NEG: r = -d; break;
        case EBPF_ALU_MOV:
            if (in->off == 0) r = s;
            else if (in->off == 8 || in->off == 16) r = (uint32_t)sext(s, in->off);
            else return -1;
            break;
        default: return -1;
        }
        *dstp = r;
        return 0;
    }
    switch (op) {
    case EBPF_ALU_ADD: dst += src; break;
    case EBPF_ALU_SUB: dst -= src; break;
    case EBPF_ALU_MUL: dst *= src; break;
    case EBPF_ALU_DIV:
        if (in->off == 1) {
            int64_t sd = (int64_t)dst, ss = (int64_t)src;
            dst = ss == 0 ? 0 : (ss == -1 ? -(uint64_t)sd : (uint64_t)(sd / ss));
        } else {
            dst = src ? dst / src : 0;
        }
        break;
    case EBPF_ALU_MOD:
        if (in->off == 1) {
            int64_t sd = (int64_t)dst, ss = (int64_t)src;
            dst = ss == 0 ? dst : (ss == -1 ? 0 : (uint64_t)(sd % ss));
        } else {
            dst = src ? dst % src : dst;
        }
        break;
    case EBPF_ALU_OR: dst |= src; break;
    case EBPF_ALU_AND: dst &= src; break;
    case EBPF_ALU_XOR: dst ^= src; break;
    case EBPF_ALU_LSH: dst <<= (src & 63); break;
    case EBPF_ALU_RSH: dst >>= (src & 63); break;
    case EBPF_ALU_ARSH: dst = (uint64_t)((int64_t)dst >> (src & 63)); break;
    case EBPF_ALU_NEG: dst = -dst; break;
    case EBPF_ALU_MOV:
        if (in->off == 0) dst = src;
        else if (in->off == 8 || in->off == 16 || in->off == 32) dst = sext(src, in->off);
        else return -1;
        break;
    default: return -1;
    }
    *dstp = dst;
    return 0;
}

#define FAULT(...) do { ebpf_fail(err, (int)pc, __VA_ARGS__); return -1; } while (0)

int ebpf_interp(const struct ebpf_prog *prog, uint64_t r1, uint64_t r2, uint64_t *r0, struct ebpf_error *err) {
    uint64_t reg[EBPF_NREGS] = {0};
    uint64_t stack[EBPF_MAX_CALL_DEPTH * EBPF_STACK_SIZE / 8];
    struct frame frames[EBPF_MAX_CALL_DEPTH];
    unsigned depth = 0;
    const struct ebpf_insn *insns = prog->insns;
    uint32_t n = prog->n_insns, pc = 0;
    uint64_t stack_lo = (uint64_t)(uintptr_t)stack, stack_hi = stack_lo + sizeof stack;

    *r0 = 0;
    reg[1] = r1;
    reg[2] = r2;
    /* Frames grow down: the main program's frame is the top EBPF_STACK_SIZE bytes. */
    reg[EBPF_REG_FP] = stack_hi;
    for (;;) {
        if (pc >= n) FAULT("execution fell off the program at insn %u", pc);
        const struct ebpf_insn *in = &insns[pc];
        uint8_t cls = EBPF_CLASS(in->code);
        uint64_t *dst = &reg[in->dst];
        if (in->dst >= EBPF_NREGS || in->src >= EBPF_NREGS) FAULT("bad register");
        switch (cls) {
        case EBPF_CLS_ALU:
        case EBPF_CLS_ALU64: {
            int is32 = cls == EBPF_CLS_ALU;
            if ((in->code & EBPF_SRC_X) && (EBPF_OP(in->code) == EBPF_ALU_NEG || (!is32 && EBPF_OP(in->code) == EBPF_ALU_END)))
                FAULT("unknown opcode 0x%02x", in->code); /* no source operand: the X bit is not an encoding */
            if (EBPF_OP(in->code) == EBPF_ALU_END) {
                int bits = in->imm;
                if (bits != 16 && bits != 32 && bits != 64) FAULT("bad byte swap width %d", bits);
                if (!is32 || (in->code & EBPF_SRC_X)) *dst = bswap(*dst, bits); /* BSWAP or TO_BE */
                else if (bits < 64) *dst &= (UINT64_C(1) << bits) - 1;       /* TO_LE */
                break;
            }
            uint64_t src = (in->code & EBPF_SRC_X) ? reg[in->src] : (uint64_t)(int64_t)in->imm;
            if (alu(in, dst, src, is32)) FAULT("unknown ALU opcode 0x%02x", in->code);
            break;
        }
        case EBPF_CLS_JMP:
        case EBPF_CLS_JMP32: {
            int op = EBPF_OP(in->code), is32 = cls == EBPF_CLS_JMP32;
            /* callx (0x8d: call the address in a register), and ja/exit with the X bit: not supported */
            if ((in->code & EBPF_SRC_X) && (op == EBPF_JMP_JA || op == EBPF_JMP_CALL || op == EBPF_JMP_EXIT))
                FAULT("unknown opcode 0x%02x", in->code);
            if (op == EBPF_JMP_JA) {
                pc += 1 + (is32 ? in->imm : in->off);
                continue;
            }
            if (op == EBPF_JMP_EXIT && !is32) {
                if (depth == 0) {
                    *r0 = reg[0];
                    return 0;
                }
                struct frame *f = &frames[depth - 1];
                if (f->loop) { /* a bpf_loop callback returned: call it again, or return the calls made */
                    f->loop_i++;
                    if (reg[0] == 0 && f->loop_i < f->loop_nr) {
                        reg[1] = f->loop_i;
                        reg[2] = f->loop_ctx;
                        reg[EBPF_REG_FP] = f->saved_fp - EBPF_STACK_SIZE;
                        pc = f->loop_fn;
                        continue;
                    }
                    reg[0] = f->loop_i;
                }
                depth--;
                memcpy(&reg[6], f->saved, sizeof f->saved);
                reg[EBPF_REG_FP] = f->saved_fp;
                pc = f->return_pc;
                continue;
            }
            if (op == EBPF_JMP_CALL && !is32) {
                if (in->src == EBPF_PSEUDO_CALL) {
                    if (depth + 1 >= EBPF_MAX_CALL_DEPTH) FAULT("call depth exceeds %d frames", EBPF_MAX_CALL_DEPTH);
                    struct frame *f = &frames[depth++];
                    memcpy(f->saved, &reg[6], sizeof f->saved);
                    f->saved_fp = reg[EBPF_REG_FP];
                    f->return_pc = pc + 1;
                    f->loop = 0;
                    reg[EBPF_REG_FP] -= EBPF_STACK_SIZE;
                    pc += 1 + in->imm;
                    continue;
                }
                if (in->src == 0 && in->imm == NANOBPF_HELPER_TAIL_CALL) {
                    /* the program at the PROG_ARRAY's index replaces this one: its first instruction, a
                     * fresh stack, the context in r1 (the verifier keeps tail calls in a program's own
                     * function and r1 the context); on failure the program goes on */
                    uint32_t k;
                    reg[0] = 0; /* as the JIT's helper leaves it (the verifier lets nothing read it) */
                    if (!prog->verified) break; /* r2 need not be a map: the call fails (so in the JIT) */
                    if (depth) FAULT("bpf_tail_call from a subprogram");
                    if (!ebpf_tail_call_target(prog, (struct ebpf_map *)(uintptr_t)reg[2], reg[3], &k)) {
                        reg[EBPF_REG_FP] = stack_hi;
                        pc = prog->prog_start[k];
                        continue;
                    }
                    break;
                }
                if (in->src == 0 && in->imm == NANOBPF_HELPER_LOOP) {
                    /* bpf_loop, run here: the callback is an instruction index (ld_imm64 src
                     * EBPF_PSEUDO_FUNC); its frame is entered once per call (see exit) */
                    uint32_t nr = (uint32_t)reg[1];
                    if (reg[4]) reg[0] = (uint64_t)(int64_t)-NANOBPF_EINVAL;
                    else if (nr > NANOBPF_BPF_MAX_LOOPS) reg[0] = (uint64_t)(int64_t)-NANOBPF_E2BIG;
                    else if (!nr) reg[0] = 0;
                    else {
                        if (reg[2] >= n) FAULT("bpf_loop callback %llu is not an instruction", (unsigned long long)reg[2]);
                        if (depth + 1 >= EBPF_MAX_CALL_DEPTH) FAULT("call depth exceeds %d frames", EBPF_MAX_CALL_DEPTH);
                        struct frame *f = &frames[depth++];
                        memcpy(f->saved, &reg[6], sizeof f->saved);
                        f->saved_fp = reg[EBPF_REG_FP];
                        f->return_pc = pc + 1;
                        f->loop = 1, f->loop_i = 0, f->loop_nr = nr, f->loop_fn = (uint32_t)reg[2], f->loop_ctx = reg[3];
                        reg[EBPF_REG_FP] -= EBPF_STACK_SIZE;
                        reg[1] = 0;
                        reg[2] = f->loop_ctx;
                        pc = f->loop_fn;
                        continue;
                    }
                    break;
                }
                const struct ebpf_helper *h = in->src == 0 ? ebpf_helper_find((uint32_t)in->imm) : NULL;
                if (!h) FAULT("call to unknown helper %d", in->imm);
                reg[0] = h->fn(reg[1], reg[2], reg[3], reg[4], reg[5]);
                break;
            }
            uint64_t src = (in->code & EBPF_SRC_X) ? reg[in->src] : (uint64_t)(int64_t)in->imm;
            int c = ebpf_jmp_cond(op, *dst, src, is32);
            if (c < 0) FAULT("unknown jump opcode 0x%02x", in->code);
            if (c) pc += in->off;
            break;
        }
        case EBPF_CLS_LD: {
            if (in->code != (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW))
                FAULT("unsupported load opcode 0x%02x (legacy packet access)", in->code);
            if (pc + 1 >= n) FAULT("ld_imm64 without its second slot");
            if (in->src == EBPF_PSEUDO_FUNC) { /* a callback: the index of its first instruction */
                *dst = (uint64_t)pc + 1 + (uint64_t)(int64_t)in->imm;
                pc += 2;
                continue;
            }
            if (in->src != 0) FAULT("unresolved ld_imm64 (src %d)", in->src);
            *dst = (uint32_t)in->imm | ((uint64_t)(uint32_t)in[1].imm << 32);
            pc++;
            break;
        }
        case EBPF_CLS_LDX: {
            static const uint8_t sizes[4] = {4, 2, 1, 8};
            uint32_t size = sizes[EBPF_SIZE(in->code) >> 3];
            uint64_t addr = reg[in->src] + (int64_t)in->off;
            int mode = EBPF_MODE(in->code);
            if (mode != EBPF_MODE_MEM && !(mode == EBPF_MODE_MEMSX && size != 8))
                FAULT("unknown load opcode 0x%02x", in->code);
            if (!mem_ok(addr, size, stack_lo, stack_hi)) FAULT("load of %u bytes out of bounds at 0x%llx", size, (unsigned long long)addr);
            uint64_t v = 0;
            memcpy(&v, (const void *)(uintptr_t)addr, size);
            *dst = mode == EBPF_MODE_MEMSX ? sext(v, (int)size * 8) : v;
            break;
        }
        case EBPF_CLS_ST:
        case EBPF_CLS_STX: {
            static const uint8_t sizes[4] = {4, 2, 1, 8};
            uint32_t size = sizes[EBPF_SIZE(in->code) >> 3];
            uint64_t addr = *dst + (int64_t)in->off;
            int mode = EBPF_MODE(in->code);
            if (!mem_ok(addr, size, stack_lo, stack_hi)) FAULT("store of %u bytes out of bounds at 0x%llx", size, (unsigned long long)addr);
            if (cls == EBPF_CLS_STX && mode == EBPF_MODE_ATOMIC) {
                int bad = 0;
                if (size != 4 && size != 8) FAULT("atomic of %u bytes", size);
                uint64_t old = atomic_op(addr, size == 8, in->imm, reg[in->src], &reg[0], &bad);
                if (bad) FAULT("unknown atomic operation 0x%x", in->imm);
                if (size == 4) old = (uint32_t)old;
                if (in->imm == EBPF_ATOMIC_CMPXCHG) reg[0] = old;
                else if (in->imm & EBPF_ATOMIC_FETCH) reg[in->src] = old;
                break;
            }
            if (mode != EBPF_MODE_MEM) FAULT("unknown store opcode 0x%02x", in->code);
            uint64_t v = cls == EBPF_CLS_STX ? reg[in->src] : (uint64_t)(int64_t)in->imm;
            memcpy((void *)(uintptr_t)addr, &v, size);
            break;
        }
        }
        pc++;
    }
}
