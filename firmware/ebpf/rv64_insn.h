/* RV64 instruction encoders for the eBPF JIT: instruction formats first, then one function per
 * mnemonic (RV64IMA, Zifencei, Zba/Zbb subsets, RVC). Immediates and offsets are in bytes and must
 * already fit the format; the JIT checks ranges (rv_fits_*) before it picks a form. */
#ifndef NANOBPF_RV64_INSN_H
#define NANOBPF_RV64_INSN_H

#include <stdint.h>

enum rv_reg {
    RV_REG_ZERO = 0, RV_REG_RA = 1, RV_REG_SP = 2, RV_REG_GP = 3, RV_REG_TP = 4,
    RV_REG_T0 = 5, RV_REG_T1 = 6, RV_REG_T2 = 7,
    RV_REG_S0 = 8, RV_REG_S1 = 9,
    RV_REG_A0 = 10, RV_REG_A1 = 11, RV_REG_A2 = 12, RV_REG_A3 = 13,
    RV_REG_A4 = 14, RV_REG_A5 = 15, RV_REG_A6 = 16, RV_REG_A7 = 17,
    RV_REG_S2 = 18, RV_REG_S3 = 19, RV_REG_S4 = 20, RV_REG_S5 = 21,
    RV_REG_S6 = 22, RV_REG_S7 = 23, RV_REG_S8 = 24, RV_REG_S9 = 25,
    RV_REG_S10 = 26, RV_REG_S11 = 27,
    RV_REG_T3 = 28, RV_REG_T4 = 29, RV_REG_T5 = 30, RV_REG_T6 = 31,
};

/* ---- Range checks ---- */
static inline int rv_fits_signed(int64_t v, unsigned bits) {
    return v >= -((int64_t)1 << (bits - 1)) && v < ((int64_t)1 << (bits - 1));
}
static inline int rv_fits_imm12(int64_t v) { return rv_fits_signed(v, 12); }
/* x8..x15: the registers a compressed 3-bit register field can name */
static inline int rv_is_creg(uint8_t r) { return r >= 8 && r <= 15; }

/* ---- 32-bit formats ---- */
static inline uint32_t rv_r_insn(uint8_t funct7, uint8_t rs2, uint8_t rs1, uint8_t funct3, uint8_t rd,
                                 uint8_t opcode) {
    return (uint32_t)funct7 << 25 | (uint32_t)(rs2 & 31) << 20 | (uint32_t)(rs1 & 31) << 15 |
           (uint32_t)(funct3 & 7) << 12 | (uint32_t)(rd & 31) << 7 | opcode;
}
static inline uint32_t rv_i_insn(int32_t imm, uint8_t rs1, uint8_t funct3, uint8_t rd, uint8_t opcode) {
    return ((uint32_t)imm & 0xfff) << 20 | (uint32_t)(rs1 & 31) << 15 | (uint32_t)(funct3 & 7) << 12 |
           (uint32_t)(rd & 31) << 7 | opcode;
}
static inline uint32_t rv_s_insn(int32_t imm, uint8_t rs2, uint8_t rs1, uint8_t funct3, uint8_t opcode) {
    uint32_t u = (uint32_t)imm;
    return ((u >> 5) & 0x7f) << 25 | (uint32_t)(rs2 & 31) << 20 | (uint32_t)(rs1 & 31) << 15 |
           (uint32_t)(funct3 & 7) << 12 | (u & 0x1f) << 7 | opcode;
}
/* off: byte offset, even, within +-4 KiB */
static inline uint32_t rv_b_insn(int32_t off, uint8_t rs2, uint8_t rs1, uint8_t funct3, uint8_t opcode) {
    uint32_t u = (uint32_t)off;
    return ((u >> 12) & 1) << 31 | ((u >> 5) & 0x3f) << 25 | (uint32_t)(rs2 & 31) << 20 |
           (uint32_t)(rs1 & 31) << 15 | (uint32_t)(funct3 & 7) << 12 | ((u >> 1) & 0xf) << 8 |
           ((u >> 11) & 1) << 7 | opcode;
}
/* imm20: the upper 20 bits (value >> 12) */
static inline uint32_t rv_u_insn(int32_t imm20, uint8_t rd, uint8_t opcode) {
    return ((uint32_t)imm20 & 0xfffff) << 12 | (uint32_t)(rd & 31) << 7 | opcode;
}
/* off: byte offset, even, within +-1 MiB */
static inline uint32_t rv_j_insn(int32_t off, uint8_t rd, uint8_t opcode) {
    uint32_t u = (uint32_t)off;
    return ((u >> 20) & 1) << 31 | ((u >> 1) & 0x3ff) << 21 | ((u >> 11) & 1) << 20 |
           ((u >> 12) & 0xff) << 12 | (uint32_t)(rd & 31) << 7 | opcode;
}
static inline uint32_t rv_amo_insn(uint8_t funct5, uint8_t aq, uint8_t rl, uint8_t rs2, uint8_t rs1,
                                   uint8_t funct3, uint8_t rd, uint8_t opcode) {
    return rv_r_insn((uint8_t)(funct5 << 2 | (aq & 1) << 1 | (rl & 1)), rs2, rs1, funct3, rd, opcode);
}

/* ---- 16-bit (RVC) formats; creg fields take the full register number (x8..x15) ---- */
static inline uint16_t rvc_cr_insn(uint8_t funct4, uint8_t rd, uint8_t rs2, uint8_t op) {
    return (uint16_t)(funct4 << 12 | (rd & 31) << 7 | (rs2 & 31) << 2 | op);
}
/* CI with a 6-bit immediate split as imm[5] | imm[4:0] */
static inline uint16_t rvc_ci_insn(uint8_t funct3, int32_t imm6, uint8_t rd, uint8_t op) {
    uint32_t u = (uint32_t)imm6;
    return (uint16_t)(funct3 << 13 | ((u >> 5) & 1) << 12 | (rd & 31) << 7 | (u & 0x1f) << 2 | op);
}
/* CB arithmetic (c.srli/c.srai/c.andi): funct2 selects the operation */
static inline uint16_t rvc_cb_alu_insn(uint8_t funct3, uint8_t funct2, int32_t imm6, uint8_t rd, uint8_t op) {
    uint32_t u = (uint32_t)imm6;
    return (uint16_t)(funct3 << 13 | ((u >> 5) & 1) << 12 | funct2 << 10 | (rd & 7) << 7 |
                      (u & 0x1f) << 2 | op);
}
/* CB branch: off is a byte offset within +-256 */
static inline uint16_t rvc_cb_insn(uint8_t funct3, int32_t off, uint8_t rs1, uint8_t op) {
    uint32_t u = (uint32_t)off;
    return (uint16_t)(funct3 << 13 | ((u >> 8) & 1) << 12 | ((u >> 3) & 3) << 10 | (rs1 & 7) << 7 |
                      ((u >> 6) & 3) << 5 | ((u >> 1) & 3) << 3 | ((u >> 5) & 1) << 2 | op);
}
/* CA: rd' = rd' op rs2' */
static inline uint16_t rvc_ca_insn(uint8_t funct6, uint8_t rd, uint8_t funct2, uint8_t rs2, uint8_t op) {
    return (uint16_t)(funct6 << 10 | (rd & 7) << 7 | funct2 << 5 | (rs2 & 7) << 2 | op);
}
/* CJ: off is a byte offset within +-2 KiB */
static inline uint16_t rvc_cj_insn(uint8_t funct3, int32_t off, uint8_t op) {
    uint32_t u = (uint32_t)off;
    return (uint16_t)(funct3 << 13 | ((u >> 11) & 1) << 12 | ((u >> 4) & 1) << 11 | ((u >> 8) & 3) << 9 |
                      ((u >> 10) & 1) << 8 | ((u >> 6) & 1) << 7 | ((u >> 7) & 1) << 6 |
                      ((u >> 1) & 7) << 3 | ((u >> 5) & 1) << 2 | op);
}
/* CL/CS with the doubleword offset layout (uimm[5:3] | uimm[7:6]) or the word one (uimm[5:3] | uimm[2|6]) */
static inline uint16_t rvc_cl_d_insn(uint8_t funct3, uint32_t uimm, uint8_t rs1, uint8_t rd, uint8_t op) {
    return (uint16_t)(funct3 << 13 | ((uimm >> 3) & 7) << 10 | (rs1 & 7) << 7 | ((uimm >> 6) & 3) << 5 |
                      (rd & 7) << 2 | op);
}
static inline uint16_t rvc_cl_w_insn(uint8_t funct3, uint32_t uimm, uint8_t rs1, uint8_t rd, uint8_t op) {
    return (uint16_t)(funct3 << 13 | ((uimm >> 3) & 7) << 10 | (rs1 & 7) << 7 | ((uimm >> 2) & 1) << 6 |
                      ((uimm >> 6) & 1) << 5 | (rd & 7) << 2 | op);
}

/* ---- RV64I ---- */
static inline uint32_t rv_lui(uint8_t rd, int32_t imm20) { return rv_u_insn(imm20, rd, 0x37); }
static inline uint32_t rv_auipc(uint8_t rd, int32_t imm20) { return rv_u_insn(imm20, rd, 0x17); }
static inline uint32_t rv_jal(uint8_t rd, int32_t off) { return rv_j_insn(off, rd, 0x6f); }
/* I-type with a 12-bit immediate: loads rd = mem[rs1 + imm], ALU rd = rs1 op imm (funct3, opcode) */
#define RV_I(name, funct3, opcode)                                                          \
    static inline uint32_t rv_##name(uint8_t rd, uint8_t rs1, int32_t imm) {                 \
        return rv_i_insn(imm, rs1, funct3, rd, opcode);                                       \
    }
RV_I(jalr, 0, 0x67)

/* branches: pc += off when rs1 op rs2 (funct3, opcode) */
#define RV_B(name, funct3, opcode)                                                          \
    static inline uint32_t rv_##name(uint8_t rs1, uint8_t rs2, int32_t off) {                 \
        return rv_b_insn(off, rs2, rs1, funct3, opcode);                                      \
    }
RV_B(beq, 0, 0x63)
RV_B(bne, 1, 0x63)
RV_B(blt, 4, 0x63)
RV_B(bge, 5, 0x63)
RV_B(bltu, 6, 0x63)
RV_B(bgeu, 7, 0x63)

RV_I(lb, 0, 0x03)
RV_I(lh, 1, 0x03)
RV_I(lw, 2, 0x03)
RV_I(ld, 3, 0x03)
RV_I(lbu, 4, 0x03)
RV_I(lhu, 5, 0x03)
RV_I(lwu, 6, 0x03)
/* stores: mem[rs1 + imm] = rs2 (funct3, opcode) */
#define RV_S(name, funct3, opcode)                                                          \
    static inline uint32_t rv_##name(uint8_t rs1, int32_t imm, uint8_t rs2) {                 \
        return rv_s_insn(imm, rs2, rs1, funct3, opcode);                                      \
    }
RV_S(sb, 0, 0x23)
RV_S(sh, 1, 0x23)
RV_S(sw, 2, 0x23)
RV_S(sd, 3, 0x23)

RV_I(addi, 0, 0x13)
RV_I(slti, 2, 0x13)
RV_I(sltiu, 3, 0x13)
RV_I(xori, 4, 0x13)
RV_I(ori, 6, 0x13)
RV_I(andi, 7, 0x13)
static inline uint32_t rv_slli(uint8_t rd, uint8_t rs1, unsigned sh) { return rv_i_insn((int32_t)(sh & 63), rs1, 1, rd, 0x13); }
static inline uint32_t rv_srli(uint8_t rd, uint8_t rs1, unsigned sh) { return rv_i_insn((int32_t)(sh & 63), rs1, 5, rd, 0x13); }
static inline uint32_t rv_srai(uint8_t rd, uint8_t rs1, unsigned sh) { return rv_i_insn((int32_t)(0x400 | (sh & 63)), rs1, 5, rd, 0x13); }
RV_I(addiw, 0, 0x1b)
static inline uint32_t rv_slliw(uint8_t rd, uint8_t rs1, unsigned sh) { return rv_i_insn((int32_t)(sh & 31), rs1, 1, rd, 0x1b); }
static inline uint32_t rv_srliw(uint8_t rd, uint8_t rs1, unsigned sh) { return rv_i_insn((int32_t)(sh & 31), rs1, 5, rd, 0x1b); }
static inline uint32_t rv_sraiw(uint8_t rd, uint8_t rs1, unsigned sh) { return rv_i_insn((int32_t)(0x400 | (sh & 31)), rs1, 5, rd, 0x1b); }

/* R-type register-register instructions: rd = rs1 op rs2 (funct7, funct3, opcode) */
#define RV_R(name, funct7, funct3, opcode)                                          \
    static inline uint32_t rv_##name(uint8_t rd, uint8_t rs1, uint8_t rs2) {          \
        return rv_r_insn(funct7, rs2, rs1, funct3, rd, opcode);                       \
    }
RV_R(add, 0, 0, 0x33)
RV_R(sub, 0x20, 0, 0x33)
RV_R(sll, 0, 1, 0x33)
RV_R(slt, 0, 2, 0x33)
RV_R(sltu, 0, 3, 0x33)
RV_R(xor, 0, 4, 0x33)
RV_R(srl, 0, 5, 0x33)
RV_R(sra, 0x20, 5, 0x33)
RV_R(or, 0, 6, 0x33)
RV_R(and, 0, 7, 0x33)
RV_R(addw, 0, 0, 0x3b)
RV_R(subw, 0x20, 0, 0x3b)
RV_R(sllw, 0, 1, 0x3b)
RV_R(srlw, 0, 5, 0x3b)
RV_R(sraw, 0x20, 5, 0x3b)

/* pred/succ: bit set of I=8 O=4 R=2 W=1 */
static inline uint32_t rv_fence(uint8_t pred, uint8_t succ) {
    return rv_i_insn((int32_t)((pred & 15) << 4 | (succ & 15)), 0, 0, 0, 0x0f);
}
static inline uint32_t rv_fence_i(void) { return rv_i_insn(0, 0, 1, 0, 0x0f); }

/* ---- Pseudo-instructions ---- */
static inline uint32_t rv_nop(void) { return rv_addi(RV_REG_ZERO, RV_REG_ZERO, 0); }
static inline uint32_t rv_mv(uint8_t rd, uint8_t rs) { return rv_addi(rd, rs, 0); }
static inline uint32_t rv_neg(uint8_t rd, uint8_t rs) { return rv_sub(rd, RV_REG_ZERO, rs); }
static inline uint32_t rv_sext_w(uint8_t rd, uint8_t rs) { return rv_addiw(rd, rs, 0); }
static inline uint32_t rv_seqz(uint8_t rd, uint8_t rs) { return rv_sltiu(rd, rs, 1); }
static inline uint32_t rv_snez(uint8_t rd, uint8_t rs) { return rv_sltu(rd, RV_REG_ZERO, rs); }
static inline uint32_t rv_j(int32_t off) { return rv_jal(RV_REG_ZERO, off); }
static inline uint32_t rv_ret(void) { return rv_jalr(RV_REG_ZERO, RV_REG_RA, 0); }

/* ---- M ---- */
RV_R(mul, 1, 0, 0x33)
RV_R(mulhu, 1, 3, 0x33)
RV_R(div, 1, 4, 0x33)
RV_R(divu, 1, 5, 0x33)
RV_R(rem, 1, 6, 0x33)
RV_R(remu, 1, 7, 0x33)
RV_R(mulw, 1, 0, 0x3b)
RV_R(divw, 1, 4, 0x3b)
RV_R(divuw, 1, 5, 0x3b)
RV_R(remw, 1, 6, 0x3b)
RV_R(remuw, 1, 7, 0x3b)

/* ---- A: rd = old value, memory = old op rs2; aq/rl order the access ---- */
#define RV_AMO(name, funct5, funct3)                                                               \
    static inline uint32_t rv_##name(uint8_t rd, uint8_t rs2, uint8_t rs1, uint8_t aq, uint8_t rl) { \
        return rv_amo_insn(funct5, aq, rl, rs2, rs1, funct3, rd, 0x2f);                            \
    }
RV_AMO(amoadd_w, 0x00, 2)
RV_AMO(amoswap_w, 0x01, 2)
RV_AMO(amoxor_w, 0x04, 2)
RV_AMO(amoor_w, 0x08, 2)
RV_AMO(amoand_w, 0x0c, 2)
RV_AMO(amoadd_d, 0x00, 3)
RV_AMO(amoswap_d, 0x01, 3)
RV_AMO(amoxor_d, 0x04, 3)
RV_AMO(amoor_d, 0x08, 3)
RV_AMO(amoand_d, 0x0c, 3)
#undef RV_AMO
static inline uint32_t rv_lr_w(uint8_t rd, uint8_t rs1, uint8_t aq, uint8_t rl) { return rv_amo_insn(0x02, aq, rl, 0, rs1, 2, rd, 0x2f); }
static inline uint32_t rv_lr_d(uint8_t rd, uint8_t rs1, uint8_t aq, uint8_t rl) { return rv_amo_insn(0x02, aq, rl, 0, rs1, 3, rd, 0x2f); }
/* rd = 0 when the store happened */
static inline uint32_t rv_sc_w(uint8_t rd, uint8_t rs2, uint8_t rs1, uint8_t aq, uint8_t rl) { return rv_amo_insn(0x03, aq, rl, rs2, rs1, 2, rd, 0x2f); }
static inline uint32_t rv_sc_d(uint8_t rd, uint8_t rs2, uint8_t rs1, uint8_t aq, uint8_t rl) { return rv_amo_insn(0x03, aq, rl, rs2, rs1, 3, rd, 0x2f); }

/* ---- Zba / Zbb ---- */
RV_R(add_uw, 0x04, 0, 0x3b)
static inline uint32_t rv_zext_w(uint8_t rd, uint8_t rs) { return rv_add_uw(rd, rs, RV_REG_ZERO); }
static inline uint32_t rv_sext_b(uint8_t rd, uint8_t rs) { return rv_i_insn(0x604, rs, 1, rd, 0x13); }
static inline uint32_t rv_sext_h(uint8_t rd, uint8_t rs) { return rv_i_insn(0x605, rs, 1, rd, 0x13); }
static inline uint32_t rv_zext_h(uint8_t rd, uint8_t rs) { return rv_r_insn(0x04, 0, rs, 4, rd, 0x3b); }
static inline uint32_t rv_rev8(uint8_t rd, uint8_t rs) { return rv_i_insn(0x6b8, rs, 5, rd, 0x13); }

#undef RV_I
#undef RV_B
#undef RV_S
#undef RV_R

/* ---- RVC (RV64C), rv_c_*: conditions are in the comments; the caller checks them. ---- */
/* rd != 0, imm in [-32, 31], imm != 0 */
static inline uint16_t rv_c_addi(uint8_t rd, int32_t imm) { return rvc_ci_insn(0, imm, rd, 1); }
/* rd != 0, imm in [-32, 31] */
static inline uint16_t rv_c_addiw(uint8_t rd, int32_t imm) { return rvc_ci_insn(1, imm, rd, 1); }
/* rd != 0, imm in [-32, 31] */
static inline uint16_t rv_c_li(uint8_t rd, int32_t imm) { return rvc_ci_insn(2, imm, rd, 1); }
/* rd != 0, 2; imm20 in [-32, 31], nonzero */
static inline uint16_t rv_c_lui(uint8_t rd, int32_t imm20) { return rvc_ci_insn(3, imm20, rd, 1); }
/* sp += imm: imm a nonzero multiple of 16 in [-512, 496] */
static inline uint16_t rv_c_addi16sp(int32_t imm) {
    uint32_t u = (uint32_t)imm;
    return (uint16_t)(3 << 13 | ((u >> 9) & 1) << 12 | RV_REG_SP << 7 | ((u >> 4) & 1) << 6 |
                      ((u >> 6) & 1) << 5 | ((u >> 7) & 3) << 3 | ((u >> 5) & 1) << 2 | 1);
}
/* rd' = sp + imm: imm a nonzero multiple of 4 below 1024 */
static inline uint16_t rv_c_addi4spn(uint8_t rd, uint32_t imm) {
    return (uint16_t)(((imm >> 4) & 3) << 11 | ((imm >> 6) & 15) << 7 | ((imm >> 2) & 1) << 6 |
                      ((imm >> 3) & 1) << 5 | (rd & 7) << 2);
}
/* shifts: sh in [1, 63]; c.slli any rd != 0, c.srli/c.srai rd' */
static inline uint16_t rv_c_slli(uint8_t rd, unsigned sh) { return rvc_ci_insn(0, (int32_t)sh, rd, 2); }
static inline uint16_t rv_c_srli(uint8_t rd, unsigned sh) { return rvc_cb_alu_insn(4, 0, (int32_t)sh, rd, 1); }
static inline uint16_t rv_c_srai(uint8_t rd, unsigned sh) { return rvc_cb_alu_insn(4, 1, (int32_t)sh, rd, 1); }
/* rd', imm in [-32, 31] */
static inline uint16_t rv_c_andi(uint8_t rd, int32_t imm) { return rvc_cb_alu_insn(4, 2, imm, rd, 1); }
/* rd' op= rs2' */
static inline uint16_t rv_c_sub(uint8_t rd, uint8_t rs2) { return rvc_ca_insn(0x23, rd, 0, rs2, 1); }
static inline uint16_t rv_c_xor(uint8_t rd, uint8_t rs2) { return rvc_ca_insn(0x23, rd, 1, rs2, 1); }
static inline uint16_t rv_c_or(uint8_t rd, uint8_t rs2) { return rvc_ca_insn(0x23, rd, 2, rs2, 1); }
static inline uint16_t rv_c_and(uint8_t rd, uint8_t rs2) { return rvc_ca_insn(0x23, rd, 3, rs2, 1); }
static inline uint16_t rv_c_subw(uint8_t rd, uint8_t rs2) { return rvc_ca_insn(0x27, rd, 0, rs2, 1); }
static inline uint16_t rv_c_addw(uint8_t rd, uint8_t rs2) { return rvc_ca_insn(0x27, rd, 1, rs2, 1); }
/* rd, rs != 0 */
static inline uint16_t rv_c_mv(uint8_t rd, uint8_t rs) { return rvc_cr_insn(8, rd, rs, 2); }
static inline uint16_t rv_c_add(uint8_t rd, uint8_t rs) { return rvc_cr_insn(9, rd, rs, 2); }
/* rs != 0 */
static inline uint16_t rv_c_jr(uint8_t rs) { return rvc_cr_insn(8, rs, 0, 2); }
static inline uint16_t rv_c_jalr(uint8_t rs) { return rvc_cr_insn(9, rs, 0, 2); }
/* +-2 KiB */
static inline uint16_t rv_c_j(int32_t off) { return rvc_cj_insn(5, off, 1); }
/* rs1', +-256 bytes */
static inline uint16_t rv_c_beqz(uint8_t rs1, int32_t off) { return rvc_cb_insn(6, off, rs1, 1); }
static inline uint16_t rv_c_bnez(uint8_t rs1, int32_t off) { return rvc_cb_insn(7, off, rs1, 1); }
/* rd', rs1': doubleword offsets multiple of 8 below 256, word offsets multiple of 4 below 128 */
static inline uint16_t rv_c_ld(uint8_t rd, uint8_t rs1, uint32_t off) { return rvc_cl_d_insn(3, off, rs1, rd, 0); }
static inline uint16_t rv_c_sd(uint8_t rs1, uint32_t off, uint8_t rs2) { return rvc_cl_d_insn(7, off, rs1, rs2, 0); }
static inline uint16_t rv_c_lw(uint8_t rd, uint8_t rs1, uint32_t off) { return rvc_cl_w_insn(2, off, rs1, rd, 0); }
static inline uint16_t rv_c_sw(uint8_t rs1, uint32_t off, uint8_t rs2) { return rvc_cl_w_insn(6, off, rs1, rs2, 0); }
/* sp-relative: doubleword offsets multiple of 8 below 512, word offsets multiple of 4 below 256; loads rd != 0 */
static inline uint16_t rv_c_ldsp(uint8_t rd, uint32_t off) {
    return (uint16_t)(3 << 13 | ((off >> 5) & 1) << 12 | (rd & 31) << 7 | ((off >> 3) & 3) << 5 |
                      ((off >> 6) & 7) << 2 | 2);
}
static inline uint16_t rv_c_sdsp(uint32_t off, uint8_t rs2) {
    return (uint16_t)(7 << 13 | ((off >> 3) & 7) << 10 | ((off >> 6) & 7) << 7 | (rs2 & 31) << 2 | 2);
}
static inline uint16_t rv_c_lwsp(uint8_t rd, uint32_t off) {
    return (uint16_t)(2 << 13 | ((off >> 5) & 1) << 12 | (rd & 31) << 7 | ((off >> 2) & 7) << 4 |
                      ((off >> 6) & 3) << 2 | 2);
}
static inline uint16_t rv_c_swsp(uint32_t off, uint8_t rs2) {
    return (uint16_t)(6 << 13 | ((off >> 2) & 15) << 9 | ((off >> 6) & 3) << 7 | (rs2 & 31) << 2 | 2);
}

#endif
