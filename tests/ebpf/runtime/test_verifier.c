/* Host tests of the eBPF verifier (firmware/ebpf/verifier.c): a table of programs written with small
 * instruction macros (in the style of Linux's test_verifier), each with its maps and the expected
 * result (accepted, or rejected at an instruction with a reason substring). Some accepted programs are
 * also run by the interpreter over a frame, which checks the xdp_md rewrite end to end.
 * One file on purpose (about 1,400 lines): the table of test programs is the test; the runner is short.
 *
 *   test_verifier [-v] [-k NAME]      run the table (-v: verifier log of failing tests, -k: one test)
 *   test_verifier --image FILE...     verify device images (nanobpf-load output), print statistics
 *   (VERIFIER_LOG=1 prints the verifier's log of each image, VERIFIER_LOG=2 with the stack slots;
 *   --no-raw-pending encodes every pending branch, --no-relevance compares every scalar)
 *
 * Built and run by tests/ebpf/runtime/run_verifier_tests.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ebpf.h"


/* ---- Instruction macros ---- */
#define I(c, d, s, o, i) {.code = (uint8_t)(c), .dst = (d), .src = (s), .off = (int16_t)(o), .imm = (int32_t)(i)}
#define ALU64_IMM(op, d, i) I(EBPF_CLS_ALU64 | EBPF_SRC_K | EBPF_ALU_##op, d, 0, 0, i)
#define ALU64_REG(op, d, s) I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_##op, d, s, 0, 0)
#define ALU32_IMM(op, d, i) I(EBPF_CLS_ALU | EBPF_SRC_K | EBPF_ALU_##op, d, 0, 0, i)
#define ALU32_REG(op, d, s) I(EBPF_CLS_ALU | EBPF_SRC_X | EBPF_ALU_##op, d, s, 0, 0)
#define MOV64_IMM(d, i) ALU64_IMM(MOV, d, i)
#define MOV64_REG(d, s) ALU64_REG(MOV, d, s)
#define MOV32_IMM(d, i) ALU32_IMM(MOV, d, i)
#define MOV32_REG(d, s) ALU32_REG(MOV, d, s)
#define MOVSX64(d, s, bits) I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, d, s, bits, 0)
#define SDIV64_IMM(d, i) I(EBPF_CLS_ALU64 | EBPF_SRC_K | EBPF_ALU_DIV, d, 0, 1, i)
#define SMOD64_REG(d, s) I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOD, d, s, 1, 0)
#define LDX(sz, d, s, o) I(EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_##sz, d, s, o, 0)
#define LDXSX(sz, d, s, o) I(EBPF_CLS_LDX | EBPF_MODE_MEMSX | EBPF_SIZE_##sz, d, s, o, 0)
#define STX(sz, d, s, o) I(EBPF_CLS_STX | EBPF_MODE_MEM | EBPF_SIZE_##sz, d, s, o, 0)
#define ST(sz, d, o, i) I(EBPF_CLS_ST | EBPF_MODE_MEM | EBPF_SIZE_##sz, d, 0, o, i)
#define ATOMIC(sz, op, d, s, o) I(EBPF_CLS_STX | EBPF_MODE_ATOMIC | EBPF_SIZE_##sz, d, s, o, op)
#define LD_IMM64(d, v) I(0x18, d, 0, 0, (uint32_t)(v)), I(0, 0, 0, 0, (uint64_t)(v) >> 32)
#define LD_MAP(d, m) I(0x18, d, EBPF_PSEUDO_MAP_IDX, 0, m), I(0, 0, 0, 0, 0)
#define LD_MAP_VALUE(d, m, off) I(0x18, d, EBPF_PSEUDO_MAP_IDX_VALUE, 0, m), I(0, 0, 0, 0, off)
#define JMP_IMM(op, d, i, o) I(EBPF_CLS_JMP | EBPF_SRC_K | EBPF_JMP_##op, d, 0, o, i)
#define JMP_REG(op, d, s, o) I(EBPF_CLS_JMP | EBPF_SRC_X | EBPF_JMP_##op, d, s, o, 0)
#define JMP32_IMM(op, d, i, o) I(EBPF_CLS_JMP32 | EBPF_SRC_K | EBPF_JMP_##op, d, 0, o, i)
#define JMP32_REG(op, d, s, o) I(EBPF_CLS_JMP32 | EBPF_SRC_X | EBPF_JMP_##op, d, s, o, 0)
#define JA(o) I(EBPF_CLS_JMP | EBPF_JMP_JA, 0, 0, o, 0)
#define CALL(id) I(EBPF_CLS_JMP | EBPF_JMP_CALL, 0, 0, 0, id)
#define CALL_LOCAL(o) I(EBPF_CLS_JMP | EBPF_JMP_CALL, 0, EBPF_PSEUDO_CALL, 0, o)
#define LD_FUNC(d, o) I(0x18, d, EBPF_PSEUDO_FUNC, 0, o), I(0, 0, 0, 0, 0) /* the function at insn + 1 + o */
#define EXIT() I(EBPF_CLS_JMP | EBPF_JMP_EXIT, 0, 0, 0, 0)
/* r2 = data, r3 = data_end */
#define PKT_PTRS() LDX(W, 2, 1, 0), LDX(W, 3, 1, 4)
/* key (u32) at fp-4 = k; r2 = &key; r1 = map m; call map_lookup_elem: 6 insns */
#define LOOKUP(m, k) ST(W, 10, -4, k), MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -4), LD_MAP(1, m), CALL(1)

#define PROG(...) .insns = (const struct ebpf_insn[]){__VA_ARGS__}, \
                  .n = sizeof((const struct ebpf_insn[]){__VA_ARGS__}) / sizeof(struct ebpf_insn)
#define PKT(...) .pkt = (const uint8_t[]){__VA_ARGS__}, .pkt_len = sizeof((const uint8_t[]){__VA_ARGS__})
#define ARRAY(k, v, n) {NANOBPF_MAP_TYPE_ARRAY, k, v, n}
#define HASH(k, v, n) {NANOBPF_MAP_TYPE_HASH, k, v, n}
#define ANY_INSN -100
#define ACCEPT .accept = 1
#define REJECT(i, msg) .accept = 0, .err_insn = (i), .err = (msg)

struct tmap {
    uint32_t type, key_size, value_size, max_entries;
    const char *name; /* NULL: "map<index>" */
};

struct tcase {
    const char *name;
    const struct ebpf_insn *insns;
    uint32_t n;
    struct tmap maps[3];
    int accept;
    int err_insn;
    const char *err;
    /* optional run of an accepted program by the interpreter */
    const uint8_t *pkt;
    uint32_t pkt_len;
    int run;
    uint64_t ret;
    /* optional extra checks of an accepted program */
    int (*check)(const struct ebpf_prog *prog);
    int relevance; /* verifiable only with the relevance analysis: skipped with --no-relevance */
};

/* The QUIC protection helpers: map 0 the key table, map 1 a hash map with the same key and value sizes. */
#define KEYTABLE(n) {NANOBPF_MAP_TYPE_HASH, NANOBPF_QUIC_CID_SIZE, NANOBPF_QUIC_KEYS_SIZE, n, NANOBPF_KEYTABLE_MAP_NAME}
#define QUIC_MAPS {KEYTABLE(4), HASH(NANOBPF_QUIC_CID_SIZE, NANOBPF_QUIC_KEYS_SIZE, 4)}
#define SEAL NANOBPF_HELPER_QUIC_AEAD_SEAL
#define OPEN NANOBPF_HELPER_QUIC_AEAD_OPEN
#define HP NANOBPF_HELPER_QUIC_HP_MASK
#define PN_OF NANOBPF_HELPER_QUIC_PN_OF
/* map 2: the key table's packet-number map */
#define PN_MAP(n) {NANOBPF_MAP_TYPE_HASH, NANOBPF_QUIC_CID_SIZE, NANOBPF_QUIC_PN_STATE_SIZE, n, NANOBPF_KEYTABLE_PN_MAP_NAME}
#define QUIC_PN_MAPS {KEYTABLE(4), HASH(NANOBPF_QUIC_CID_SIZE, NANOBPF_QUIC_KEYS_SIZE, 4), PN_MAP(4)}
#define KEYS_OF NANOBPF_HELPER_QUIC_KEYS_OF
/* r0 = bpf_quic_keys_of(ctx, map m, dir 1), then when not NULL the access acc to it: 8 insns */
#define KEYS_OF_PROG(m, acc) PROG(LD_MAP(2, m), MOV64_IMM(3, 1), CALL(KEYS_OF), JMP_IMM(JEQ, 0, 0, 1), acc, MOV64_IMM(0, 0), EXIT())
/* keys in r0 from map k, then r0 = bpf_quic_pn_of(map m, keys), read when not NULL: 18 insns */
#define PN_OF_PROG(k, m) PROG(KT_LOOKUP(k), JMP_IMM(JEQ, 0, 0, 7), MOV64_REG(2, 0), LD_MAP(1, m), CALL(PN_OF), \
                              JMP_IMM(JEQ, 0, 0, 2), LDX(DW, 1, 0, 0), MOV64_IMM(0, 0), EXIT())
/* r6 = ctx; a zero connection ID at fp-24; r0 = its lookup in map m: 9 insns */
#define KT_LOOKUP(m) MOV64_REG(6, 1), ST(DW, 10, -8, 0), ST(DW, 10, -16, 0), ST(DW, 10, -24, 0), MOV64_REG(2, 10), \
                     ALU64_IMM(ADD, 2, -24), LD_MAP(1, m), CALL(1)
/* an initialised struct nanobpf_aead_req at fp-48: 3 insns */
#define REQ_ON_STACK() ST(DW, 10, -48, 0), ST(DW, 10, -40, 0), ST(DW, 10, -32, 0)
/* helper(ctx, keys = r<k>, &req, sizeof req): 6 insns */
#define AEAD_CALL(id, k) MOV64_REG(1, 6), MOV64_REG(2, k), MOV64_REG(3, 10), ALU64_IMM(ADD, 3, -48), \
                         MOV64_IMM(4, NANOBPF_AEAD_REQ_SIZE), CALL(id)

/* An Ethernet + IPv4 (IHL 5) + UDP frame to port 53. */
#define ETH_IP_UDP53 \
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00, \
    0x45, 0, 0, 48, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, \
    0x12, 0x34, 0x00, 0x35, 0, 28, 0, 0, \
    'p', 'a', 'y', 'l', 'o', 'a', 'd', '!', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20

static int check_ctx_rewrite(const struct ebpf_prog *p) {
    /* insn 0: data -> LDX DW off 0; insn 1: data_end -> LDX DW off 8 */
    return p->insns[0].code == (EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_DW) && p->insns[0].off == 0 &&
           p->insns[1].code == (EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_DW) &&
           p->insns[1].off == (int16_t)offsetof(struct ebpf_xdp_buff, data_end);
}
static int check_ctx_fields(const struct ebpf_prog *p) {
    return p->insns[0].code == (EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_DW) &&
           p->insns[0].off == (int16_t)offsetof(struct ebpf_xdp_buff, data_meta) &&
           p->insns[1].code == (EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W) &&
           p->insns[1].off == (int16_t)offsetof(struct ebpf_xdp_buff, ingress_ifindex) &&
           p->insns[2].off == (int16_t)offsetof(struct ebpf_xdp_buff, rx_queue_index) &&
           p->insns[3].off == (int16_t)offsetof(struct ebpf_xdp_buff, egress_ifindex);
}
/* the parse-result fields (struct nanobpf_xdp_ctx past xdp_md): 32-bit loads of the runtime's fields */
static int check_ctx_parse_fields(const struct ebpf_prog *p) {
    static const size_t want[6] = {offsetof(struct ebpf_xdp_buff, l3_off),   offsetof(struct ebpf_xdp_buff, l4_off),
                                   offsetof(struct ebpf_xdp_buff, quic_off), offsetof(struct ebpf_xdp_buff, pn_off),
                                   offsetof(struct ebpf_xdp_buff, cid_len),  offsetof(struct ebpf_xdp_buff, conn)};
    for (int k = 0; k < 6; k++)
        if (p->insns[k].code != (EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W) || p->insns[k].off != (int16_t)want[k]) return 0;
    return 1;
}
/* The loop's exits were explored first: one iteration pending at a time, not one per iteration. */
static int check_few_pending(const struct ebpf_prog *p) {
    (void)p;
    return ebpf_verify_last_stats.peak_pending <= 2;
}
static int check_subprogs(const struct ebpf_prog *p) {
    return p->n_subprogs == 2 && p->subprogs[0].start == 0 && p->subprogs[0].stack_depth == 16 &&
           p->subprogs[1].start == 8 && p->subprogs[1].stack_depth == 0;
}

static const struct tcase tests[] = {
    /* ================= must accept ================= */
    {"minimal", PROG(MOV64_IMM(0, 2), EXIT()), ACCEPT, .run = 1, .ret = 2, PKT(1)},
    {"eth_ipv4_udp_parse",
     PROG(PKT_PTRS(),                      /* 0-1 */
          MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 14), JMP_REG(JGT, 4, 3, 16), /* 2-4: -> 21 drop */
          LDX(H, 5, 2, 12), JMP_IMM(JNE, 5, 0x0008, 12),                    /* 5-6: -> 19 pass */
          MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 34), JMP_REG(JGT, 4, 3, 11),   /* 7-9: -> 21 */
          LDX(B, 5, 2, 23), JMP_IMM(JNE, 5, 17, 7),                         /* 10-11: -> 19 */
          MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 42), JMP_REG(JGT, 4, 3, 6),    /* 12-14: -> 21 */
          LDX(H, 5, 2, 36), JMP_IMM(JNE, 5, 0x3500, 2),                     /* 15-16: -> 19 */
          MOV64_IMM(0, 3), EXIT(),                                          /* 17-18 */
          MOV64_IMM(0, 2), EXIT(),                                          /* 19-20 */
          MOV64_IMM(0, 1), EXIT()),                                         /* 21-22 */
     ACCEPT, PKT(ETH_IP_UDP53), .run = 1, .ret = 3, .check = check_ctx_rewrite},
    {"variable_ihl_offset",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 34), JMP_REG(JGT, 4, 3, 12), /* 2-4: -> 17 */
          LDX(B, 5, 2, 14), ALU64_IMM(AND, 5, 0x0f), ALU64_IMM(LSH, 5, 2),           /* 5-7 */
          JMP_IMM(JLT, 5, 20, 8),                                                   /* 8: -> 17 */
          MOV64_REG(6, 2), ALU64_IMM(ADD, 6, 14), ALU64_REG(ADD, 6, 5),             /* 9-11 */
          MOV64_REG(7, 6), ALU64_IMM(ADD, 7, 8), JMP_REG(JGT, 7, 3, 2),             /* 12-14: -> 17 */
          LDX(H, 0, 6, 0), EXIT(),                                                  /* 15-16: src port */
          MOV64_IMM(0, 1), EXIT()),
     ACCEPT, PKT(ETH_IP_UDP53), .run = 1, .ret = 0x3412},
    {"variable_ihl_read_past_range",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 34), JMP_REG(JGT, 4, 3, 12),
          LDX(B, 5, 2, 14), ALU64_IMM(AND, 5, 0x0f), ALU64_IMM(LSH, 5, 2), JMP_IMM(JLT, 5, 20, 8),
          MOV64_REG(6, 2), ALU64_IMM(ADD, 6, 14), ALU64_REG(ADD, 6, 5), MOV64_REG(7, 6), ALU64_IMM(ADD, 7, 8),
          JMP_REG(JGT, 7, 3, 2), LDX(W, 0, 6, 6), EXIT(), MOV64_IMM(0, 1), EXIT()),
     REJECT(15, "invalid access to packet, off=20 size=4, R6 range=22")},
    {"map_lookup_null_check_counter",
     PROG(LOOKUP(0, 1),                                   /* 0-5 */
          JMP_IMM(JEQ, 0, 0, 6),                          /* 6: -> 13 */
          LDX(DW, 1, 0, 0), ALU64_IMM(ADD, 1, 1), STX(DW, 0, 1, 0), /* 7-9 */
          MOV64_IMM(1, 1), ATOMIC(DW, EBPF_ATOMIC_ADD, 0, 1, 0),    /* 10-11 */
          MOV64_IMM(0, 2), EXIT()),                                  /* 12-13 */
     {ARRAY(4, 8, 4)}, ACCEPT, PKT(1), .run = 1, .ret = 2},
    {"map_lookup_jne_form",
     PROG(LOOKUP(0, 0), JMP_IMM(JNE, 0, 0, 2), MOV64_IMM(0, 1), EXIT(), /* 6-8 */
          LDX(W, 0, 0, 4), EXIT()),                                      /* 9-10 */
     {HASH(4, 8, 16)}, ACCEPT},
    {"map_lookup_copy_null_checked",
     /* the null check on r0 also proves its copy r6 */
     PROG(LOOKUP(0, 0), MOV64_REG(6, 0), JMP_IMM(JEQ, 0, 0, 2), LDX(DW, 0, 6, 0), EXIT(), MOV64_IMM(0, 1), EXIT()),
     {ARRAY(4, 8, 1)}, ACCEPT},
    {"map_value_variable_offset_masked",
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 4), LDX(W, 1, 0, 0), ALU64_IMM(AND, 1, 0x38), ALU64_REG(ADD, 0, 1),
          LDX(DW, 0, 0, 0), EXIT()),
     {ARRAY(4, 64, 1)}, ACCEPT},
    {"map_key_from_packet",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 18), JMP_REG(JGT, 4, 3, 7), /* 2-4: -> 12 */
          MOV64_REG(2, 2), ALU64_IMM(ADD, 2, 14), LD_MAP(1, 0), CALL(1),            /* 5-9 */
          MOV64_IMM(0, 2), EXIT(),                                                  /* 10-11 */
          MOV64_IMM(0, 1), EXIT()),
     {HASH(4, 4, 8)}, ACCEPT},
    {"map_update_from_stack",
     PROG(ST(W, 10, -4, 7), ST(DW, 10, -16, 99), MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -4), MOV64_REG(3, 10),
          ALU64_IMM(ADD, 3, -16), MOV64_IMM(4, 0), LD_MAP(1, 0), CALL(2), EXIT()),
     {HASH(4, 8, 8)}, ACCEPT, PKT(1), .run = 1, .ret = 0},
    {"map_value_direct_ld_imm64",
     PROG(LD_MAP_VALUE(1, 0, 8), LDX(DW, 0, 1, 0), EXIT()), {ARRAY(4, 16, 1)}, ACCEPT},
    {"bounded_loop_16_bytes",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 16), JMP_REG(JGT, 4, 3, 9), /* 2-4: -> 14 */
          MOV64_IMM(0, 0), MOV64_IMM(5, 0),                                         /* 5-6 */
          MOV64_REG(4, 2), ALU64_REG(ADD, 4, 5), LDX(B, 6, 4, 0), ALU64_REG(ADD, 0, 6), /* 7-10 loop */
          ALU64_IMM(ADD, 5, 1), JMP_IMM(JLT, 5, 16, -6),                            /* 11-12 */
          EXIT(), MOV64_IMM(0, 1), EXIT()),                                         /* 13-15 */
     ACCEPT, PKT(ETH_IP_UDP53), .run = 1, .ret = 0 + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11 + 8 + 0 + 0x45 + 0},
    {"bounded_loop_checked_each_iteration",
     /* a CID copy: for (i = 0; i < 20; i++) { if (i >= n) break; if (q + i + 1 > end) drop; key[i] = q[i]; }
      * then a lookup with the 24-byte key; n = 8 + (rx_queue_index & 7) */
     PROG(PKT_PTRS(), ST(DW, 10, -24, 0), ST(DW, 10, -16, 0), ST(DW, 10, -8, 0), /* 0-4 */
          LDX(W, 6, 1, 16), ALU64_IMM(AND, 6, 7), ALU64_IMM(ADD, 6, 8),          /* 5-7 */
          MOV64_IMM(5, 0),                                                       /* 8: i */
          JMP_REG(JGE, 5, 6, 12),                                                /* 9: loop head -> 22 */
          MOV64_REG(4, 2), ALU64_REG(ADD, 4, 5), MOV64_REG(7, 4), ALU64_IMM(ADD, 7, 1), /* 10-13 */
          JMP_REG(JGT, 7, 3, 15),                                                /* 14: -> 30 drop */
          LDX(B, 7, 4, 0), MOV64_REG(8, 10), ALU64_IMM(ADD, 8, -24),             /* 15-17 */
          ALU64_REG(ADD, 8, 5), STX(B, 8, 7, 0),                                 /* 18-19: key[i] = q[i] */
          ALU64_IMM(ADD, 5, 1), JMP_IMM(JLT, 5, 20, -13),                        /* 20-21: -> 9 */
          MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -24), LD_MAP(1, 0), CALL(1),       /* 22-26 */
          JMP_IMM(JEQ, 0, 0, 2), LDX(B, 0, 0, 0), EXIT(),                         /* 27-29 */
          MOV64_IMM(0, 1), EXIT()),                                              /* 30-31 */
     {HASH(24, 80, 16)}, ACCEPT, PKT(ETH_IP_UDP53), .run = 1, .ret = 1},
    {"bpf_to_bpf_call_stack_pointer",
     PROG(LD_IMM64(1, 0x1234), STX(DW, 10, 1, -16), MOV64_REG(1, 10), ALU64_IMM(ADD, 1, -16), /* 0-4 */
          CALL_LOCAL(2), LDX(DW, 0, 10, -16), EXIT(),                                        /* 5-7 */
          LDX(DW, 2, 1, 0), ALU64_IMM(ADD, 2, 1), STX(DW, 1, 2, 0), MOV64_IMM(0, 0), EXIT()), /* 8-12 */
     ACCEPT, PKT(1), .run = 1, .ret = 0x1235, .check = check_subprogs},
    {"subprog_void_leaves_r0_unset",
     PROG(CALL_LOCAL(2), MOV64_IMM(0, 2), EXIT(), ST(DW, 10, -8, 0), EXIT()), ACCEPT, PKT(1), .run = 1, .ret = 2},
    {"subprog_void_result_used", PROG(CALL_LOCAL(1), EXIT(), ST(DW, 10, -8, 0), EXIT()),
     REJECT(1, "R0 !read_ok at exit")},
    {"bpf_to_bpf_call_returns_value",
     PROG(MOV64_IMM(1, 5), CALL_LOCAL(1), EXIT(), MOV64_REG(0, 1), ALU64_IMM(MUL, 0, 3), EXIT()),
     ACCEPT, PKT(1), .run = 1, .ret = 15},
    {"spill_fill_packet_pointer",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 8), JMP_REG(JGT, 4, 3, 5), /* 2-4: -> 10 */
          STX(DW, 10, 2, -8), MOV64_IMM(2, 0), LDX(DW, 4, 10, -8), LDX(B, 0, 4, 7), EXIT(), /* 5-9 */
          MOV64_IMM(0, 1), EXIT()),
     ACCEPT, PKT(ETH_IP_UDP53), .run = 1, .ret = 7},
    {"adjust_head_then_rederive",
     PROG(MOV64_REG(6, 1), MOV64_IMM(2, -4), CALL(44), JMP_IMM(JNE, 0, 0, 7),  /* 0-3: -> 11 */
          LDX(W, 2, 6, 0), LDX(W, 3, 6, 4), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 6), /* 4-7 */
          JMP_REG(JGT, 4, 3, 2), LDX(B, 0, 2, 5), EXIT(),                           /* 8-10 */
          MOV64_IMM(0, 1), EXIT()),
     ACCEPT, PKT(ETH_IP_UDP53), .run = 1, .ret = 1},
    {"trace_printk_stack_format",
     PROG(LD_IMM64(1, 0x00000a6425206968ull), STX(DW, 10, 1, -8), MOV64_REG(1, 10), ALU64_IMM(ADD, 1, -8),
          MOV64_IMM(2, 7), MOV64_IMM(3, 42), MOV64_IMM(4, 0), MOV64_IMM(5, 0), CALL(6), MOV64_IMM(0, 2), EXIT()),
     ACCEPT, PKT(1), .run = 1, .ret = 2},
    {"redirect",
     PROG(MOV64_IMM(1, 3), MOV64_IMM(2, 0), CALL(23), EXIT()), ACCEPT},
    {"ctx_all_fields",
     PROG(LDX(W, 2, 1, 8), LDX(W, 3, 1, 12), LDX(W, 4, 1, 16), LDX(W, 5, 1, 20), MOV64_IMM(0, 2), EXIT()),
     ACCEPT, .check = check_ctx_fields},
    {"ctx_parse_fields",
     PROG(LDX(W, 0, 1, 24), LDX(W, 2, 1, 28), LDX(W, 3, 1, 32), LDX(W, 4, 1, 36), LDX(W, 5, 1, 40), LDX(W, 6, 1, 44),
          EXIT()),
     ACCEPT, PKT(1), .run = 1, .ret = 0, .check = check_ctx_parse_fields},
    /* l4_off is at most EBPF_CTX_OFF_MAX: data + l4_off is a packet pointer a bounds check makes readable */
    {"ctx_l4_off_packet_pointer",
     PROG(PKT_PTRS(), LDX(W, 4, 1, 28), ALU64_REG(ADD, 2, 4), MOV64_REG(5, 2), ALU64_IMM(ADD, 5, 8), /* 0-5 */
          JMP_REG(JGT, 5, 3, 2), LDX(H, 0, 2, 2), EXIT(), MOV64_IMM(0, 1), EXIT()),                  /* 6-10 */
     ACCEPT, PKT(ETH_IP_UDP53), .run = 1, .ret = 0x0302}, /* l4_off 0 here: bytes 2-3 */
    {"ctx_l4_off_unchecked", PROG(PKT_PTRS(), LDX(W, 4, 1, 28), ALU64_REG(ADD, 2, 4), LDX(H, 0, 2, 2), EXIT()),
     REJECT(4, "invalid access to packet")},
    {"ctx_parse_field_write", PROG(MOV64_IMM(2, 1), STX(W, 1, 2, 28), MOV64_IMM(0, 0), EXIT()), REJECT(1, "cannot write into ctx")},
    {"pkt_end_jgt_pkt_end_out", PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 4), JMP_REG(JGT, 4, 3, 2), LDX(W, 0, 2, 0), EXIT(), MOV64_IMM(0, 1), EXIT()), ACCEPT},
    {"pkt_end_jge_out", PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 3), JMP_REG(JGE, 4, 3, 2), LDX(W, 0, 2, 0), EXIT(), MOV64_IMM(0, 1), EXIT()), ACCEPT},
    {"pkt_end_end_jlt_pkt_out", PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 4), JMP_REG(JLT, 3, 4, 2), LDX(W, 0, 2, 0), EXIT(), MOV64_IMM(0, 1), EXIT()), ACCEPT},
    {"pkt_end_end_jle_pkt_out", PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 3), JMP_REG(JLE, 3, 4, 2), LDX(W, 0, 2, 0), EXIT(), MOV64_IMM(0, 1), EXIT()), ACCEPT},
    {"pkt_end_jle_in", PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 4), JMP_REG(JLE, 4, 3, 2), MOV64_IMM(0, 1), EXIT(), LDX(W, 0, 2, 0), EXIT()), ACCEPT},
    {"pkt_end_jlt_in", PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 3), JMP_REG(JLT, 4, 3, 2), MOV64_IMM(0, 1), EXIT(), LDX(W, 0, 2, 0), EXIT()), ACCEPT},
    {"pkt_end_end_jge_pkt_in", PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 4), JMP_REG(JGE, 3, 4, 2), MOV64_IMM(0, 1), EXIT(), LDX(W, 0, 2, 0), EXIT()), ACCEPT},
    {"pkt_end_end_jgt_pkt_in", PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 3), JMP_REG(JGT, 3, 4, 2), MOV64_IMM(0, 1), EXIT(), LDX(W, 0, 2, 0), EXIT()), ACCEPT},
    {"pkt_end_jge_off_by_one", PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 3), JMP_REG(JGE, 4, 3, 2), LDX(W, 0, 2, 1), EXIT(), MOV64_IMM(0, 1), EXIT()),
     REJECT(5, "invalid access to packet, off=1 size=4, R2 range=4")},
    {"pkt_end_out_of_bounds_branch", PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 4), JMP_REG(JGT, 4, 3, 2), MOV64_IMM(0, 1), EXIT(), LDX(W, 0, 2, 0), EXIT()),
     REJECT(7, "invalid access to packet, off=0 size=4, R2 range=0")},
    {"pkt_store_in_bounds",
     PROG(MOV64_IMM(0, 1), PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 12), JMP_REG(JGT, 4, 3, 4), LDX(W, 5, 2, 0),
          STX(W, 2, 5, 6), ST(H, 2, 10, 0x1234), MOV64_IMM(0, 3), EXIT()),
     ACCEPT},
    {"jmp32_bounds",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 34), JMP_REG(JGT, 4, 3, 9), /* 2-4: -> 14 */
          LDX(B, 5, 2, 14), ALU32_IMM(AND, 5, 0x0f), ALU32_IMM(LSH, 5, 2), JMP32_IMM(JLT, 5, 20, 5), /* 5-8 */
          JMP32_IMM(JGT, 5, 40, 4), MOV64_REG(6, 2), ALU64_REG(ADD, 6, 5),                    /* 9-11 */
          LDX(B, 0, 6, -20), EXIT(), MOV64_IMM(0, 1), EXIT()),                                /* 12-15 */
     REJECT(12, "invalid access to packet, off=-20 size=1, R6 range=0")},
    {"jmp32_bounds_ok",
     /* ihl in [20, 40] by JMP32 checks; p = data + ihl; p + 14 <= end; p[-6] and p[13] are in the packet */
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 34), JMP_REG(JGT, 4, 3, 13),      /* 2-4: -> 18 */
          LDX(B, 5, 2, 14), ALU32_IMM(AND, 5, 0x0f), ALU32_IMM(LSH, 5, 2), JMP32_IMM(JLT, 5, 20, 9), /* 5-8 */
          JMP32_IMM(JGT, 5, 40, 8), MOV64_REG(6, 2), ALU64_REG(ADD, 6, 5),                   /* 9-11 */
          MOV64_REG(7, 6), ALU64_IMM(ADD, 7, 14), JMP_REG(JGT, 7, 3, 3),                     /* 12-14 */
          LDX(B, 0, 6, -6), LDX(B, 0, 6, 13), EXIT(), MOV64_IMM(0, 1), EXIT()),              /* 15-19 */
     ACCEPT, PKT(ETH_IP_UDP53), .run = 1, .ret = 2},
    {"scalar_copy_refined_by_id",
     /* r6 = r5 (copies); the bound check on r6 also bounds r5 */
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 6),                               /* 0-6: -> 13 */
          LDX(B, 5, 0, 0), MOV64_REG(6, 5), JMP_IMM(JGT, 6, 56, 3),          /* 7-9: -> 13 */
          ALU64_REG(ADD, 0, 5), LDX(DW, 0, 0, 0), EXIT(), MOV64_IMM(0, 0), EXIT()),
     {ARRAY(4, 64, 1)}, ACCEPT},
    {"scalar_copy_link_broken", /* r6 *= 1 leaves the value as it is, but unlinks r6 (only adding a constant keeps links) */
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 7), LDX(B, 5, 0, 0), MOV64_REG(6, 5), ALU64_IMM(MUL, 6, 1),
          JMP_IMM(JGT, 6, 56, 3), ALU64_REG(ADD, 0, 5), LDX(DW, 0, 0, 0), EXIT(), MOV64_IMM(0, 0), EXIT()),
     {ARRAY(4, 64, 1)}, REJECT(12, "invalid access to map value, value_size=64 off=255 size=8")},
    {"spill_fill_u32_keeps_bounds",
     PROG(CALL(7), ALU64_IMM(AND, 0, 15), STX(W, 10, 0, -8), LDX(W, 6, 10, -8), /* 0-3 */
          LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 3), ALU64_REG(ADD, 0, 6), LDX(DW, 0, 0, 0), EXIT(), EXIT()),
     {ARRAY(4, 24, 1)}, ACCEPT},
    {"spill_fill_const",
     PROG(ST(DW, 10, -8, 12), LDX(DW, 6, 10, -8), PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 16),
          JMP_REG(JGT, 4, 3, 3), ALU64_REG(ADD, 2, 6), LDX(W, 0, 2, 0), EXIT(), MOV64_IMM(0, 1), EXIT()),
     ACCEPT},
    {"memsx_unwritten_stack",
     PROG(MOV64_IMM(1, -5), MOVSX64(2, 1, 8), SDIV64_IMM(2, 2), MOV64_IMM(3, 0), SMOD64_REG(1, 3),
          ALU64_REG(DIV, 1, 3), ALU32_REG(MOD, 1, 3), LDXSX(B, 4, 10, -8), MOV64_REG(0, 2), EXIT()),
     REJECT(7, "invalid read from stack off -8+0 size 1")},
    {"alu_semantics_accept",
     PROG(MOV64_IMM(1, -5), MOVSX64(2, 1, 8), SDIV64_IMM(2, 2), MOV64_IMM(3, 0), SMOD64_REG(1, 3),
          ALU64_REG(DIV, 1, 3), ALU32_REG(MOD, 1, 3), I(EBPF_CLS_ALU | EBPF_ALU_END, 2, 0, 0, 16),
          I(EBPF_CLS_ALU64 | EBPF_ALU_END, 2, 0, 0, 32), ALU64_IMM(NEG, 2, 0), ALU64_IMM(ARSH, 2, 3),
          MOV64_REG(0, 2), EXIT()),
     ACCEPT, PKT(1), .run = 1, .ret = (uint64_t)(-(int64_t)0xfeff0000 >> 3)},
    {"atomic_fetch_add_stack",
     PROG(ST(DW, 10, -8, 40), MOV64_IMM(1, 2), ATOMIC(DW, EBPF_ATOMIC_ADD | EBPF_ATOMIC_FETCH, 10, 1, -8),
          LDX(DW, 0, 10, -8), ALU64_REG(ADD, 0, 1), EXIT()),
     ACCEPT, PKT(1), .run = 1, .ret = 82},
    {"cmpxchg_map_value",
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 5), MOV64_REG(6, 0), MOV64_IMM(0, 0), MOV64_IMM(1, 9),
          ATOMIC(DW, EBPF_ATOMIC_CMPXCHG, 6, 1, 8), EXIT(), EXIT()),
     {ARRAY(4, 16, 1)}, ACCEPT},
    {"vlan_loop_pointer_advance",
     /* p = data + 14; proto = data[12..13]; for (i = 0; i < 2 && proto == 0x8100; i++) { if (p + 4 > end) drop;
      * proto = p[2..3]; p += 4; } return proto (as read, little-endian) */
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 14), JMP_REG(JGT, 4, 3, 12), /* 2-4: -> 17 */
          LDX(H, 0, 2, 12), MOV64_IMM(5, 0),                                         /* 5-6 */
          JMP_IMM(JNE, 0, 0x0081, 8), JMP_IMM(JGE, 5, 2, 7),                          /* 7-8: -> 16 */
          MOV64_REG(6, 4), ALU64_IMM(ADD, 6, 4), JMP_REG(JGT, 6, 3, 5),              /* 9-11: -> 17 */
          LDX(H, 0, 4, 2), ALU64_IMM(ADD, 4, 4), ALU64_IMM(ADD, 5, 1), JA(-9),       /* 12-15: -> 7 */
          EXIT(), MOV64_IMM(0, 1), EXIT()),                                          /* 16-18 */
     ACCEPT, PKT(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x81, 0, 0, 5, 0x81, 0, 0, 6, 0x08, 0x00, 0x45, 0, 0, 0),
     .run = 1, .ret = 0x0008},
    {"diamonds_dead_values_prune",
     /* 12 diamonds writing r5 which dies right after: pruning keeps this linear */
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 16), JMP_REG(JGT, 4, 3, 62), /* 2-4: -> 67 */
#define DIAMOND(k) LDX(B, 6, 2, k), JMP_IMM(JGT, 6, 10, 2), MOV64_IMM(5, k), JA(1), MOV64_IMM(5, 100), \
                   ALU64_REG(ADD, 0, 0)
          MOV64_IMM(0, 0),                                                            /* 5 */
          DIAMOND(0), DIAMOND(1), DIAMOND(2), DIAMOND(3), DIAMOND(4), DIAMOND(5), DIAMOND(6), DIAMOND(7),
          DIAMOND(8), DIAMOND(9), EXIT(),                                             /* 6-65, 66 */
          MOV64_IMM(0, 1), EXIT()),                                                   /* 67-68 */
     ACCEPT},
    {"diamonds_live_flags",
     /* 10 independent flags stay live to the end: without precision tracking 2^10 paths */
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 16), JMP_REG(JGT, 4, 3, 32), /* 2-4: -> 37 */
#define FLAG(k) LDX(B, 6, 2, k), JMP_IMM(JGT, 6, 10, 1), ALU64_IMM(OR, 0, 1 << k)
          MOV64_IMM(0, 0),
          FLAG(0), FLAG(1), FLAG(2), FLAG(3), FLAG(4), FLAG(5), FLAG(6), FLAG(7), FLAG(8), FLAG(9), /* 6-35 */
          EXIT(), MOV64_IMM(0, 1), EXIT()),                                                         /* 36-38 */
     ACCEPT},

    /* ---- relevance: a value that differs at a join (the safe side is explored first) must not be
     * pruned away when it reaches a pointer offset, a branch or a helper size through any channel ---- */
#define JOIN_DIAMOND(big, out) PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 8), JMP_REG(JGT, 4, 3, out), \
    LDX(B, 7, 2, 0), MOV64_IMM(5, big), JMP_IMM(JGT, 7, 10, 1), MOV64_IMM(5, 0) /* 0-8, join at 9 */
    {"relevance_via_stack_spill",
     PROG(JOIN_DIAMOND(100, 11), STX(DW, 10, 5, -8), MOV64_IMM(5, 0), JA(0), LDX(DW, 6, 10, -8), ALU64_REG(ADD, 2, 6),
          LDX(B, 0, 2, 0), EXIT(), MOV64_IMM(0, 1), EXIT()),
     REJECT(14, "invalid access to packet, off=100 size=1, R2 range=8")},
    {"relevance_via_stack_spill_safe",
     PROG(JOIN_DIAMOND(4, 11), STX(DW, 10, 5, -8), MOV64_IMM(5, 0), JA(0), LDX(DW, 6, 10, -8), ALU64_REG(ADD, 2, 6),
          LDX(B, 0, 2, 0), EXIT(), MOV64_IMM(0, 1), EXIT()),
     ACCEPT},
    {"relevance_via_callee_argument",
     PROG(JOIN_DIAMOND(100, 8), MOV64_REG(1, 2), MOV64_REG(2, 5), CALL_LOCAL(3), EXIT(), MOV64_IMM(0, 1), EXIT(), /* 9-14 */
          ALU64_REG(ADD, 1, 2), LDX(B, 0, 1, 0), EXIT()),                                                   /* 15-17 */
     REJECT(16, "invalid access to packet, off=100 size=1, R1 range=8")},
    {"relevance_via_return_value",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 8), JMP_REG(JGT, 4, 3, 6), MOV64_REG(6, 2), /* 0-5 */
          LDX(B, 1, 2, 0), CALL_LOCAL(5), ALU64_REG(ADD, 6, 0), LDX(B, 0, 6, 0), EXIT(),          /* 6-10 */
          MOV64_IMM(0, 1), EXIT(),                                                                 /* 11-12 */
          MOV64_IMM(0, 100), JMP_IMM(JGT, 1, 10, 1), MOV64_IMM(0, 0), EXIT()),                      /* 13-16 */
     REJECT(9, "invalid access to packet, off=100 size=1, R6 range=8")},
    {"relevance_via_caller_slot_read_by_callee",
     PROG(JOIN_DIAMOND(100, 9), STX(DW, 10, 5, -8), MOV64_REG(1, 10), ALU64_IMM(ADD, 1, -8), CALL_LOCAL(3), EXIT(), /* 9-13 */
          MOV64_IMM(0, 1), EXIT(),                                                                             /* 14-15 */
          LDX(DW, 3, 1, 0), ALU64_REG(ADD, 2, 3), LDX(B, 0, 2, 0), EXIT()),                                    /* 16-19 */
     REJECT(18, "invalid access to packet, off=100 size=1, R2 range=8")},
    {"relevance_via_caller_slot_written_by_callee",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 8), JMP_REG(JGT, 4, 3, 10), MOV64_REG(6, 2), /* 0-5 */
          LDX(B, 7, 2, 0), MOV64_REG(1, 10), ALU64_IMM(ADD, 1, -8), MOV64_REG(2, 7), CALL_LOCAL(6), /* 6-10 */
          LDX(DW, 3, 10, -8), ALU64_REG(ADD, 6, 3), LDX(B, 0, 6, 0), EXIT(),                       /* 11-14 */
          MOV64_IMM(0, 1), EXIT(),                                                                  /* 15-16 */
          MOV64_IMM(3, 100), JMP_IMM(JGT, 2, 10, 1), MOV64_IMM(3, 0), STX(DW, 1, 3, 0),            /* 17-20 */
          MOV64_IMM(0, 0), EXIT()),                                                                 /* 21-22 */
     REJECT(13, "invalid access to packet, off=100 size=1, R6 range=8")},
    {"relevance_via_scalar_plus_pointer",
     PROG(JOIN_DIAMOND(100, 7), ALU64_REG(ADD, 5, 2), LDX(B, 0, 5, 0), EXIT(), MOV64_IMM(0, 1), EXIT()),
     REJECT(10, "invalid access to packet, off=100 size=1, R5 range=8")},
    {"relevance_via_branch_condition",
     PROG(JOIN_DIAMOND(1, 9), JMP_IMM(JEQ, 5, 1, 2), MOV64_IMM(0, 2), EXIT(), LDX(B, 0, 2, 20), EXIT(), MOV64_IMM(0, 1),
          EXIT()),
     REJECT(12, "invalid access to packet, off=20 size=1, R2 range=8")},
    {"relevance_via_mov32",
     PROG(JOIN_DIAMOND(100, 9), MOV32_REG(6, 5), JA(0), ALU64_REG(ADD, 2, 6), LDX(B, 0, 2, 0), EXIT(), MOV64_IMM(0, 1),
          EXIT()),
     REJECT(12, "invalid access to packet, off=100 size=1, R2 range=8")},
    {"relevance_via_u32_spill",
     PROG(JOIN_DIAMOND(100, 11), STX(W, 10, 5, -4), MOV64_IMM(5, 0), JA(0), LDX(W, 6, 10, -4), ALU64_REG(ADD, 2, 6),
          LDX(B, 0, 2, 0), EXIT(), MOV64_IMM(0, 1), EXIT()),
     REJECT(14, "invalid access to packet, off=100 size=1, R2 range=8")},
    {"relevance_via_helper_size",
     PROG(ST(DW, 10, -8, 0), CALL(7), MOV64_IMM(2, 16), JMP_IMM(JGT, 0, 10, 1), MOV64_IMM(2, 8), MOV64_REG(1, 10),
          ALU64_IMM(ADD, 1, -8), MOV64_IMM(3, 0), MOV64_IMM(4, 0), MOV64_IMM(5, 0), CALL(6), MOV64_IMM(0, 2), EXIT()),
     REJECT(10, "invalid indirect access to stack R1 off=-8 size=16")},
    {"relevance_irrelevant_values_pruned",
     /* the flag word is only stored as a map key: states differing in it are pruned */
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 16), JMP_REG(JGT, 4, 3, 39), /* 2-4: -> 44 */
          MOV64_IMM(0, 0),
          FLAG(0), FLAG(1), FLAG(2), FLAG(3), FLAG(4), FLAG(5), FLAG(6), FLAG(7), FLAG(8), FLAG(9), /* 6-35 */
          STX(W, 10, 0, -4), MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -4), LD_MAP(1, 0), CALL(1), /* 36-41 */
          MOV64_IMM(0, 2), EXIT(), MOV64_IMM(0, 1), EXIT()),
     {ARRAY(4, 8, 1024)}, ACCEPT},

    {"jmp32_bounds_u32_load",
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 5), LDX(W, 5, 0, 0), JMP32_IMM(JGT, 5, 8, 3), ALU64_REG(ADD, 0, 5), /* 0-9 */
          LDX(B, 0, 0, 7), EXIT(), MOV64_IMM(0, 0), EXIT()),
     {ARRAY(4, 16, 1)}, ACCEPT},
    {"jmp32_does_not_bound_64bit_value",
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 5), LDX(DW, 5, 0, 0), JMP32_IMM(JGT, 5, 8, 3), ALU64_REG(ADD, 0, 5),
          LDX(B, 0, 0, 7), EXIT(), MOV64_IMM(0, 0), EXIT()),
     {ARRAY(4, 16, 1)}, REJECT(9, "R0 pointer arithmetic with unbounded scalar")},
    {"pkt_minus_pkt_is_constant",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 10), MOV64_REG(5, 4), ALU64_REG(SUB, 5, 2), /* 0-5 */
          MOV64_REG(6, 2), ALU64_REG(ADD, 6, 5), MOV64_REG(7, 6), ALU64_IMM(ADD, 7, 4),              /* 6-9 */
          JMP_REG(JGT, 7, 3, 2), LDX(W, 0, 6, 0), EXIT(), MOV64_IMM(0, 1), EXIT()),                  /* 10-14 */
     ACCEPT, PKT(ETH_IP_UDP53), .run = 1, .ret = 0x00080b0a},
    {"ld_imm64_src_1_and_2",
     PROG(I(0x18, 6, EBPF_PSEUDO_MAP_VALUE, 0, 0), I(0, 0, 0, 0, 4), LDX(W, 7, 6, 0),               /* 0-2 */
          ST(W, 10, -4, 0), MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -4),                                 /* 3-5 */
          I(0x18, 1, EBPF_PSEUDO_MAP_FD, 0, 0), I(0, 0, 0, 0, 0), CALL(1),                           /* 6-8 */
          JMP_IMM(JEQ, 0, 0, 2), LDX(W, 0, 0, 0), ALU64_REG(ADD, 0, 7), EXIT()),                     /* 9-12 */
     {ARRAY(4, 8, 1)}, ACCEPT, PKT(1), .run = 1, .ret = 0},

    /* ---- scalar views (Linux's): 32-bit and signed bounds, known bits, copies linked with an offset; each
     * accepted program has a twin that reads one byte too far (byte 64 of a 64-byte map value) ---- */
#define VALUE64_OR_EXIT(to) LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, (to) - 7) /* r0 = the value, else to `to`: 7 insns */
#define JMP32_LOW_HALF(off) /* `if w5 > 55` bounds the low half of an unknown 64-bit r5; w6 = w5 */ \
    PROG(VALUE64_OR_EXIT(13), LDX(DW, 5, 0, 0), JMP32_IMM(JGT, 5, 55, 4), MOV32_REG(6, 5),                \
         ALU64_REG(ADD, 0, 6), LDX(B, 0, 0, off), EXIT(), MOV64_IMM(0, 0), EXIT())
    {"jmp32_low_half_of_64bit_value", JMP32_LOW_HALF(8), {ARRAY(4, 64, 1)}, ACCEPT},
    {"jmp32_low_half_of_64bit_value_beyond", JMP32_LOW_HALF(9), {ARRAY(4, 64, 1)},
     REJECT(11, "invalid access to map value, value_size=64 off=64 size=1")},
#define JMP32_SIGNED(off) /* w5 = byte - 10 (s32 -10..245, any u32); -10 s< 0 and 245 s> 40 leave 0..40 */ \
    PROG(VALUE64_OR_EXIT(14), LDX(B, 5, 0, 0), ALU32_IMM(ADD, 5, -10), JMP32_IMM(JSLT, 5, 0, 4),          \
         JMP32_IMM(JSGT, 5, 40, 3), ALU64_REG(ADD, 0, 5), LDX(B, 0, 0, off), EXIT(), MOV64_IMM(0, 0), EXIT())
    {"jmp32_signed_bounds", JMP32_SIGNED(23), {ARRAY(4, 64, 1)}, ACCEPT},
    {"jmp32_signed_bounds_beyond", JMP32_SIGNED(24), {ARRAY(4, 64, 1)},
     REJECT(12, "invalid access to map value, value_size=64 off=64 size=1")},
#define JMP_SIGNED(off) /* r5 = (s8)byte; the upper signed bound first, then the lower */                  \
    PROG(VALUE64_OR_EXIT(13), LDXSX(B, 5, 0, 0), JMP_IMM(JSGT, 5, 40, 4), JMP_IMM(JSLT, 5, 0, 3),          \
         ALU64_REG(ADD, 0, 5), LDX(B, 0, 0, off), EXIT(), MOV64_IMM(0, 0), EXIT())
    {"jmp_signed_bounds", JMP_SIGNED(23), {ARRAY(4, 64, 1)}, ACCEPT},
    {"jmp_signed_bounds_beyond", JMP_SIGNED(24), {ARRAY(4, 64, 1)},
     REJECT(11, "invalid access to map value, value_size=64 off=64 size=1")},
#define JSET_CLEAR(off) /* not r5 & 0xffffffc3 (sign-extended): only bits 2..5 may be set */                \
    PROG(VALUE64_OR_EXIT(12), LDX(DW, 5, 0, 0), JMP_IMM(JSET, 5, 0xffffffc3, 3), ALU64_REG(ADD, 0, 5),      \
         LDX(B, 0, 0, off), EXIT(), MOV64_IMM(0, 0), EXIT())
    {"jset_fallthrough_clears_bits", JSET_CLEAR(3), {ARRAY(4, 64, 1)}, ACCEPT},
    {"jset_fallthrough_clears_bits_beyond", JSET_CLEAR(4), {ARRAY(4, 64, 1)},
     REJECT(10, "invalid access to map value, value_size=64 off=64 size=1")},
#define JSET_BIT(mask) /* r5 = byte & 0x7f; if r5 & mask: r5 - 0x40 indexes the value */                    \
    PROG(VALUE64_OR_EXIT(15), LDX(B, 5, 0, 0), ALU64_IMM(AND, 5, 0x7f), JMP_IMM(JSET, 5, mask, 1), JA(4),  \
         ALU64_IMM(SUB, 5, 0x40), ALU64_REG(ADD, 0, 5), LDX(B, 0, 0, 0), EXIT(), MOV64_IMM(0, 0), EXIT())
    {"jset_single_bit_is_set", JSET_BIT(0x40), {ARRAY(4, 64, 1)}, ACCEPT},
    /* two bits: either may be the one set, nothing is known (as in Linux) but r5 != 0 */
    {"jset_two_bits_unknown", JSET_BIT(0x60), {ARRAY(4, 64, 1)}, REJECT(12, "pointer arithmetic with unbounded scalar")},
#define JSET_DEAD(bit) /* r5 |= bit; if r5 & 1 always jumps when bit is 1: the read after it is dead */       \
    PROG(VALUE64_OR_EXIT(12), LDX(B, 5, 0, 0), ALU64_IMM(OR, 5, bit), JMP_IMM(JSET, 5, 1, 2),                \
         LDX(B, 0, 0, 64), EXIT(), MOV64_IMM(0, 0), EXIT())
    {"jset_decides_branch", JSET_DEAD(1), {ARRAY(4, 64, 1)}, ACCEPT},
    {"jset_undecided_branch", JSET_DEAD(2), {ARRAY(4, 64, 1)},
     REJECT(10, "invalid access to map value, value_size=64 off=64 size=1")},
#define LINKED_OFFSET(k) /* r6 = r5; r5 += k (linked: r6 + k); r6 <= 56 bounds r5 to k..56 + k */            \
    PROG(VALUE64_OR_EXIT(14), LDX(B, 5, 0, 0), MOV64_REG(6, 5), ALU64_IMM(ADD, 5, k), JMP_IMM(JGT, 6, 56, 3), \
         ALU64_REG(ADD, 0, 5), LDX(B, 0, 0, 0), EXIT(), MOV64_IMM(0, 0), EXIT())
    {"linked_copy_with_offset", LINKED_OFFSET(7), {ARRAY(4, 64, 1)}, ACCEPT},
    {"linked_copy_with_offset_beyond", LINKED_OFFSET(8), {ARRAY(4, 64, 1)},
     REJECT(12, "invalid access to map value, value_size=64 off=64 size=1")},
#define MUL_BITS(k) /* byte * k & 7: 0 for k = 8 (the product's known low bits), 0 or 4 for k = 4 */          \
    PROG(VALUE64_OR_EXIT(13), LDX(B, 5, 0, 0), ALU64_IMM(MUL, 5, k), ALU64_IMM(AND, 5, 7), ALU64_REG(ADD, 0, 5), \
         LDX(B, 0, 0, 60), EXIT(), MOV64_IMM(0, 0), EXIT())
    {"mul_known_low_bits", MUL_BITS(8), {ARRAY(4, 64, 1)}, ACCEPT},
    {"mul_known_low_bits_beyond", MUL_BITS(4), {ARRAY(4, 64, 1)},
     REJECT(11, "invalid access to map value, value_size=64 off=64 size=1")},
    {"pointer_difference_32bit", /* w3 = data_end - data (clang -mcpu=v3's `__u32 len = end - data`) */
     PROG(PKT_PTRS(), ALU32_REG(SUB, 3, 2), MOV64_REG(0, 3), EXIT()), ACCEPT, PKT(1, 2, 3, 4), .run = 1, .ret = 4},
    /* w5 = w6 + 1 wraps to 0 at w6 = 0xffffffff: a 32-bit add does not link r5 to r6 + 1 */
    {"alu32_add_unlinks_copy",
     PROG(VALUE64_OR_EXIT(14), LDX(W, 5, 0, 0), MOV64_REG(6, 5), ALU32_IMM(ADD, 5, 1),              /* 7-9 */
          JMP32_IMM(JLT, 6, 0xffffffc0, 3), JMP_IMM(JNE, 5, 0, 2), LDX(B, 0, 0, 64), EXIT(),      /* 10-13 */
          MOV64_IMM(0, 0), EXIT()),
     {ARRAY(4, 64, 1)}, REJECT(12, "invalid access to map value, value_size=64 off=64 size=1")},
    /* pruning compares every view: after the JA (insn 13 or 14) the state explored first (the fall-through
     * of insn 11 or 9) has the same unsigned range as the second but narrower known bits / signed / 32-bit
     * bounds, and only those make it safe */
    {"prune_compares_known_bits", /* 0..60 with bits 0, 1 clear, or any 0..60 */
     PROG(VALUE64_OR_EXIT(18), LDX(DW, 7, 0, 0), MOV64_REG(5, 7), ALU64_IMM(AND, 5, 0x3f), JMP_IMM(JGT, 5, 60, 7),
          JMP_IMM(JGT, 7, 1000, 1), ALU64_IMM(AND, 5, 0x3c), JA(0),                             /* 11-13 */
          ALU64_IMM(AND, 5, 3), ALU64_REG(ADD, 0, 5), LDX(DW, 0, 0, 56), EXIT(), MOV64_IMM(0, 0), EXIT()),
     {ARRAY(4, 64, 1)}, REJECT(16, "invalid access to map value, value_size=64")},
    {"prune_compares_signed_bounds", /* (s32)x << 8 or x << 8: only their signed bounds differ */
     PROG(VALUE64_OR_EXIT(19), LDX(DW, 5, 0, 0), LDX(B, 7, 0, 8), JMP_IMM(JGT, 7, 10, 1),                 /* 7-9 */
          LDXSX(W, 5, 0, 0), ALU64_IMM(LSH, 5, 8), JA(0), ALU64_IMM(ARSH, 5, 8),                       /* 10-13 */
          JMP_IMM(JSLT, 5, 0, 4), JMP32_IMM(JGT, 5, 60, 3), ALU64_REG(ADD, 0, 5), LDX(B, 0, 0, 0), EXIT(), /* 14-18 */
          MOV64_IMM(0, 0), EXIT()),
     {ARRAY(4, 64, 1)}, REJECT(16, "pointer arithmetic with unbounded scalar")},
    {"prune_compares_32bit_bounds", /* low half -5..26 as s32, or any 32-bit value */
     PROG(VALUE64_OR_EXIT(18), LDX(W, 5, 0, 0), LDX(B, 7, 0, 8), JMP_IMM(JGT, 7, 10, 3),                  /* 7-9 */
          LDX(B, 5, 0, 9), ALU64_IMM(AND, 5, 31), ALU32_IMM(ADD, 5, -5), JA(0),                        /* 10-13 */
          ALU32_IMM(ADD, 5, 5), ALU64_REG(ADD, 0, 5), LDX(B, 0, 0, 0), EXIT(), MOV64_IMM(0, 0), EXIT()),
     {ARRAY(4, 64, 1)}, REJECT(15, "pointer arithmetic with unbounded scalar")},
    {"loop_exit_explored_first",
     /* for (i = 0; i < 1522; i++) { if (data + i + 1 > end) break; sum += data[i]; } */
     PROG(PKT_PTRS(), MOV64_IMM(0, 0), MOV64_IMM(4, 0),                                         /* 0-3 */
          MOV64_REG(5, 2), ALU64_REG(ADD, 5, 4), MOV64_REG(6, 5), ALU64_IMM(ADD, 6, 1), JMP_REG(JGT, 6, 3, 4), /* 4-8 */
          LDX(B, 6, 5, 0), ALU64_REG(ADD, 0, 6), ALU64_IMM(ADD, 4, 1), JMP_IMM(JLT, 4, 1522, -9), /* 9-12 */
          EXIT()),
     ACCEPT, PKT(1, 2, 3, 4), .run = 1, .ret = 10, .check = check_few_pending},
    {"loop_if_sides_joined",
     /* the same loop counting newlines (if (data[i] == 10) n++): the if's two sides are followed to their
      * join at once, and the one the other covers ends there instead of pending for the rest of the loop */
     PROG(PKT_PTRS(), MOV64_IMM(0, 0), MOV64_IMM(4, 0),                                         /* 0-3 */
          MOV64_REG(5, 2), ALU64_REG(ADD, 5, 4), MOV64_REG(6, 5), ALU64_IMM(ADD, 6, 1), JMP_REG(JGT, 6, 3, 5), /* 4-8 */
          LDX(B, 6, 5, 0), JMP_IMM(JNE, 6, 10, 1), ALU64_IMM(ADD, 0, 1),                        /* 9-11 */
          ALU64_IMM(ADD, 4, 1), JMP_IMM(JLT, 4, 1522, -10), EXIT()),                           /* 12-14 */
     ACCEPT, PKT(10, 1, 10, 10), .run = 1, .ret = 3, .check = check_few_pending, .relevance = 1},
    {"loop_if_sides_differ", /* the if's taken side reads data[100]: it must be explored too */
     PROG(PKT_PTRS(), MOV64_IMM(0, 0), MOV64_IMM(4, 0),                                         /* 0-3 */
          MOV64_REG(5, 2), ALU64_REG(ADD, 5, 4), MOV64_REG(6, 5), ALU64_IMM(ADD, 6, 1), JMP_REG(JGT, 6, 3, 10), /* 4-8 */
          LDX(B, 6, 5, 0), MOV64_IMM(7, 100), JMP_IMM(JNE, 6, 10, 1), MOV64_IMM(7, 0), JA(0),    /* 9-13 */
          MOV64_REG(8, 2), ALU64_REG(ADD, 8, 7), LDX(B, 0, 8, 0),                                /* 14-16 */
          ALU64_IMM(ADD, 4, 1), JMP_IMM(JLT, 4, 64, -15), EXIT()),                              /* 17-19 */
     REJECT(16, "invalid access to packet")},

    /* ================= must reject ================= */
    {"map_value_difference_is_unknown",
     /* two lookups in one map may return different elements: v1 - v2 is not 0 */
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 12), MOV64_REG(6, 0), LOOKUP(0, 1), JMP_IMM(JEQ, 0, 0, 5), /* 0-13 */
          MOV64_REG(7, 0), ALU64_REG(SUB, 7, 6), ALU64_REG(ADD, 0, 7), LDX(B, 0, 0, 0), EXIT(),    /* 14-18 */
          MOV64_IMM(0, 0), EXIT()),                                                                /* 19-20 */
     {ARRAY(4, 8, 2)}, REJECT(17, "R0 pointer arithmetic with unbounded scalar")},
    {"pkt_oob_read",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 14), JMP_REG(JGT, 4, 3, 2), LDX(H, 0, 2, 14), EXIT(),
          MOV64_IMM(0, 1), EXIT()),
     REJECT(5, "invalid access to packet, off=14 size=2, R2 range=14")},
    {"pkt_missing_bounds_check", PROG(PKT_PTRS(), LDX(B, 0, 2, 0), EXIT()),
     REJECT(2, "invalid access to packet, off=0 size=1, R2 range=0")},
    {"pkt_read_past_proven_range",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 14), JMP_REG(JGT, 4, 3, 2), LDX(W, 0, 2, 12), EXIT(),
          MOV64_IMM(0, 1), EXIT()),
     REJECT(5, "invalid access to packet, off=12 size=4, R2 range=14")},
    {"pkt_unbounded_variable_offset",
     PROG(PKT_PTRS(), LDX(W, 5, 2, 0), ALU64_REG(ADD, 2, 5), MOV64_IMM(0, 0), EXIT()),
     REJECT(2, "invalid access to packet, off=0 size=4, R2 range=0")},
    {"pkt_pointer_unbounded_scalar",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 8), JMP_REG(JGT, 4, 3, 4), LDX(DW, 5, 2, 0),
          ALU64_REG(ADD, 2, 5), MOV64_IMM(0, 0), EXIT(), MOV64_IMM(0, 1), EXIT()),
     REJECT(6, "pointer arithmetic with unbounded scalar")},
    {"unbounded_loop",
     PROG(CALL(7), MOV64_REG(1, 0), ALU64_IMM(ADD, 1, -1), JMP_IMM(JNE, 1, 0, -2), MOV64_IMM(0, 2), EXIT()),
     REJECT(ANY_INSN, "program too complex")},
    {"infinite_loop_no_exit", PROG(MOV64_IMM(0, 0), JA(-1)), REJECT(1, "back-edge from insn 1 to 1")},
    {"infinite_loop_same_state", PROG(MOV64_IMM(0, 0), JMP_IMM(JEQ, 0, 0, -1), EXIT()),
     REJECT(1, "infinite loop detected")},
    {"infinite_loop_stack_counter_reset",
     /* for (i = 0; i < 10; i++) i = 0; through a stack slot */
     PROG(ST(DW, 10, -8, 0), LDX(DW, 1, 10, -8), ALU64_IMM(ADD, 1, 1), JMP_IMM(JGE, 1, 10, 2), ST(DW, 10, -8, 0),
          JA(-5), MOV64_IMM(0, 2), EXIT()),
     REJECT(1, "infinite loop detected")},
    {"helper_scalar_as_map",
     PROG(ST(W, 10, -4, 0), MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -4), MOV64_IMM(1, 0), CALL(1), MOV64_IMM(0, 0), EXIT()),
     REJECT(4, "R1 type=scalar expected=map_ptr")},
    {"helper_uninitialised_key",
     PROG(MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -4), LD_MAP(1, 0), CALL(1), MOV64_IMM(0, 0), EXIT()), {ARRAY(4, 8, 1)},
     REJECT(4, "invalid indirect read from stack R2 off -4+0 size 4")},
    {"helper_key_too_short",
     PROG(ST(W, 10, -4, 0), MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -4), LD_MAP(1, 0), CALL(1), MOV64_IMM(0, 0), EXIT()),
     {HASH(8, 8, 4)}, REJECT(5, "invalid indirect access to stack R2 off=-4 size=8")},
    {"helper_ctx_arg_not_ctx", PROG(MOV64_REG(1, 10), MOV64_IMM(2, 0), CALL(44), EXIT()),
     REJECT(2, "R1 type=fp expected=ctx")},
    {"helper_zero_size", PROG(ST(DW, 10, -8, 0), MOV64_REG(1, 10), ALU64_IMM(ADD, 1, -8), MOV64_IMM(2, 0),
                              MOV64_IMM(3, 0), MOV64_IMM(4, 0), MOV64_IMM(5, 0), CALL(6), EXIT()),
     REJECT(7, "R2 invalid zero-sized read")},
    {"helper_uninit_anything_arg", PROG(MOV64_IMM(1, 3), CALL(23), EXIT()), REJECT(1, "R2 !read_ok")},
    {"unknown_helper", PROG(CALL(999), EXIT()), REJECT(0, "unknown helper id 999")},
    /* bpf_tail_call: a PROG_ARRAY, the unmodified context; r0 not set when it falls through (Linux: void) */
    /* bpf_ringbuf_reserve: a reference every path gives back once (submit or discard) */
    {"ringbuf_tail_call_with_record",
     PROG(MOV64_REG(7, 1), LD_MAP(1, 0), MOV64_IMM(2, 8), MOV64_IMM(3, 0), CALL(NANOBPF_HELPER_RINGBUF_RESERVE),
          JMP_IMM(JEQ, 0, 0, 11), MOV64_REG(6, 0), MOV64_REG(1, 7), LD_MAP(2, 1), MOV64_IMM(3, 0),
          CALL(NANOBPF_HELPER_TAIL_CALL), MOV64_REG(1, 6), MOV64_IMM(2, 0), CALL(NANOBPF_HELPER_RINGBUF_SUBMIT),
          MOV64_IMM(0, 2), EXIT(), MOV64_IMM(0, 2), EXIT()),
     {{NANOBPF_MAP_TYPE_RINGBUF, 0, 0, 4096}, {NANOBPF_MAP_TYPE_PROG_ARRAY, 4, 4, 4}},
     REJECT(12, "tail_call would lead to reference leak")},
    {"ringbuf_submit_twice",
     PROG(LD_MAP(1, 0), MOV64_IMM(2, 8), MOV64_IMM(3, 0), CALL(NANOBPF_HELPER_RINGBUF_RESERVE), JMP_IMM(JEQ, 0, 0, 9),
          MOV64_REG(6, 0), MOV64_REG(1, 6), MOV64_IMM(2, 0), CALL(NANOBPF_HELPER_RINGBUF_SUBMIT), MOV64_REG(1, 6),
          MOV64_IMM(2, 0), CALL(NANOBPF_HELPER_RINGBUF_DISCARD), MOV64_IMM(0, 2), EXIT(), MOV64_IMM(0, 2), EXIT()),
     {{NANOBPF_MAP_TYPE_RINGBUF, 0, 0, 4096}}, REJECT(12, "R1 type=scalar expected=ringbuf_mem")},
    {"ringbuf_size_unknown",
     PROG(LDX(W, 2, 1, 12), LD_MAP(1, 0), MOV64_IMM(3, 0), CALL(NANOBPF_HELPER_RINGBUF_RESERVE), MOV64_IMM(0, 2), EXIT()),
     {{NANOBPF_MAP_TYPE_RINGBUF, 0, 0, 4096}}, REJECT(4, "R2 is not a known constant")},
    /* found by review: pruning must keep what the helpers' checks look at */
    {"ringbuf_reserve_on_array",
     PROG(LD_MAP(1, 0), MOV64_IMM(2, 8), MOV64_IMM(3, 0), CALL(NANOBPF_HELPER_RINGBUF_RESERVE), MOV64_IMM(0, 2), EXIT()),
     {ARRAY(4, 8, 1)}, REJECT(4, "helper ringbuf_reserve: map map0 is not a RINGBUF")},
    {"ringbuf_size_not_pruned", /* the 512-byte path stored at insn 5 does not cover the 8-byte one */
     PROG(CALL(7), JMP_IMM(JEQ, 0, 0, 2), MOV64_IMM(2, 512), JA(1), MOV64_IMM(2, 8), LD_MAP(1, 0), MOV64_IMM(3, 0),
          CALL(NANOBPF_HELPER_RINGBUF_RESERVE), JMP_IMM(JEQ, 0, 0, 4), ST(DW, 0, 504, 0), MOV64_REG(1, 0),
          MOV64_IMM(2, 0), CALL(NANOBPF_HELPER_RINGBUF_SUBMIT), MOV64_IMM(0, 2), EXIT()),
     {{NANOBPF_MAP_TYPE_RINGBUF, 0, 0, 4096}}, REJECT(10, "invalid access to memory, mem_size=8 off=504 size=8")},
    {"loop_context_scalar_not_pruned", /* NULL stored at the call does not cover another number */
     PROG(CALL(7), MOV64_REG(3, 0), JMP_IMM(JNE, 0, 0, 1), MOV64_IMM(3, 0), LD_FUNC(2, 6), MOV64_IMM(1, 1),
          MOV64_IMM(4, 0), CALL(NANOBPF_HELPER_LOOP), MOV64_IMM(0, 2), EXIT(),
          JMP_IMM(JEQ, 2, 0, 1), STX(DW, 2, 1, 0), MOV64_IMM(0, 0), EXIT()),
     REJECT(8, "R3 type=scalar expected=fp or NULL")},
    {"ringbuf_records_not_confused", /* r7 = record A does not prune against r7 = record B */
     PROG(LD_MAP(1, 0), MOV64_IMM(2, 8), MOV64_IMM(3, 0), CALL(NANOBPF_HELPER_RINGBUF_RESERVE), MOV64_REG(6, 0),
          LD_MAP(1, 0), MOV64_IMM(2, 8), MOV64_IMM(3, 0), CALL(NANOBPF_HELPER_RINGBUF_RESERVE), MOV64_REG(7, 0),
          JMP_IMM(JEQ, 6, 0, 19), JMP_IMM(JEQ, 7, 0, 13), CALL(7), JMP_IMM(JEQ, 0, 0, 1), JA(1), MOV64_REG(7, 6),
          MOV64_REG(1, 6), MOV64_IMM(2, 0), CALL(NANOBPF_HELPER_RINGBUF_SUBMIT), ST(DW, 7, 0, 1), MOV64_REG(1, 7),
          MOV64_IMM(2, 0), CALL(NANOBPF_HELPER_RINGBUF_SUBMIT), MOV64_IMM(0, 2), EXIT(),
          MOV64_REG(1, 6), MOV64_IMM(2, 0), CALL(NANOBPF_HELPER_RINGBUF_DISCARD), MOV64_IMM(0, 2), EXIT(),
          JMP_IMM(JEQ, 7, 0, 3), MOV64_REG(1, 7), MOV64_IMM(2, 0), CALL(NANOBPF_HELPER_RINGBUF_DISCARD), MOV64_IMM(0, 2),
          EXIT()),
     {{NANOBPF_MAP_TYPE_RINGBUF, 0, 0, 4096}}, REJECT(21, "R7 invalid mem access 'scalar'")},
    {"tail_call_goes_on", PROG(LD_MAP(2, 0), MOV64_IMM(3, 1), CALL(NANOBPF_HELPER_TAIL_CALL), MOV64_IMM(0, 2), EXIT()),
     {{NANOBPF_MAP_TYPE_PROG_ARRAY, 4, 4, 4}}, ACCEPT, .run = 1, .ret = 2, PKT(1)},
    {"tail_call_leaves_r0_unset", PROG(LD_MAP(2, 0), MOV64_IMM(3, 1), CALL(NANOBPF_HELPER_TAIL_CALL), EXIT()),
     {{NANOBPF_MAP_TYPE_PROG_ARRAY, 4, 4, 4}}, REJECT(4, "R0 !read_ok")},
    {"tail_call_needs_prog_array", PROG(LD_MAP(2, 0), MOV64_IMM(3, 1), CALL(NANOBPF_HELPER_TAIL_CALL), MOV64_IMM(0, 2), EXIT()),
     {ARRAY(4, 4, 4)}, REJECT(3, "helper tail_call: map map0 is not a PROG_ARRAY")},
    {"tail_call_moved_context", PROG(ALU64_IMM(ADD, 1, 8), LD_MAP(2, 0), MOV64_IMM(3, 1), CALL(NANOBPF_HELPER_TAIL_CALL),
                                     MOV64_IMM(0, 2), EXIT()),
     {{NANOBPF_MAP_TYPE_PROG_ARRAY, 4, 4, 4}}, REJECT(4, "dereference of modified ctx ptr R1 off=8 disallowed")},
    {"kfunc_call", PROG(I(EBPF_CLS_JMP | EBPF_JMP_CALL, 0, 2, 0, 5), EXIT()), REJECT(0, "kfunc calls not supported")},
    {"legacy_ld_abs", PROG(I(EBPF_CLS_LD | EBPF_MODE_ABS | EBPF_SIZE_B, 0, 0, 0, 12), EXIT()),
     REJECT(0, "legacy packet access")},
    {"uninitialised_register", PROG(MOV64_REG(0, 3), EXIT()), REJECT(0, "R3 !read_ok")},
    {"r0_not_set_at_exit", PROG(EXIT()), REJECT(0, "R0 !read_ok at exit")},
    /* privileged Linux: a pointer is an action too (none of the five: the runtime aborts) */
    {"r0_pointer_at_exit", PROG(MOV64_REG(0, 10), EXIT()), ACCEPT},
    {"r0_not_init_at_exit", PROG(MOV64_REG(2, 1), EXIT()), REJECT(1, "R0 !read_ok at exit")},
    {"stack_below_512", PROG(ST(DW, 10, -520, 0), MOV64_IMM(0, 0), EXIT()),
     REJECT(0, "invalid stack access off=-520 size=8")},
    {"stack_above_fp", PROG(ST(W, 10, 0, 0), MOV64_IMM(0, 0), EXIT()), REJECT(0, "invalid stack access off=0 size=4")},
    {"stack_misaligned", PROG(ST(W, 10, -6, 0), MOV64_IMM(0, 0), EXIT()), REJECT(0, "misaligned stack access off=-6 size=4")},
    {"stack_combined_call_chain",
     PROG(ST(DW, 10, -304, 0), CALL_LOCAL(1), EXIT(), ST(DW, 10, -256, 0), MOV64_IMM(0, 2), EXIT()),
     REJECT(1, "combined stack size of 2 calls is 560")},
    {"stack_read_unwritten", PROG(LDX(DW, 0, 10, -16), EXIT()), REJECT(0, "invalid read from stack off -16+0 size 8")},
    {"stack_read_partly_written", PROG(ST(W, 10, -16, 1), LDX(DW, 0, 10, -16), EXIT()),
     REJECT(1, "invalid read from stack off -16+4 size 8")},
    {"stack_partial_pointer_fill", PROG(STX(DW, 10, 1, -8), LDX(W, 0, 10, -8), EXIT()),
     REJECT(1, "invalid size of register fill")},
    {"stack_variable_offset", PROG(CALL(7), ALU64_IMM(AND, 0, 8), MOV64_REG(1, 10), ALU64_IMM(ADD, 1, -16),
                                   ALU64_REG(ADD, 1, 0), ST(DW, 1, 0, 0), MOV64_IMM(0, 0), EXIT()),
     REJECT(4, "R1 variable stack pointer arithmetic prohibited")},
    {"jump_into_ld_imm64", PROG(JA(1), LD_IMM64(0, 1), EXIT()), REJECT(0, "jump into the middle of ld_imm64 at insn 2")},
    {"jump_out_of_range", PROG(JA(99), EXIT()), REJECT(0, "jump out of range from insn 0 to 100")},
    {"jump_negative_out_of_range", PROG(MOV64_IMM(0, 0), JMP_IMM(JEQ, 0, 0, -3), EXIT()),
     REJECT(1, "jump out of range from insn 1 to -1")},
    {"unreachable_code", PROG(MOV64_IMM(0, 0), EXIT(), MOV64_IMM(0, 1), EXIT()), REJECT(2, "unreachable insn 2")},
    {"fall_off_end", PROG(MOV64_IMM(0, 0)), REJECT(0, "is not exit or ja")},
    {"incomplete_ld_imm64", PROG(MOV64_IMM(0, 0), EXIT(), I(0x18, 0, 0, 0, 1)), REJECT(2, "incomplete ld_imm64")},
    {"bad_ld_imm64_second_slot", PROG(I(0x18, 0, 0, 0, 1), I(0x18, 0, 0, 0, 0), EXIT()),
     REJECT(0, "invalid second slot of ld_imm64")},
    {"ld_imm64_bad_map_index", PROG(LD_MAP(1, 3), MOV64_IMM(0, 0), EXIT()), {ARRAY(4, 8, 1)},
     REJECT(0, "ld_imm64 refers to map 3")},
    {"ld_imm64_map_value_offset", PROG(LD_MAP_VALUE(1, 0, 16), MOV64_IMM(0, 0), EXIT()), {ARRAY(4, 16, 1)},
     REJECT(0, "map value offset 16 outside value_size 16")},
    {"map_value_direct_oob", PROG(LD_MAP_VALUE(1, 0, 12), LDX(DW, 0, 1, 0), EXIT()), {ARRAY(4, 16, 1)},
     REJECT(2, "invalid access to map value, value_size=16 off=12 size=8")},
    {"unknown_opcode", PROG(I(0xff, 0, 0, 0, 0), EXIT()), REJECT(0, "unknown opcode 0xff")},
    {"reserved_field", PROG(I(EBPF_CLS_ALU64 | EBPF_ALU_MOV, 0, 1, 0, 0), EXIT()), REJECT(0, "reserved field src=1")},
    {"invalid_register", PROG(MOV64_IMM(11, 0), MOV64_IMM(0, 0), EXIT()), REJECT(0, "invalid register R11")},
    {"frame_pointer_write", PROG(MOV64_IMM(10, 0), MOV64_IMM(0, 0), EXIT()), REJECT(0, "frame pointer is read only")},
    {"map_value_oob_fixed",
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 1), LDX(DW, 0, 0, 4), EXIT()), {ARRAY(4, 8, 1)},
     REJECT(7, "invalid access to map value, value_size=8 off=4 size=8")},
    {"map_value_oob_variable",
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 4), LDX(W, 1, 0, 0), ALU64_IMM(AND, 1, 0x3f), ALU64_REG(ADD, 0, 1),
          LDX(DW, 0, 0, 0), EXIT()),
     {ARRAY(4, 64, 1)}, REJECT(10, "invalid access to map value, value_size=64 off=63 size=8")},
    {"map_value_negative_offset",
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 1), LDX(B, 0, 0, -1), EXIT()), {ARRAY(4, 8, 1)},
     REJECT(7, "invalid access to map value, value_size=8 off=-1 size=1")},
    {"map_value_null_deref", PROG(LOOKUP(0, 0), LDX(DW, 0, 0, 0), EXIT()), {ARRAY(4, 8, 1)},
     REJECT(6, "R0 invalid mem access 'map_value_or_null'")},
    {"map_value_or_null_arithmetic", PROG(LOOKUP(0, 0), ALU64_IMM(ADD, 0, 8), EXIT()), {ARRAY(4, 16, 1)},
     REJECT(6, "R0 pointer arithmetic on map_value_or_null prohibited")},
    {"map_value_null_branch_deref",
     PROG(LOOKUP(0, 0), JMP_IMM(JNE, 0, 0, 1), LDX(DW, 0, 0, 0), EXIT()), {ARRAY(4, 8, 1)},
     REJECT(7, "R0 invalid mem access 'scalar'")},
    /* privileged Linux: a pointer stored to a map value or the packet is plain data there */
    {"map_stores_pointer",
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 1), STX(DW, 0, 10, 0), EXIT()), {ARRAY(4, 8, 1)}, ACCEPT},
    {"map_pointer_loaded_back_is_a_number",
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 3), STX(DW, 0, 10, 0), LDX(DW, 2, 0, 0), LDX(B, 0, 2, -1), EXIT()),
     {ARRAY(4, 8, 1)}, REJECT(9, "R2 invalid mem access 'scalar'")},
    {"map_update_value_with_spilled_pointer",
     PROG(ST(W, 10, -4, 0), STX(DW, 10, 10, -16), MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -4), MOV64_REG(3, 10),
          ALU64_IMM(ADD, 3, -16), MOV64_IMM(4, 0), LD_MAP(1, 0), CALL(2), EXIT()),
     {HASH(4, 8, 8)}, REJECT(9, "indirect read of a spilled pointer")},
    {"pkt_stores_pointer",
     PROG(PKT_PTRS(), MOV64_IMM(0, 1), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 8), JMP_REG(JGT, 4, 3, 1), STX(DW, 2, 2, 0),
          EXIT()),
     ACCEPT},
    /* the context may be moved (privileged Linux), but is read only where it starts */
    {"ctx_pointer_arithmetic", PROG(ALU64_IMM(ADD, 1, 4), LDX(W, 0, 1, 0), EXIT()),
     REJECT(1, "dereference of modified ctx ptr R1 off=4 disallowed")},
    {"ctx_pointer_moved_back", PROG(ALU64_IMM(ADD, 1, 4), ALU64_IMM(ADD, 1, -4), LDX(W, 0, 1, 12), EXIT()), ACCEPT},
    {"ctx_pointer_moved_not_pruned", /* the state with ctx at 0 stored at insn 5 does not cover ctx + 4 */
     PROG(LDX(W, 2, 1, 12), MOV64_REG(3, 1), JMP_IMM(JNE, 2, 0, 1), JA(1), ALU64_IMM(ADD, 3, 4), LDX(W, 0, 3, 12), EXIT()),
     REJECT(5, "dereference of modified ctx ptr R3 off=4 disallowed")},
    {"ctx_pointer_variable",
     PROG(LDX(W, 2, 1, 12), ALU64_IMM(AND, 2, 4), ALU64_REG(ADD, 1, 2), LDX(W, 0, 1, 0), EXIT()),
     REJECT(3, "variable ctx access var_off=(0..4) disallowed")},
    {"ctx_moved_to_helper",
     PROG(ALU64_IMM(ADD, 1, 8), MOV64_IMM(2, 0), CALL(44), EXIT()),
     REJECT(2, "dereference of modified ctx ptr R1 off=8 disallowed")},
    {"ctx_write", PROG(MOV64_IMM(2, 1), STX(W, 1, 2, 12), MOV64_IMM(0, 0), EXIT()), REJECT(1, "cannot write into ctx")},
    {"ctx_bad_offset", PROG(LDX(W, 0, 1, 2), EXIT()), REJECT(0, "invalid bpf_context access off=2 size=4")},
    {"ctx_bad_size", PROG(LDX(DW, 0, 1, 0), EXIT()), REJECT(0, "invalid bpf_context access off=0 size=8")},
    {"ctx_past_end", PROG(LDX(W, 0, 1, 48), EXIT()), REJECT(0, "invalid bpf_context access off=48 size=4")},
    {"ctx_parse_field_size", PROG(LDX(DW, 0, 1, 24), EXIT()), REJECT(0, "invalid bpf_context access off=24 size=8")},
    {"ctx_and_stack_same_insn",
     PROG(MOV64_REG(6, 1), ST(W, 10, -4, 0), CALL(7), MOV64_REG(7, 6), JMP_IMM(JEQ, 0, 0, 2), MOV64_REG(7, 10),
          ALU64_IMM(ADD, 7, -4), LDX(W, 0, 7, 0), EXIT()),
     REJECT(7, "same insn cannot be used with different pointers")},
    {"adjust_head_in_callee_invalidates_caller",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 8), JMP_REG(JGT, 4, 3, 4), MOV64_REG(6, 2), /* 0-5 */
          CALL_LOCAL(4), LDX(B, 0, 6, 0), EXIT(), MOV64_IMM(0, 1), EXIT(),                        /* 6-10 */
          MOV64_IMM(2, 0), CALL(44), MOV64_IMM(0, 0), EXIT()),                                    /* 11-14 */
     REJECT(7, "R6 invalid mem access 'scalar'")},
    {"pkt_pointer_after_adjust_head",
     PROG(MOV64_REG(6, 1), LDX(W, 7, 1, 0), LDX(W, 3, 1, 4), MOV64_REG(4, 7), ALU64_IMM(ADD, 4, 14), /* 0-4 */
          JMP_REG(JGT, 4, 3, 5), MOV64_REG(1, 6), MOV64_IMM(2, 0), CALL(44),                        /* 5-8 */
          LDX(B, 0, 7, 0), EXIT(), MOV64_IMM(0, 1), EXIT()),
     REJECT(9, "R7 invalid mem access 'scalar'")},
    {"spilled_pkt_pointer_after_adjust_tail",
     PROG(MOV64_REG(6, 1), LDX(W, 7, 1, 0), LDX(W, 3, 1, 4), MOV64_REG(4, 7), ALU64_IMM(ADD, 4, 14),
          JMP_REG(JGT, 4, 3, 7), STX(DW, 10, 7, -8), MOV64_REG(1, 6), MOV64_IMM(2, 0), CALL(65),
          LDX(DW, 7, 10, -8), LDX(B, 0, 7, 0), EXIT(), MOV64_IMM(0, 1), EXIT()),
     REJECT(11, "R7 invalid mem access 'scalar'")},
    {"pointer_division", PROG(MOV64_REG(2, 10), ALU64_IMM(DIV, 2, 2), MOV64_IMM(0, 0), EXIT()),
     REJECT(1, "R2 pointer arithmetic with div operator prohibited")},
    {"pointer_32bit_arithmetic", PROG(MOV64_REG(2, 10), ALU32_IMM(ADD, 2, -8), MOV64_IMM(0, 0), EXIT()),
     REJECT(1, "R2 32-bit pointer arithmetic prohibited")},
    /* privileged Linux: the low half of a pointer, and pointer differences of any kinds, are numbers */
    {"pointer_partial_copy", PROG(MOV32_REG(2, 10), MOV64_IMM(0, 0), EXIT()), ACCEPT},
    {"pointer_partial_copy_is_a_number", PROG(MOV32_REG(2, 10), LDX(B, 0, 2, 0), EXIT()),
     REJECT(1, "R2 invalid mem access 'scalar'")},
    {"pointer_sub32_is_a_number", PROG(MOV64_REG(2, 10), ALU32_REG(SUB, 2, 1), LDX(B, 0, 2, 0), EXIT()),
     REJECT(2, "R2 invalid mem access 'scalar'")},
    {"pointer_and_prohibited", PROG(MOV64_REG(2, 10), ALU64_IMM(AND, 2, 7), MOV64_IMM(0, 0), EXIT()),
     REJECT(1, "R2 pointer arithmetic with and operator prohibited")},
    {"pointer_minus_pointer_any_kinds", PROG(MOV64_REG(0, 10), ALU64_REG(SUB, 0, 1), EXIT()), ACCEPT},
    {"pointer_plus_pointer", PROG(MOV64_REG(2, 10), ALU64_REG(ADD, 2, 1), MOV64_IMM(0, 0), EXIT()),
     REJECT(1, "R2 pointer += pointer prohibited")},
    /* privileged Linux: any comparison of pointers; both outcomes stay possible */
    {"pointer_comparison_with_scalar", PROG(MOV64_IMM(0, 0), JMP_IMM(JGT, 1, 5, 0), EXIT()), ACCEPT},
    {"pointer_comparison_jmp32", PROG(MOV64_IMM(0, 0), JMP32_IMM(JEQ, 1, 0, 0), EXIT()), ACCEPT},
    {"pointer_comparison_teaches_nothing", /* a lookup's result equal to the frame pointer is not checked */
     PROG(LOOKUP(0, 0), JMP_REG(JEQ, 0, 10, 1), EXIT(), LDX(W, 0, 0, 0), EXIT()), {ARRAY(4, 8, 1)},
     REJECT(8, "R0 invalid mem access 'map_value_or_null'")},
    /* bpf_loop: the callback verified as Linux does, as a frame below the caller, again after each return
     * until a stored state covers the next call's */
    {"loop_counts_in_context", /* the callback adds 1 to a counter on the caller's stack: 5 calls */
     PROG(ST(DW, 10, -8, 0), MOV64_IMM(1, 5), LD_FUNC(2, 7), MOV64_REG(3, 10), ALU64_IMM(ADD, 3, -8), MOV64_IMM(4, 0),
          CALL(NANOBPF_HELPER_LOOP), LDX(DW, 0, 10, -8), EXIT(),
          LDX(DW, 1, 2, 0), ALU64_IMM(ADD, 1, 1), STX(DW, 2, 1, 0), MOV64_IMM(0, 0), EXIT()),
     ACCEPT, .run = 1, .ret = 5, PKT(1)},
    {"loop_stops_on_1", /* ... and returns 1 at the third: bpf_loop says 3 calls */
     PROG(ST(DW, 10, -8, 0), MOV64_IMM(1, 10), LD_FUNC(2, 6), MOV64_REG(3, 10), ALU64_IMM(ADD, 3, -8), MOV64_IMM(4, 0),
          CALL(NANOBPF_HELPER_LOOP), EXIT(),
          LDX(DW, 1, 2, 0), ALU64_IMM(ADD, 1, 1), STX(DW, 2, 1, 0), MOV64_IMM(0, 0), JMP_IMM(JLT, 1, 3, 1),
          MOV64_IMM(0, 1), EXIT()),
     ACCEPT, .run = 1, .ret = 3, PKT(1)},
    {"loop_callback_returns_2",
     PROG(MOV64_IMM(1, 4), LD_FUNC(2, 6), MOV64_IMM(3, 0), MOV64_IMM(4, 0), CALL(NANOBPF_HELPER_LOOP), MOV64_IMM(0, 2),
          EXIT(), MOV64_IMM(0, 2), EXIT()),
     REJECT(9, "At callback return the register R0 has value [2, 2], should have been in [0, 1]")},
    {"loop_callback_not_a_function",
     PROG(MOV64_IMM(1, 4), MOV64_IMM(2, 0), MOV64_IMM(3, 0), MOV64_IMM(4, 0), CALL(NANOBPF_HELPER_LOOP), MOV64_IMM(0, 2),
          EXIT()),
     REJECT(4, "R2 type=scalar expected=func")},
    {"loop_context_not_stack",
     PROG(MOV64_REG(3, 1), MOV64_IMM(1, 4), LD_FUNC(2, 5), MOV64_IMM(4, 0), CALL(NANOBPF_HELPER_LOOP), MOV64_IMM(0, 2),
          EXIT(), MOV64_IMM(0, 0), EXIT()),
     REJECT(5, "R3 type=ctx expected=fp or NULL")},
    {"loop_callback_overwrites_spilled_pointer", /* after the calls the slot may hold the callback's 0 */
     PROG(ST(DW, 10, -16, 0), STX(DW, 10, 10, -8), MOV64_IMM(1, 4), LD_FUNC(2, 8), MOV64_REG(3, 10),
          ALU64_IMM(ADD, 3, -8), MOV64_IMM(4, 0), CALL(NANOBPF_HELPER_LOOP), LDX(DW, 1, 10, -8), LDX(DW, 0, 1, -16),
          EXIT(), ST(DW, 2, 0, 0), MOV64_IMM(0, 0), EXIT()),
     REJECT(10, "R1 invalid mem access 'scalar'")},
    {"loop_second_call_sees_first_calls_write", /* the first call may use the slot; the second finds its 0 */
     PROG(ST(DW, 10, -16, 0), STX(DW, 10, 10, -8), MOV64_IMM(1, 4), LD_FUNC(2, 6), MOV64_REG(3, 10),
          ALU64_IMM(ADD, 3, -8), MOV64_IMM(4, 0), CALL(NANOBPF_HELPER_LOOP), EXIT(),
          LDX(DW, 3, 2, 0), LDX(DW, 0, 3, -16), ST(DW, 2, 0, 0), MOV64_IMM(0, 0), EXIT()),
     REJECT(11, "R3 invalid mem access 'scalar'")},
    {"loop_callback_taken_in_another_function",
     PROG(LD_FUNC(1, 11), CALL_LOCAL(2), MOV64_IMM(0, 2), EXIT(), MOV64_REG(2, 1), MOV64_IMM(1, 4), MOV64_IMM(3, 0),
          MOV64_IMM(4, 0), CALL(NANOBPF_HELPER_LOOP), MOV64_IMM(0, 0), EXIT(), MOV64_IMM(0, 0), EXIT()),
     REJECT(9, "the callback's address was taken in the function at insn 0")},
    {"loop_recursive_callback",
     PROG(MOV64_IMM(1, 4), LD_FUNC(2, 6), MOV64_IMM(3, 0), MOV64_IMM(4, 0), CALL(NANOBPF_HELPER_LOOP), MOV64_IMM(0, 2),
          EXIT(), MOV64_IMM(1, 4), LD_FUNC(2, -2), MOV64_IMM(3, 0), MOV64_IMM(4, 0), CALL(NANOBPF_HELPER_LOOP),
          MOV64_IMM(0, 0), EXIT()),
     REJECT(9, "recursive call from insn 9 to 8")},
    {"recursion", PROG(CALL_LOCAL(1), EXIT(), CALL_LOCAL(-1), MOV64_IMM(0, 0), EXIT()),
     REJECT(2, "recursive call from insn 2 to 2")},
    {"mutual_recursion", PROG(CALL_LOCAL(1), EXIT(), CALL_LOCAL(1), EXIT(), CALL_LOCAL(-3), EXIT()),
     REJECT(4, "recursive call from insn 4 to 2")},
    {"call_depth_9_frames",
     PROG(CALL_LOCAL(1), EXIT(), CALL_LOCAL(1), EXIT(), CALL_LOCAL(1), EXIT(), CALL_LOCAL(1), EXIT(), CALL_LOCAL(1),
          EXIT(), CALL_LOCAL(1), EXIT(), CALL_LOCAL(1), EXIT(), CALL_LOCAL(1), EXIT(), MOV64_IMM(0, 0), EXIT()),
     REJECT(14, "the call stack of 9 frames is too deep")},
    {"return_stack_pointer", PROG(CALL_LOCAL(1), EXIT(), MOV64_REG(0, 10), EXIT()),
     REJECT(3, "cannot return stack pointer to the caller")},
    {"callee_spills_own_fp_into_caller",
     PROG(ST(DW, 10, -8, 0), MOV64_REG(1, 10), ALU64_IMM(ADD, 1, -8), CALL_LOCAL(2), MOV64_IMM(0, 0), EXIT(),
          STX(DW, 1, 10, 0), MOV64_IMM(0, 0), EXIT()),
     REJECT(6, "cannot spill pointers to stack into stack frame of the caller")},
    {"jump_into_other_function", PROG(CALL_LOCAL(1), JA(1), MOV64_IMM(0, 0), EXIT()),
     REJECT(1, "leaves its function")},
    /* ================= comparisons of pointers with NULL (issue 21) ================= */
    /* data - 2^29 is 0 for a frame at 2^29: "!= 0" is not known, so the store behind it is checked */
    {"null_compare_packet_below_start",
     PROG(LDX(W, 2, 1, 0), ALU64_IMM(ADD, 2, -(1 << 29)), JMP_IMM(JNE, 2, 0, 2), /* 0-2: -> 5 */
          MOV64_IMM(1, 0x1234), ST(DW, 1, 0, 0), MOV64_IMM(0, 2), EXIT()),
     REJECT(4, "R1 invalid mem access 'scalar'")},
    /* a key table value minus its device address (0x10040000) is 0 on the device */
    {"null_compare_map_value_below_start",
     PROG(LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 5), ALU64_IMM(ADD, 0, -0x10040000), /* 0-7: -> 12 */
          JMP_IMM(JNE, 0, 0, 2), MOV64_IMM(1, 0x1234), ST(DW, 1, 0, 0),        /* 8-10: -> 11 */
          MOV64_IMM(0, 2), EXIT()),
     {ARRAY(4, 8, 1)}, REJECT(10, "R1 invalid mem access 'scalar'")},
    /* the same with the 0 in a register compared with the pointer (jeq 0, ptr) */
    {"null_compare_zero_register_eq_pointer",
     PROG(LDX(W, 2, 1, 0), ALU64_IMM(ADD, 2, -64), MOV64_IMM(3, 0), JMP_REG(JEQ, 3, 2, 1), /* 0-3: -> 5 */
          JA(2), MOV64_IMM(1, 0x1234), ST(DW, 1, 0, 0), MOV64_IMM(0, 2), EXIT()),         /* 4-8 */
     REJECT(6, "R1 invalid mem access 'scalar'")},
    /* below its start but both outcomes safe: accepted, both explored */
    {"null_compare_undecided_both_safe",
     PROG(LDX(W, 2, 1, 0), ALU64_IMM(ADD, 2, -8), MOV64_IMM(0, 1), JMP_IMM(JNE, 2, 0, 1), MOV64_IMM(0, 2), EXIT()),
     ACCEPT, .run = 1, .ret = 1, PKT(1)},
    /* still known: a pointer at or above its start (data + 4, a map value + 4) and the stack (fp - 8):
     * the branch behind "== NULL" is never taken and not explored */
    {"null_compare_known_pointers",
     PROG(LDX(W, 2, 1, 0), ALU64_IMM(ADD, 2, 4), JMP_IMM(JEQ, 2, 0, 13),   /* 0-2: -> 16 */
          MOV64_REG(3, 10), ALU64_IMM(ADD, 3, -8), JMP_IMM(JEQ, 3, 0, 10), /* 3-5: -> 16 */
          LOOKUP(0, 0), JMP_IMM(JEQ, 0, 0, 5), ALU64_IMM(ADD, 0, 4),      /* 6-13: -> 18 */
          JMP_IMM(JEQ, 0, 0, 1), JA(2),                                   /* 14-15: -> 16, 18 */
          MOV64_IMM(1, 0x1234), ST(DW, 1, 0, 0),                          /* 16-17 */
          MOV64_IMM(0, 2), EXIT()),                                       /* 18-19 */
     {ARRAY(4, 8, 1)}, ACCEPT, .run = 1, .ret = 2, PKT(1)},
    /* ================= run results (issue 21) ================= */
    /* -1 is a return value like any other: not turned into XDP_ABORTED (0) */
    {"return_minus_one", PROG(MOV64_IMM(0, -1), EXIT()), ACCEPT, .run = 1, .ret = UINT64_MAX, PKT(1)},
    /* ================= the key table is read-only for programs (the control plane writes it) ================= */
    {"keytable_value_write", PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 1), ST(B, 0, 0, 1), MOV64_IMM(0, 0), EXIT()),
     QUIC_MAPS, REJECT(10, "the key table nanobpf_quic_keys is read-only for programs")},
    {"keytable_value_atomic",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 2), MOV64_IMM(1, 1), ATOMIC(DW, EBPF_ATOMIC_ADD, 0, 1, 0), MOV64_IMM(0, 0), EXIT()),
     QUIC_MAPS, REJECT(11, "read-only for programs")},
    {"keytable_update_elem",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 7), MOV64_REG(3, 0), LD_MAP(1, 0), MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -24),
          MOV64_IMM(4, 0), CALL(2), MOV64_IMM(0, 0), EXIT()),
     QUIC_MAPS, REJECT(16, "helper map_update_elem: the key table nanobpf_quic_keys is read-only for programs")},
    {"keytable_delete_elem",
     PROG(KT_LOOKUP(0), LD_MAP(1, 0), MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -24), CALL(3), MOV64_IMM(0, 0), EXIT()),
     QUIC_MAPS, REJECT(13, "helper map_delete_elem: the key table nanobpf_quic_keys is read-only")},
    {"keytable_value_read", PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 1), LDX(B, 0, 0, 0), MOV64_IMM(0, 0), EXIT()),
     QUIC_MAPS, ACCEPT},
    /* ================= QUIC protection helpers: keytable_value, mem and mem_rw arguments ================= */
    {"quic_aead_seal_args", PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 9), REQ_ON_STACK(), AEAD_CALL(SEAL, 0), EXIT()),
     QUIC_MAPS, ACCEPT},
    {"quic_aead_open_args", PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 9), REQ_ON_STACK(), AEAD_CALL(OPEN, 0), EXIT()),
     QUIC_MAPS, ACCEPT},
    {"quic_aead_req_in_map_value",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 13), MOV64_REG(7, 0), LOOKUP(2, 0), JMP_IMM(JEQ, 0, 0, 5), /* 0-17 */
          MOV64_REG(3, 0), MOV64_REG(1, 6), MOV64_REG(2, 7), MOV64_IMM(4, 24), CALL(SEAL), EXIT()),
     {KEYTABLE(4), HASH(NANOBPF_QUIC_CID_SIZE, NANOBPF_QUIC_KEYS_SIZE, 4), ARRAY(4, 24, 1)}, ACCEPT},
    {"quic_aead_keys_maybe_null", PROG(KT_LOOKUP(0), REQ_ON_STACK(), AEAD_CALL(SEAL, 0), EXIT()), QUIC_MAPS,
     REJECT(17, "R2 may be NULL: helper quic_aead_seal needs a nanobpf_quic_keys value")},
    {"quic_aead_keys_other_map",
     PROG(KT_LOOKUP(1), JMP_IMM(JEQ, 0, 0, 9), REQ_ON_STACK(), AEAD_CALL(OPEN, 0), EXIT()), QUIC_MAPS,
     REJECT(18, "R2 is a value of map map1: helper quic_aead_open needs a value of the key table nanobpf_quic_keys")},
    {"quic_aead_keys_stack",
     PROG(MOV64_REG(6, 1), REQ_ON_STACK(), MOV64_REG(1, 6), MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -48), MOV64_REG(3, 10),
          ALU64_IMM(ADD, 3, -48), MOV64_IMM(4, 24), CALL(SEAL), EXIT()),
     QUIC_MAPS, REJECT(10, "R2 type=fp expected=map_value of the key table nanobpf_quic_keys")},
    {"quic_aead_keys_packet",
     PROG(MOV64_REG(6, 1), LDX(W, 2, 1, 0), LDX(W, 3, 1, 4), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 80), /* 0-4 */
          JMP_REG(JGT, 4, 3, 9), REQ_ON_STACK(), MOV64_REG(1, 6), MOV64_REG(3, 10), ALU64_IMM(ADD, 3, -48), /* 5-11 */
          MOV64_IMM(4, 24), CALL(SEAL), EXIT(), MOV64_IMM(0, 1), EXIT()),
     QUIC_MAPS, REJECT(13, "R2 type=pkt expected=map_value of the key table")},
    {"quic_aead_keys_ctx",
     PROG(MOV64_REG(6, 1), REQ_ON_STACK(), MOV64_REG(1, 6), MOV64_REG(2, 6), MOV64_REG(3, 10), ALU64_IMM(ADD, 3, -48),
          MOV64_IMM(4, 24), CALL(SEAL), EXIT()),
     QUIC_MAPS, REJECT(9, "R2 type=ctx expected=map_value of the key table")},
    {"quic_aead_keys_offset",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 10), ALU64_IMM(ADD, 0, 4), REQ_ON_STACK(), AEAD_CALL(SEAL, 0), EXIT()),
     QUIC_MAPS, REJECT(19, "R2 points 4..4 bytes into a nanobpf_quic_keys value: helper quic_aead_seal needs its start")},
    {"quic_aead_keys_variable_offset",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 12), LDX(B, 7, 0, 0), ALU64_IMM(AND, 7, 1), ALU64_REG(ADD, 0, 7),
          REQ_ON_STACK(), AEAD_CALL(OPEN, 0), EXIT()),
     QUIC_MAPS, REJECT(21, "R2 points 0..1 bytes into a nanobpf_quic_keys value")},
    {"quic_aead_req_beyond_stack",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 6), MOV64_REG(1, 6), MOV64_REG(2, 0), MOV64_REG(3, 10),
          ALU64_IMM(ADD, 3, -16), MOV64_IMM(4, 24), CALL(SEAL), EXIT()),
     QUIC_MAPS, REJECT(15, "invalid indirect access to stack R3 off=-16 size=24")},
    {"quic_aead_req_uninitialised", PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 6), AEAD_CALL(SEAL, 0), EXIT()), QUIC_MAPS,
     REJECT(15, "invalid indirect read from stack R3 off -48+0 size 24")},
    {"quic_aead_req_packet_unchecked",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 5), MOV64_REG(1, 6), MOV64_REG(2, 0), LDX(W, 3, 6, 0), MOV64_IMM(4, 24),
          CALL(OPEN), EXIT()),
     QUIC_MAPS, REJECT(14, "invalid access to packet, off=0 size=24, R3 range=0")},
    {"quic_aead_req_small_map_value",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 13), MOV64_REG(7, 0), LOOKUP(2, 0), JMP_IMM(JEQ, 0, 0, 5), /* 0-17 */
          MOV64_REG(3, 0), MOV64_REG(1, 6), MOV64_REG(2, 7), MOV64_IMM(4, 24), CALL(SEAL), EXIT()),
     {KEYTABLE(4), HASH(NANOBPF_QUIC_CID_SIZE, NANOBPF_QUIC_KEYS_SIZE, 4), ARRAY(4, 16, 1)},
     REJECT(22, "invalid access to map value, value_size=16 off=0 size=24")},
    {"quic_hp_mask_stack_block",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 8), ST(DW, 10, -48, 0), ST(DW, 10, -40, 0), MOV64_REG(1, 0), /* 0-12 */
          MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -48), MOV64_IMM(3, 16), CALL(HP), LDX(DW, 0, 10, -48), EXIT()),
     QUIC_MAPS, ACCEPT},
    /* size 8 passes the verifier (any bounded size); the helper refuses it at run time with -EINVAL */
    {"quic_hp_mask_size_8",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 8), ST(DW, 10, -48, 0), ST(DW, 10, -40, 0), MOV64_REG(1, 0),
          MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -48), MOV64_IMM(3, 8), CALL(HP), LDX(DW, 0, 10, -48), EXIT()),
     QUIC_MAPS, ACCEPT},
    /* mem_rw: the helper overwrites the block, so the constant spilled there is gone */
    {"quic_hp_mask_overwrites_spills",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 12), MOV64_IMM(7, 0), STX(DW, 10, 7, -48), STX(DW, 10, 7, -40), /* 0-12 */
          MOV64_REG(1, 0), MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -48), MOV64_IMM(3, 16), CALL(HP), /* 13-17 */
          LDX(DW, 1, 10, -48), LDX(W, 2, 6, 0), ALU64_REG(ADD, 2, 1), LDX(B, 0, 2, 0), EXIT()),
     QUIC_MAPS, REJECT(20, "R2 pointer arithmetic with unbounded scalar")},
    {"quic_hp_mask_keys_maybe_null",
     PROG(KT_LOOKUP(0), ST(DW, 10, -48, 0), ST(DW, 10, -40, 0), MOV64_REG(1, 0), MOV64_REG(2, 10),
          ALU64_IMM(ADD, 2, -48), MOV64_IMM(3, 16), CALL(HP), EXIT()),
     QUIC_MAPS, REJECT(15, "R1 may be NULL: helper quic_hp_mask needs a nanobpf_quic_keys value")},
    {"quic_hp_mask_keys_other_map",
     PROG(KT_LOOKUP(1), JMP_IMM(JEQ, 0, 0, 7), ST(DW, 10, -48, 0), ST(DW, 10, -40, 0), MOV64_REG(1, 0),
          MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -48), MOV64_IMM(3, 16), CALL(HP), EXIT()),
     QUIC_MAPS, REJECT(16, "R1 is a value of map map1: helper quic_hp_mask needs a value of the key table")},
    {"quic_hp_mask_block_uninitialised",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 5), MOV64_REG(1, 0), MOV64_REG(2, 10), ALU64_IMM(ADD, 2, -48),
          MOV64_IMM(3, 16), CALL(HP), EXIT()),
     QUIC_MAPS, REJECT(14, "invalid indirect read from stack R2 off -48+0 size 16")},
    /* bpf_quic_pn_of: a key table value in, the packet-number map's value or NULL out */
    {"quic_pn_of_args", PN_OF_PROG(0, 2), QUIC_PN_MAPS, ACCEPT},
    {"quic_pn_of_other_map", PN_OF_PROG(0, 1), QUIC_PN_MAPS,
     REJECT(13, "helper quic_pn_of: map map1 is not the packet-number map quic_pn")},
    {"quic_pn_of_keys_other_map", PN_OF_PROG(1, 2), QUIC_PN_MAPS,
     REJECT(13, "R2 is a value of map map1: helper quic_pn_of needs a value of the key table")},
    {"quic_pn_of_result_maybe_null",
     PROG(KT_LOOKUP(0), JMP_IMM(JEQ, 0, 0, 6), MOV64_REG(2, 0), LD_MAP(1, 2), CALL(PN_OF), LDX(DW, 1, 0, 0),
          MOV64_IMM(0, 0), EXIT()),
     QUIC_PN_MAPS, REJECT(14, "R0 invalid mem access 'map_value_or_null'")},
    /* bpf_quic_keys_of: the context and the key table in, the key table's value or NULL out, read-only */
    {"quic_keys_of_args", KEYS_OF_PROG(0, LDX(DW, 1, 0, 0)), QUIC_MAPS, ACCEPT},
    {"quic_keys_of_other_map", KEYS_OF_PROG(1, LDX(DW, 1, 0, 0)), QUIC_MAPS,
     REJECT(3, "helper quic_keys_of: map map1 is not the key table nanobpf_quic_keys")},
    {"quic_keys_of_result_maybe_null",
     PROG(LD_MAP(2, 0), MOV64_IMM(3, 1), CALL(KEYS_OF), LDX(DW, 1, 0, 0), MOV64_IMM(0, 0), EXIT()), QUIC_MAPS,
     REJECT(4, "R0 invalid mem access 'map_value_or_null'")},
    {"quic_keys_of_value_read_only", KEYS_OF_PROG(0, ST(DW, 0, 0, 1)), QUIC_MAPS,
     REJECT(5, "the key table nanobpf_quic_keys is read-only for programs")},
    {"quic_keys_of_not_ctx",
     PROG(MOV64_REG(1, 10), LD_MAP(2, 0), MOV64_IMM(3, 1), CALL(KEYS_OF), MOV64_IMM(0, 0), EXIT()), QUIC_MAPS,
     REJECT(4, "R1 type=fp expected=ctx")},
    {"atomic_on_packet",
     PROG(PKT_PTRS(), MOV64_REG(4, 2), ALU64_IMM(ADD, 4, 8), JMP_REG(JGT, 4, 3, 3), MOV64_IMM(5, 1),
          ATOMIC(DW, EBPF_ATOMIC_ADD, 2, 5, 0), MOV64_IMM(0, 1), EXIT()),
     REJECT(6, "atomic access to packet not allowed")},
};

/* Tests whose program is built in code. */
/* main calls each of nf - 1 functions (r0 = 0; exit) */
static struct ebpf_insn *build_funcs(uint32_t nf, uint32_t *n) {
    uint32_t calls = nf - 1;
    *n = calls + 2 + 2 * calls;
    struct ebpf_insn *p = calloc(*n, sizeof *p);
    struct ebpf_insn mov = MOV64_IMM(0, 0), ex = EXIT(), call = CALL_LOCAL(0);
    for (uint32_t k = 0; k < calls; k++) {
        p[k] = call;
        p[k].imm = (int32_t)(calls + 2 + 2 * k - k - 1);
        p[calls + 2 + 2 * k] = mov;
        p[calls + 3 + 2 * k] = ex;
    }
    p[calls] = mov;
    p[calls + 1] = ex;
    return p;
}
static struct ebpf_insn *build_long(uint32_t *n) {
    *n = EBPF_MAX_INSNS + 1;
    struct ebpf_insn *p = calloc(*n, sizeof *p);
    struct ebpf_insn mov = MOV64_IMM(0, 0), ex = EXIT();
    for (uint32_t i = 0; i + 1 < *n; i++) p[i] = mov;
    p[*n - 1] = ex;
    return p;
}

static int run_prog(struct ebpf_prog *prog, const struct tcase *t, uint64_t *ret, char *why, size_t whylen) {
    struct ebpf_error err = {0};
    if (ebpf_prog_resolve(prog, &err)) {
        snprintf(why, whylen, "resolve: %s", err.msg);
        return -1;
    }
    uint8_t frame[1024];
    memset(frame, 0, sizeof frame);
    memcpy(frame + 256, t->pkt, t->pkt_len);
    struct ebpf_xdp_buff x = {0};
    x.data_hard_start = (uint64_t)(uintptr_t)frame;
    x.data = x.data_meta = (uint64_t)(uintptr_t)(frame + 256);
    x.data_end = x.data + t->pkt_len;
    x.frame_end = (uint64_t)(uintptr_t)(frame + sizeof frame);
    x.ingress_ifindex = 1;
    *ret = ebpf_xdp_run(prog, &x, 0, &err);
    if (err.msg[0]) {
        snprintf(why, whylen, "run: %s", err.msg);
        return -1;
    }
    return 0;
}

/* The verifier log's level: 1 (each explored instruction with its registers), or VERIFIER_LOG=2 (the stack
 * slots too). */
static int log_level(void) {
    const char *v = getenv("VERIFIER_LOG");
    return v && atoi(v) >= 2 ? 2 : 1;
}

static int verify_one(const char *name, const struct ebpf_insn *insns, uint32_t n, const struct tmap *maps,
                      const struct tcase *t, int verbose) {
    struct ebpf_prog prog;
    struct ebpf_error err = {0};
    memset(&prog, 0, sizeof prog);
    prog.insns = malloc((n ? n : 1) * sizeof *insns);
    memcpy(prog.insns, insns, n * sizeof *insns);
    prog.n_insns = n;
    struct ebpf_map *mapv[3];
    uint32_t nm = 0;
    for (; nm < 3 && maps[nm].type; nm++) {
        struct ebpf_map *m = calloc(1, sizeof *m);
        m->type = maps[nm].type;
        m->key_size = maps[nm].key_size;
        m->value_size = maps[nm].value_size;
        m->max_entries = maps[nm].max_entries;
        if (maps[nm].name) snprintf(m->name, sizeof m->name, "%s", maps[nm].name);
        else snprintf(m->name, sizeof m->name, "map%u", nm);
        if (ebpf_device_map_named(m->name)) { /* the key table is bound, not created */
            struct ebpf_map *kt = ebpf_device_map_bind(m, &err);
            free(m);
            if (!kt) {
                printf("FAIL %-40s map: %s\n", name, err.msg);
                return 1;
            }
            mapv[nm] = kt;
            continue;
        }
        if (ebpf_map_create(m, &err)) {
            printf("FAIL %-40s map: %s\n", name, err.msg);
            return 1;
        }
        mapv[nm] = m;
    }
    prog.maps = mapv;
    prog.n_maps = nm;
    struct ebpf_insn *orig = malloc((n ? n : 1) * sizeof *insns);
    memcpy(orig, insns, n * sizeof *insns);
    int rc = ebpf_verify(&prog, NULL, &err);
    struct ebpf_verify_stats st = ebpf_verify_last_stats;
    int ok;
    char why[256] = "";
    if (t->accept) {
        ok = rc == 0;
        if (!ok) snprintf(why, sizeof why, "rejected at insn %d: %s", err.insn, err.msg);
        if (ok && t->check && !t->check(&prog)) ok = 0, snprintf(why, sizeof why, "post-verification check failed");
        if (ok) {
            /* verifying twice is refused */
            struct ebpf_error e2 = {0};
            if (ebpf_verify(&prog, NULL, &e2) == 0) ok = 0, snprintf(why, sizeof why, "verified twice");
        }
        if (ok && t->run) {
            uint64_t r;
            if (run_prog(&prog, t, &r, why, sizeof why)) ok = 0;
            else if (r != t->ret)
                ok = 0, snprintf(why, sizeof why, "returned 0x%llx, expected 0x%llx", (unsigned long long)r,
                                 (unsigned long long)t->ret);
        }
    } else {
        ok = rc != 0 && (err.insn == t->err_insn || t->err_insn == ANY_INSN) && strstr(err.msg, t->err) && !prog.verified &&
             !memcmp(orig, prog.insns, n * sizeof *insns) && prog.n_subprogs == 0;
        if (!ok) {
            if (rc == 0) snprintf(why, sizeof why, "accepted, expected rejection at %d: %s", t->err_insn, t->err);
            else snprintf(why, sizeof why, "got insn %d \"%s\", expected insn %d \"%s\"", err.insn, err.msg, t->err_insn, t->err);
        }
    }
    printf("%s %-40s %-7s processed %7u states %5u pruned %5u  %s%s%s\n", ok ? "ok  " : "FAIL", name,
           t->accept ? "accept" : "reject", st.processed, st.states, st.pruned, ok ? (t->accept ? "" : "\"") : why,
           ok && !t->accept ? err.msg : "", ok && !t->accept ? "\"" : "");
    if (!ok && verbose) {
        struct ebpf_prog p2;
        memset(&p2, 0, sizeof p2);
        p2.insns = orig;
        p2.n_insns = n;
        p2.maps = mapv;
        p2.n_maps = nm;
        struct ebpf_verify_opts o = {.log_level = log_level()};
        ebpf_verify(&p2, &o, &err);
        free(p2.insn_flags);
    }
    for (uint32_t k = 0; k < nm; k++) {
        if (ebpf_map_is_device(mapv[k])) {
            ebpf_device_map_unbind(mapv[k]);
            continue;
        }
        ebpf_map_destroy(mapv[k]);
        free(mapv[k]);
    }
    free(prog.insns);
    free(prog.insn_flags);
    free(orig);
    return !ok;
}

static int verify_image(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    static uint8_t buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    struct ebpf_prog prog;
    struct ebpf_error err = {0};
    if (ebpf_image_load(buf, len, &prog, &err)) {
        printf("FAIL %-40s load: %s\n", path, err.msg);
        return 1;
    }
    int rc = ebpf_verify(&prog, NULL, &err);
    struct ebpf_verify_stats st = ebpf_verify_last_stats;
    if (getenv("VERIFIER_LOG")) {
        ebpf_prog_free(&prog);
        ebpf_image_load(buf, len, &prog, &err);
        struct ebpf_verify_opts o = {.log_level = log_level()};
        ebpf_verify(&prog, &o, &err);
    }
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    printf("%s %-22s insns %5u processed %7u states %5u (peak %4u) pruned %5u pending %3u state bytes %6u\n",
           rc ? "REJ " : "ok  ", base, prog.n_insns, st.processed, st.states, st.peak_states, st.pruned,
           st.peak_pending, st.peak_bytes);
    if (rc) printf("     rejected at insn %d: %s\n", err.insn, err.msg);
    else
        for (uint32_t k = 0; k < prog.n_subprogs; k++)
            printf("     function %u at insn %u: stack %u bytes\n", k, prog.subprogs[k].start, prog.subprogs[k].stack_depth);
    ebpf_prog_free(&prog);
    return rc != 0;
}

/* ---- Checks of the runtime around the verifier ---- */
static int report(const char *name, int ok, const char *why) {
    printf("%s %-40s %s\n", ok ? "ok  " : "FAIL", name, ok ? "" : why);
    return !ok;
}

/* Every opcode the verifier refuses as unknown faults in the interpreter's raw mode (nanobpf-run without
 * --verify) instead of running as something else (callx 0x8d ran as a call of helper imm). */
static int opcodes_refused_everywhere(void) {
    char why[512] = "";
    size_t wl = 0;
    int bad = 0;
    for (int t = 0; t < 768; t++) {
        /* imm 16: a byte swap width; 7: a helper (get_prandom_u32); 0: a jump to the next instruction */
        int c = t & 255, imm = t < 256 ? 16 : t < 512 ? 7 : 0;
        if (c == (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW)) continue; /* needs its second slot */
        struct ebpf_insn insns[3] = {I(c, 0, 0, 0, imm), MOV64_IMM(0, 0), EXIT()};
        struct ebpf_prog prog;
        struct ebpf_error err = {-1, ""};
        memset(&prog, 0, sizeof prog);
        prog.insns = malloc(sizeof insns);
        memcpy(prog.insns, insns, sizeof insns);
        prog.n_insns = 3;
        int unknown = ebpf_verify(&prog, NULL, &err) && (strstr(err.msg, "unknown opcode") || strstr(err.msg, "legacy"));
        free(prog.insns);
        free(prog.insn_flags);
        memset(&prog, 0, sizeof prog);
        prog.insns = insns;
        prog.n_insns = 3;
        uint64_t mem[4] = {0};
        struct ebpf_bounds bounds = {(uintptr_t)mem, sizeof mem};
        ebpf_interp_bounds = &bounds;
        err = (struct ebpf_error){-1, ""};
        uint64_t r0;
        int faulted = ebpf_interp(&prog, (uintptr_t)mem, sizeof mem, &r0, &err) != 0;
        ebpf_interp_bounds = NULL;
        if (unknown && !faulted) {
            bad++;
            wl += (size_t)snprintf(why + wl, wl < sizeof why ? sizeof why - wl : 0, " 0x%02x (imm %d)", c, imm);
            if (wl >= sizeof why) wl = sizeof why - 1;
        }
    }
    char msg[600];
    snprintf(msg, sizeof msg, "unknown to the verifier, run by the interpreter:%s", why);
    return report("opcodes_unknown_fault_in_interp", !bad, msg);
}

/* A device image: one array map (4-byte key, 8-byte value, one entry) with init_size initial bytes,
 * then mov r0, 2; exit. */
static size_t image_with_map(uint8_t *b, uint32_t init_size) {
    struct nanobpf_image_header h = {0};
    struct nanobpf_image_map m = {0};
    struct ebpf_insn insns[2] = {MOV64_IMM(0, 2), EXIT()};
    h.magic = NANOBPF_IMAGE_MAGIC;
    h.version = NANOBPF_IMAGE_VERSION;
    h.header_size = sizeof h;
    h.n_maps = 1;
    h.maps_off = sizeof h;
    h.n_insns = 2;
    h.insns_off = sizeof h + sizeof m;
    h.data_off = h.insns_off + sizeof insns;
    h.data_size = 16;
    h.funcs_off = h.data_off + h.data_size;
    h.total_size = h.funcs_off;
    m.type = NANOBPF_MAP_TYPE_ARRAY;
    m.key_size = 4;
    m.value_size = 8;
    m.max_entries = 1;
    m.init_size = init_size;
    snprintf(m.name, sizeof m.name, "values");
    memset(b, 0, h.total_size);
    memcpy(b, &h, sizeof h);
    memcpy(b + h.maps_off, &m, sizeof m);
    memcpy(b + h.insns_off, insns, sizeof insns);
    return h.total_size;
}

/* The loader's refusals free what it built and report the map by name (ASan: no use after free). */
static int image_load_errors(void) {
    static uint8_t b[512];
    char why[256] = "";
    struct ebpf_prog prog;
    struct ebpf_error err = {-1, ""};
    size_t len = image_with_map(b, 8);
    int ok = ebpf_image_load(b, len, &prog, &err) == 0;
    if (!ok) snprintf(why, sizeof why, "good image refused: %s", err.msg);
    ebpf_prog_free(&prog);
    /* initial value longer than the map's value: refused after the map was created */
    len = image_with_map(b, 9);
    uint8_t *exact = malloc(len);
    memcpy(exact, b, len);
    if (ok && ebpf_image_load(exact, len, &prog, &err) == 0) ok = 0, snprintf(why, sizeof why, "init_size 9 > value 8 loaded");
    else if (ok && !strstr(err.msg, "map values: bad initial value (9 bytes at 0)"))
        ok = 0, snprintf(why, sizeof why, "unexpected error: %s", err.msg);
    ebpf_prog_free(&prog); /* after a refusal nothing is left: freeing again is harmless */
    free(exact);
    return report("image_load_error_paths", ok, why);
}

/* ebpf_xdp_run keeps the verifier's assumptions data_hard_start <= data_meta <= data <= data_end <=
 * frame_end and data - data_meta <= NANOBPF_XDP_META_MAX: a context that breaks one is refused with
 * XDP_ABORTED and a message. */
static int xdp_run_checks_context(void) {
    /* r2 = data_meta; r3 = data; if data_meta + 8 > data: exit 1; r0 = *(u64 *)data_meta */
    struct ebpf_insn insns[] = {LDX(W, 2, 1, 8), LDX(W, 3, 1, 0), MOV64_REG(5, 2), ALU64_IMM(ADD, 5, 8),
                                JMP_REG(JGT, 5, 3, 2), LDX(DW, 0, 2, 0), EXIT(), MOV64_IMM(0, 1), EXIT()};
    struct ebpf_prog prog;
    struct ebpf_error err = {-1, ""};
    char why[256] = "";
    int ok = 1;
    memset(&prog, 0, sizeof prog);
    prog.insns = malloc(sizeof insns);
    memcpy(prog.insns, insns, sizeof insns);
    prog.n_insns = sizeof insns / sizeof insns[0];
    if (ebpf_verify(&prog, NULL, &err) || ebpf_prog_resolve(&prog, &err)) {
        snprintf(why, sizeof why, "refused: insn %d: %s", err.insn, err.msg);
        ok = 0;
    }
    uint8_t frame[512] = {0};
    for (int k = 0; k < 64; k++) frame[k] = (uint8_t)k;
    struct ebpf_xdp_buff x = {0};
    x.data_hard_start = (uintptr_t)frame;
    x.data = (uintptr_t)(frame + 16);
    x.data_meta = x.data - 8; /* eight bytes of metadata: the program reads them */
    x.data_end = x.data + 16;
    x.frame_end = (uintptr_t)(frame + sizeof frame);
    uint64_t r = ok ? ebpf_xdp_run(&prog, &x, 0, &err) : 0;
    uint64_t want;
    memcpy(&want, frame + 8, 8);
    if (ok && (err.msg[0] || r != want)) ok = 0, snprintf(why, sizeof why, "8 bytes of metadata: 0x%llx, %s", (unsigned long long)r, err.msg);
    struct ebpf_xdp_buff y = x;
    y.data_meta = y.data; /* no metadata: the bounds check fails */
    r = ok ? ebpf_xdp_run(&prog, &y, 0, &err) : 0;
    if (ok && (err.msg[0] || r != 1)) ok = 0, snprintf(why, sizeof why, "no metadata: 0x%llx, %s", (unsigned long long)r, err.msg);
    struct { uint64_t meta, data, end, frame_end; const char *what; } bad[] = {
        {x.data + 8, x.data, x.data_end, x.frame_end, "data_meta"},            /* metadata after data */
        {x.data_hard_start - 8, x.data, x.data_end, x.frame_end, "data_meta"}, /* metadata before the buffer */
        {x.data_hard_start, x.data_hard_start + 260, x.data_hard_start + 300, x.frame_end, "data_meta"}, /* 260 bytes */
        {x.data, x.data, x.data - 1, x.frame_end, "data_end"},
        {x.data, x.data, x.data_end, x.data_end - 1, "frame_end"},
    };
    for (size_t k = 0; ok && k < sizeof bad / sizeof bad[0]; k++) {
        y = x;
        y.data_meta = bad[k].meta, y.data = bad[k].data, y.data_end = bad[k].end, y.frame_end = bad[k].frame_end;
        err = (struct ebpf_error){-1, ""};
        r = ebpf_xdp_run(&prog, &y, 0, &err);
        if (r != NANOBPF_XDP_ABORTED || !strstr(err.msg, bad[k].what))
            ok = 0, snprintf(why, sizeof why, "context %zu (%s) ran: 0x%llx \"%s\"", k, bad[k].what, (unsigned long long)r, err.msg);
    }
    /* a parse result outside the ranges the verifier gave its fields: one field at a time */
    for (int k = 0; ok && k < 6; k++) {
        y = x;
        uint32_t *f[6] = {&y.l3_off, &y.l4_off, &y.quic_off, &y.pn_off, &y.cid_len, &y.conn};
        *f[k] = k < 4 ? EBPF_CTX_OFF_MAX + 1 : k == 4 ? NANOBPF_KEYTABLE_CID_MAX + 1 : EBPF_CTX_CONN_MAX + 1;
        err = (struct ebpf_error){-1, ""};
        r = ebpf_xdp_run(&prog, &y, 0, &err);
        if (r != NANOBPF_XDP_ABORTED || !strstr(err.msg, "parse result"))
            ok = 0, snprintf(why, sizeof why, "parse field %d out of range ran: 0x%llx \"%s\"", k, (unsigned long long)r, err.msg);
        *f[k] = k < 4 ? EBPF_CTX_OFF_MAX : k == 4 ? NANOBPF_KEYTABLE_CID_MAX : EBPF_CTX_CONN_MAX; /* the largest in range runs */
        err = (struct ebpf_error){-1, ""};
        r = ebpf_xdp_run(&prog, &y, 0, &err);
        if (err.msg[0]) ok = 0, snprintf(why, sizeof why, "parse field %d at its largest refused: \"%s\"", k, err.msg);
    }
    free(prog.insns);
    free(prog.insn_flags);
    return report("xdp_run_checks_context", ok, why);
}

/* A program that reads data_meta finds PISA's parse result there (struct nanobpf_xdp_meta) when the
 * headroom holds it; one that does not read it gets no metadata (data_meta stays data). */
static int parse_result_in_metadata(void) {
    /* r2 = data_meta; r3 = data; if data_meta + 24 > data: exit 1; r0 = meta->conn */
    struct ebpf_insn reads[] = {LDX(W, 2, 1, 8), LDX(W, 3, 1, 0), MOV64_REG(5, 2), ALU64_IMM(ADD, 5, 24),
                                JMP_REG(JGT, 5, 3, 2), LDX(W, 0, 2, 20), EXIT(), MOV64_IMM(0, 1), EXIT()};
    struct ebpf_insn ignores[] = {MOV64_IMM(0, 2), EXIT()};
    char why[256] = "";
    int ok = 1;
    struct ebpf_prog p[2];
    const struct ebpf_insn *src[2] = {reads, ignores};
    uint32_t n[2] = {sizeof reads / sizeof reads[0], sizeof ignores / sizeof ignores[0]};
    for (int k = 0; k < 2; k++) {
        struct ebpf_error err = {-1, ""};
        memset(&p[k], 0, sizeof p[k]);
        p[k].insns = malloc(n[k] * sizeof(struct ebpf_insn));
        memcpy(p[k].insns, src[k], n[k] * sizeof(struct ebpf_insn));
        p[k].n_insns = n[k];
        if (ebpf_verify(&p[k], NULL, &err) || ebpf_prog_resolve(&p[k], &err))
            ok = 0, snprintf(why, sizeof why, "program %d refused: %s", k, err.msg);
    }
    if (ok && (!p[0].parse_in_meta || p[1].parse_in_meta)) ok = 0, snprintf(why, sizeof why, "parse_in_meta %u %u",
                                                                             p[0].parse_in_meta, p[1].parse_in_meta);
    uint8_t frame[128] = {0};
    for (int headroom = 0; ok && headroom <= 32; headroom += 8) {
        for (int k = 0; ok && k < 2; k++) {
            struct ebpf_xdp_buff x = {0};
            struct ebpf_error err = {-1, ""};
            x.data_hard_start = (uintptr_t)frame;
            x.data = x.data_meta = (uintptr_t)(frame + headroom);
            x.data_end = x.data + 60, x.frame_end = (uintptr_t)(frame + sizeof frame);
            x.l3_off = 14, x.conn = 77;
            uint64_t r = ebpf_xdp_run(&p[k], &x, 0, &err);
            uint64_t want = k ? 2 : headroom >= 24 ? 77 : 1;
            uint64_t meta = k == 0 && headroom >= 24 ? 24 : 0;
            if (r != want || x.data - x.data_meta != meta || err.msg[0])
                ok = 0, snprintf(why, sizeof why, "program %d, headroom %d: r0 %llu (want %llu), metadata %llu bytes (want "
                                 "%llu) %s", k, headroom, (unsigned long long)r, (unsigned long long)want,
                                 (unsigned long long)(x.data - x.data_meta), (unsigned long long)meta, err.msg);
        }
    }
    for (int k = 0; k < 2; k++) {
        free(p[k].insns);
        free(p[k].insn_flags);
    }
    return report("parse_result_in_metadata", ok, why);
}

int main(int argc, char **argv) {
    int verbose = 0, failed = 0, total = 0;
    const char *only = NULL;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--no-raw-pending")) {
            ebpf_verify_no_raw_pending = 1;
            continue;
        }
        if (!strcmp(argv[a], "--image")) {
            for (int b = a + 1; b < argc; b++) failed += verify_image(argv[b]);
            return failed != 0;
        }
        if (!strcmp(argv[a], "-v")) verbose = 1;
        else if (!strcmp(argv[a], "--no-relevance")) ebpf_verify_no_relevance = 1;
        else if (!strcmp(argv[a], "-k") && a + 1 < argc) only = argv[++a];
    }
    for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++) {
        const struct tcase *t = &tests[k];
        if ((only && strcmp(only, t->name)) || (t->relevance && ebpf_verify_no_relevance)) continue;
        total++;
        failed += verify_one(t->name, t->insns, t->n, t->maps, t, verbose);
    }
    /* built in code */
    for (uint32_t nf = 32; nf <= 33; nf++) {
        static const struct tcase ok32 = {.name = "functions_32", ACCEPT},
                                  bad33 = {.name = "functions_33", REJECT(96, "too many functions (more than 32)")};
        const struct tcase *t = nf == 32 ? &ok32 : &bad33;
        if (only && strcmp(only, t->name)) continue;
        uint32_t n;
        struct ebpf_insn *p = build_funcs(nf, &n);
        total++;
        failed += verify_one(t->name, p, n, t->maps, t, verbose);
        free(p);
    }
    {
        static char msg[48];
        snprintf(msg, sizeof msg, "program of %u insns", EBPF_MAX_INSNS + 1);
        const struct tcase t = {.name = "too_many_insns", REJECT(-1, msg)};
        if (!only || !strcmp(only, t.name)) {
            uint32_t n;
            struct ebpf_insn *p = build_long(&n);
            total++;
            failed += verify_one(t.name, p, n, t.maps, &t, verbose);
            free(p);
        }
    }
    static const struct {
        const char *name;
        int (*fn)(void);
    } extra[] = {{"opcodes_unknown_fault_in_interp", opcodes_refused_everywhere},
                 {"image_load_error_paths", image_load_errors},
                 {"xdp_run_checks_context", xdp_run_checks_context},
                 {"parse_result_in_metadata", parse_result_in_metadata}};
    for (size_t k = 0; k < sizeof extra / sizeof extra[0]; k++) {
        if (only && strcmp(only, extra[k].name)) continue;
        total++;
        failed += extra[k].fn();
    }
    printf("%d/%d tests passed\n", total - failed, total);
    return failed != 0;
}
