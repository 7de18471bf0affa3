/* NanoBPF eBPF verifier: proves an XDP program safe before anything runs it (Linux semantics, own code).
 * One file on purpose (about 4,200 lines): the phases share the abstract state (registers, stack,
 * references, spin locks) and its static helpers; splitting it would make them a second public
 * header. The sections below follow the phases.
 *
 * Phases
 *   1. Structure: known opcodes, zero reserved fields (RFC 9669), ld_imm64 pairs and map references,
 *      jump/call targets, functions (bpf-to-bpf call targets), every function ending in exit or ja,
 *      a depth-first CFG walk (unreachable code, loops that can never reach exit), the call graph
 *      (recursion, call depth), static register liveness and the relevance of scalar values (below).
 *   2. Abstract interpretation of every path, depth first: the current state runs instruction by
 *      instruction; at a conditional jump whose outcome is not known one side is pushed on a stack of
 *      pending states and the other explored: the fall-through, as in Linux, unless only the taken side
 *      leaves a loop around the jump (static loop depths), which is then explored first, so that a
 *      loop that may be left at each iteration keeps one pending branch instead of one per iteration
 *      (first_side); an if in a loop whose sides run straight to one join has both followed there at
 *      once (explore_if). At prune points (placed as Linux places them: conditional jumps
 *      themselves, ja targets, function entries, call return points) a state is compared with states
 *      stored there earlier:
 *        - a stored state whose exploration finished (all its successors proven safe) and that
 *          subsumes the current one ends the current path (pruning);
 *        - a stored state still being explored (an ancestor on the current path) that equals the
 *          current one means the program loops without progress: "infinite loop detected".
 *      At the join of an if followed by explore_if, a side that the other side's state covers ends
 *      there (that state goes on, with nothing explored yet that could lean on the ended side).
 *      Loops are thus explored iteration by iteration with precise scalars; opts->max_processed bounds
 *      the work ("program too complex").
 *      Global functions (the image's function table: C functions that are not static, as Linux
 *      treats them) are not entered at their calls: the call checks the arguments against the
 *      function's prototype (scalar, ctx, or `size` bytes of memory), the memory arguments' bytes become
 *      plain data, r0 an unknown scalar, and packet pointers are invalidated when the function may move
 *      packet data. Each global function is then explored once on its own, from an entry state built
 *      from its prototype (memory arguments are mem_or_null: the function checks them for NULL).
 *   3. Accepted: combined stack depth over call chains, xdp_md accesses rewritten to struct
 *      ebpf_xdp_buff, prog->subprogs filled, prog->verified set. A rejected program is left untouched.
 *
 * Abstract domain (struct vreg, one per register and per spilled stack slot)
 *   not_init            never written (reading it is an error)
 *   scalar              as Linux knows one: unsigned and signed ranges of the 64-bit value and of its low
 *                       32 bits, and known bits (tnum); see "Scalar values" (umin == umax: a known
 *                       constant). An id links copies of a value, `off` apart (a copy plus a constant, as
 *                       Linux links them), so that a comparison refines all of them.
 *   ctx                 r1 at entry (struct nanobpf_xdp_ctx: xdp_md's six fields and PISA's parse
 *                       result; only 4-byte reads)
 *   pkt                 data + var + off: `off` fixed, `var` in [umin, umax] (id names the var part:
 *                       pointers with one id have the same var), `range` = bytes proven readable from
 *                       data + var (set by comparisons with pkt_end, for every pointer with that id)
 *   pkt_meta            data_meta + var + off, as pkt, its `range` proven by comparisons with data itself
 *                       (pkt, nothing added): the metadata area [data_meta, data) in front of the frame,
 *                       which bpf_xdp_adjust_meta grows and shrinks (Linux's PTR_TO_PACKET_META)
 *   pkt_end             data_end
 *   fp (stack)          frame pointer of frame `frame` + off (constant offsets only)
 *   map_value           value of map `map` + off + var [umin, umax]
 *   map_value_or_null   result of map_lookup_elem (id: a null check on one copy decides all copies)
 *   map_ptr             a map (ld_imm64 src 1/5)
 *   mem, mem_or_null    a global function's memory argument: off + var within `range` bytes (which may
 *                       be packet memory, so multi-byte accesses are marked alignment-safe for the JIT);
 *                       map MEM_READONLY for a pointer to const (loads only: it may be the key table)
 * Stack (per frame, 64 slots of 8 bytes): a bit per byte "initialised" and at most one spilled
 * register per slot (8-byte store of any register, or 4-byte store of a 32-bit scalar) that a fill of
 * the same bytes restores; other writes leave plain initialised data ("misc").
 *
 * Pruning compares states register by register (live ones only) and slot by slot: same types, scalar
 * ranges and known bits within, packet ranges at least as large, stack at least as initialised, ids
 * mapped one to one.
 * Scalars that cannot influence safety (never reach a branch, a pointer offset or a helper size; see
 * "Relevance") only need to be scalars, which is what keeps flag words and return codes from
 * multiplying the paths.
 *
 * Memory: states are stored compactly (varint encoding, dead registers dropped, a scalar's views only
 * where they say more than its unsigned range) in blocks of a pool (size classes carved from ebpf_alloc
 * chunks), bounded by opts->max_states and byte budgets counted in encoded bytes; everything is freed
 * before returning. Stored states are compared without decoding
 * them first, item by item, and each remembers where its last comparison failed (a hint tried first);
 * their hash (loop detection) is computed only when a state on their own path meets them. Pending
 * branches are raw copies of the state while they take less than PENDING_RAW_MAX (most are restored
 * soon), encoded beyond it (a branch in a loop whose sides both stay in it, and do not join straight,
 * stacks one per iteration).
 *
 * Cost on the device: picolibc's memset/memcpy move a byte at a time and its malloc is first fit, so
 * the exploration avoids all three (struct assignments, the pool, word copies). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ebpf.h"

/* Statistics of the last ebpf_verify() call (host tests and benchmarks read them). */
struct ebpf_verify_stats ebpf_verify_last_stats;
int ebpf_verify_no_raw_pending;
/* Test knob: compare every scalar when pruning (measures what the relevance analysis saves). */
int ebpf_verify_no_relevance;

#define U64MAX UINT64_MAX
#define U32MAX 0xffffffffull
#define NSLOTS (EBPF_STACK_SIZE / 8)
#define MAX_VAR_OFF (1 << 29)     /* bound of pointer offsets (fixed and variable parts) */
#define MAX_PKT_OFF 0xffff        /* packet ranges are only proven for offsets below this */
#define DEFAULT_MAX_PROCESSED 1000000u
#define DEFAULT_MAX_STATES 4096u
#define STATE_BYTES_MAX (160u * 1024) /* stored states (pruning); beyond it states are not stored */
#define PENDING_BYTES_MAX (96u * 1024)  /* encoded pending branches; beyond it "program too complex" */
#define PENDING_RAW_MAX (48u * 1024)    /* pending branches are raw copies while these take less than this */
#define NO_PRUNE 0xffff
#define MAX_LIST 128              /* states stored at one instruction */
#define MAX_REFS 8                /* ring buffer records reserved at once */
#define LIVE_R1_R5 0x003e
#define LIVE_R6_R9 0x03c0

/* ---- Abstract values and states ---- */
enum { T_NOT_INIT, T_SCALAR, T_CTX, T_PKT, T_PKT_END, T_STACK, T_MAP_VALUE, T_MAP_VALUE_OR_NULL, T_MAP_PTR,
       T_MEM, T_MEM_OR_NULL, T_PKT_META, T_FUNC };
static const char *const tname[] = {"not_init", "scalar", "ctx", "pkt", "pkt_end", "fp", "map_value",
                                    "map_value_or_null", "map_ptr", "mem", "mem_or_null", "pkt_meta", "func"};

/* Known bits (Linux's tnum): the bits of v are known to be 1, those of m unknown, the others 0. */
struct tnum {
    uint64_t v, m;
};

struct vreg {
    uint8_t type;
    uint8_t frame;  /* T_STACK: frame number */
    uint16_t map;   /* map pointers and values: map index */
    uint32_t id;    /* scalar copies, pkt var part, map_value_or_null; 0 = none */
    int32_t off;    /* pointers: fixed offset; scalar copies: the value is the copies' common one + off */
    uint32_t range; /* T_PKT: bytes proven from data + var; T_PKT_META: from data_meta + var */
    uint64_t umin, umax; /* scalar value, or the variable part of a pointer */
    /* scalars only (0 in pointers; see "Scalar values"): the value signed, its low 32 bits unsigned and
     * signed, its known bits */
    int64_t smin, smax;
    uint32_t u32min, u32max;
    int32_t s32min, s32max;
    struct tnum t;
};

enum { SPILL_NONE, SPILL_64, SPILL_LO32, SPILL_HI32 };
static const uint8_t spill_bytes[4] = {0x00, 0xff, 0x0f, 0xf0};

struct vslot {
    uint8_t init;  /* bit b: byte b of the slot written (slot k covers fp-8(k+1) .. fp-8k-1) */
    uint8_t spill; /* SPILL_* */
    struct vreg reg;
};

struct vframe {
    struct vreg r[EBPF_NREGS];
    uint32_t callsite; /* call insn that created this frame (frame 0: 0) */
    uint16_t func;     /* function index */
    uint16_t nslots;   /* slots at or beyond nslots are all clear */
    /* the bpf_spin_lock this frame took and holds: 1 + map index (0: none) and the id of the map value
     * (no call happens while a lock is held, so only the innermost frame can hold one) */
    uint32_t lock_map, lock_id;
    /* frame 0 only: the ring buffer records reserved and not yet submitted or discarded (their pointers'
     * id, and the reserving insn); entry_refs: a callback's frame, how many there were when it was entered */
    uint32_t nrefs, entry_refs;
    uint32_t ref_id[MAX_REFS], ref_insn[MAX_REFS];
    struct vslot s[NSLOTS];
};

struct vstate {
    uint32_t insn;
    uint32_t nframes;
    struct vframe f[]; /* as many as the deepest call chain of the program needs */
};

/* A state stored at a prune point (encoded). */
struct snode {
    struct snode *next;   /* list of its instruction */
    struct snode *parent; /* newest stored state on the path that led here */
    uint32_t branches;    /* unfinished paths below it (0: exploration finished) */
    uint32_t size : 31;
    uint32_t hashed : 1;  /* hash is set (computed when first needed: see visit_state) */
    uint32_t hash;        /* of the state without ids (exact comparison filter) */
    uint16_t hit, miss;
    uint64_t types : 40;  /* 4 bits per register r0..r9 of the innermost frame (subsumption filter) */
    uint64_t hint : 24;   /* where the last comparison with it failed (see hint_refuses), 0: none */
    uint8_t data[];
};

/* A pending branch: the state at a conditional jump one side of which is still to explore. */
struct pnode {
    struct pnode *next;
    struct snode *parent;
    uint32_t size;
    uint16_t raw;  /* data is a raw copy (see save_raw), not an encoding */
    uint16_t side; /* BR_TAKEN or BR_FALL: the side to explore; BR_RESUME: go on at its insn */
    uint8_t data[];
};
_Static_assert(offsetof(struct snode, data) % 8 == 0 && offsetof(struct pnode, data) % 8 == 0, "state data alignment");

/* Stored and pending states come from arenas (see "State memory"): the heap's first-fit malloc, its
 * zeroing and picolibc's byte-wise copies cost more than the rest of a visit on the device. */
#define POOL_GRAIN 16
#define POOL_CLASSES 64            /* stored states up to 1 KiB; larger ones go to ebpf_alloc */
#define POOL_CHUNK (8u * 1024)
struct chunk { /* POOL_GRAIN bytes of header, then blocks */
    struct chunk *prev, *next;
};
struct arena {
    struct chunk *first, *cur; /* chunks in order of use; those after cur are kept for reuse */
    uint8_t *top, *end;        /* free part of cur */
};
struct pool_block {
    struct pool_block *next;
};
struct pool { /* stored states: an arena and a list of freed blocks per size class */
    struct arena arena;
    struct pool_block *free[POOL_CLASSES];
};

/* Per-instruction flags. */
#define F_LDIMM2 0x01  /* second slot of ld_imm64 */
#define F_REACHED 0x02
#define F_PRUNE 0x04
#define F_FUNC 0x08    /* first insn of a function */
#define F_EXITS 0x10   /* some path from here reaches exit */
#define F_ONSTACK 0x20 /* CFG walk */
#define F_PKTACC 0x40  /* multi-byte packet access (EBPF_INSN_PKT_ACCESS for the JIT) */
#define F_LEADER 0x80  /* first insn of a basic block (the static analyses' unit) */
/* Per-instruction aux: memory access kind seen (for the ctx rewrite). */
#define AUX_OTHER 0xff

struct env {
    struct ebpf_prog *prog;
    const struct ebpf_insn *in;
    uint32_t n;
    struct ebpf_error *err;
    int log;
    uint8_t *flags, *aux, *func;
    uint32_t *succ;  /* successors of insn i within its function: succ[2i], succ[2i+1] (see cache_succs) */
    uint8_t *nsucc;
    uint16_t *pstart, *preds; /* predecessors of insn i within its function: preds[pstart[i] .. pstart[i + 1]) */
    uint16_t *live;  /* registers r0..r9 live before each insn */
    uint16_t *finfo; /* forward facts per insn (relevance analysis) */
    uint16_t *relR;  /* relevant registers r0..r9 before each insn */
    uint64_t *relS;  /* relevant stack slots of the current frame before each insn */
    int no_relevance; /* compare all scalars (tests) */
    uint16_t *prune; /* prune point number per insn */
    uint8_t *loopd;  /* loop depth per insn (see compute_loop_depth) */
    struct snode **heads;
    uint32_t nprune;
    uint32_t nfuncs, maxframes;
    uint32_t fstart[EBPF_MAX_SUBPROGS + 1];
    uint32_t fdepth[EBPF_MAX_SUBPROGS];
    const struct nanobpf_image_func *gsig[EBPF_MAX_SUBPROGS]; /* global functions' prototypes (NULL: static) */
    uint8_t changes_pkt[EBPF_MAX_SUBPROGS]; /* the function (or one it calls) may move packet data */
    /* log2 of the alignment (at most 8 bytes) every call gives a global function's memory arguments so
     * far: a function is explored after all its callers (explore_order), with what they gave */
    uint8_t arg_align[EBPF_MAX_SUBPROGS][5];
    uint8_t explored[EBPF_MAX_SUBPROGS];
    uint32_t root; /* function whose exploration is running: 0 (the program) or a global function */
    struct vstate *cur;
    struct vstate *tmp; /* a stored state decoded (for its hash) */
    uint8_t *buf; /* encoding scratch */
    struct pnode *pending;
    struct arena pending_mem; /* pending states, taken and given back last in, first out */
    struct pool pool;         /* stored states */
    uint32_t npending;
    struct snode *parent; /* newest stored state on the current path (NULL: none yet) */
    int loop_arrival; /* the path comes back to a bpf_loop call from its callback (see visit_state) */
    uint32_t id_gen;
    uint32_t max_processed, max_states, nstates;
    size_t state_bytes, pending_bytes, raw_bytes; /* stored, pending encoded, pending raw */
    struct ebpf_verify_stats stats;
};

static int fail(struct env *e, int insn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int is_program(const struct env *e, uint32_t f) {
    return f && e->gsig[f] && (e->gsig[f]->flags & NANOBPF_FUNC_PROGRAM);
}

static void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void vlog(const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (len > (int)sizeof buf - 1) len = (int)sizeof buf - 1;
    if (len > 0) ebpf_console_write(buf, (size_t)len);
}

static int fail(struct env *e, int insn, const char *fmt, ...) {
    char msg[sizeof(((struct ebpf_error *)0)->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (e->log) vlog("verifier: insn %d: %s\n", insn, msg);
    return ebpf_fail(e->err, insn, "%s", msg);
}

/* ---- Small helpers ---- */
static int is_ptr(const struct vreg *r) { return r->type > T_SCALAR; }
/* Pointers into the frame's buffer: packet data or metadata (their bounds are proven the same way). */
static int is_pkt(const struct vreg *r) { return r->type == T_PKT || r->type == T_PKT_META; }
static int is_pkt_kind(const struct vreg *r) { return is_pkt(r) || r->type == T_PKT_END; }
static int is_const(const struct vreg *r) { return r->type == T_SCALAR && r->umin == r->umax; }
static uint64_t sext(uint64_t v, unsigned bits) {
    return bits >= 64 ? v : (uint64_t)((int64_t)(v << (64 - bits)) >> (64 - bits));
}
static uint64_t size_mask(unsigned size) { return size >= 8 ? U64MAX : (UINT64_C(1) << (size * 8)) - 1; }
static uint32_t size_of(uint8_t code) {
    static const uint8_t sizes[4] = {4, 2, 1, 8};
    return sizes[EBPF_SIZE(code) >> 3];
}

/* Values are written whole as struct assignments, never with memset: picolibc's memset and memcpy copy
 * a byte at a time (several instructions per byte on the device), and a typed assignment lets the
 * compiler use four 8-byte stores. struct vreg has no padding, so this is the same as zeroing first. */
static void set_type(struct vreg *r, uint8_t type) { *r = (struct vreg){.type = type}; }
static struct tnum tnum_const(uint64_t c) { return (struct tnum){c, 0}; }
/* The known bits of the values lo..hi: those above the highest bit in which lo and hi differ. */
static struct tnum tnum_range(uint64_t lo, uint64_t hi) {
    uint64_t chi = lo ^ hi;
    if (!chi) return tnum_const(lo);
    if (chi >> 63) return (struct tnum){0, U64MAX};
    uint64_t d = (UINT64_C(2) << (63 - __builtin_clzll(chi))) - 1;
    return (struct tnum){lo & ~d, d};
}
/* Is every value of b one of a? */
static int tnum_in(struct tnum a, struct tnum b) { return !(b.m & ~a.m) && (b.v & ~a.m) == a.v; }
/* A scalar in [lo, hi] (unsigned), with the other views that range gives as scalar_sync would derive
 * them (the state encoding leaves out the views equal to these). */
static void set_range(struct vreg *r, uint64_t lo, uint64_t hi) {
    if (lo == hi) { /* most often: every view is the value */
        *r = (struct vreg){.type = T_SCALAR, .umin = lo, .umax = lo, .smin = (int64_t)lo, .smax = (int64_t)lo,
                           .u32min = (uint32_t)lo, .u32max = (uint32_t)lo, .s32min = (int32_t)lo,
                           .s32max = (int32_t)lo, .t = tnum_const(lo)};
        return;
    }
    uint32_t u32lo = 0, u32hi = U32MAX;
    int32_t s32lo = INT32_MIN, s32hi = INT32_MAX;
    if (lo >> 32 == hi >> 32) { /* one upper half: the low halves run in order */
        u32lo = (uint32_t)lo, u32hi = (uint32_t)hi;
        if ((int32_t)u32lo <= (int32_t)u32hi) s32lo = (int32_t)u32lo, s32hi = (int32_t)u32hi;
    } else if ((uint32_t)(lo >> 32) + 1 == (uint32_t)(hi >> 32) && (int32_t)lo < 0 && (int32_t)hi >= 0) {
        s32lo = (int32_t)lo, s32hi = (int32_t)hi; /* the low halves pass 0xffffffff to 0: -1 to 0 as s32 */
    }
    int cross = (int64_t)lo > (int64_t)hi; /* lo < 2^63 <= hi: the most negative and the most positive values */
    *r = (struct vreg){.type = T_SCALAR, .umin = lo, .umax = hi, .smin = cross ? INT64_MIN : (int64_t)lo,
                       .smax = cross ? INT64_MAX : (int64_t)hi, .u32min = u32lo, .u32max = u32hi, .s32min = s32lo,
                       .s32max = s32hi, .t = tnum_range(lo, hi)};
}
static void set_unknown(struct vreg *r) { set_range(r, 0, U64MAX); }
static void set_const(struct vreg *r, uint64_t v) { set_range(r, v, v); }
static void set_not_init(struct vreg *r) { set_type(r, T_NOT_INIT); }

/* Loops zero field by field: hosted builds (host, RV64 Linux) turn a loop of whole-struct zeroing into a
 * memset call, which is the byte-wise one again. */
static void clear_regs(struct vreg *r, uint32_t n) {
    for (uint32_t k = 0; k < n; k++) {
        r[k].type = T_NOT_INIT;
        r[k].frame = 0;
        r[k].map = 0;
        r[k].id = 0;
        r[k].off = 0;
        r[k].range = 0;
        r[k].umin = r[k].umax = 0;
        r[k].smin = r[k].smax = 0;
        r[k].u32min = r[k].u32max = 0;
        r[k].s32min = r[k].s32max = 0;
        r[k].t.v = r[k].t.m = 0;
    }
}
static void clear_slots(struct vslot *s, uint32_t n) {
    for (uint32_t k = 0; k < n; k++) {
        s[k].init = 0;
        s[k].spill = SPILL_NONE;
        clear_regs(&s[k].reg, 1);
    }
}

/* The working state (env.cur) keeps every stack slot at or beyond its frame's nslots zero, in the frames
 * above nframes too (left by returns): slots are written only below nslots, or with nslots raised past
 * them. So a frame is cleared by zeroing its slots below nslots, not all NSLOTS of them. */
static void clear_frame(struct vframe *f) {
    clear_regs(f->r, EBPF_NREGS);
    clear_slots(f->s, f->nslots);
    f->callsite = 0;
    f->func = 0;
    f->nslots = 0;
    f->lock_map = f->lock_id = 0;
    f->nrefs = f->entry_refs = 0;
}
static uint32_t jump_target(const struct ebpf_insn *in, uint32_t i) {
    if (EBPF_CLASS(in->code) == EBPF_CLS_JMP32 && EBPF_OP(in->code) == EBPF_JMP_JA) return i + 1 + (uint32_t)in->imm;
    return i + 1 + (uint32_t)(int32_t)in->off;
}
static int is_ldimm64(const struct ebpf_insn *in) { return in->code == (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW); }
static int is_jmp_class(const struct ebpf_insn *in) {
    return EBPF_CLASS(in->code) == EBPF_CLS_JMP || EBPF_CLASS(in->code) == EBPF_CLS_JMP32;
}
static int is_ja(const struct ebpf_insn *in) { return is_jmp_class(in) && EBPF_OP(in->code) == EBPF_JMP_JA; }
static int is_exit(const struct ebpf_insn *in) { return in->code == (EBPF_CLS_JMP | EBPF_JMP_EXIT); }
static int is_call(const struct ebpf_insn *in) { return in->code == (EBPF_CLS_JMP | EBPF_JMP_CALL); }
static int is_local_call(const struct ebpf_insn *in) { return is_call(in) && in->src == EBPF_PSEUDO_CALL; }
/* ld_imm64 of a function's address (a bpf_loop callback), and the bpf_loop call. */
static int is_func_ref(const struct ebpf_insn *in) { return is_ldimm64(in) && in->src == EBPF_PSEUDO_FUNC; }
static int is_loop_call(const struct ebpf_insn *in) {
    return is_call(in) && in->src == 0 && in->imm == NANOBPF_HELPER_LOOP;
}
/* Edges of the call graph: a bpf-to-bpf call, and a callback's address taken (bpf_loop calls it, one frame
 * deeper, from the function that took it: do_loop_call checks that). */
static int has_call_edge(const struct ebpf_insn *in) { return is_local_call(in) || is_func_ref(in); }
/* Function f is one of the image's other programs (bpf_tail_call's targets). */
struct env;
static int is_program(const struct env *e, uint32_t f);
static int is_cond_jmp(const struct ebpf_insn *in) {
    return is_jmp_class(in) && !is_ja(in) && !is_call(in) && !is_exit(in);
}

static const char *op_name(int op) {
    static const char *const names[16] = {"add", "sub", "mul", "div", "or", "and", "lsh", "rsh",
                                          "neg", "mod", "xor", "mov", "arsh", "end", "?", "?"};
    return names[(op >> 4) & 15];
}

/* ---- Structure checks ---- */
static int check_fields(struct env *e, uint32_t i) {
    const struct ebpf_insn *in = &e->in[i];
    uint8_t code = in->code, cls = EBPF_CLASS(code);
    int op = EBPF_OP(code), x = (code & EBPF_SRC_X) != 0;
    if (in->dst > 10) return fail(e, (int)i, "invalid register R%u", in->dst);
    if (in->src > 10) return fail(e, (int)i, "invalid register R%u", in->src);
    switch (cls) {
    case EBPF_CLS_LD: {
        if (EBPF_MODE(code) == EBPF_MODE_ABS || EBPF_MODE(code) == EBPF_MODE_IND)
            return fail(e, (int)i, "legacy packet access (LD_ABS/LD_IND) not supported");
        if (!is_ldimm64(in)) return fail(e, (int)i, "unknown opcode 0x%02x", code);
        if (i + 1 >= e->n) return fail(e, (int)i, "incomplete ld_imm64 (no second slot)");
        const struct ebpf_insn *in2 = &e->in[i + 1];
        if (in2->code || in2->dst || in2->src || in2->off) return fail(e, (int)i, "invalid second slot of ld_imm64");
        if (in->off) return fail(e, (int)i, "reserved field off=%d is not zero", in->off);
        if (in->dst == EBPF_REG_FP) return fail(e, (int)i, "frame pointer is read only");
        switch (in->src) {
        case EBPF_PSEUDO_IMM64: break;
        case EBPF_PSEUDO_FUNC:
            if (in2->imm) return fail(e, (int)i, "reserved field imm=%d of ld_imm64 second slot is not zero", in2->imm);
            break;
        case EBPF_PSEUDO_MAP_FD:
        case EBPF_PSEUDO_MAP_IDX:
        case EBPF_PSEUDO_MAP_VALUE:
        case EBPF_PSEUDO_MAP_IDX_VALUE: {
            if ((uint32_t)in->imm >= e->prog->n_maps)
                return fail(e, (int)i, "ld_imm64 refers to map %d, the program has %u", in->imm, e->prog->n_maps);
            const struct ebpf_map *m = e->prog->maps[in->imm];
            if (in->src == EBPF_PSEUDO_MAP_FD || in->src == EBPF_PSEUDO_MAP_IDX) {
                if (in2->imm) return fail(e, (int)i, "reserved field imm=%d of ld_imm64 second slot is not zero", in2->imm);
            } else {
                if (m->type != NANOBPF_MAP_TYPE_ARRAY)
                    return fail(e, (int)i, "direct value access needs an array map (map %d has type %u)", in->imm, m->type);
                if ((uint32_t)in2->imm >= m->value_size)
                    return fail(e, (int)i, "map value offset %u outside value_size %u of map %d", (uint32_t)in2->imm,
                                m->value_size, in->imm);
            }
            break;
        }
        default: return fail(e, (int)i, "ld_imm64 src %u not supported", in->src);
        }
        return 0;
    }
    case EBPF_CLS_LDX:
        if (EBPF_MODE(code) != EBPF_MODE_MEM && !(EBPF_MODE(code) == EBPF_MODE_MEMSX && EBPF_SIZE(code) != EBPF_SIZE_DW))
            return fail(e, (int)i, "unknown opcode 0x%02x", code);
        if (in->imm) return fail(e, (int)i, "reserved field imm=%d is not zero", in->imm);
        if (in->dst == EBPF_REG_FP) return fail(e, (int)i, "frame pointer is read only");
        return 0;
    case EBPF_CLS_ST:
        if (EBPF_MODE(code) != EBPF_MODE_MEM) return fail(e, (int)i, "unknown opcode 0x%02x", code);
        if (in->src) return fail(e, (int)i, "reserved field src=%u is not zero", in->src);
        return 0;
    case EBPF_CLS_STX:
        if (EBPF_MODE(code) == EBPF_MODE_MEM) {
            if (in->imm) return fail(e, (int)i, "reserved field imm=%d is not zero", in->imm);
            return 0;
        }
        if (EBPF_MODE(code) != EBPF_MODE_ATOMIC || (EBPF_SIZE(code) != EBPF_SIZE_W && EBPF_SIZE(code) != EBPF_SIZE_DW))
            return fail(e, (int)i, "unknown opcode 0x%02x", code);
        switch (in->imm) {
        case EBPF_ATOMIC_ADD: case EBPF_ATOMIC_OR: case EBPF_ATOMIC_AND: case EBPF_ATOMIC_XOR:
            break;
        case EBPF_ATOMIC_ADD | EBPF_ATOMIC_FETCH: case EBPF_ATOMIC_OR | EBPF_ATOMIC_FETCH:
        case EBPF_ATOMIC_AND | EBPF_ATOMIC_FETCH: case EBPF_ATOMIC_XOR | EBPF_ATOMIC_FETCH: case EBPF_ATOMIC_XCHG:
            if (in->src == EBPF_REG_FP) return fail(e, (int)i, "frame pointer is read only");
            break;
        case EBPF_ATOMIC_CMPXCHG: break;
        default: return fail(e, (int)i, "unknown atomic operation 0x%x", (unsigned)in->imm);
        }
        return 0;
    case EBPF_CLS_ALU:
    case EBPF_CLS_ALU64: {
        int is64 = cls == EBPF_CLS_ALU64;
        switch (op) {
        case EBPF_ALU_ADD: case EBPF_ALU_SUB: case EBPF_ALU_MUL: case EBPF_ALU_OR: case EBPF_ALU_AND:
        case EBPF_ALU_LSH: case EBPF_ALU_RSH: case EBPF_ALU_XOR: case EBPF_ALU_ARSH:
            if (in->off) return fail(e, (int)i, "reserved field off=%d is not zero", in->off);
            break;
        case EBPF_ALU_DIV: case EBPF_ALU_MOD:
            if (in->off != 0 && in->off != 1) return fail(e, (int)i, "invalid off=%d of div/mod (0 or 1)", in->off);
            break;
        case EBPF_ALU_MOV:
            if (!x && in->off) return fail(e, (int)i, "reserved field off=%d is not zero", in->off);
            if (x && in->off != 0 && in->off != 8 && in->off != 16 && !(is64 && in->off == 32))
                return fail(e, (int)i, "invalid off=%d of movsx", in->off);
            break;
        case EBPF_ALU_NEG:
            if (x) return fail(e, (int)i, "unknown opcode 0x%02x", code);
            if (in->src || in->off || in->imm) return fail(e, (int)i, "reserved fields of neg are not zero");
            break;
        case EBPF_ALU_END:
            if (is64 && x) return fail(e, (int)i, "unknown opcode 0x%02x", code);
            if (in->imm != 16 && in->imm != 32 && in->imm != 64) return fail(e, (int)i, "invalid byte swap width %d", in->imm);
            if (in->src || in->off) return fail(e, (int)i, "reserved fields of byte swap are not zero");
            break;
        default: return fail(e, (int)i, "unknown opcode 0x%02x", code);
        }
        if (op != EBPF_ALU_NEG && op != EBPF_ALU_END) {
            if (x && in->imm) return fail(e, (int)i, "reserved field imm=%d is not zero", in->imm);
            if (!x && in->src) return fail(e, (int)i, "reserved field src=%u is not zero", in->src);
        }
        if (in->dst == EBPF_REG_FP) return fail(e, (int)i, "frame pointer is read only");
        return 0;
    }
    case EBPF_CLS_JMP:
    case EBPF_CLS_JMP32: {
        int is32 = cls == EBPF_CLS_JMP32;
        switch (op) {
        case EBPF_JMP_JA:
            if (x) return fail(e, (int)i, "unknown opcode 0x%02x", code);
            if (in->src || in->dst || (is32 ? in->off != 0 : in->imm != 0))
                return fail(e, (int)i, "reserved fields of ja are not zero");
            return 0;
        case EBPF_JMP_CALL:
            if (is32 || x) return fail(e, (int)i, "unknown opcode 0x%02x", code);
            if (in->dst || in->off) return fail(e, (int)i, "reserved fields of call are not zero");
            if (in->src == EBPF_PSEUDO_CALL) return 0;
            if (in->src == 2) return fail(e, (int)i, "kfunc calls not supported");
            if (in->src) return fail(e, (int)i, "invalid call src %u", in->src);
            if (!ebpf_helper_find((uint32_t)in->imm)) return fail(e, (int)i, "unknown helper id %d", in->imm);
            return 0;
        case EBPF_JMP_EXIT:
            if (is32 || x) return fail(e, (int)i, "unknown opcode 0x%02x", code);
            if (in->src || in->dst || in->off || in->imm) return fail(e, (int)i, "reserved fields of exit are not zero");
            return 0;
        case EBPF_JMP_JEQ: case EBPF_JMP_JGT: case EBPF_JMP_JGE: case EBPF_JMP_JSET: case EBPF_JMP_JNE:
        case EBPF_JMP_JSGT: case EBPF_JMP_JSGE: case EBPF_JMP_JLT: case EBPF_JMP_JLE: case EBPF_JMP_JSLT:
        case EBPF_JMP_JSLE:
            if (x && in->imm) return fail(e, (int)i, "reserved field imm=%d is not zero", in->imm);
            if (!x && in->src) return fail(e, (int)i, "reserved field src=%u is not zero", in->src);
            return 0;
        default: return fail(e, (int)i, "unknown opcode 0x%02x", code);
        }
    }
    }
    return fail(e, (int)i, "unknown opcode 0x%02x", code);
}

/* Successors of insn i; with_calls adds the callee entry of a bpf-to-bpf call (second). */
static int succs(const struct env *e, uint32_t i, uint32_t out[2], int with_calls) {
    const struct ebpf_insn *in = &e->in[i];
    if (is_exit(in)) return 0;
    if (is_ja(in)) {
        out[0] = jump_target(in, i);
        return 1;
    }
    if (is_ldimm64(in)) {
        out[0] = i + 2;
        return 1;
    }
    out[0] = i + 1;
    if (is_local_call(in)) {
        if (!with_calls) return 1;
        out[1] = i + 1 + (uint32_t)in->imm;
        return 2;
    }
    if (is_cond_jmp(in)) {
        out[1] = jump_target(in, i);
        return 2;
    }
    return 1;
}

/* The static analyses sweep the program several times: successors without calls, once. */
static int cache_succs(struct env *e) {
    e->succ = ebpf_alloc(2 * e->n * sizeof *e->succ);
    e->nsucc = ebpf_alloc(e->n);
    if (!e->succ || !e->nsucc) return -1;
    for (uint32_t i = 0; i < e->n; i++)
        if (!(e->flags[i] & F_LDIMM2)) e->nsucc[i] = (uint8_t)succs(e, i, &e->succ[2 * i], 0);
    return 0;
}

static int func_of(const struct env *e, uint32_t insn) { return e->func[insn]; }

/* A global function's memory argument (NANOBPF_FUNC_ARG_MEM, or MEM_RO: a pointer to const). */
static int is_mem_arg(uint32_t kind) { return kind == NANOBPF_FUNC_ARG_MEM || kind == NANOBPF_FUNC_ARG_MEM_RO; }
/* The map field of a mem / mem_or_null register (no map there): the bytes may only be read. */
#define MEM_READONLY 1
#define MEM_RINGBUF 2 /* mem, mem_or_null: a ring buffer record (bpf_ringbuf_reserve); id: its reference */
/* The map field's kind (the low bits: 0, MEM_READONLY or MEM_RINGBUF) and, from bit MEM_ALIGN_SHIFT, a
 * global function argument's known alignment (log2, at most 3: every caller passes an address that
 * many bytes aligned, arg_align), which spares the JIT its alignment test on accesses proven aligned. */
#define MEM_KIND(m) ((m) & 0xf)
#define MEM_ALIGN_SHIFT 4

/* Bytes a global function's MEM argument a (0..4) points to. */
static uint32_t sig_size(const struct nanobpf_image_func *g, uint32_t a) {
    switch (a) {
    case 0: return g->arg1_size;
    case 1: return g->arg2_size;
    case 2: return g->arg3_size;
    case 3: return g->arg4_size;
    default: return g->arg5_size;
    }
}

/* The image's function table: each entry names a called function and gives a prototype we can check. */
static int map_global_funcs(struct env *e) {
    for (uint32_t k = 0; k < e->prog->n_funcs; k++) {
        const struct nanobpf_image_func *g = &e->prog->funcs[k];
        if (g->start == 0 || g->start >= e->n || !(e->flags[g->start] & F_FUNC))
            return fail(e, -1, "function table entry %u: insn %u is not the start of a called function", k, g->start);
        if ((g->flags != NANOBPF_FUNC_GLOBAL && g->flags != (NANOBPF_FUNC_GLOBAL | NANOBPF_FUNC_PROGRAM)) ||
            g->n_args > 5 || g->pad || (g->ret != NANOBPF_FUNC_ARG_NONE && g->ret != NANOBPF_FUNC_ARG_SCALAR))
            return fail(e, (int)g->start, "function table entry %u: flags 0x%x, %u arguments, return kind %u not supported",
                        k, g->flags, g->n_args, g->ret);
        if ((g->flags & NANOBPF_FUNC_PROGRAM) &&
            (g->n_args != 1 || g->arg_type[0] != NANOBPF_FUNC_ARG_CTX || g->ret != NANOBPF_FUNC_ARG_SCALAR))
            return fail(e, (int)g->start, "function table entry %u: a program takes the context and returns an action", k);
        for (uint32_t a = 0; a < 5; a++) {
            uint32_t kind = g->arg_type[a], size = sig_size(g, a);
            int ok = a >= g->n_args ? kind == NANOBPF_FUNC_ARG_NONE && size == 0
                     : is_mem_arg(kind) ? size > 0 && size <= MAX_VAR_OFF
                     : (kind == NANOBPF_FUNC_ARG_SCALAR || kind == NANOBPF_FUNC_ARG_CTX) && size == 0;
            if (!ok)
                return fail(e, (int)g->start, "function table entry %u: argument %u has kind %u and size %u", k, a + 1,
                            kind, size);
        }
        uint32_t f = e->func[g->start];
        if (e->gsig[f]) return fail(e, (int)g->start, "function table names insn %u twice", g->start);
        e->gsig[f] = g;
    }
    for (uint32_t i = 0; i < e->n; i++) { /* a program is entered by bpf_tail_call only */
        const struct ebpf_insn *in = &e->in[i];
        if ((e->flags[i] & F_LDIMM2) || !has_call_edge(in)) continue;
        const struct nanobpf_image_func *g = e->gsig[e->func[i + 1 + (uint32_t)in->imm]];
        if (g && (g->flags & NANOBPF_FUNC_PROGRAM))
            return fail(e, (int)i, "insn %u %s the program at insn %u (programs are entered by bpf_tail_call only)", i,
                        is_func_ref(in) ? "takes the address of" : "calls", g->start);
    }
    return 0;
}

/* Which functions may move packet data (a helper such as xdp_adjust_tail, directly or in a callee):
 * a call to a global function invalidates the caller's packet pointers then. */
static void compute_changes_pkt(struct env *e) {
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t i = 0; i < e->n; i++) {
            const struct ebpf_insn *in = &e->in[i];
            if ((e->flags[i] & F_LDIMM2) || !(is_call(in) || is_func_ref(in)) || e->changes_pkt[e->func[i]]) continue;
            int c;
            if (in->src == EBPF_PSEUDO_CALL || is_func_ref(in)) { /* a callback runs in bpf_loop, here */
                c = e->changes_pkt[e->func[i + 1 + (uint32_t)in->imm]];
            } else {
                const struct ebpf_helper *h = ebpf_helper_find((uint32_t)in->imm);
                c = h && (h->flags & EBPF_HELPER_CHANGES_PKT);
            }
            if (c) e->changes_pkt[e->func[i]] = 1, changed = 1;
        }
    }
}

/* Call graph: recursion (colour 1 = on the walk) and frames along the longest chain. */
static int call_graph_walk(struct env *e, uint32_t f, uint8_t *colour, uint8_t *frames) {
    colour[f] = 1;
    uint8_t best = 0;
    for (uint32_t i = e->fstart[f]; i < e->fstart[f + 1]; i++) {
        if (!(e->flags[i] & F_REACHED) || (e->flags[i] & F_LDIMM2) || !has_call_edge(&e->in[i])) continue;
        uint32_t t = i + 1 + (uint32_t)e->in[i].imm, g = (uint32_t)func_of(e, t);
        if (colour[g] == 1) return fail(e, (int)i, "recursive call from insn %u to %u", i, t);
        if (colour[g] == 0 && call_graph_walk(e, g, colour, frames)) return -1;
        if (frames[g] > best) best = frames[g];
    }
    colour[f] = 2;
    frames[f] = (uint8_t)(best + 1);
    return 0;
}

/* Loop depth of each insn (e->loopd, at most 255): in how many loops it is. A loop is a header, the
 * target of back edges (back[u]: the DFS's back edge from u, if any), and the insns that reach one of
 * their sources without passing through the header. Only the order of exploration uses it (first_side):
 * a loop that is not natural (entered at two places) gives depths that are merely less useful. */
static int compute_loop_depth(struct env *e, const uint16_t *back, uint32_t *stk) {
    uint16_t *mark = ebpf_alloc(e->n * sizeof *mark); /* header + 1 of the last loop that counted the insn */
    e->loopd = ebpf_alloc(e->n);
    if (!mark || !e->loopd) {
        ebpf_free(mark);
        return -1;
    }
    for (uint32_t h = 0; h < e->n; h++) {
        uint32_t sp = 0, header = 0;
        mark[h] = (uint16_t)(h + 1);
        for (uint32_t k = e->pstart[h]; k < e->pstart[h + 1]; k++) {
            uint32_t u = e->preds[k];
            if (back[u] != h) continue;
            header = 1;
            if (mark[u] != h + 1) mark[u] = (uint16_t)(h + 1), stk[sp++] = u;
        }
        if (!header) continue;
        stk[sp++] = h;
        while (sp) {
            uint32_t x = stk[--sp];
            if (e->loopd[x] < 255) e->loopd[x]++;
            for (uint32_t k = e->pstart[x]; x != h && k < e->pstart[x + 1]; k++) {
                uint32_t p = e->preds[k];
                if (mark[p] != h + 1) mark[p] = (uint16_t)(h + 1), stk[sp++] = p;
            }
        }
    }
    ebpf_free(mark);
    return 0;
}

static int check_structure(struct env *e) {
    uint32_t n = e->n;
    /* fields, ld_imm64 pairs */
    for (uint32_t i = 0; i < n; i++) {
        if (check_fields(e, i)) return -1;
        if (is_ldimm64(&e->in[i])) e->flags[++i] |= F_LDIMM2;
    }
    /* jump and call targets, function starts */
    e->flags[0] |= F_FUNC;
    for (uint32_t k = 0; k < e->prog->n_funcs; k++) { /* the image's other programs: functions nobody calls */
        uint32_t t = e->prog->funcs[k].start;
        if ((e->prog->funcs[k].flags & NANOBPF_FUNC_PROGRAM) && t > 0 && t < n && !(e->flags[t] & F_LDIMM2))
            e->flags[t] |= F_FUNC;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct ebpf_insn *in = &e->in[i];
        if (e->flags[i] & F_LDIMM2) continue;
        if (is_ja(in) || is_cond_jmp(in) || is_local_call(in)) {
            int64_t t = is_local_call(in) ? (int64_t)i + 1 + in->imm
                        : (EBPF_CLASS(in->code) == EBPF_CLS_JMP32 && is_ja(in)) ? (int64_t)i + 1 + in->imm
                                                                                 : (int64_t)i + 1 + in->off;
            if (t < 0 || t >= (int64_t)n)
                return fail(e, (int)i, "%s out of range from insn %u to %lld", is_local_call(in) ? "call" : "jump", i,
                            (long long)t);
            if (e->flags[t] & F_LDIMM2) return fail(e, (int)i, "jump into the middle of ld_imm64 at insn %lld", (long long)t);
            if (is_local_call(in)) e->flags[t] |= F_FUNC;
        } else if (is_func_ref(in)) {
            int64_t t = (int64_t)i + 1 + in->imm;
            if (t <= 0 || t >= (int64_t)n || (e->flags[t] & F_LDIMM2))
                return fail(e, (int)i, "callback address out of range from insn %u to %lld", i, (long long)t);
            e->flags[t] |= F_FUNC;
        }
    }
    e->nfuncs = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (e->flags[i] & F_FUNC) {
            if (e->nfuncs == EBPF_MAX_SUBPROGS)
                return fail(e, (int)i, "too many functions (more than %d)", EBPF_MAX_SUBPROGS);
            e->fstart[e->nfuncs++] = i;
        }
        e->func[i] = (uint8_t)(e->nfuncs - 1);
    }
    e->fstart[e->nfuncs] = n;
    if (map_global_funcs(e)) return -1;
    for (uint32_t i = 0; i < n; i++)
        if (!(e->flags[i] & F_LDIMM2) && is_func_ref(&e->in[i]) && e->gsig[e->func[i + 1 + (uint32_t)e->in[i].imm]])
            return fail(e, (int)i, "callback at insn %u is a global function: make it static", i + 1 + (uint32_t)e->in[i].imm);
    for (uint32_t f = 0; f < e->nfuncs; f++) {
        uint32_t last = e->fstart[f + 1] - 1;
        if (!is_exit(&e->in[last]) && !is_ja(&e->in[last]))
            return fail(e, (int)last, "last insn of function %u is not exit or ja", f);
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct ebpf_insn *in = &e->in[i];
        if (e->flags[i] & F_LDIMM2) continue;
        if (is_ja(in) || is_cond_jmp(in)) {
            uint32_t t = jump_target(in, i);
            if (e->func[t] != e->func[i])
                return fail(e, (int)i, "jump from insn %u to insn %u leaves its function", i, t);
        }
    }

    /* depth-first CFG walk: reachability and back-edges */
    uint32_t *stk = ebpf_alloc(n * sizeof *stk);
    uint8_t *cursor = ebpf_alloc(n);
    uint16_t *back = ebpf_alloc(n * sizeof *back);
    uint16_t *pcount = e->pstart = ebpf_alloc((n + 1) * sizeof *pcount);
    uint16_t *preds = e->preds = ebpf_alloc(2 * n * sizeof *preds);
    int rc = -1;
    if (!stk || !cursor || !back || !pcount || !preds || cache_succs(e)) {
        rc = ebpf_fail(e->err, -1, "verifier: out of memory");
        goto out;
    }
    memset(back, 0xff, n * sizeof *back);
    uint32_t sp = 0;
    stk[sp++] = 0;
    e->flags[0] |= F_REACHED | F_ONSTACK;
    for (uint32_t f = 1; f < e->nfuncs; f++) /* the other programs */
        if (is_program(e, f)) {
            stk[sp++] = e->fstart[f];
            e->flags[e->fstart[f]] |= F_REACHED | F_ONSTACK;
        }
    while (sp) {
        uint32_t u = stk[sp - 1];
        int call = has_call_edge(&e->in[u]), ns = e->nsucc[u] + call; /* a call: its callee second */
        if (cursor[u] < ns) {
            int idx = cursor[u]++;
            int call_edge = idx == 1 && call;
            uint32_t v = call_edge ? u + 1 + (uint32_t)e->in[u].imm : e->succ[2 * u + idx];
            if (!(e->flags[v] & F_REACHED)) {
                e->flags[v] |= F_REACHED | F_ONSTACK;
                stk[sp++] = v;
            } else if ((e->flags[v] & F_ONSTACK) && !call_edge) {
                back[u] = (uint16_t)v;
            }
        } else {
            e->flags[u] &= (uint8_t)~F_ONSTACK;
            sp--;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (!(e->flags[i] & (F_REACHED | F_LDIMM2))) {
            rc = fail(e, (int)i, "unreachable insn %u", i);
            goto out;
        }
    /* which insns can reach an exit: reverse walk over intra-function edges */
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < e->nsucc[i]; k++) pcount[e->succ[2 * i + k] + 1]++;
    for (uint32_t i = 0; i < n; i++) pcount[i + 1] = (uint16_t)(pcount[i + 1] + pcount[i]);
    memset(cursor, 0, n);
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < e->nsucc[i]; k++) {
            uint32_t t = e->succ[2 * i + k];
            preds[pcount[t] + cursor[t]++] = (uint16_t)i;
        }
    sp = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!(e->flags[i] & F_LDIMM2) && is_exit(&e->in[i])) {
            e->flags[i] |= F_EXITS;
            stk[sp++] = i;
        }
    while (sp) {
        uint32_t v = stk[--sp];
        for (uint32_t k = pcount[v]; k < pcount[v + 1]; k++) {
            uint32_t u = preds[k];
            if (!(e->flags[u] & F_EXITS)) {
                e->flags[u] |= F_EXITS;
                stk[sp++] = u;
            }
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (back[i] != 0xffff && !(e->flags[i] & F_EXITS)) {
            rc = fail(e, (int)i, "back-edge from insn %u to %u: infinite loop that never reaches exit", i, back[i]);
            goto out;
        }
    for (uint32_t i = 0; i < n; i++)
        if (!(e->flags[i] & (F_EXITS | F_LDIMM2))) {
            rc = fail(e, (int)i, "infinite loop: insn %u never reaches exit", i);
            goto out;
        }
    if (compute_loop_depth(e, back, stk)) {
        rc = ebpf_fail(e->err, -1, "verifier: out of memory");
        goto out;
    }
    /* call graph: recursion and call depth */
    {
        uint8_t colour[EBPF_MAX_SUBPROGS] = {0}, frames[EBPF_MAX_SUBPROGS] = {0};
        if (call_graph_walk(e, 0, colour, frames)) goto out;
        e->maxframes = frames[0];
        for (uint32_t f = 1; f < e->nfuncs; f++) /* the other programs' chains (reported by their size alone) */
            if (is_program(e, f) && !colour[f]) {
                if (call_graph_walk(e, f, colour, frames)) goto out;
                if (frames[f] > EBPF_MAX_CALL_DEPTH) {
                    rc = fail(e, (int)e->fstart[f], "the call stack of %u frames from the program at insn %u is too deep "
                              "(at most %d)", frames[f], e->fstart[f], EBPF_MAX_CALL_DEPTH);
                    goto out;
                }
                if (frames[f] > e->maxframes) e->maxframes = frames[f];
            }
        if (frames[0] > EBPF_MAX_CALL_DEPTH) {
            /* report the call that goes one frame too deep along the longest chain */
            uint32_t f = 0, d = 1;
            for (;;) {
                uint32_t best_call = 0, best_g = 0;
                uint8_t best = 0;
                for (uint32_t i = e->fstart[f]; i < e->fstart[f + 1]; i++) {
                    if (!has_call_edge(&e->in[i]) || (e->flags[i] & F_LDIMM2)) continue;
                    uint32_t g = e->func[i + 1 + (uint32_t)e->in[i].imm];
                    if (frames[g] > best) best = frames[g], best_call = i, best_g = g;
                }
                if (d + 1 > EBPF_MAX_CALL_DEPTH) {
                    rc = fail(e, (int)best_call, "the call stack of %u frames is too deep (at most %d)", frames[0],
                              EBPF_MAX_CALL_DEPTH);
                    goto out;
                }
                f = best_g;
                d++;
            }
        }
    }
    /* Block leaders, and prune points as Linux places them: a conditional jump itself (one state covers
     * both ways out of it), the target of a ja, the return point of a call, a function's entry. Every
     * cycle of the CFG holds one (a cycle has a jump), which loop detection needs. */
    for (uint32_t i = 0; i < n; i++) {
        const struct ebpf_insn *in = &e->in[i];
        if (e->flags[i] & F_LDIMM2) continue;
        if (e->flags[i] & F_FUNC) e->flags[i] |= F_LEADER | F_PRUNE;
        if (is_ja(in) || is_cond_jmp(in)) e->flags[jump_target(in, i)] |= F_LEADER;
        if (is_cond_jmp(in) || is_local_call(in)) e->flags[i + 1] |= F_LEADER;
        if (is_ja(in)) e->flags[jump_target(in, i)] |= F_PRUNE;
        if (is_local_call(in)) e->flags[i + 1] |= F_PRUNE;
        if (is_cond_jmp(in)) e->flags[i] |= F_PRUNE;
        /* bpf_loop: where each call of the callback starts (the loop's head) and where the calls end */
        if (is_loop_call(in)) e->flags[i] |= F_LEADER | F_PRUNE, e->flags[i + 1] |= F_LEADER | F_PRUNE;
    }
    rc = 0;
out:
    ebpf_free(stk);
    ebpf_free(cursor);
    ebpf_free(back);
    return rc;
}

/* ---- Static liveness of r0..r9 ---- */
static void use_def(const struct env *e, uint32_t i, uint16_t *use, uint16_t *def) {
    const struct ebpf_insn *in = &e->in[i];
    uint16_t d = (uint16_t)(1u << in->dst), s = (uint16_t)(1u << in->src);
    int x = (in->code & EBPF_SRC_X) != 0, op = EBPF_OP(in->code);
    *use = *def = 0;
    switch (EBPF_CLASS(in->code)) {
    case EBPF_CLS_LD: *def = d; break;
    case EBPF_CLS_LDX: *use = s; *def = d; break;
    case EBPF_CLS_ST: *use = d; break;
    case EBPF_CLS_STX:
        *use = d | s;
        if (EBPF_MODE(in->code) == EBPF_MODE_ATOMIC) {
            if (in->imm == EBPF_ATOMIC_CMPXCHG) *use |= 1, *def = 1;
            else if (in->imm & EBPF_ATOMIC_FETCH) *def = s;
        }
        break;
    case EBPF_CLS_ALU:
    case EBPF_CLS_ALU64:
        if (op == EBPF_ALU_MOV) *use = x ? s : 0;
        else if (op == EBPF_ALU_END || op == EBPF_ALU_NEG) *use = d;
        else *use = (uint16_t)(d | (x ? s : 0));
        *def = d;
        break;
    default:
        if (is_exit(in)) *use = 1;
        else if (is_call(in)) {
            *def = 0x3f;
            if (in->src == EBPF_PSEUDO_CALL) {
                const struct nanobpf_image_func *g = e->gsig[e->func[i + 1 + (uint32_t)in->imm]];
                /* a global function's arguments are checked at the call: all of them are used */
                *use = g ? (uint16_t)(((1u << g->n_args) - 1) << 1) : e->live[i + 1 + (uint32_t)in->imm] & LIVE_R1_R5;
            } else {
                const struct ebpf_helper *h = ebpf_helper_find((uint32_t)in->imm);
                for (int a = 0; h && a < 5; a++)
                    if (h->args[a] != EBPF_ARG_NONE) *use |= (uint16_t)(1u << (a + 1));
            }
        } else if (!is_ja(in)) {
            *use = (uint16_t)(d | (x ? s : 0));
        }
    }
    *use &= 0x3ff;
    *def &= 0x3ff;
}

/* The backward analyses (liveness, relevance) run off a worklist: an insn is computed again only when
 * something it reads changed (a successor; for a call, its callee's entry; for an exit, whether its
 * function's result matters), and the least fixpoint is the same as sweeping until nothing changes. */
struct worklist {
    uint16_t *stack, *calls; /* calls: the local calls, in order */
    uint8_t *queued;
    uint32_t n, ncalls;
};
static int wl_init(struct worklist *w, const struct env *e) {
    w->stack = ebpf_alloc(e->n * sizeof *w->stack);
    w->calls = ebpf_alloc(e->n * sizeof *w->calls);
    w->queued = ebpf_alloc(e->n);
    w->n = w->ncalls = 0;
    if (!w->stack || !w->calls || !w->queued) return -1;
    for (uint32_t i = 0; i < e->n; i++) { /* popped last first: a backward pass meets successors first */
        if (e->flags[i] & F_LDIMM2) continue;
        w->stack[w->n++] = (uint16_t)i, w->queued[i] = 1;
        if (is_local_call(&e->in[i])) w->calls[w->ncalls++] = (uint16_t)i;
    }
    return 0;
}
static void wl_push(struct worklist *w, uint32_t i) {
    if (!w->queued[i]) w->queued[i] = 1, w->stack[w->n++] = (uint16_t)i;
}
static void wl_free(struct worklist *w) {
    ebpf_free(w->stack);
    ebpf_free(w->calls);
    ebpf_free(w->queued);
}
/* insn i changed: what reads it */
static void wl_push_readers(struct worklist *w, const struct env *e, uint32_t i) {
    for (uint32_t k = e->pstart[i]; k < e->pstart[i + 1]; k++) wl_push(w, e->preds[k]);
    if (e->flags[i] & F_FUNC) /* a function's entry: the calls of it */
        for (uint32_t k = 0; k < w->ncalls; k++)
            if (w->calls[k] + 1 + (uint32_t)e->in[w->calls[k]].imm == i) wl_push(w, w->calls[k]);
}

static int compute_liveness(struct env *e) {
    /* use and def per insn, once (a local call's use follows its callee's liveness: computed each time) */
    uint16_t *ud = ebpf_alloc(2 * e->n * sizeof *ud);
    struct worklist w;
    if (!ud || wl_init(&w, e)) {
        ebpf_free(ud);
        wl_free(&w);
        return -1;
    }
    for (uint32_t i = 0; i < e->n; i++)
        if (!(e->flags[i] & F_LDIMM2)) use_def(e, i, &ud[2 * i], &ud[2 * i + 1]);
    while (w.n) {
        uint32_t i = w.stack[--w.n];
        w.queued[i] = 0;
        const uint32_t *s = &e->succ[2 * i];
        uint16_t use = ud[2 * i], def = ud[2 * i + 1], out = 0;
        for (int k = 0; k < e->nsucc[i]; k++) out |= e->live[s[k]];
        if (is_local_call(&e->in[i])) use_def(e, i, &use, &def);
        uint16_t v = (uint16_t)(use | (out & ~def));
        if (v != e->live[i]) {
            e->live[i] = v;
            wl_push_readers(&w, e, i);
        }
    }
    ebpf_free(ud);
    wl_free(&w);
    return 0;
}

/* ---- Relevance of scalar values ----
 * A scalar matters for safety only if it can flow into a branch condition, a pointer offset, a helper
 * size argument or a value returned to a caller that uses it. Pruning ignores the ranges of other
 * scalars (Linux reaches the same effect with precision tracking): a state with irrelevant scalars
 * that differ behaves exactly like the explored one on every path, since those values steer nothing.
 *
 * A forward pass classifies what each register may hold (scalar, ctx, other pointer, stack pointer
 * with a known frame offset or not) so that the backward pass knows which memory accesses can reach
 * stack slots and which additions can be pointer arithmetic. The backward pass computes, for every
 * instruction, the relevant registers r0..r9 and the relevant 8-byte slots of the current frame. */
#define K_S 1 /* may be a scalar */
#define K_C 2 /* may be the ctx pointer */
#define K_P 4 /* may be another non-stack pointer (packet, map) */
#define K_F 8 /* may be a pointer into the stack */
#define K_ALL 15
#define FP_UNKNOWN INT16_MIN
/* per-insn forward facts */
#define FI_DST_PTR 0x0001   /* ALU: dst may be a pointer */
#define FI_SRC_PTR 0x0002   /* ALU: src may be a pointer */
#define FI_ARGS_STACK 0x0001 /* local call: an argument may point to the stack */
#define FI_EXACT 0x8000     /* memory access: base surely fp + known offset; low 11 bits: offset + 1024 */
#define FI_MAYSTACK 0x4000  /* memory access: base may point to the stack */

struct kreg {
    uint8_t k;
    int16_t fp; /* frame offset of the stack part, FP_UNKNOWN if not known */
};
struct kstate {
    struct kreg r[EBPF_NREGS];
    uint64_t slot_ptr; /* slots (current frame) that may hold a spilled pointer */
    uint8_t valid;
};

static int kjoin(struct kstate *d, const struct kstate *s) {
    int changed = !d->valid;
    if (!d->valid) {
        *d = *s;
        return 1;
    }
    for (uint32_t r = 0; r < EBPF_NREGS; r++) {
        struct kreg a = d->r[r], b = s->r[r], c;
        c.k = a.k | b.k;
        if (!(a.k & K_F)) c.fp = b.fp;
        else if (!(b.k & K_F)) c.fp = a.fp;
        else c.fp = a.fp == b.fp ? a.fp : FP_UNKNOWN;
        if (c.k != a.k || c.fp != a.fp) d->r[r] = c, changed = 1;
    }
    if ((d->slot_ptr | s->slot_ptr) != d->slot_ptr) d->slot_ptr |= s->slot_ptr, changed = 1;
    return changed;
}

static void kset(struct kreg *r, uint8_t k) {
    r->k = k;
    r->fp = FP_UNKNOWN;
}

/* Slots of the current frame covered by [o, o + size), o a frame offset. */
static uint64_t slot_bits(int64_t o, uint32_t size) {
    uint64_t bits = 0;
    for (int64_t a = o; a < o + (int64_t)size; a++)
        if (a >= -EBPF_STACK_SIZE && a < 0) bits |= UINT64_C(1) << ((-a - 1) / 8);
    return bits;
}

static uint16_t base_info(const struct kreg *b, int16_t off) {
    if (!(b->k & K_F)) return 0;
    if (b->k == K_F && b->fp != FP_UNKNOWN) {
        int32_t o = b->fp + off;
        if (o >= -1024 && o < 1024) return (uint16_t)(FI_EXACT | (uint16_t)(o + 1024));
    }
    return FI_MAYSTACK;
}
static int32_t info_off(uint16_t info) { return (int32_t)(info & 0x7ff) - 1024; }

/* Forward transfer of insn i; records its facts in e->finfo[i]. */
static void ktransfer(struct env *e, uint32_t i, struct kstate *st) {
    const struct ebpf_insn *in = &e->in[i];
    struct kreg *d = &st->r[in->dst], *s = &st->r[in->src];
    int op = EBPF_OP(in->code), x = (in->code & EBPF_SRC_X) != 0;
    uint16_t info = 0;
    switch (EBPF_CLASS(in->code)) {
    case EBPF_CLS_ALU: kset(d, K_S); break;
    case EBPF_CLS_ALU64:
        if (op == EBPF_ALU_MOV && x && !in->off) *d = *s;
        else if ((op == EBPF_ALU_ADD || op == EBPF_ALU_SUB) && !x) {
            if ((d->k & K_F) && d->fp != FP_UNKNOWN) {
                int64_t fp = (int64_t)d->fp + (op == EBPF_ALU_ADD ? in->imm : -(int64_t)in->imm);
                d->fp = fp >= -1024 && fp < 1024 ? (int16_t)fp : FP_UNKNOWN;
            }
        } else if ((op == EBPF_ALU_ADD || op == EBPF_ALU_SUB) && x) {
            if (d->k & ~K_S) info |= FI_DST_PTR;
            if (s->k & ~K_S) info |= FI_SRC_PTR;
            kset(d, (uint8_t)(d->k | (op == EBPF_ALU_ADD ? s->k : K_S)));
        } else {
            kset(d, K_S);
        }
        break;
    case EBPF_CLS_LD: kset(d, in->src ? K_P : K_S); break;
    case EBPF_CLS_LDX: {
        struct kreg b = *s;
        uint8_t k = 0;
        info = base_info(&b, in->off);
        if (b.k & (K_S | K_P)) k |= K_S;
        if (b.k & K_C) k |= K_S | K_P;
        if (b.k & K_F) {
            if (size_of(in->code) < 8) k |= K_S;
            else if ((info & FI_EXACT) && (info_off(info) % 8 == 0) &&
                     !(st->slot_ptr & slot_bits(info_off(info), 8)))
                k |= K_S;
            else
                k |= K_ALL;
        }
        kset(d, k ? k : K_S);
        break;
    }
    case EBPF_CLS_ST:
    case EBPF_CLS_STX: {
        info = base_info(d, in->off);
        int ptr_val = EBPF_CLASS(in->code) == EBPF_CLS_STX && (s->k & ~K_S);
        if (info & FI_EXACT) {
            uint64_t b = slot_bits(info_off(info), size_of(in->code));
            if (ptr_val) st->slot_ptr |= b;
            else if (EBPF_MODE(in->code) != EBPF_MODE_ATOMIC) st->slot_ptr &= ~b; /* scalar data over it */
        } else if ((info & FI_MAYSTACK) && ptr_val) {
            st->slot_ptr = U64MAX;
        }
        if (EBPF_MODE(in->code) == EBPF_MODE_ATOMIC) {
            if (in->imm == EBPF_ATOMIC_CMPXCHG) kset(&st->r[0], K_S);
            else if (in->imm & EBPF_ATOMIC_FETCH) kset(s, K_S);
        }
        break;
    }
    default:
        if (is_call(in)) {
            if (in->src == EBPF_PSEUDO_CALL && e->gsig[e->func[i + 1 + (uint32_t)in->imm]]) {
                /* a global function returns a scalar and only writes data into memory arguments */
                kset(&st->r[0], K_S);
            } else if (in->src == EBPF_PSEUDO_CALL) {
                int stack_arg = 0;
                for (uint32_t r = 1; r <= 5; r++) stack_arg |= (st->r[r].k & K_F) != 0;
                if (stack_arg) info |= FI_ARGS_STACK, st->slot_ptr = U64MAX;
                kset(&st->r[0], (uint8_t)(K_S | K_C | K_P | (stack_arg ? K_F : 0)));
            } else {
                const struct ebpf_helper *h = ebpf_helper_find((uint32_t)in->imm);
                /* bpf_loop's callback gets R3: a stack pointer there lets it read and write any slot */
                if (is_loop_call(in) && (st->r[3].k & K_F)) info |= FI_ARGS_STACK, st->slot_ptr = U64MAX;
                kset(&st->r[0], h && h->ret == EBPF_RET_PTR_TO_MAP_VALUE_OR_NULL ? (K_S | K_P) : K_S);
            }
            for (uint32_t r = 1; r <= 5; r++) kset(&st->r[r], K_S);
        }
    }
    e->finfo[i] = info;
}

static int compute_kinds(struct env *e) {
    struct kstate *ks = ebpf_alloc(e->nprune * sizeof *ks);
    uint16_t *work = ebpf_alloc(e->nprune * sizeof *work), *pinsn = ebpf_alloc(e->nprune * sizeof *pinsn);
    uint8_t *queued = ebpf_alloc(e->nprune);
    if (!ks || !work || !queued || !pinsn) {
        ebpf_free(ks), ebpf_free(work), ebpf_free(queued), ebpf_free(pinsn);
        return -1;
    }
    for (uint32_t i = 0; i < e->n; i++)
        if (e->flags[i] & F_LEADER) pinsn[e->prune[i]] = (uint16_t)i;
    uint32_t nw = 0;
    for (uint32_t f = 0; f < e->nfuncs; f++) {
        struct kstate *k = &ks[e->prune[e->fstart[f]]];
        for (uint32_t r = 0; r < EBPF_NREGS; r++) kset(&k->r[r], f && r >= 1 && r <= 5 ? K_ALL : K_S);
        if (!f) kset(&k->r[1], K_C);
        for (uint32_t a = 0; e->gsig[f] && a < 5; a++) {
            uint8_t kind = e->gsig[f]->arg_type[a];
            kset(&k->r[a + 1], kind == NANOBPF_FUNC_ARG_CTX ? K_C : is_mem_arg(kind) ? (K_P | K_S) : K_S);
        }
        k->r[EBPF_REG_FP].k = K_F;
        k->r[EBPF_REG_FP].fp = 0;
        k->valid = 1;
        work[nw++] = e->prune[e->fstart[f]];
        queued[e->prune[e->fstart[f]]] = 1;
    }
    /* run each block from its leader, join into its successors (blocks are numbered with the prune points) */
    for (int final = 0; final < 2; final++) {
        if (final) /* last sweep: record facts with the fixpoint states */
            for (uint32_t i = 0; i < e->n; i++)
                if ((e->flags[i] & F_LEADER) && ks[e->prune[i]].valid) work[nw++] = e->prune[i];
        while (nw) {
            uint32_t p = work[--nw], i = pinsn[p];
            queued[p] = 0;
            struct kstate st = ks[p];
            for (;;) {
                ktransfer(e, i, &st);
                const uint32_t *s = &e->succ[2 * i];
                int ns = e->nsucc[i];
                if (ns == 1 && !(e->flags[s[0]] & F_LEADER)) {
                    i = s[0];
                    continue;
                }
                for (int k = 0; k < ns; k++) {
                    uint32_t q = e->prune[s[k]];
                    if (kjoin(&ks[q], &st) && !final && !queued[q]) queued[q] = 1, work[nw++] = (uint16_t)q;
                }
                break;
            }
        }
    }
    ebpf_free(ks);
    ebpf_free(work);
    ebpf_free(queued);
    ebpf_free(pinsn);
    return 0;
}

static void rel_transfer(const struct env *e, uint32_t i, uint16_t *R, uint64_t *S, uint8_t *ret_rel) {
    const struct ebpf_insn *in = &e->in[i];
    uint16_t d = in->dst < 10 ? (uint16_t)(1u << in->dst) : 0, s = in->src < 10 ? (uint16_t)(1u << in->src) : 0;
    int op = EBPF_OP(in->code), x = (in->code & EBPF_SRC_X) != 0, subprog = e->func[i] != 0;
    uint16_t info = e->finfo[i];
    switch (EBPF_CLASS(in->code)) {
    case EBPF_CLS_ALU:
    case EBPF_CLS_ALU64:
        if (op == EBPF_ALU_MOV) {
            int rd = (*R & d) != 0;
            *R &= (uint16_t)~d;
            if (rd && x) *R |= s;
        } else if (op != EBPF_ALU_NEG && op != EBPF_ALU_END && x) {
            if (*R & d) *R |= s;
            if (EBPF_CLASS(in->code) == EBPF_CLS_ALU64 && (op == EBPF_ALU_ADD || op == EBPF_ALU_SUB)) {
                if (info & FI_DST_PTR) *R |= s;                        /* pointer += scalar */
                if (op == EBPF_ALU_ADD && (info & FI_SRC_PTR)) *R |= d; /* scalar += pointer */
            }
        }
        break;
    case EBPF_CLS_LD: *R &= (uint16_t)~d; break;
    case EBPF_CLS_LDX: {
        int rd = (*R & d) != 0;
        *R &= (uint16_t)~d;
        if (rd) {
            if (info & FI_EXACT) *S |= slot_bits(info_off(info), size_of(in->code));
            else if (info & FI_MAYSTACK) *S = U64MAX;
        }
        break;
    }
    case EBPF_CLS_ST:
        if ((info & FI_EXACT) && size_of(in->code) == 8) *S &= ~slot_bits(info_off(info), 8);
        break;
    case EBPF_CLS_STX: {
        uint64_t b = (info & FI_EXACT) ? slot_bits(info_off(info), size_of(in->code)) : 0;
        int hits = (info & FI_EXACT) ? (*S & b) != 0 : (info & FI_MAYSTACK) ? (*S != 0 || subprog) : 0;
        if (EBPF_MODE(in->code) == EBPF_MODE_ATOMIC) {
            uint16_t fr = in->imm == EBPF_ATOMIC_CMPXCHG ? 1 : (in->imm & EBPF_ATOMIC_FETCH) ? s : 0;
            int rf = (*R & fr) != 0;
            *R &= (uint16_t)~fr;
            if (rf) {
                if (info & FI_EXACT) *S |= b;
                else if (info & FI_MAYSTACK) *S = U64MAX;
            }
            if (hits) *R |= s | (in->imm == EBPF_ATOMIC_CMPXCHG ? 1 : 0);
        } else {
            if (hits) *R |= s;
            if ((info & FI_EXACT) && size_of(in->code) == 8) *S &= ~b;
        }
        break;
    }
    default:
        if (is_exit(in)) {
            *R = subprog && ret_rel[e->func[i]] ? 1 : 0;
            *S = 0;
        } else if (is_call(in)) {
            if (in->src == EBPF_PSEUDO_CALL && e->gsig[e->func[i + 1 + (uint32_t)in->imm]]) {
                /* its arguments only need their kinds, but a memory argument's NULL (a scalar 0) is one
                 * kind and any other scalar another; its result is unknown */
                const struct nanobpf_image_func *g = e->gsig[e->func[i + 1 + (uint32_t)in->imm]];
                *R &= (uint16_t)~0x3fu;
                for (uint32_t a = 0; a < g->n_args && a < 5; a++)
                    if (is_mem_arg(g->arg_type[a])) *R |= (uint16_t)(1u << (a + 1));
            } else if (in->src == EBPF_PSEUDO_CALL) {
                uint32_t t = i + 1 + (uint32_t)in->imm;
                if (*R & 1) ret_rel[e->func[t]] = 1;
                *R = (uint16_t)((*R & ~0x3fu) | (e->relR[t] & LIVE_R1_R5));
                if (info & FI_ARGS_STACK) *S = U64MAX;
            } else {
                const struct ebpf_helper *h = ebpf_helper_find((uint32_t)in->imm);
                *R &= (uint16_t)~0x3fu;
                if (info & FI_ARGS_STACK) *S = U64MAX; /* bpf_loop's callback may read any slot */
                for (uint32_t a = 0; h && a < 5; a++) /* sizes, and a pointer that may be NULL (a scalar 0) */
                    if (h->args[a] == EBPF_ARG_CONST_SIZE || h->args[a] == EBPF_ARG_CONST_SIZE_OR_ZERO ||
                        h->args[a] == EBPF_ARG_PTR_TO_MEM_OR_NULL || h->args[a] == EBPF_ARG_CONST_ALLOC_SIZE ||
                        h->args[a] == EBPF_ARG_PTR_TO_STACK_OR_NULL)
                        *R |= (uint16_t)(1u << (a + 1));
            }
        } else if (is_cond_jmp(in)) {
            *R |= d | (x ? s : 0);
        }
    }
}

static int compute_relevance(struct env *e) {
    uint32_t n = e->n;
    e->finfo = ebpf_alloc(n * sizeof *e->finfo);
    e->relR = ebpf_alloc(n * sizeof *e->relR);
    e->relS = ebpf_alloc(n * sizeof *e->relS);
    if (!e->finfo || !e->relR || !e->relS || compute_kinds(e)) return -1;
    uint8_t ret_rel[EBPF_MAX_SUBPROGS] = {0};
    for (uint32_t i = 0; i < n; i++) /* a callback's result decides whether bpf_loop calls it again */
        if (!(e->flags[i] & F_LDIMM2) && is_func_ref(&e->in[i])) ret_rel[e->func[i + 1 + (uint32_t)e->in[i].imm]] = 1;
    struct worklist w;
    if (wl_init(&w, e)) {
        wl_free(&w);
        return -1;
    }
    while (w.n) {
        uint32_t i = w.stack[--w.n];
        w.queued[i] = 0;
        const uint32_t *s = &e->succ[2 * i];
        uint16_t R = 0;
        uint64_t S = 0;
        for (int k = 0; k < e->nsucc[i]; k++) R |= e->relR[s[k]], S |= e->relS[s[k]];
        uint32_t callee = is_local_call(&e->in[i]) ? e->func[i + 1 + (uint32_t)e->in[i].imm] : 0;
        uint8_t ret_before = ret_rel[callee];
        rel_transfer(e, i, &R, &S, ret_rel);
        if (ret_rel[callee] != ret_before) /* the callee's result matters now: its exits */
            for (uint32_t x = e->fstart[callee]; x < e->fstart[callee + 1]; x++)
                if (is_exit(&e->in[x]) && !(e->flags[x] & F_LDIMM2)) wl_push(&w, x);
        R &= e->live[i]; /* a dead register cannot matter */
        if (R != e->relR[i] || S != e->relS[i]) {
            e->relR[i] = R;
            e->relS[i] = S;
            wl_push_readers(&w, e, i);
        }
    }
    wl_free(&w);
    return 0;
}

/* ---- State encoding (stored and pending states) ---- */
/* The encoders run for every item of every stored state: inlined into their few callers. */
#define HOT __attribute__((always_inline)) inline
#define P_OFF 0x01
#define P_AUX 0x02
#define P_ID 0x04
#define P_RANGE 0x08
#define P_UMIN 0x10
#define P_DELTA 0x20
#define P_FULL 0x40
#define P_VIEWS 0x80 /* a scalar's other views differ from its range's (enc_views) */
#define REG_ENC_MAX 96 /* a scalar with all its views: 93 bytes (a pointer: 40) */
#define ENC_FRAME_MAX (16 + EBPF_NREGS * REG_ENC_MAX + NSLOTS * (2 + REG_ENC_MAX))

HOT static uint8_t *put_varint(uint8_t *p, uint64_t v) {
    if (v < 0x80) { /* most fields fit in one byte */
        *p = (uint8_t)v;
        return p + 1;
    }
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}
HOT static const uint8_t *get_varint(const uint8_t *p, uint64_t *v) {
    if (*p < 0x80) { /* most fields fit in one byte */
        *v = *p;
        return p + 1;
    }
    uint64_t r = 0;
    unsigned shift = 0;
    for (;;) {
        uint8_t b = *p++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
        shift += 7;
    }
    *v = r;
    return p;
}

/* Scalar ids seen once in a state carry no information: they are encoded as 0. Counted in 64 buckets
 * by id: an id that shares its bucket with another is kept (keeping an id is never wrong, only less
 * general), so counting and asking cost a few instructions. */
struct idcount {
    uint64_t used;  /* bit b: bucket b holds id[b] */
    uint64_t multi; /* bit b: id[b] seen twice, or another id fell in bucket b too */
    uint32_t id[64];
};
static void idcount_add(struct idcount *c, uint32_t id) {
    uint64_t bit = UINT64_C(1) << (id & 63);
    if (c->used & bit) c->multi |= bit;
    else c->used |= bit, c->id[id & 63] = id;
}
static int idcount_single(const struct idcount *c, uint32_t id) {
    uint64_t bit = UINT64_C(1) << (id & 63);
    return (c->used & bit) && !(c->multi & bit) && c->id[id & 63] == id;
}

static uint64_t zigzag(int64_t x) { return ((uint64_t)x << 1) ^ (uint64_t)(x >> 63); }
static int64_t unzigzag(uint64_t z) { return (int64_t)((z >> 1) ^ (0 - (z & 1))); }

/* A scalar's views (signed, low half, known bits) where they say more than its unsigned range does
 * (most scalars: none): a byte of flags, then those fields. The views of the range are set_range's. */
#define V_SMIN 0x01
#define V_SMAX 0x02
#define V_U32MIN 0x04
#define V_U32MAX 0x08
#define V_S32MIN 0x10
#define V_S32MAX 0x20
#define V_TV 0x40
#define V_TM 0x80
HOT static uint8_t *enc_views(uint8_t *p, const struct vreg *v) {
    struct vreg c;
    set_range(&c, v->umin, v->umax);
    uint8_t *flags = p++, bits = 0;
    if (v->smin != c.smin) bits |= V_SMIN, p = put_varint(p, zigzag(v->smin));
    if (v->smax != c.smax) bits |= V_SMAX, p = put_varint(p, zigzag(v->smax));
    if (v->u32min != c.u32min) bits |= V_U32MIN, p = put_varint(p, v->u32min);
    if (v->u32max != c.u32max) bits |= V_U32MAX, p = put_varint(p, v->u32max);
    if (v->s32min != c.s32min) bits |= V_S32MIN, p = put_varint(p, zigzag(v->s32min));
    if (v->s32max != c.s32max) bits |= V_S32MAX, p = put_varint(p, zigzag(v->s32max));
    if (v->t.v != c.t.v) bits |= V_TV, p = put_varint(p, v->t.v);
    if (v->t.m != c.t.m) bits |= V_TM, p = put_varint(p, v->t.m);
    *flags = bits;
    return bits ? p : flags;
}
HOT static const uint8_t *dec_views(const uint8_t *p, struct vreg *r) {
    uint8_t bits = *p++;
    uint64_t x;
    if (bits & V_SMIN) p = get_varint(p, &x), r->smin = unzigzag(x);
    if (bits & V_SMAX) p = get_varint(p, &x), r->smax = unzigzag(x);
    if (bits & V_U32MIN) p = get_varint(p, &x), r->u32min = (uint32_t)x;
    if (bits & V_U32MAX) p = get_varint(p, &x), r->u32max = (uint32_t)x;
    if (bits & V_S32MIN) p = get_varint(p, &x), r->s32min = (int32_t)unzigzag(x);
    if (bits & V_S32MAX) p = get_varint(p, &x), r->s32max = (int32_t)unzigzag(x);
    if (bits & V_TV) p = get_varint(p, &x), r->t.v = x;
    if (bits & V_TM) p = get_varint(p, &x), r->t.m = x;
    return p;
}

/* The fields are read into locals first: every byte stored through p may alias *r for the compiler,
 * which would reload them after each store. */
HOT static uint8_t *enc_reg(uint8_t *p, const struct vreg *r, const struct idcount *ids) {
    const struct vreg v = *r;
    *p++ = v.type;
    if (v.type == T_NOT_INIT) return p;
    uint32_t id = v.id;
    int32_t off = v.off;
    if (v.type == T_SCALAR && id && idcount_single(ids, id)) id = 0, off = 0; /* linked to nothing */
    uint8_t *pres = p++;
    uint8_t bits = 0;
    if (off) bits |= P_OFF, p = put_varint(p, (uint32_t)((uint32_t)off << 1) ^ (uint32_t)(off >> 31));
    uint32_t aux = v.type == T_STACK ? v.frame : v.map;
    if (aux) bits |= P_AUX, p = put_varint(p, aux);
    if (id) bits |= P_ID, p = put_varint(p, id);
    if (v.range) bits |= P_RANGE, p = put_varint(p, v.range);
    if (v.umin) bits |= P_UMIN, p = put_varint(p, v.umin);
    if (v.umax == U64MAX && v.umin != U64MAX) bits |= P_FULL;
    else if (v.umax != v.umin) bits |= P_DELTA, p = put_varint(p, v.umax - v.umin);
    if (v.type == T_SCALAR && v.umin != v.umax) { /* a constant's views are all the constant */
        uint8_t *q = enc_views(p, r);
        if (q != p) bits |= P_VIEWS, p = q;
    }
    *pres = bits;
    return p;
}
/* Decodes into locals stored whole at the end (no memset: see set_type; no field written twice). */
HOT static const uint8_t *dec_reg(const uint8_t *p, struct vreg *out) {
    uint8_t type = *p++;
    if (type == T_NOT_INIT) {
        set_not_init(out);
        return p;
    }
    uint64_t off = 0, aux = 0, id = 0, range = 0, umin = 0, delta = 0;
    uint8_t bits = *p++;
    if (bits & P_OFF) p = get_varint(p, &off);
    if (bits & P_AUX) p = get_varint(p, &aux);
    if (bits & P_ID) p = get_varint(p, &id);
    if (bits & P_RANGE) p = get_varint(p, &range);
    if (bits & P_UMIN) p = get_varint(p, &umin);
    if (bits & P_DELTA) p = get_varint(p, &delta);
    uint32_t z = (uint32_t)off;
    if (type == T_SCALAR) {
        set_range(out, umin, (bits & P_FULL) ? U64MAX : umin + delta);
        out->id = (uint32_t)id;
        out->off = (int32_t)((z >> 1) ^ (0u - (z & 1)));
        return bits & P_VIEWS ? dec_views(p, out) : p;
    }
    *out = (struct vreg){.type = type,
                         .frame = type == T_STACK ? (uint8_t)aux : 0,
                         .map = type == T_STACK ? 0 : (uint16_t)aux,
                         .id = (uint32_t)id,
                         .off = (int32_t)((z >> 1) ^ (0u - (z & 1))),
                         .range = (uint32_t)range,
                         .umin = umin,
                         .umax = (bits & P_FULL) ? U64MAX : umin + delta};
    return p;
}

/* Registers that matter in frame j of st at insn: live ones of the innermost frame, r6..r9 of callers. */
static uint16_t frame_live(const struct env *e, const struct vstate *st, uint32_t j) {
    if (j == st->nframes - 1) return e->live[st->insn];
    uint32_t call = st->f[j + 1].callsite;
    /* below a bpf_loop callback the caller goes on at the call itself (the next call), with its arguments */
    if (is_loop_call(&e->in[call])) return e->live[call] & (LIVE_R1_R5 | LIVE_R6_R9);
    return e->live[call + 1] & LIVE_R6_R9;
}

/* Relevant registers and slots of frame j (callers: at their return point; a callee reached through
 * stack pointer arguments may read any of their slots). */
static void frame_relevant(const struct env *e, const struct vstate *st, uint32_t j, uint16_t *R, uint64_t *S) {
    if (e->no_relevance) {
        *R = 0x3ff;
        *S = U64MAX;
    } else if (j == st->nframes - 1) {
        *R = e->relR[st->insn];
        *S = e->relS[st->insn];
    } else {
        uint32_t call = st->f[j + 1].callsite, back = is_loop_call(&e->in[call]) ? call : call + 1;
        *R = e->relR[back] & (LIVE_R6_R9 | (back == call ? LIVE_R1_R5 : 0));
        *S = e->relS[back] | ((e->finfo[call] & FI_ARGS_STACK) ? U64MAX : 0);
    }
}

static uint32_t used_slots(const struct vframe *f) {
    uint32_t k = f->nslots;
    while (k && !f->s[k - 1].init) k--;
    return k;
}

static void count_ids(const struct env *e, const struct vstate *st, struct idcount *ids) {
    ids->used = ids->multi = 0;
    for (uint32_t j = 0; j < st->nframes; j++) {
        const struct vframe *f = &st->f[j];
        uint16_t live = frame_live(e, st, j);
        for (uint32_t r = 0; r < 10; r++)
            if ((live >> r & 1) && f->r[r].type == T_SCALAR && f->r[r].id) idcount_add(ids, f->r[r].id);
        for (uint32_t k = 0; k < f->nslots; k++)
            if (f->s[k].spill && f->s[k].reg.type == T_SCALAR && f->s[k].reg.id) idcount_add(ids, f->s[k].reg.id);
    }
}

static size_t encode(struct env *e, const struct vstate *st) {
    struct idcount ids;
    count_ids(e, st, &ids);
    uint8_t *p = e->buf;
    p = put_varint(p, st->insn);
    *p++ = (uint8_t)st->nframes;
    for (uint32_t j = 0; j < st->nframes; j++) {
        const struct vframe *f = &st->f[j];
        uint16_t live = frame_live(e, st, j);
        uint32_t ns = used_slots(f);
        p = put_varint(p, f->callsite);
        p = put_varint(p, f->func);
        p = put_varint(p, ns);
        p = put_varint(p, f->lock_map);
        if (f->lock_map) p = put_varint(p, f->lock_id);
        p = put_varint(put_varint(p, f->entry_refs), f->nrefs);
        for (uint32_t k = 0; k < f->nrefs; k++) p = put_varint(put_varint(p, f->ref_id[k]), f->ref_insn[k]);
        for (uint32_t r = 0; r < EBPF_NREGS; r++) {
            if (r == EBPF_REG_FP || (live >> r & 1)) p = enc_reg(p, &f->r[r], &ids);
            else *p++ = T_NOT_INIT; /* dead: encoded as never written */
        }
        for (uint32_t k = 0; k < ns; k++) {
            uint8_t init = f->s[k].init, spill = f->s[k].spill;
            *p++ = init;
            if (!init) continue;
            *p++ = spill;
            if (spill) p = enc_reg(p, &f->s[k].reg, &ids);
        }
    }
    return (size_t)(p - e->buf);
}

/* A slot as encode() wrote it (the register of a slot that holds none is left zero). */
static const uint8_t *dec_slot(const uint8_t *p, struct vslot *s) {
    *s = (struct vslot){.init = *p++};
    if (!s->init) return p;
    s->spill = *p++;
    if (s->spill) p = dec_reg(p, &s->reg);
    return p;
}

/* Decode into the working state st, keeping its invariant (see clear_frame): slots above the decoded
 * nslots are zeroed as far up as the frame's previous nslots (beyond that they are zero already). */
static void decode(const uint8_t *p, struct vstate *st) {
    uint64_t v;
    p = get_varint(p, &v);
    st->insn = (uint32_t)v;
    st->nframes = *p++;
    for (uint32_t j = 0; j < st->nframes; j++) {
        struct vframe *f = &st->f[j];
        uint32_t old_ns = f->nslots;
        p = get_varint(p, &v), f->callsite = (uint32_t)v;
        p = get_varint(p, &v), f->func = (uint16_t)v;
        p = get_varint(p, &v), f->nslots = (uint16_t)v;
        p = get_varint(p, &v), f->lock_map = (uint32_t)v;
        f->lock_id = 0;
        if (f->lock_map) p = get_varint(p, &v), f->lock_id = (uint32_t)v;
        p = get_varint(p, &v), f->entry_refs = (uint32_t)v;
        p = get_varint(p, &v), f->nrefs = (uint32_t)v;
        for (uint32_t k = 0; k < f->nrefs; k++) {
            p = get_varint(p, &v), f->ref_id[k] = (uint32_t)v;
            p = get_varint(p, &v), f->ref_insn[k] = (uint32_t)v;
        }
        for (uint32_t r = 0; r < EBPF_NREGS; r++) p = dec_reg(p, &f->r[r]);
        for (uint32_t k = 0; k < f->nslots; k++) p = dec_slot(p, &f->s[k]);
        if (old_ns > f->nslots) clear_slots(&f->s[f->nslots], old_ns - f->nslots);
    }
}

/* Hash of a state without ids, for loop detection only: equal states (up to id renaming) hash equally.
 * A filter before the exact comparison, so it takes the live registers of the innermost frame and the
 * call chain only (a loop that makes progress changes a register in it: its counter or a pointer), one
 * multiplication per word (CVA6 multiplies in several cycles). */
static uint64_t hash_mix(uint64_t h, uint64_t v) {
    h = (h ^ v) * UINT64_C(0x9e3779b97f4a7c15);
    return h ^ (h >> 29);
}
static uint32_t state_hash(const struct env *e, const struct vstate *st) {
    uint64_t h = st->nframes;
    for (uint32_t j = 1; j < st->nframes; j++) h = hash_mix(h, st->f[j].callsite);
    const struct vframe *f = &st->f[st->nframes - 1];
    uint16_t live = e->live[st->insn];
    for (uint32_t r = 0; r < 10; r++) {
        if (!(live >> r & 1)) continue;
        const struct vreg *q = &f->r[r];
        h = hash_mix(h, q->type | (uint64_t)q->frame << 8 | (uint64_t)q->map << 16 | (uint64_t)(uint32_t)q->off << 32);
        if (q->type != T_NOT_INIT) h = hash_mix(hash_mix(hash_mix(h, q->range), q->umin), q->umax);
    }
    return (uint32_t)(h ^ h >> 32);
}
/* Types of the live registers of the innermost frame (a quick filter before decoding a state). */
static uint64_t type_sig(const struct env *e, const struct vstate *st) {
    const struct vframe *f = &st->f[st->nframes - 1];
    uint16_t live = e->live[st->insn];
    uint64_t t = 0;
    for (uint32_t r = 0; r < 10; r++)
        if (live >> r & 1) t |= (uint64_t)f->r[r].type << (4 * r);
    return t;
}

/* Can a stored state with register types `old` (type_sig) cover one with `cur`? Each register's type
 * must be the same, or not_init in old. Done on all ten 4-bit fields at once: `set` has 0xf in every
 * field of old that is not zero. */
static int types_may_cover(uint64_t old, uint64_t cur) {
    uint64_t set = (old | old >> 1 | old >> 2 | old >> 3) & 0x1111111111ull;
    return ((old ^ cur) & set * 15) == 0;
}

/* ---- State comparison ---- */
struct idmap {
    uint32_t n;
    uint32_t old[96], cur[96];
};
static int idmap_check(struct idmap *m, uint32_t o, uint32_t c) {
    for (uint32_t k = 0; k < m->n; k++) {
        if (m->old[k] == o) return m->cur[k] == c;
        if (m->cur[k] == c) return 0;
    }
    if (m->n == 96) return 0;
    m->old[m->n] = o;
    m->cur[m->n++] = c;
    return 1;
}

/* Is every value that scalar c may hold one that scalar o may hold? */
HOT static int scalar_within(const struct vreg *o, const struct vreg *c) {
    return o->umin <= c->umin && c->umax <= o->umax && o->smin <= c->smin && c->smax <= o->smax &&
           o->u32min <= c->u32min && c->u32max <= o->u32max && o->s32min <= c->s32min && c->s32max <= o->s32max &&
           tnum_in(o->t, c->t);
}
HOT static int scalar_equal(const struct vreg *o, const struct vreg *c) {
    return o->umin == c->umin && o->umax == c->umax && o->smin == c->smin && o->smax == c->smax &&
           o->u32min == c->u32min && o->u32max == c->u32max && o->s32min == c->s32min && o->s32max == c->s32max &&
           o->t.v == c->t.v && o->t.m == c->t.m;
}

/* Does old (explored safely) cover cur? exact: are they equal? */
HOT static int reg_covers(const struct vreg *o, const struct vreg *c, struct idmap *m, int exact, int relevant) {
    if (o->type == T_NOT_INIT) return !exact || c->type == T_NOT_INIT;
    if (o->type != c->type) return 0;
    if (!exact && !relevant && o->type == T_SCALAR) return 1; /* its value steers nothing */
    int within = exact ? (o->umin == c->umin && o->umax == c->umax) : (o->umin <= c->umin && c->umax <= o->umax);
    switch (o->type) {
    case T_SCALAR:
        if (!(exact ? scalar_equal(o, c) : scalar_within(o, c))) return 0;
        /* exact (loop detection): ids of scalars only matter where both sides link copies */
        if (exact) return !o->id || !c->id || (o->off == c->off && idmap_check(m, o->id, c->id));
        return !o->id || (c->id && o->off == c->off && idmap_check(m, o->id, c->id));
    case T_CTX: return o->off == c->off && within; /* moved by constants (it must be back at 0 to be read) */
    case T_PKT_END: return 1;
    case T_PKT:
    case T_PKT_META:
        if (o->off != c->off || !within) return 0;
        if (exact ? c->range != o->range : c->range < o->range) return 0;
        if (!o->id || !c->id) return o->id == c->id;
        return idmap_check(m, o->id, c->id);
    case T_STACK: return o->frame == c->frame && o->off == c->off;
    case T_MAP_VALUE: /* ids only on values of maps with a bpf_spin_lock (mark_null) */
        return o->map == c->map && o->off == c->off && within && (!o->id || idmap_check(m, o->id, c->id));
    case T_MAP_VALUE_OR_NULL:
        return o->map == c->map && o->off == c->off && within && idmap_check(m, o->id, c->id);
    case T_MAP_PTR: return o->map == c->map;
    case T_FUNC: return o->map == c->map && o->off == c->off;
    case T_MEM: /* a ring buffer record is also which one (submitting one must not release another) */
        return o->off == c->off && o->range == c->range && o->map == c->map && within &&
               (MEM_KIND(o->map) != MEM_RINGBUF || idmap_check(m, o->id, c->id));
    case T_MEM_OR_NULL:
        return o->off == c->off && o->range == c->range && o->map == c->map && within && idmap_check(m, o->id, c->id);
    }
    return 0;
}

/* The old slot comes as its parts (it is decoded on the fly): init, spill and, when spill is set, reg. */
static int slot_covers(uint8_t oinit, uint8_t ospill, const struct vreg *oreg, const struct vslot *c, struct idmap *m,
                       int exact, int relevant) {
    if (exact) {
        if (oinit != c->init || ospill != c->spill) return 0;
        return !ospill || reg_covers(oreg, &c->reg, m, 1, 1);
    }
    if ((oinit & c->init) != oinit) return 0;
    if (ospill) {
        if (c->spill == ospill) return reg_covers(oreg, &c->reg, m, 0, relevant);
        if (!relevant && oreg->type == T_SCALAR) return !c->spill || c->reg.type == T_SCALAR;
        /* a spilled unknown scalar reads like plain data */
        struct vreg unknown;
        set_range(&unknown, 0, ospill == SPILL_64 ? U64MAX : U32MAX);
        if (oreg->type != T_SCALAR || oreg->id || !scalar_within(oreg, &unknown)) return 0;
        return !c->spill || c->reg.type == T_SCALAR;
    }
    /* old holds plain data (or nothing) here: a pointer spilled over bytes old could read differs */
    if (c->spill && c->reg.type != T_SCALAR && (oinit & spill_bytes[c->spill])) return 0;
    return 1;
}

/* Past an encoded register that the comparison does not look at. */
static const uint8_t *skip_varint(const uint8_t *p) {
    while (*p++ & 0x80) {}
    return p;
}
static const uint8_t *skip_reg(const uint8_t *p) {
    if (*p++ == T_NOT_INIT) return p;
    uint8_t bits = *p++;
    uint32_t fields = bits & (P_OFF | P_AUX | P_ID | P_RANGE | P_UMIN | P_DELTA); /* one varint each */
    for (; fields; fields &= fields - 1) p = skip_varint(p);
    if (bits & P_VIEWS)
        for (fields = *p++; fields; fields &= fields - 1) p = skip_varint(p);
    return p;
}

/* Items of a state in the encoding's order: per frame, registers r0..r10 then slots; item number
 * frame * ITEM_FRAME + index (registers 0..10, slot k at 11 + k). A hint is an item and the offset of
 * its encoding in the stored state (0 for a slot beyond the stored ones), HINT_OFF_BITS bits. */
#define ITEM_FRAME 128
#define HINT_OFF_BITS 14
static uint32_t make_hint(uint32_t item, size_t off) {
    _Static_assert(EBPF_MAX_CALL_DEPTH * ITEM_FRAME <= 1u << (24 - HINT_OFF_BITS), "hint item bits");
    return off < (1u << HINT_OFF_BITS) ? item << HINT_OFF_BITS | (uint32_t)off : 0;
}

/* Does the stored state p (encoded; explored safely) cover c? exact: are they equal? The comparison runs
 * while decoding, in the encoding's order, and stops at the first difference, whose hint goes to
 * *hint (0: none): most stored states differ early, and decoding a whole state costs more than
 * comparing it. */
static int encoded_covers(const struct env *e, const uint8_t *p, const struct vstate *c, int exact, uint32_t *hint) {
    static const struct vslot empty;
    const uint8_t *start = p, *at;
    struct idmap m;
    uint64_t v, callsite, func, ns;
    uint32_t item;
    m.n = 0;
    *hint = 0;
    p = get_varint(p, &v); /* insn: the one of c (states are listed per instruction) */
    if (*p++ != c->nframes) return 0;
    for (uint32_t j = 0; j < c->nframes; j++) {
        const struct vframe *fc = &c->f[j];
        p = get_varint(p, &callsite);
        p = get_varint(p, &func);
        if (callsite != fc->callsite || (uint16_t)func != fc->func) return 0;
        p = get_varint(p, &ns);
        uint64_t lock_map, lock_id = 0; /* the same lock held (the same value, up to id renaming), or none */
        p = get_varint(p, &lock_map);
        if (lock_map) p = get_varint(p, &lock_id);
        if (lock_map != fc->lock_map || (lock_map && !idmap_check(&m, (uint32_t)lock_id, fc->lock_id))) return 0;
        uint64_t nrefs, rid, rinsn, entry_refs; /* the same records reserved (same insns, up to id renaming) */
        p = get_varint(get_varint(p, &entry_refs), &nrefs);
        if (nrefs != fc->nrefs || entry_refs != fc->entry_refs) return 0;
        for (uint32_t k = 0; k < nrefs; k++) {
            p = get_varint(get_varint(p, &rid), &rinsn);
            if (rinsn != fc->ref_insn[k] || !idmap_check(&m, (uint32_t)rid, fc->ref_id[k])) return 0;
        }
        uint16_t live = frame_live(e, c, j), relR;
        uint64_t relS;
        frame_relevant(e, c, j, &relR, &relS);
        for (uint32_t r = 0; r < EBPF_NREGS; r++) {
            int relevant = relR >> r & 1;
            if (r == EBPF_REG_FP || !(live >> r & 1)) {
                p = skip_reg(p);
                continue;
            }
            item = j * ITEM_FRAME + r, at = p;
            if (!exact && !relevant && *p == T_SCALAR) { /* reg_covers looks at the type only */
                p = skip_reg(p);
                if (fc->r[r].type != T_SCALAR) goto differs;
                continue;
            }
            struct vreg o;
            p = dec_reg(p, &o);
            if (!reg_covers(&o, &fc->r[r], &m, exact, relevant)) goto differs;
        }
        /* beyond the stored slots old has nothing, which covers anything (exact: only nothing) */
        uint32_t n = exact && fc->nslots > (uint16_t)ns ? fc->nslots : (uint16_t)ns;
        for (uint32_t k = 0; k < n; k++) {
            int relevant = relS >> k & 1;
            uint8_t oinit = 0, ospill = SPILL_NONE;
            struct vreg oreg;
            const struct vslot *cs = k < fc->nslots ? &fc->s[k] : &empty;
            item = j * ITEM_FRAME + EBPF_NREGS + k, at = k < (uint16_t)ns ? p : start;
            if (k < (uint16_t)ns && (oinit = *p++) && (ospill = *p++)) {
                /* slot_covers looks only at the type of an irrelevant spilled scalar */
                if (!exact && !relevant && *p == T_SCALAR) p = skip_reg(p), set_type(&oreg, T_SCALAR);
                else p = dec_reg(p, &oreg);
            } else if (!exact) { /* old holds plain data or nothing (slot_covers's last case, inline) */
                if ((oinit & cs->init) != oinit) goto differs;
                if (cs->spill && cs->reg.type != T_SCALAR && (oinit & spill_bytes[cs->spill])) goto differs;
                continue;
            }
            if (!slot_covers(oinit, ospill, &oreg, cs, &m, exact, relevant)) goto differs;
        }
    }
    return 1;
differs: /* where: the item's encoding in the stored state (a slot beyond the stored ones: 0) */
    *hint = make_hint(item, at == start ? 0 : (size_t)(at - start));
    return 0;
}

/* Does the item where the last comparison with stored state s failed refuse c as well? Most states
 * that a stored one does not cover differ from it where the previous one did, and this test decodes
 * one item instead of everything before it. It refuses only what encoded_covers refuses too: the item
 * is compared as encoded_covers compares it (one register or slot checks at most one id pair, which a
 * fresh map accepts; with several pairs, encoded_covers's answer does not depend on their order: they
 * are accepted iff together they form a one-to-one map), and a state whose frames differ from s's
 * anyway is refused there. */
static int hint_refuses(const struct env *e, const struct snode *s, const struct vstate *c) {
    static const struct vslot empty;
    uint32_t item = (uint32_t)s->hint >> HINT_OFF_BITS, off = (uint32_t)s->hint & ((1u << HINT_OFF_BITS) - 1);
    uint32_t j = item / ITEM_FRAME, x = item % ITEM_FRAME;
    if (!s->hint || j >= c->nframes) return 0;
    const struct vframe *fc = &c->f[j];
    const uint8_t *p = s->data + off;
    struct idmap m;
    uint16_t relR;
    uint64_t relS;
    m.n = 0;
    frame_relevant(e, c, j, &relR, &relS);
    if (x < EBPF_NREGS) {
        struct vreg o;
        if (x == EBPF_REG_FP || !(frame_live(e, c, j) >> x & 1)) return 0;
        dec_reg(p, &o);
        return !reg_covers(&o, &fc->r[x], &m, 0, relR >> x & 1);
    }
    uint32_t k = x - EBPF_NREGS;
    uint8_t oinit = 0, ospill = SPILL_NONE;
    struct vreg oreg;
    if (off && (oinit = *p++) && (ospill = *p++)) dec_reg(p, &oreg);
    return !slot_covers(oinit, ospill, &oreg, k < fc->nslots ? &fc->s[k] : &empty, &m, 0, (int)(relS >> k & 1));
}

/* ---- State memory ----
 * Blocks of states (header + encoding) come from arenas: POOL_CHUNK chunks taken from ebpf_alloc and
 * kept until the end. Pending states are a stack (the newest is explored first), so their arena gives
 * a block back by moving its top down. Stored states are dropped in any order: their blocks have size
 * classes of POOL_GRAIN bytes, and a freed block waits in its class's list for the next block of that
 * class; between explorations of functions, when all are dropped, the arena starts over. Blocks are not
 * zeroed (their users set every header field); blocks too large for a chunk come from ebpf_alloc.
 * Accounting (state_bytes, pending_bytes) stays in header + encoding bytes, whatever is rounded up. */
static size_t round_grain(size_t bytes) { return (bytes + POOL_GRAIN - 1) & ~(size_t)(POOL_GRAIN - 1); }
static int fits_chunk(size_t bytes) { return round_grain(bytes) <= POOL_CHUNK - POOL_GRAIN; }
/* Large blocks from ebpf_alloc in whole words (copy_encoding writes the last one). */
static void *large_alloc(size_t bytes) { return ebpf_alloc((bytes + 7) & ~(size_t)7); }

/* `bytes` (a multiple of POOL_GRAIN that fits a chunk) at the top of a, in the next chunk if cur is full. */
static void *arena_take(struct arena *a, size_t bytes) {
    if ((size_t)(a->end - a->top) < bytes) { /* the rest of cur stays unused */
        struct chunk *c = a->cur ? a->cur->next : a->first;
        if (!c) {
            c = ebpf_alloc(POOL_CHUNK);
            if (!c) return NULL;
            c->prev = a->cur;
            if (a->cur) a->cur->next = c;
            else a->first = c;
        }
        a->cur = c;
        a->top = (uint8_t *)c + POOL_GRAIN;
        a->end = (uint8_t *)c + POOL_CHUNK;
    }
    void *p = a->top;
    a->top += bytes;
    return p;
}

/* Give back p, the newest block taken: it is in cur, or at the end of the chunk before an empty cur. */
static void arena_untake(struct arena *a, void *p) {
    uintptr_t q = (uintptr_t)p, c = (uintptr_t)a->cur;
    if (q < c || q >= c + POOL_CHUNK) {
        a->cur = a->cur->prev;
        a->end = (uint8_t *)a->cur + POOL_CHUNK;
    }
    a->top = p;
}

/* Every block given back at once; the chunks stay for the blocks to come. */
static void arena_reset(struct arena *a) {
    a->cur = NULL;
    a->top = a->end = NULL;
}

static void arena_destroy(struct arena *a) {
    while (a->first) {
        struct chunk *c = a->first;
        a->first = c->next;
        ebpf_free(c);
    }
    arena_reset(a);
}

static void *pending_alloc(struct env *e, size_t bytes) {
    return fits_chunk(bytes) ? arena_take(&e->pending_mem, round_grain(bytes)) : large_alloc(bytes);
}
static void pending_free(struct env *e, void *p, size_t bytes) {
    if (fits_chunk(bytes)) arena_untake(&e->pending_mem, p);
    else ebpf_free(p);
}

static uint32_t pool_class(size_t bytes) { return (uint32_t)(round_grain(bytes) / POOL_GRAIN) - 1; }

static void *pool_alloc(struct pool *pl, size_t bytes) {
    uint32_t c = pool_class(bytes);
    if (c >= POOL_CLASSES) return large_alloc(bytes);
    struct pool_block *b = pl->free[c];
    if (!b) return arena_take(&pl->arena, round_grain(bytes));
    pl->free[c] = b->next;
    return b;
}

static void pool_free(struct pool *pl, void *p, size_t bytes) {
    uint32_t c = pool_class(bytes);
    if (c >= POOL_CLASSES) {
        ebpf_free(p);
        return;
    }
    struct pool_block *b = p;
    b->next = pl->free[c];
    pl->free[c] = b;
}

/* After every stored state was freed. */
static void pool_reset(struct pool *pl) {
    for (uint32_t c = 0; c < POOL_CLASSES; c++) pl->free[c] = NULL;
    arena_reset(&pl->arena);
}

/* The encoding in e->buf into a block's data, 8 bytes at a time (both 8-aligned; the block is rounded up
 * to POOL_GRAIN and e->buf has room past the longest encoding, so the last word fits). A loop rather
 * than memcpy: picolibc's copies a byte at a time. */
typedef uint64_t __attribute__((may_alias)) enc_word;
static void copy_encoding(uint8_t *dst, const struct env *e, size_t size) {
    enc_word *d = (enc_word *)(void *)dst;
    const enc_word *s = (const enc_word *)(const void *)e->buf;
    for (size_t k = 0; k < (size + 7) / 8; k++) d[k] = s[k];
}

/* ---- Exploration bookkeeping ---- */
static void note_bytes(struct env *e) {
    size_t b = e->state_bytes + e->pending_bytes + e->raw_bytes;
    if (b > e->stats.peak_bytes) e->stats.peak_bytes = (uint32_t)b;
}

/* Scalars of cur that differ from those of old (the same frames) become unknown: a bpf_loop's head
 * after LOOP_WIDEN_AFTER calls of its callback whose states did not converge (a sum, a count kept in
 * the callback's context), so that the next call's state is covered (Linux widens the scalars it has
 * not found precise; here every changing one, after some exact calls). */
#define LOOP_WIDEN_AFTER 16
static void widen_scalar(struct vreg *c, const struct vreg *o, uint8_t spill) {
    if (c->type != T_SCALAR || o->type != T_SCALAR || scalar_equal(o, c)) return;
    if (spill == SPILL_LO32 || spill == SPILL_HI32) set_range(c, 0, U32MAX);
    else set_unknown(c);
}
static void widen(struct vstate *cur, const struct vstate *old) {
    if (cur->nframes != old->nframes) return;
    for (uint32_t j = 0; j < cur->nframes; j++)
        if (cur->f[j].callsite != old->f[j].callsite || cur->f[j].func != old->f[j].func) return;
    for (uint32_t j = 0; j < cur->nframes; j++) {
        struct vframe *c = &cur->f[j];
        const struct vframe *o = &old->f[j];
        for (uint32_t r = 0; r < EBPF_REG_FP; r++) widen_scalar(&c->r[r], &o->r[r], SPILL_64);
        for (uint32_t k = 0; k < c->nslots && k < o->nslots; k++)
            if (c->s[k].spill && c->s[k].spill == o->s[k].spill) widen_scalar(&c->s[k].reg, &o->s[k].reg, c->s[k].spill);
    }
}

/* At a prune point: 1 = the current path is covered by an explored state, 0 = go on, -1 = error. */
static int visit_state(struct env *e, uint32_t i) {
    struct vstate *cur = e->cur;
    int loop = e->loop_arrival;
    e->loop_arrival = 0;
    cur->insn = i;
    struct snode **pp = &e->heads[e->prune[i]], *s, *newest_open = NULL;
    uint32_t h = 0, len = 0, hint, open = 0;
    int hashed = 0; /* h is computed when first needed: most visits that end pruned never need it */
    uint64_t types = type_sig(e, cur);
    while ((s = *pp)) {
        len++;
        if (s->branches && loop) {
            /* back at a bpf_loop call from its callback: a state stored here that covers this one, even
             * one still being explored, ends the path (the calls are bounded at run time, so the
             * exploration only needs a fixpoint: Linux prunes callback states the same way) */
            if (encoded_covers(e, s->data, cur, 0, &hint)) {
                e->stats.pruned++;
                return 1;
            }
            if (!open++) newest_open = s;
        } else if (s->branches) {
            if (!hashed) h = state_hash(e, cur), hashed = 1;
            if (!s->hashed) { /* most stored states never meet a state on their own path: hashed lazily */
                decode(s->data, e->tmp);
                s->hash = state_hash(e, e->tmp);
                s->hashed = 1;
            }
            if (s->hash == h) {
                if (encoded_covers(e, s->data, cur, 1, &hint))
                    return fail(e, (int)i, "infinite loop detected at insn %u", i);
            }
        } else {
            if (types_may_cover(s->types, types) && !hint_refuses(e, s, cur)) {
                if (encoded_covers(e, s->data, cur, 0, &hint)) {
                    if (s->hit < 0xffff) s->hit++;
                    e->stats.pruned++;
                    return 1;
                }
                s->hint = hint;
            }
            if (s->miss < 0xffff) s->miss++;
            if (s->miss > 3u * s->hit + 3u) { /* rarely useful: drop it */
                *pp = s->next;
                e->state_bytes -= sizeof *s + s->size;
                e->nstates--;
                pool_free(&e->pool, s, sizeof *s + s->size);
                continue;
            }
        }
        pp = &s->next;
    }
    if (loop && open >= LOOP_WIDEN_AFTER) { /* the callback's calls do not converge: widen, and store that */
        decode(newest_open->data, e->tmp);
        widen(cur, e->tmp);
        hashed = 0; /* of the state before */
    }
    /* long lists are loop heads seen in many iterations: comparing with all would be quadratic */
    if (e->nstates >= e->max_states || len >= MAX_LIST) return 0;
    size_t size = encode(e, cur);
    if (e->state_bytes + sizeof *s + size > STATE_BYTES_MAX) return 0;
    s = pool_alloc(&e->pool, sizeof *s + size);
    if (!s) return 0; /* pruning is an optimisation: go on without storing */
    copy_encoding(s->data, e, size);
    s->size = (uint32_t)size;
    s->hit = s->miss = 0;
    s->hint = 0;
    s->hash = h;
    s->hashed = (uint32_t)hashed;
    s->types = types;
    s->parent = e->parent;
    s->branches = 1;
    s->next = e->heads[e->prune[i]];
    e->heads[e->prune[i]] = s;
    e->parent = s;
    e->nstates++;
    e->stats.states++;
    if (e->nstates > e->stats.peak_states) e->stats.peak_states = e->nstates;
    e->state_bytes += sizeof *s + size;
    note_bytes(e);
    return 0;
}

/* The current path ended (exit or pruned): stored states whose last path this was are finished. */
static void finish_path(struct env *e) {
    for (struct snode *s = e->parent; s; s = s->parent)
        if (--s->branches) break;
}

/* A pending branch is restored exactly once, soon in most programs (the newest is explored first): a raw
 * copy of the state's frames (registers, then the slots in use) costs a tenth of encoding and decoding
 * it. Deep stacks of pending branches (bounded loops explored iteration by iteration) are encoded, as
 * they take several times less memory. */
static void copy_words(void *dst, const void *src, size_t bytes) {
    enc_word *d = dst;
    const enc_word *s = src;
    for (size_t k = 0; k < bytes / 8; k++) d[k] = s[k];
}
#define RAW_HEAD 8u
#define RAW_FRAME offsetof(struct vframe, s)
_Static_assert(RAW_FRAME % 8 == 0 && sizeof(struct vslot) % 8 == 0, "raw copies are whole words");
static size_t raw_size(const struct vstate *st) {
    size_t b = RAW_HEAD;
    for (uint32_t j = 0; j < st->nframes; j++) b += RAW_FRAME + used_slots(&st->f[j]) * sizeof(struct vslot);
    return b;
}
static void save_raw(uint8_t *p, const struct vstate *st) {
    ((uint32_t *)(void *)p)[0] = st->insn;
    ((uint32_t *)(void *)p)[1] = st->nframes;
    p += RAW_HEAD;
    for (uint32_t j = 0; j < st->nframes; j++) {
        const struct vframe *f = &st->f[j];
        uint32_t ns = used_slots(f);
        copy_words(p, f, RAW_FRAME);
        ((struct vframe *)(void *)p)->nslots = (uint16_t)ns;
        copy_words(p + RAW_FRAME, f->s, ns * sizeof(struct vslot));
        p += RAW_FRAME + ns * sizeof(struct vslot);
    }
}
/* Into the working state st, keeping its invariant as decode() does, and as decode() would leave it:
 * dead registers never written, scalar ids seen once dropped (with their offsets). A raw copy kept
 * them, and a lone id that a fill or spill later copies would link two values the encoded state does
 * not: the exploration, and the states stored from it, must not depend on how a branch waited. */
static void restore_raw(const struct env *e, const uint8_t *p, struct vstate *st) {
    st->insn = ((const uint32_t *)(const void *)p)[0];
    st->nframes = ((const uint32_t *)(const void *)p)[1];
    p += RAW_HEAD;
    for (uint32_t j = 0; j < st->nframes; j++) {
        struct vframe *f = &st->f[j];
        uint32_t old_ns = f->nslots;
        copy_words(f, p, RAW_FRAME);
        copy_words(f->s, p + RAW_FRAME, f->nslots * sizeof(struct vslot));
        p += RAW_FRAME + f->nslots * sizeof(struct vslot);
        if (old_ns > f->nslots) clear_slots(&f->s[f->nslots], old_ns - f->nslots);
    }
    struct idcount ids;
    count_ids(e, st, &ids);
    for (uint32_t j = 0; j < st->nframes; j++) {
        struct vframe *f = &st->f[j];
        uint16_t live = frame_live(e, st, j);
        for (uint32_t r = 0; r < EBPF_REG_FP; r++) {
            struct vreg *v = &f->r[r];
            if (!(live >> r & 1)) set_not_init(v);
            else if (v->type == T_SCALAR && v->id && idcount_single(&ids, v->id)) v->id = 0, v->off = 0;
        }
        for (uint32_t k = 0; k < f->nslots; k++) {
            struct vreg *v = &f->s[k].reg;
            if (f->s[k].spill && v->type == T_SCALAR && v->id && idcount_single(&ids, v->id)) v->id = 0, v->off = 0;
        }
    }
}

/* The state at the conditional jump i, to explore `side` of it later. */
static int push_branch(struct env *e, uint32_t i, int side) {
    e->cur->insn = i;
    size_t size = raw_size(e->cur);
    size_t raw_max = ebpf_verify_no_raw_pending ? 0 : PENDING_RAW_MAX;
    int raw = fits_chunk(sizeof(struct pnode) + size) && e->raw_bytes + sizeof(struct pnode) + size <= raw_max;
    if (!raw) size = encode(e, e->cur);
    if (!raw && e->pending_bytes + sizeof(struct pnode) + size > PENDING_BYTES_MAX)
        return fail(e, (int)i, "program too complex (%u pending branches)", e->npending);
    struct pnode *p = pending_alloc(e, sizeof *p + size);
    if (!p) return fail(e, (int)i, "program too complex (out of memory for %u pending branches)", e->npending);
    if (raw) save_raw(p->data, e->cur);
    else copy_encoding(p->data, e, size);
    p->raw = (uint16_t)raw;
    p->side = (uint16_t)side;
    p->size = (uint32_t)size;
    p->parent = e->parent;
    if (e->parent) e->parent->branches++;
    p->next = e->pending;
    e->pending = p;
    e->npending++;
    if (e->npending > e->stats.peak_pending) e->stats.peak_pending = e->npending;
    *(raw ? &e->raw_bytes : &e->pending_bytes) += sizeof *p + size;
    note_bytes(e);
    return 0;
}

/* ---- Scalar values ----
 * A scalar is known as Linux knows one: unsigned and signed ranges of its 64 bits and of its low 32 bits
 * (what 32-bit instructions and jmp32 see), and its known bits (struct tnum). An operation computes
 * each view of the result it can follow, at 64 bits and at 32 bits for the low half, the others are
 * left unbounded, and scalar_sync() lets the views tighten one another (Linux's reg_bounds_sync; the
 * code is our own). A view is `struct view`: one width's ranges and known bits. */
#define SBIAS (UINT64_C(1) << 63)

static uint64_t umin64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t umax64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static int64_t smin64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t smax64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Known bits: what each operation does to them (Linux's tnum algorithms). */
static struct tnum tnum_cast(struct tnum a, int w32) {
    uint64_t m = w32 ? U32MAX : U64MAX;
    return (struct tnum){a.v & m, a.m & m};
}
static struct tnum tnum_add(struct tnum a, struct tnum b) {
    uint64_t sm = a.m + b.m, sv = a.v + b.v, chi = (sm + sv) ^ sv, mu = chi | a.m | b.m;
    return (struct tnum){sv & ~mu, mu};
}
static struct tnum tnum_sub(struct tnum a, struct tnum b) {
    uint64_t dv = a.v - b.v, chi = (dv + a.m) ^ (dv - b.m), mu = chi | a.m | b.m;
    return (struct tnum){dv & ~mu, mu};
}
static struct tnum tnum_and(struct tnum a, struct tnum b) {
    uint64_t v = a.v & b.v;
    return (struct tnum){v, (a.v | a.m) & (b.v | b.m) & ~v};
}
static struct tnum tnum_or(struct tnum a, struct tnum b) {
    uint64_t v = a.v | b.v;
    return (struct tnum){v, (a.m | b.m) & ~v};
}
static struct tnum tnum_xor(struct tnum a, struct tnum b) {
    uint64_t mu = a.m | b.m;
    return (struct tnum){(a.v ^ b.v) & ~mu, mu};
}
/* The sum of a's partial products: a known 1 bit of a adds b's unknown bits, an unknown bit of a all
 * of b's bits that may be 1, to the product of the known parts. */
static struct tnum tnum_mul(struct tnum a, struct tnum b) {
    struct tnum acc = {0, 0};
    uint64_t v = a.v * b.v;
    for (; a.v | a.m; a.v >>= 1, a.m >>= 1, b.v <<= 1, b.m <<= 1) {
        if (a.v & 1) acc = tnum_add(acc, (struct tnum){0, b.m});
        else if (a.m & 1) acc = tnum_add(acc, (struct tnum){0, b.v | b.m});
    }
    return tnum_add(tnum_const(v), acc);
}
static struct tnum tnum_arsh(struct tnum a, unsigned s, int w32) {
    if (w32) return (struct tnum){(uint32_t)((int32_t)a.v >> s), (uint32_t)((int32_t)a.m >> s)};
    return (struct tnum){(uint64_t)((int64_t)a.v >> s), (uint64_t)((int64_t)a.m >> s)};
}
/* Both a and b hold (*out); 0 when they disagree on a known bit. */
static int tnum_meet(struct tnum a, struct tnum b, struct tnum *out) {
    if ((a.v ^ b.v) & ~(a.m | b.m)) return 0;
    uint64_t m = a.m & b.m;
    *out = (struct tnum){(a.v | b.v) & ~m, m};
    return 1;
}

/* The bounds that the known bits give. */
static void bounds_from_bits(struct vreg *r) {
    struct tnum t = r->t;
    uint32_t v = (uint32_t)t.v, m = (uint32_t)t.m;
    int32_t slo = (int32_t)(v | (m & 0x80000000u)), shi = (int32_t)(v | (m & 0x7fffffffu));
    r->umin = umax64(r->umin, t.v);
    r->umax = umin64(r->umax, t.v | t.m);
    r->smin = smax64(r->smin, (int64_t)(t.v | (t.m & SBIAS)));
    r->smax = smin64(r->smax, (int64_t)(t.v | (t.m & ~SBIAS)));
    if (r->u32min < v) r->u32min = v;
    if (r->u32max > (v | m)) r->u32max = v | m;
    if (r->s32min < slo) r->s32min = slo;
    if (r->s32max > shi) r->s32max = shi;
}

/* The low half is within [lo, hi] as an unsigned 32-bit value (lo <= hi), in order. */
static void narrow_u32(struct vreg *r, uint32_t lo, uint32_t hi) {
    if (r->u32min < lo) r->u32min = lo;
    if (r->u32max > hi) r->u32max = hi;
}
static void narrow_s32(struct vreg *r, int32_t lo, int32_t hi) {
    if (r->s32min < lo) r->s32min = lo;
    if (r->s32max > hi) r->s32max = hi;
}
/* Values whose low halves run in order from lo to hi (unsigned): also in order as s32 unless they cross
 * from 0x7fffffff to 0x80000000. */
static void narrow_low(struct vreg *r, uint32_t lo, uint32_t hi) {
    narrow_u32(r, lo, hi);
    if ((int32_t)lo <= (int32_t)hi) narrow_s32(r, (int32_t)lo, (int32_t)hi);
}

/* The low half's bounds from the 64-bit ones, and its unsigned and signed bounds from each other. */
static void deduce32(struct vreg *r) {
    if (r->umin >> 32 == r->umax >> 32) narrow_low(r, (uint32_t)r->umin, (uint32_t)r->umax);
    if (r->smin >> 32 == r->smax >> 32) narrow_low(r, (uint32_t)r->smin, (uint32_t)r->smax);
    /* upper halves one apart and the low halves around -1, 0: in order as s32 */
    if ((uint32_t)(r->umin >> 32) + 1 == (uint32_t)(r->umax >> 32) && (int32_t)r->umin < 0 && (int32_t)r->umax >= 0)
        narrow_s32(r, (int32_t)r->umin, (int32_t)r->umax);
    if ((uint32_t)((uint64_t)r->smin >> 32) + 1 == (uint32_t)((uint64_t)r->smax >> 32) && (int32_t)r->smin < 0 &&
        (int32_t)r->smax >= 0)
        narrow_s32(r, (int32_t)r->smin, (int32_t)r->smax);
    if ((int32_t)r->u32min <= (int32_t)r->u32max) narrow_s32(r, (int32_t)r->u32min, (int32_t)r->u32max);
    if ((uint32_t)r->s32min <= (uint32_t)r->s32max) {
        narrow_u32(r, (uint32_t)r->s32min, (uint32_t)r->s32max);
    } else if (r->s32min < 0 && r->s32max >= 0) { /* two pieces as u32: the unsigned range may meet one */
        if (r->u32max < (uint32_t)r->s32min)
            r->s32min = (int32_t)r->u32min, narrow_u32(r, 0, (uint32_t)r->s32max);
        else if ((uint32_t)r->s32max < r->u32min)
            r->s32max = (int32_t)r->u32max, narrow_u32(r, (uint32_t)r->s32min, U32MAX);
    }
}

/* The 64-bit unsigned and signed bounds from each other. */
static void deduce64(struct vreg *r) {
    if ((int64_t)r->umin <= (int64_t)r->umax)
        r->smin = smax64(r->smin, (int64_t)r->umin), r->smax = smin64(r->smax, (int64_t)r->umax);
    if ((uint64_t)r->smin <= (uint64_t)r->smax) {
        r->umin = umax64(r->umin, (uint64_t)r->smin);
        r->umax = umin64(r->umax, (uint64_t)r->smax);
    } else if (r->smin < 0 && r->smax >= 0) { /* two pieces as u64: the unsigned range may meet one */
        if (r->umax < (uint64_t)r->smin) r->smin = (int64_t)r->umin, r->umax = umin64(r->umax, (uint64_t)r->smax);
        else if ((uint64_t)r->smax < r->umin) r->smax = (int64_t)r->umax, r->umin = umax64(r->umin, (uint64_t)r->smin);
    }
}

/* The 64-bit bounds from the low half's: the ends of a range keep their upper halves. */
static void deduce_mixed(struct vreg *r) {
    r->umin = umax64(r->umin, (r->umin & ~U32MAX) | r->u32min);
    r->umax = umin64(r->umax, (r->umax & ~U32MAX) | r->u32max);
    r->smin = smax64(r->smin, (int64_t)(((uint64_t)r->smin & ~U32MAX) | r->u32min));
    r->smax = smin64(r->smax, (int64_t)(((uint64_t)r->smax & ~U32MAX) | r->u32max));
    if (r->smin >= INT32_MIN && r->smax <= INT32_MAX) /* a sign-extended low half */
        r->smin = smax64(r->smin, r->s32min), r->smax = smin64(r->smax, r->s32max);
}

static int scalar_nonempty(const struct vreg *r) {
    return r->umin <= r->umax && r->smin <= r->smax && r->u32min <= r->u32max && r->s32min <= r->s32max;
}

/* r (a scalar, its link kept) := the constant or range [lo, hi] with the views set_range gives it. */
static void reset_range(struct vreg *r, uint64_t lo, uint64_t hi) {
    uint32_t id = r->id;
    int32_t off = r->off;
    set_range(r, lo, hi);
    r->id = id, r->off = off;
}

/* scalar_sync of values below 2^31 (most scalars, in a quarter of the instructions): their views are all
 * the same range, the known bits within it. */
static int sync_small(struct vreg *r) {
    int64_t lo = smax64(smax64((int64_t)r->umin, r->smin), smax64(r->u32min, r->s32min));
    int64_t hi = smin64(smin64((int64_t)r->umax, r->smax), smin64(r->u32max, r->s32max));
    struct tnum t = r->t;
    for (int k = 0; k < 2; k++) { /* the known bits within the range, and the range they leave */
        if (lo > hi || !tnum_meet(t, tnum_range((uint64_t)lo, (uint64_t)hi), &t)) return 0;
        lo = smax64(lo, (int64_t)t.v), hi = smin64(hi, (int64_t)(t.v | t.m));
    }
    if (lo > hi) return 0;
    reset_range(r, (uint64_t)lo, (uint64_t)hi);
    if (lo != hi) r->t = t; /* else: the constant's bits */
    return 1;
}

/* Lets the views of scalar r tighten one another; 0 when no value fits them all. */
static int scalar_sync(struct vreg *r) {
    if (!scalar_nonempty(r)) return 0;
    if (r->umax <= INT32_MAX) return sync_small(r);
    bounds_from_bits(r);
    for (int k = 0; k < 2; k++) deduce32(r), deduce64(r), deduce_mixed(r);
    for (int k = 0; k < 2; k++) { /* the known bits within the ranges, and the ranges they leave */
        struct tnum t64, t32;
        if (!scalar_nonempty(r) || !tnum_meet(r->t, tnum_range(r->umin, r->umax), &t64) ||
            !tnum_meet(tnum_cast(t64, 1), tnum_range(r->u32min, r->u32max), &t32))
            return 0;
        r->t = (struct tnum){(t64.v & ~U32MAX) | t32.v, (t64.m & ~U32MAX) | t32.m};
        bounds_from_bits(r);
    }
    if (!scalar_nonempty(r)) return 0;
    if (r->umin == r->umax) reset_range(r, r->umin, r->umin); /* every view the constant, as set_range's */
    return 1;
}

/* One width's view of a scalar: its 64 bits, or its low 32 (values, signed ones too, within 32 bits). */
struct view {
    uint64_t umin, umax;
    int64_t smin, smax;
    struct tnum t;
};
static uint64_t wmask(int w32) { return w32 ? U32MAX : U64MAX; }
static int64_t wsmin(int w32) { return w32 ? INT32_MIN : INT64_MIN; }
static int64_t wsmax(int w32) { return w32 ? INT32_MAX : INT64_MAX; }
static struct view view_of(const struct vreg *r, int w32) {
    if (!w32) return (struct view){r->umin, r->umax, r->smin, r->smax, r->t};
    return (struct view){r->u32min, r->u32max, r->s32min, r->s32max, tnum_cast(r->t, 1)};
}
static struct view view_unbounded(int w32) {
    return (struct view){0, wmask(w32), wsmin(w32), wsmax(w32), {0, wmask(w32)}};
}

/* r := the scalar whose 64-bit view is v64 and low half's view v32 (no id). */
static void set_views(struct vreg *r, struct view v64, struct view v32) {
    struct tnum t = v64.t;
    int ok = tnum_meet(v64.t, (struct tnum){v32.t.v, v32.t.m | ~U32MAX}, &t);
    *r = (struct vreg){.type = T_SCALAR, .umin = v64.umin, .umax = v64.umax, .smin = v64.smin, .smax = v64.smax,
                       .u32min = (uint32_t)v32.umin, .u32max = (uint32_t)v32.umax, .s32min = (int32_t)v32.smin,
                       .s32max = (int32_t)v32.smax, .t = t};
    /* views that no value fits come only from a path that cannot run, where anything holds */
    if (!ok || !scalar_sync(r)) set_unknown(r);
}
/* r := the 32-bit result v, zero-extended. */
static void set_zext32(struct vreg *r, struct view v) {
    set_views(r, (struct view){v.umin, v.umax, (int64_t)v.umin, (int64_t)v.umax, v.t}, v);
}

/* r (a scalar) := its low `bits` bits (8, 16 or 32) sign-extended. */
static void sext_scalar(struct vreg *r, unsigned bits) {
    uint64_t mask = size_mask(bits / 8), sign = UINT64_C(1) << (bits - 1), lo = 0, hi = mask;
    struct tnum t = {r->t.v & mask, r->t.m & mask};
    if (bits == 32) lo = r->u32min, hi = r->u32max;
    else if (r->umin >> bits == r->umax >> bits) lo = r->umin & mask, hi = r->umax & mask;
    if (t.m & sign) t.m |= ~mask; /* the sign bit fills the upper bits */
    else if (t.v & sign) t.v |= ~mask;
    struct view v = view_unbounded(0), v32 = view_unbounded(1);
    if (!((lo ^ hi) & sign)) v.smin = (int64_t)sext(lo, bits), v.smax = (int64_t)sext(hi, bits);
    else v.smin = -(int64_t)sign, v.smax = (int64_t)(sign - 1);
    v.t = t;
    v32.smin = v.smin, v32.smax = v.smax;
    set_views(r, v, v32);
}

/* A value loaded from memory: `size` bytes, sign-extended for MEMSX. */
static void set_loaded(struct vreg *r, uint32_t size, int sx) {
    set_range(r, 0, size_mask(size));
    if (sx) sext_scalar(r, size * 8);
}

/* Exact result of an ALU op (RFC 9669 semantics, as the interpreter). */
static uint64_t alu_exact(int op, int is32, int16_t off, uint64_t dst, uint64_t src) {
    if (is32) {
        uint32_t d = (uint32_t)dst, s = (uint32_t)src;
        int32_t sd = (int32_t)d, ss = (int32_t)s;
        switch (op) {
        case EBPF_ALU_ADD: return (uint32_t)(d + s);
        case EBPF_ALU_SUB: return (uint32_t)(d - s);
        case EBPF_ALU_MUL: return (uint32_t)(d * s);
        case EBPF_ALU_DIV:
            if (off == 1) return ss == 0 ? 0 : ss == -1 ? (uint32_t)(0u - d) : (uint32_t)(sd / ss);
            return s ? d / s : 0;
        case EBPF_ALU_MOD:
            if (off == 1) return ss == 0 ? d : ss == -1 ? 0 : (uint32_t)(sd % ss);
            return s ? d % s : d;
        case EBPF_ALU_OR: return d | s;
        case EBPF_ALU_AND: return d & s;
        case EBPF_ALU_XOR: return d ^ s;
        case EBPF_ALU_LSH: return (uint32_t)(d << (s & 31));
        case EBPF_ALU_RSH: return d >> (s & 31);
        case EBPF_ALU_ARSH: return (uint32_t)(sd >> (s & 31));
        case EBPF_ALU_NEG: return (uint32_t)(0u - d);
        case EBPF_ALU_MOV: return off ? (uint32_t)sext(s, (unsigned)off) : s;
        }
        return 0;
    }
    int64_t sd = (int64_t)dst, ss = (int64_t)src;
    switch (op) {
    case EBPF_ALU_ADD: return dst + src;
    case EBPF_ALU_SUB: return dst - src;
    case EBPF_ALU_MUL: return dst * src;
    case EBPF_ALU_DIV:
        if (off == 1) return ss == 0 ? 0 : ss == -1 ? 0 - dst : (uint64_t)(sd / ss);
        return src ? dst / src : 0;
    case EBPF_ALU_MOD:
        if (off == 1) return ss == 0 ? dst : ss == -1 ? 0 : (uint64_t)(sd % ss);
        return src ? dst % src : dst;
    case EBPF_ALU_OR: return dst | src;
    case EBPF_ALU_AND: return dst & src;
    case EBPF_ALU_XOR: return dst ^ src;
    case EBPF_ALU_LSH: return dst << (src & 63);
    case EBPF_ALU_RSH: return dst >> (src & 63);
    case EBPF_ALU_ARSH: return (uint64_t)(sd >> (src & 63));
    case EBPF_ALU_NEG: return 0 - dst;
    case EBPF_ALU_MOV: return off ? sext(src, (unsigned)off) : src;
    }
    return 0;
}

/* Signed a + b, a - b, a * b at one width; 0 when the result wraps. */
static int fits(int64_t r, int w32) { return !w32 || (r >= INT32_MIN && r <= INT32_MAX); }
static int sadd(int64_t a, int64_t b, int64_t *r, int w32) { return !__builtin_add_overflow(a, b, r) && fits(*r, w32); }
static int ssub(int64_t a, int64_t b, int64_t *r, int w32) { return !__builtin_sub_overflow(a, b, r) && fits(*r, w32); }
static int smul(int64_t a, int64_t b, int64_t *r, int w32) { return !__builtin_mul_overflow(a, b, r) && fits(*r, w32); }

static void view_mul(struct view *r, struct view a, struct view b, int w32) {
    uint64_t hi;
    int64_t p[4];
    r->t = tnum_cast(tnum_mul(a.t, b.t), w32);
    if (!__builtin_mul_overflow(a.umax, b.umax, &hi) && hi <= wmask(w32)) r->umin = a.umin * b.umin, r->umax = hi;
    if (smul(a.smin, b.smin, &p[0], w32) && smul(a.smin, b.smax, &p[1], w32) && smul(a.smax, b.smin, &p[2], w32) &&
        smul(a.smax, b.smax, &p[3], w32)) {
        r->smin = smin64(smin64(p[0], p[1]), smin64(p[2], p[3]));
        r->smax = smax64(smax64(p[0], p[1]), smax64(p[2], p[3]));
    }
}

/* Shifts by b: a known amount moves the known bits; amounts are masked to the width, so a range beyond
 * it could be any amount. */
static void view_shift(struct view *r, int op, struct view a, struct view b, int w32) {
    unsigned width = w32 ? 32 : 64, lo = (unsigned)(b.umin & (width - 1)), hi = lo;
    if (b.umin != b.umax && b.umax < width) lo = (unsigned)b.umin, hi = (unsigned)b.umax;
    else if (b.umin != b.umax) lo = 0, hi = width - 1;
    int known = lo == hi;
    switch (op) {
    case EBPF_ALU_LSH:
        if (known) r->t = tnum_cast((struct tnum){a.t.v << lo, a.t.m << lo}, w32);
        if (a.umax <= wmask(w32) >> hi) r->umin = a.umin << lo, r->umax = a.umax << hi;
        if (known && a.smin >= wsmin(w32) >> lo && a.smax <= wsmax(w32) >> lo) /* no bit reaches the sign */
            r->smin = (int64_t)((uint64_t)a.smin << lo), r->smax = (int64_t)((uint64_t)a.smax << lo);
        break;
    case EBPF_ALU_RSH:
        if (known) r->t = (struct tnum){a.t.v >> lo, a.t.m >> lo};
        r->umin = a.umin >> hi, r->umax = a.umax >> lo;
        break;
    default: /* ARSH */
        if (known) r->t = tnum_cast(tnum_arsh(a.t, lo, w32), w32);
        r->smin = smin64(a.smin >> lo, a.smin >> hi);
        r->smax = smax64(a.smax >> lo, a.smax >> hi);
    }
}

/* `a op b` at one width (a zero divisor as RFC 9669 says; off 1: signed div/mod), every view of the
 * result as far as the operation can be followed, the others unbounded. */
static struct view view_alu(int op, int16_t off, struct view a, struct view b, int w32) {
    uint64_t m = wmask(w32), lo = a.umin + b.umin, hi = a.umax + b.umax;
    struct view r = view_unbounded(w32);
    int64_t slo, shi;
    switch (op) {
    case EBPF_ALU_ADD: /* the unsigned range holds when all sums wrap, or none */
        r.t = tnum_cast(tnum_add(a.t, b.t), w32);
        if (w32 ? lo >> 32 == hi >> 32 : (lo < a.umin) == (hi < a.umax)) r.umin = lo & m, r.umax = hi & m;
        if (sadd(a.smin, b.smin, &slo, w32) && sadd(a.smax, b.smax, &shi, w32)) r.smin = slo, r.smax = shi;
        break;
    case EBPF_ALU_SUB:
        r.t = tnum_cast(tnum_sub(a.t, b.t), w32);
        if ((a.umin < b.umax) == (a.umax < b.umin)) r.umin = (a.umin - b.umax) & m, r.umax = (a.umax - b.umin) & m;
        if (ssub(a.smin, b.smax, &slo, w32) && ssub(a.smax, b.smin, &shi, w32)) r.smin = slo, r.smax = shi;
        break;
    case EBPF_ALU_MUL: view_mul(&r, a, b, w32); break;
    case EBPF_ALU_DIV:
        if (off == 1) break;
        if (b.umax == 0) r.umin = r.umax = 0;
        else if (b.umin == 0) r.umin = 0, r.umax = a.umax;
        else r.umin = a.umin / b.umax, r.umax = a.umax / b.umin;
        break;
    case EBPF_ALU_MOD:
        if (off == 1) break;
        if (b.umin && a.umax < b.umin) r = a;                /* a itself */
        else if (!b.umin) r.umin = 0, r.umax = a.umax;      /* by zero: a itself, else less than a */
        else r.umin = 0, r.umax = umin64(a.umax, b.umax - 1);
        break;
    case EBPF_ALU_AND:
        r.t = tnum_and(a.t, b.t);
        r.umin = r.t.v, r.umax = umin64(a.umax, b.umax);
        break;
    case EBPF_ALU_OR:
        r.t = tnum_or(a.t, b.t);
        r.umin = umax64(a.umin, b.umin), r.umax = r.t.v | r.t.m;
        break;
    case EBPF_ALU_XOR: r.t = tnum_xor(a.t, b.t); break;
    case EBPF_ALU_LSH:
    case EBPF_ALU_RSH:
    case EBPF_ALU_ARSH: view_shift(&r, op, a, b, w32); break;
    case EBPF_ALU_NEG: /* 0 stays 0, the rest wraps around */
        r.t = tnum_cast(tnum_sub(tnum_const(0), a.t), w32);
        if (a.umin) r.umin = (0 - a.umax) & m, r.umax = (0 - a.umin) & m;
        else if (!a.umax) r.umin = r.umax = 0;
        if (a.smin > wsmin(w32)) r.smin = -a.smax, r.smax = -a.smin;
        break;
    }
    return r;
}

/* Does the low half of a 64-bit `d op s` follow from the low halves of d and s alone? */
static int low_half_follows(int op, const struct vreg *s) {
    switch (op) {
    case EBPF_ALU_ADD: case EBPF_ALU_SUB: case EBPF_ALU_MUL: case EBPF_ALU_AND: case EBPF_ALU_OR:
    case EBPF_ALU_XOR: case EBPF_ALU_NEG: return 1;
    case EBPF_ALU_LSH: return s->umax < 32;
    }
    return 0;
}

/* After d := d op s: adding a constant (ALU64 add or sub, |offset| < 2^31) keeps d linked to its copies
 * (id), off apart from them, as Linux links them: a comparison of one then bounds the others (clang's
 * loops compare the counter's old copy, `r4 = r2; r2 += -1; if r4 > 1`). Anything else unlinks d. */
static void keep_link(struct vreg *d, uint32_t id, int32_t off, int op, int is32, const struct vreg *s) {
    if (!id || is32 || !is_const(s) || (op != EBPF_ALU_ADD && op != EBPF_ALU_SUB)) return;
    int64_t k = (int64_t)s->umin, delta = (int64_t)off + (op == EBPF_ALU_ADD ? k : -k);
    if (k < INT32_MIN || k > INT32_MAX || delta < INT32_MIN || delta > INT32_MAX) return;
    d->id = id, d->off = (int32_t)delta;
}

/* d := d op s, both scalars (s: the source register, or the immediate as a constant). */
static void scalar_alu(struct vreg *d, const struct vreg *s, int op, int is32, int16_t off) {
    struct view a = view_of(d, is32), b = view_of(s, is32);
    if (a.umin == a.umax && b.umin == b.umax) {
        set_const(d, alu_exact(op, is32, off, a.umin, b.umin));
        return;
    }
    struct view r32 = view_alu(op, off, view_of(d, 1), view_of(s, 1), 1);
    if (is32) {
        set_zext32(d, r32);
        return;
    }
    if (!low_half_follows(op, s)) r32 = view_unbounded(1);
    set_views(d, view_alu(op, off, a, b, 0), r32);
}

/* ---- Conditional jumps ---- */
/* What an outcome of a comparison says of its operands (a rel b). */
enum { REL_EQ, REL_NE, REL_SET, REL_NSET, REL_ULT, REL_ULE, REL_SLT, REL_SLE };
#define BR_TAKEN 1
#define BR_FALL 2
#define BR_RESUME 4 /* a pending state to go on from where it is (see explore_if) */

/* The relation that outcome `taken` of `a op b` asserts: between a and b, or between b and a (*swap). */
static int relation(int op, int taken, int *swap) {
    *swap = 0;
    switch (op) {
    case EBPF_JMP_JEQ: return taken ? REL_EQ : REL_NE;
    case EBPF_JMP_JNE: return taken ? REL_NE : REL_EQ;
    case EBPF_JMP_JSET: return taken ? REL_SET : REL_NSET;
    case EBPF_JMP_JGT: *swap = taken; return taken ? REL_ULT : REL_ULE;   /* b < a, or a <= b */
    case EBPF_JMP_JGE: *swap = taken; return taken ? REL_ULE : REL_ULT;   /* b <= a, or a < b */
    case EBPF_JMP_JLT: *swap = !taken; return taken ? REL_ULT : REL_ULE;  /* a < b, or b <= a */
    case EBPF_JMP_JLE: *swap = !taken; return taken ? REL_ULE : REL_ULT;  /* a <= b, or b < a */
    case EBPF_JMP_JSGT: *swap = taken; return taken ? REL_SLT : REL_SLE;
    case EBPF_JMP_JSGE: *swap = taken; return taken ? REL_SLE : REL_SLT;
    case EBPF_JMP_JSLT: *swap = !taken; return taken ? REL_SLT : REL_SLE;
    default: *swap = !taken; return taken ? REL_SLE : REL_SLT; /* JSLE */
    }
}

static int view_const(const struct view *v) { return v->umin == v->umax; }

/* a != c (a constant of the view's width): c comes off the ends of a's ranges; 0 when a is c. */
static int view_ne(struct view *a, uint64_t c, int w32) {
    int64_t sc = w32 ? (int32_t)c : (int64_t)c;
    if (view_const(a)) return a->umin != c;
    if (a->umin == c) a->umin++;
    else if (a->umax == c) a->umax--;
    if (a->smin == sc) a->smin++;
    else if (a->smax == sc) a->smax--;
    return 1;
}

/* a & b != 0 (set) or == 0 (!set). A constant single bit that is set becomes a known bit, a constant
 * mask that is clear known zeros; a & b != 0 also says that neither is 0. */
static int view_test(struct view *a, struct view *b, int set, int w32) {
    if (!view_const(b)) {
        struct view *x = a;
        a = b, b = x;
    }
    uint64_t c = b->umin;
    if (!view_const(b)) /* neither is known */
        return set ? ((a->t.v | a->t.m) & (b->t.v | b->t.m)) && view_ne(a, 0, w32) && view_ne(b, 0, w32)
                   : !(a->t.v & b->t.v);
    if (!set) {
        if (a->t.v & c) return 0;
        a->t.m &= ~c;
        return 1;
    }
    if (!((a->t.v | a->t.m) & c)) return 0;
    if (!(c & (c - 1))) a->t.v |= c, a->t.m &= ~c;
    return view_ne(a, 0, w32);
}

/* Refines views a and b (one width) for `a rel b`; 0 when it cannot hold. */
static int view_refine(int rel, struct view *a, struct view *b, int w32) {
    struct tnum t;
    switch (rel) {
    case REL_EQ:
        if (!tnum_meet(a->t, b->t, &t)) return 0;
        a->umin = b->umin = umax64(a->umin, b->umin);
        a->umax = b->umax = umin64(a->umax, b->umax);
        a->smin = b->smin = smax64(a->smin, b->smin);
        a->smax = b->smax = smin64(a->smax, b->smax);
        a->t = b->t = t;
        return 1;
    case REL_NE:
        if (view_const(b)) return view_ne(a, b->umin, w32);
        return !view_const(a) || view_ne(b, a->umin, w32);
    case REL_SET:
    case REL_NSET: return view_test(a, b, rel == REL_SET, w32);
    case REL_ULT:
        if (!b->umax || a->umin == wmask(w32)) return 0;
        a->umax = umin64(a->umax, b->umax - 1);
        b->umin = umax64(b->umin, a->umin + 1);
        return 1;
    case REL_ULE:
        a->umax = umin64(a->umax, b->umax);
        b->umin = umax64(b->umin, a->umin);
        return 1;
    case REL_SLT:
        if (b->smax == wsmin(w32) || a->smin == wsmax(w32)) return 0;
        a->smax = smin64(a->smax, b->smax - 1);
        b->smin = smax64(b->smin, a->smin + 1);
        return 1;
    default: /* REL_SLE */
        a->smax = smin64(a->smax, b->smax);
        b->smin = smax64(b->smin, a->smin);
        return 1;
    }
}

/* Writes view v back as scalar r's (w32: its low half's); 0 when no value fits r then. */
static int put_view(struct vreg *r, struct view v, int w32) {
    if (w32) {
        r->u32min = (uint32_t)v.umin, r->u32max = (uint32_t)v.umax;
        r->s32min = (int32_t)v.smin, r->s32max = (int32_t)v.smax;
        r->t = (struct tnum){(r->t.v & ~U32MAX) | v.t.v, (r->t.m & ~U32MAX) | v.t.m};
    } else {
        r->umin = v.umin, r->umax = v.umax, r->smin = v.smin, r->smax = v.smax, r->t = v.t;
    }
    return scalar_sync(r);
}

/* Refines the views of scalars a and b that `a op b` (is32: of their low halves) compares for outcome
 * `taken`; 0 when they show that outcome impossible. */
static int refine_views(int op, int is32, struct view *va, struct view *vb, int taken) {
    int swap, rel = relation(op, taken, &swap);
    return swap ? view_refine(rel, vb, va, is32) : view_refine(rel, va, vb, is32);
}
static int outcome_possible(int op, int is32, const struct vreg *a, const struct vreg *b, int taken) {
    struct view va = view_of(a, is32), vb = view_of(b, is32);
    return refine_views(op, is32, &va, &vb, taken);
}
/* Refines scalars a and, if it is a register (breg), b for outcome `taken`; 0 when, their views synced,
 * no value fits one of them: the outcome is impossible after all. */
static int refine(int op, int is32, struct vreg *a, struct vreg *b, int breg, int taken) {
    struct view va = view_of(a, is32), vb = view_of(b, is32);
    return refine_views(op, is32, &va, &vb, taken) && put_view(a, va, is32) && (!breg || put_view(b, vb, is32));
}

#define FOR_ALL_REGS(st, var, ...)                                                                     \
    for (uint32_t fj_ = 0; fj_ < (st)->nframes; fj_++) {                                               \
        struct vframe *fr_ = &(st)->f[fj_];                                                            \
        for (uint32_t k_ = 0; k_ < 11u + fr_->nslots; k_++) {                                          \
            struct vreg *var = k_ < EBPF_NREGS ? &fr_->r[k_]                                           \
                               : fr_->s[k_ - EBPF_NREGS].spill ? &fr_->s[k_ - EBPF_NREGS].reg : NULL;  \
            if (!var) continue;                                                                        \
            __VA_ARGS__                                                                                \
        }                                                                                              \
    }

/* Scalar r := v (its link kept), and every scalar linked to r too: a copy (same id) holds r's value
 * - r->off + its own off. */
static void set_scalar(struct vstate *st, struct vreg *r, const struct vreg *v) {
    uint32_t id = r->id;
    int32_t off = r->off;
    struct vreg nv = *v, k;
    nv.id = id, nv.off = off;
    *r = nv;
    if (!id) return;
    FOR_ALL_REGS(st, q, {
        if (q->type != T_SCALAR || q->id != id) continue;
        int32_t qoff = q->off;
        *q = nv;
        if (qoff == off) continue;
        set_const(&k, (uint64_t)((int64_t)qoff - off));
        scalar_alu(q, &k, EBPF_ALU_ADD, 0, 0);
        q->id = id, q->off = qoff;
    })
}

/* A lookup's result checked for NULL. A value of a map with a bpf_spin_lock keeps its id: which value a
 * lock belongs to is how bpf_spin_unlock is matched with bpf_spin_lock. */
static void release_ref(struct vstate *st, uint32_t id);
static void mark_null(const struct env *e, struct vstate *st, uint32_t id, int is_null) {
    int ringbuf = 0;
    FOR_ALL_REGS(st, q, {
        if ((q->type == T_MAP_VALUE_OR_NULL || q->type == T_MEM_OR_NULL) && q->id == id) {
            ringbuf |= q->type == T_MEM_OR_NULL && MEM_KIND(q->map) == MEM_RINGBUF;
            if (is_null) set_const(q, 0);
            else if (q->type == T_MEM_OR_NULL) q->type = T_MEM, q->id = MEM_KIND(q->map) == MEM_RINGBUF ? q->id : 0;
            else q->type = T_MAP_VALUE, q->id = e->prog->maps[q->map]->spin_lock_off ? q->id : 0;
        }
    })
    if (ringbuf && is_null) release_ref(st, id); /* no record was reserved */
}

/* The record with reference id is gone (submitted, discarded, or never reserved): every copy of its
 * pointer is a number now (privileged Linux), and the reference leaves the state. */
static void release_ref(struct vstate *st, uint32_t id) {
    struct vframe *f0 = &st->f[0];
    for (uint32_t k = 0; k < f0->nrefs; k++)
        if (f0->ref_id[k] == id) {
            for (uint32_t j = k + 1; j < f0->nrefs; j++) f0->ref_id[j - 1] = f0->ref_id[j], f0->ref_insn[j - 1] = f0->ref_insn[j];
            f0->nrefs--;
            break;
        }
    FOR_ALL_REGS(st, q, {
        if ((q->type == T_MEM || q->type == T_MEM_OR_NULL) && MEM_KIND(q->map) == MEM_RINGBUF && q->id == id) set_unknown(q);
    })
}

/* `p` (pkt or pkt_meta) proven to have `range` readable bytes from data (data_meta) + var: every copy
 * learns it. */
static void mark_pkt_range(struct vstate *st, const struct vreg *p, int64_t range) {
    if (range <= 0 || p->umax + (uint64_t)(p->off > 0 ? p->off : 0) > MAX_PKT_OFF) return;
    uint32_t id = p->id;
    uint8_t type = p->type;
    FOR_ALL_REGS(st, q, {
        if (q->type == type && q->id == id && q->range < (uint32_t)range) q->range = (uint32_t)range;
    })
}

/* data itself (as loaded from the context, nothing added): what bounds metadata (Linux's
 * reg_is_init_pkt_pointer). */
static int is_data(const struct vreg *r) { return r->type == T_PKT && r->off == 0 && r->umax == 0; }

/* Which range a comparison of pkt (offset off) with pkt_end (or of pkt_meta with data) proves on one
 * outcome: 0 none, 1 = off bytes, 2 = off + 1 bytes. Written for `pkt op end`; swapped if end is dst. */
static int pkt_cmp_range(int op, int pkt_is_dst, int taken) {
    if (!pkt_is_dst) {
        switch (op) {
        case EBPF_JMP_JGT: op = EBPF_JMP_JLT; break;
        case EBPF_JMP_JGE: op = EBPF_JMP_JLE; break;
        case EBPF_JMP_JLT: op = EBPF_JMP_JGT; break;
        case EBPF_JMP_JLE: op = EBPF_JMP_JGE; break;
        }
    }
    switch (op) {
    case EBPF_JMP_JGT: return taken ? 0 : 1; /* pkt <= end */
    case EBPF_JMP_JGE: return taken ? 0 : 2; /* pkt < end */
    case EBPF_JMP_JLT: return taken ? 2 : 0;
    case EBPF_JMP_JLE: return taken ? 1 : 0;
    case EBPF_JMP_JEQ: return taken ? 1 : 0;
    case EBPF_JMP_JNE: return taken ? 0 : 1;
    }
    return 0;
}

/* Whether a pointer whose type is never NULL is provably not 0, so that a comparison with 0 has a known
 * outcome. Its address is base + off + var, base the start of a real object (packet data, a map value,
 * a memory argument, the context, a map) or the frame pointer, and |off|, var <= MAX_VAR_OFF. At or above
 * the base (off + var >= 0) the address cannot be 0: no object lies in the top 2^31 bytes of the
 * address space (device: physical memory below 2^32; Linux user space below 2^47), so the sum does not
 * wrap. Below the base it can: data - 2^29 is 0 for a frame at 2^29, a key table value minus 0x10040000
 * is 0 on the device; such comparisons explore both branches (Linux decides them only for its kernel
 * pointers, which are far from 0). The stack counts down to EBPF_STACK_SIZE below the frame pointer:
 * those addresses are the eBPF stack itself (the interpreter's frame array, the JIT's frame on the
 * thread's or hart's stack), which is never at address 0. */
static int never_null(const struct vreg *p) {
    int64_t lo = (int64_t)p->off + (int64_t)p->umin;
    return lo >= (p->type == T_STACK ? -EBPF_STACK_SIZE : 0);
}

/* mode 0: returns the mask of possible outcomes (or -1 with an error); mode BR_TAKEN / BR_FALL:
 * applies what that outcome teaches, and returns mode, or 0 when that shows the outcome impossible. */
static int cond_jump(struct env *e, uint32_t i, struct vstate *st, int mode) {
    const struct ebpf_insn *in = &e->in[i];
    struct vframe *f = &st->f[st->nframes - 1];
    int op = EBPF_OP(in->code), is32 = EBPF_CLASS(in->code) == EBPF_CLS_JMP32, x = (in->code & EBPF_SRC_X) != 0;
    struct vreg kb, *a = &f->r[in->dst], *b;
    if (x) {
        b = &f->r[in->src];
    } else {
        set_const(&kb, is32 ? (uint32_t)in->imm : (uint64_t)(int64_t)in->imm);
        b = &kb;
    }
    if (a->type == T_SCALAR && b->type == T_SCALAR) {
        if (x && in->src == in->dst && op != EBPF_JMP_JSET) { /* a register with itself */
            if (mode) return mode;
            switch (op) {
            case EBPF_JMP_JEQ: case EBPF_JMP_JGE: case EBPF_JMP_JLE: case EBPF_JMP_JSGE: case EBPF_JMP_JSLE:
                return BR_TAKEN;
            default: return BR_FALL;
            }
        }
        if (!mode) /* from the compared views alone; refine() syncs all views of the outcome followed */
            return (outcome_possible(op, is32, a, b, 1) ? BR_TAKEN : 0) |
                   (outcome_possible(op, is32, a, b, 0) ? BR_FALL : 0);
        struct vreg ra = *a, rb = *b;
        if (!refine(op, is32, &ra, &rb, x, mode == BR_TAKEN)) return 0;
        set_scalar(st, a, &ra);
        if (x) set_scalar(st, b, &rb);
        return mode;
    }
    /* Comparisons that involve a pointer are allowed (privileged Linux) and teach nothing, except a
     * packet pointer against data_end (or metadata against data) and a NULL check of a lookup's
     * result, below. */
    if (is32) return mode ? mode : BR_TAKEN | BR_FALL; /* low halves of pointers */
    if (is_ptr(a) && is_ptr(b)) {
        int apkt = is_pkt_kind(a), bpkt = is_pkt_kind(b);
        int unsigned_op = op == EBPF_JMP_JEQ || op == EBPF_JMP_JNE || op == EBPF_JMP_JGT || op == EBPF_JMP_JGE ||
                          op == EBPF_JMP_JLT || op == EBPF_JMP_JLE;
        if (!mode) return BR_TAKEN | BR_FALL;
        if (!unsigned_op || !apkt || !bpkt) return mode;
        /* pkt against data_end, pkt_meta against data: the bytes below the bound are proven */
        const struct vreg *p = NULL;
        if ((a->type == T_PKT && b->type == T_PKT_END) || (a->type == T_PKT_META && is_data(b))) p = a;
        else if ((b->type == T_PKT && a->type == T_PKT_END) || (b->type == T_PKT_META && is_data(a))) p = b;
        if (p) {
            int kind = pkt_cmp_range(op, p == a, mode == BR_TAKEN);
            if (kind) mark_pkt_range(st, p, (int64_t)p->off + (kind == 2));
        }
        return mode;
    }
    /* a pointer and a scalar: only a comparison with zero (null check) */
    const struct vreg *p = is_ptr(a) ? a : b, *s = is_ptr(a) ? b : a;
    if (!is_const(s) || s->umin != 0 || (op != EBPF_JMP_JEQ && op != EBPF_JMP_JNE))
        return mode ? mode : BR_TAKEN | BR_FALL;
    if (p->type != T_MAP_VALUE_OR_NULL && p->type != T_MEM_OR_NULL) {
        if (mode) return mode; /* nothing to learn: the pointer keeps its type either way */
        if (!never_null(p)) return BR_TAKEN | BR_FALL;
        return op == EBPF_JMP_JEQ ? BR_FALL : BR_TAKEN;
    }
    if (!mode) return BR_TAKEN | BR_FALL;
    int is_null = (op == EBPF_JMP_JEQ) == (mode == BR_TAKEN);
    mark_null(e, st, p->id, is_null);
    return mode;
}

/* ---- Memory accesses ---- */
enum { ACC_READ, ACC_WRITE, ACC_ATOMIC };

static void note_depth(struct env *e, uint32_t func, int64_t depth) {
    if (depth > (int64_t)e->fdepth[func]) e->fdepth[func] = (uint32_t)depth;
}

static int aux_mark(struct env *e, uint32_t i, uint8_t kind) {
    if (e->aux[i] && e->aux[i] != kind) return fail(e, (int)i, "same insn cannot be used with different pointers");
    e->aux[i] = kind;
    return 0;
}

static int stack_access(struct env *e, uint32_t i, struct vstate *st, uint32_t regno, const struct vreg *ptr,
                        int64_t insn_off, uint32_t size, int kind, const struct vreg *val, struct vreg *out, int sx) {
    int64_t o = (int64_t)ptr->off + insn_off;
    if (o < -EBPF_STACK_SIZE || o + size > 0)
        return fail(e, (int)i, "invalid stack access off=%lld size=%u", (long long)o, size);
    if (o % size) return fail(e, (int)i, "misaligned stack access off=%lld size=%u", (long long)o, size);
    (void)regno;
    struct vframe *f = &st->f[ptr->frame];
    note_depth(e, f->func, -o);
    uint32_t k = (uint32_t)((-o - 1) / 8);
    uint32_t b = (uint32_t)(o + 8 * (int64_t)(k + 1));
    struct vslot *s = &f->s[k];
    uint8_t bytes = (uint8_t)(((1u << size) - 1) << b);
    uint8_t sp = spill_bytes[s->spill];
    if (kind != ACC_WRITE) {
        if ((s->init & bytes) != bytes) {
            uint32_t j = 0;
            while (s->init >> (b + j) & 1) j++;
            return fail(e, (int)i, "invalid read from stack off %lld+%u size %u", (long long)o, j, size);
        }
        if ((sp & bytes) && s->reg.type != T_SCALAR && (kind == ACC_ATOMIC || sp != bytes))
            return fail(e, (int)i, kind == ACC_ATOMIC ? "atomic access to a spilled pointer on the stack off=%lld"
                                                      : "invalid size of register fill off=%lld", (long long)o);
    }
    if (kind == ACC_READ) {
        if (sp == bytes) {
            *out = s->reg;
            if (sx && out->umax > INT32_MAX) sext_scalar(out, 32); /* a 4-byte fill of a 32-bit scalar */
        } else if ((sp & bytes) == bytes && is_const(&s->reg)) {
            uint32_t first = s->spill == SPILL_HI32 ? 4 : 0;
            uint64_t v = (s->reg.umin >> (8 * (b - first))) & size_mask(size);
            set_const(out, sx ? sext(v, size * 8) : v);
        } else {
            set_loaded(out, size, sx);
        }
        return 0;
    }
    if (kind == ACC_ATOMIC) {
        if (sp & bytes) s->spill = SPILL_NONE;
        return 0;
    }
    /* write */
    if (is_ptr(val)) {
        if (size != 8) return fail(e, (int)i, "invalid size of register spill (%u bytes of a pointer)", size);
        if (val->type == T_STACK && val->frame > ptr->frame)
            return fail(e, (int)i, "cannot spill pointers to stack into stack frame of the caller");
    }
    if (size == 8) {
        s->spill = SPILL_64;
        s->reg = *val;
    } else if (size == 4 && val->type == T_SCALAR && val->umax <= U32MAX) {
        s->spill = b ? SPILL_HI32 : SPILL_LO32;
        s->reg = *val;
    } else if (sp & bytes) {
        s->spill = SPILL_NONE;
    }
    s->init |= bytes;
    if (k >= f->nslots) f->nslots = (uint16_t)(k + 1);
    return 0;
}

static int map_value_bounds(struct env *e, uint32_t i, const struct vreg *ptr, int64_t insn_off, uint64_t size) {
    const struct ebpf_map *m = e->prog->maps[ptr->map];
    int64_t lo = (int64_t)ptr->off + (int64_t)ptr->umin + insn_off;
    int64_t hi = (int64_t)ptr->off + (int64_t)ptr->umax + insn_off + (int64_t)size;
    int64_t lock = (int64_t)m->spin_lock_off - 1; /* only bpf_spin_lock/unlock touch it (Linux) */
    if (m->spin_lock_off && lo < lock + NANOBPF_SPIN_LOCK_SIZE && lock < hi)
        return fail(e, (int)i, "bpf_spin_lock cannot be accessed directly by load/store (map %s, offset %lld)", m->name,
                    (long long)lock);
    if (lo < 0 || hi > (int64_t)m->value_size) {
        if (ptr->umin != ptr->umax)
            return fail(e, (int)i, "invalid access to map value, value_size=%u off=%lld size=%llu (variable offset %llu..%llu)",
                        m->value_size, (long long)(lo < 0 ? lo : hi - (int64_t)size), (unsigned long long)size,
                        (unsigned long long)ptr->umin, (unsigned long long)ptr->umax);
        return fail(e, (int)i, "invalid access to map value, value_size=%u off=%lld size=%llu", m->value_size,
                    (long long)lo, (unsigned long long)size);
    }
    return 0;
}

/* log2 of the alignment (at most 8 bytes) known of the address a pointer plus off holds: the stack's frame
 * pointer is 16-byte aligned (the JIT's frames are multiples of 16 on the C stack), map values 8-byte
 * aligned (maps.c: strides of 8), a global function's memory argument as its callers promise (the map
 * field), the packet not at all (its offsets carry no alignment). A variable offset: none. */
static unsigned ptr_align(const struct vreg *r, int64_t off) {
    unsigned base;
    switch (r->type) {
    case T_STACK:
    case T_MAP_VALUE: base = 3; break;
    case T_MEM: base = r->map >> MEM_ALIGN_SHIFT; break;
    default: return 0;
    }
    if (r->umin != r->umax) return 0;
    uint64_t a = (uint64_t)((int64_t)r->off + (int64_t)r->umin + off);
    unsigned low = a ? (unsigned)__builtin_ctzll(a) : 3;
    return low < base ? low : base;
}

/* A global function's memory argument: `range` bytes from its start. */
static int mem_bounds(struct env *e, uint32_t i, uint32_t regno, const struct vreg *ptr, int64_t insn_off, uint64_t size) {
    int64_t lo = (int64_t)ptr->off + (int64_t)ptr->umin + insn_off;
    int64_t hi = (int64_t)ptr->off + (int64_t)ptr->umax + insn_off + (int64_t)size;
    if (lo < 0 || hi > (int64_t)ptr->range)
        return fail(e, (int)i, "invalid access to memory, mem_size=%u off=%lld size=%llu (R%u)", ptr->range,
                    (long long)(lo < 0 ? lo : hi - (int64_t)size), (unsigned long long)size, regno);
    return 0;
}

static int pkt_bounds(struct env *e, uint32_t i, uint32_t regno, const struct vreg *ptr, int64_t insn_off, uint64_t size) {
    /* range bytes from data + var are proven (data + var + range <= data_end); bytes below data + var
     * down to data are in the packet too once something is proven (range > 0) */
    int64_t o = (int64_t)ptr->off + insn_off;
    if (!ptr->range || o < -(int64_t)ptr->umin || o + (int64_t)size > (int64_t)ptr->range)
        return fail(e, (int)i, "invalid access to packet, off=%lld size=%llu, R%u range=%u", (long long)o,
                    (unsigned long long)size, regno, ptr->range);
    return 0;
}

/* Load/store/atomic through register regno (value: the stored value; out: the loaded one). */
static int is_keytable(const struct ebpf_map *m);
static const char *readonly_map(const struct ebpf_map *m);
static const char *readonly_map_why(const struct ebpf_map *m);
static int mem_access(struct env *e, uint32_t i, struct vstate *st, uint32_t regno, int kind, uint32_t size,
                      const struct vreg *val, uint32_t valno, struct vreg *out, int sx) {
    const struct ebpf_insn *in = &e->in[i];
    struct vreg ptr = st->f[st->nframes - 1].r[regno];
    if (ptr.type == T_NOT_INIT) return fail(e, (int)i, "R%u !read_ok", regno);
    if (ptr.type == T_CTX) {
        if (ptr.umin != ptr.umax) return fail(e, (int)i, "variable ctx access var_off=(%llu..%llu) disallowed",
                                              (unsigned long long)ptr.umin, (unsigned long long)ptr.umax);
        if (ptr.off || ptr.umin)
            return fail(e, (int)i, "dereference of modified ctx ptr R%u off=%lld disallowed", regno,
                        (long long)ptr.off + (long long)ptr.umin);
        int64_t o = (int64_t)ptr.off + in->off;
        if (kind != ACC_READ) return fail(e, (int)i, "cannot write into ctx (off=%lld size=%u)", (long long)o, size);
        if (size != 4 || sx || o < 0 || o >= (int64_t)sizeof(struct nanobpf_xdp_ctx) || o % 4)
            return fail(e, (int)i, "invalid bpf_context access off=%lld size=%u", (long long)o, size);
        if (aux_mark(e, i, (uint8_t)(1 + o / 4))) return -1;
        switch (o) {
        case offsetof(struct nanobpf_xdp_ctx, data): set_type(out, T_PKT); break;
        case offsetof(struct nanobpf_xdp_ctx, data_meta): set_type(out, T_PKT_META); break;
        case offsetof(struct nanobpf_xdp_ctx, data_end):
            set_type(out, T_PKT_END);
            break;
        /* the parse result: offsets within a slot, a CID length, 1 + a connection slot (16 bits) */
        case offsetof(struct nanobpf_xdp_ctx, l3_off):
        case offsetof(struct nanobpf_xdp_ctx, l4_off):
        case offsetof(struct nanobpf_xdp_ctx, quic_off):
        case offsetof(struct nanobpf_xdp_ctx, pn_off): set_range(out, 0, EBPF_CTX_OFF_MAX); break;
        case offsetof(struct nanobpf_xdp_ctx, cid_len): set_range(out, 0, NANOBPF_KEYTABLE_CID_MAX); break;
        case offsetof(struct nanobpf_xdp_ctx, conn): set_range(out, 0, EBPF_CTX_CONN_MAX); break;
        default: set_range(out, 0, U32MAX);
        }
        return 0;
    }
    if (aux_mark(e, i, AUX_OTHER)) return -1;
    /* A pointer stored to a map value, the packet or a memory argument is plain data there (privileged
     * Linux allows it): what is loaded back is a scalar, never dereferenced. */
    (void)valno;
    switch (ptr.type) {
    case T_STACK: return stack_access(e, i, st, regno, &ptr, in->off, size, kind, val, out, sx);
    case T_PKT:
    case T_PKT_META:
        if (kind == ACC_ATOMIC) return fail(e, (int)i, "atomic access to packet not allowed");
        if (pkt_bounds(e, i, regno, &ptr, in->off, size)) return -1;
        if (size > 1) e->flags[i] |= F_PKTACC; /* packet offsets carry no alignment: CVA6 would trap */
        break;
    case T_MAP_VALUE:
        if (kind != ACC_READ && readonly_map(e->prog->maps[ptr.map]))
            return fail(e, (int)i, "%s %s is read-only for programs (%s)", readonly_map(e->prog->maps[ptr.map]),
                        e->prog->maps[ptr.map]->name, readonly_map_why(e->prog->maps[ptr.map]));
        if (map_value_bounds(e, i, &ptr, in->off, size)) return -1;
        if (kind == ACC_ATOMIC) {
            int64_t o = (int64_t)ptr.off + (int64_t)ptr.umin + in->off;
            if (ptr.umin != ptr.umax) return fail(e, (int)i, "atomic access to map value with a variable offset");
            if (o % size) return fail(e, (int)i, "misaligned atomic access to map value off=%lld size=%u", (long long)o, size);
        }
        break;
    case T_MEM: /* may be the packet (any caller's argument): multi-byte accesses made alignment-safe
                 * unless every caller's pointer is aligned for them */
        if (kind != ACC_READ && MEM_KIND(ptr.map) == MEM_READONLY)
            return fail(e, (int)i, "R%u points to read-only memory (a const argument of this global function)", regno);
        if (mem_bounds(e, i, regno, &ptr, in->off, size)) return -1;
        if (kind == ACC_ATOMIC) return fail(e, (int)i, "atomic access to a memory argument not allowed");
        if (size > 1 && ptr_align(&ptr, in->off) < (unsigned)__builtin_ctz(size)) e->flags[i] |= F_PKTACC;
        break;
    default: return fail(e, (int)i, "R%u invalid mem access '%s'", regno, tname[ptr.type]);
    }
    if (kind == ACC_READ) set_loaded(out, size, sx);
    return 0;
}

/* Memory handed to a helper: size_max bytes from register regno (size_min surely written). */
static int helper_mem(struct env *e, uint32_t i, struct vstate *st, uint32_t regno, uint64_t size_min,
                      uint64_t size_max, int write) {
    struct vreg *r = &st->f[st->nframes - 1].r[regno];
    switch (r->type) {
    case T_STACK: {
        int64_t o = r->off;
        if (o < -EBPF_STACK_SIZE || o + (int64_t)size_max > 0)
            return fail(e, (int)i, "invalid indirect access to stack R%u off=%lld size=%llu", regno, (long long)o,
                        (unsigned long long)size_max);
        struct vframe *f = &st->f[r->frame];
        note_depth(e, f->func, -o);
        for (uint64_t j = 0; j < size_max; j++) {
            int64_t a = o + (int64_t)j;
            uint32_t k = (uint32_t)((-a - 1) / 8), b = (uint32_t)(a + 8 * (int64_t)(k + 1));
            struct vslot *s = &f->s[k];
            int spilled = spill_bytes[s->spill] >> b & 1;
            if (!write) {
                if (!(s->init >> b & 1))
                    return fail(e, (int)i, "invalid indirect read from stack R%u off %lld+%llu size %llu", regno,
                                (long long)o, (unsigned long long)j, (unsigned long long)size_max);
                if (spilled && s->reg.type != T_SCALAR)
                    return fail(e, (int)i, "R%u indirect read of a spilled pointer from stack off %lld", regno,
                                (long long)a);
            } else {
                if (spilled) s->spill = SPILL_NONE;
                if (j < size_min) {
                    s->init |= (uint8_t)(1u << b);
                    if (k >= f->nslots) f->nslots = (uint16_t)(k + 1);
                }
            }
        }
        return 0;
    }
    case T_PKT:
    case T_PKT_META: return pkt_bounds(e, i, regno, r, 0, size_max);
    case T_MAP_VALUE:
        /* a helper writing into the key table is refused in do_helper, a global function's non-const
         * memory argument in do_global_call */
        return map_value_bounds(e, i, r, 0, size_max);
    case T_MEM:
        if (write && MEM_KIND(r->map) == MEM_READONLY)
            return fail(e, (int)i, "R%u points to read-only memory (a const argument of this global function)", regno);
        return mem_bounds(e, i, regno, r, 0, size_max);
    case T_NOT_INIT: return fail(e, (int)i, "R%u !read_ok", regno);
    default: return fail(e, (int)i, "R%u type=%s expected=fp, pkt, map_value or mem", regno, tname[r->type]);
    }
}

/* ---- Instructions ---- */
static int check_read(struct env *e, uint32_t i, const struct vreg *r, uint32_t regno) {
    if (r->type == T_NOT_INIT) return fail(e, (int)i, "R%u !read_ok", regno);
    return 0;
}

static int ptr_add(struct env *e, uint32_t i, uint32_t dregno, struct vreg *dst, const struct vreg *ptr,
                   const struct vreg *sc, int sub) {
    switch (ptr->type) {
    case T_PKT_END: case T_MAP_VALUE_OR_NULL: case T_MAP_PTR: case T_MEM_OR_NULL: case T_FUNC:
        return fail(e, (int)i, "R%u pointer arithmetic on %s prohibited", dregno, tname[ptr->type]);
    }
    struct vreg r = *ptr;
    if (sc->umin == sc->umax) {
        int64_t k = (int64_t)sc->umin;
        if (k < -MAX_VAR_OFF || k > MAX_VAR_OFF)
            return fail(e, (int)i, "R%u pointer arithmetic with value %lld out of bounds", dregno, (long long)k);
        int64_t off = (int64_t)r.off + (sub ? -k : k);
        if (off < -MAX_VAR_OFF || off > MAX_VAR_OFF)
            return fail(e, (int)i, "R%u pointer offset %lld out of bounds", dregno, (long long)off);
        r.off = (int32_t)off;
    } else {
        if (ptr->type == T_STACK) return fail(e, (int)i, "R%u variable stack pointer arithmetic prohibited", dregno);
        if (sub) return fail(e, (int)i, "R%u subtraction of a variable scalar from a pointer prohibited", dregno);
        if (sc->umax > MAX_VAR_OFF || r.umax + sc->umax > MAX_VAR_OFF)
            return fail(e, (int)i, "R%u pointer arithmetic with unbounded scalar (max %llu) prohibited", dregno,
                        (unsigned long long)sc->umax);
        r.umin += sc->umin;
        r.umax += sc->umax;
        if (is_pkt(&r)) {
            r.id = ++e->id_gen;
            r.range = 0;
        }
    }
    *dst = r;
    return 0;
}

/* d := pointer d - pointer s, a scalar. */
static int ptr_diff(struct env *e, uint32_t i, uint32_t dregno, struct vreg *d, const struct vreg *s) {
    /* data_end - data, data - data_meta: lengths of the packet and of its metadata, as common XDP code
     * computes them (Linux lets privileged programs subtract any two pointers; these are the ones whose
     * difference means something) */
    if (d->type != s->type && is_pkt_kind(d) && is_pkt_kind(s)) {
        set_unknown(d);
        return 0;
    }
    /* any other two pointers: a number that means nothing to the verifier (privileged Linux) */
    (void)e, (void)i, (void)dregno;
    if (d->type != s->type || (!is_pkt(d) && d->type != T_STACK && d->type != T_MAP_VALUE) ||
        (d->type == T_STACK && d->frame != s->frame) || (d->type == T_MAP_VALUE && d->map != s->map)) {
        set_unknown(d);
        return 0;
    }
    /* same frame, or packet pointers sharing their variable part: a known distance (two map values may be
     * different elements) */
    int fixed = d->type == T_STACK || (is_pkt(d) && d->id == s->id);
    if (fixed) set_const(d, (uint64_t)((int64_t)d->off - s->off));
    else set_unknown(d);
    return 0;
}

static int do_alu(struct env *e, uint32_t i, struct vstate *st) {
    const struct ebpf_insn *in = &e->in[i];
    struct vframe *f = &st->f[st->nframes - 1];
    int is32 = EBPF_CLASS(in->code) == EBPF_CLS_ALU, op = EBPF_OP(in->code), x = (in->code & EBPF_SRC_X) != 0;
    struct vreg *d = &f->r[in->dst], sv, *s;
    if (op == EBPF_ALU_END || op == EBPF_ALU_NEG) { /* no source operand (bit 3 of END is TO_BE) */
        set_const(&sv, 0);
        s = &sv;
    } else if (x) {
        s = &f->r[in->src];
        if (check_read(e, i, s, in->src)) return -1;
    } else {
        set_const(&sv, is32 ? (uint32_t)in->imm : (uint64_t)(int64_t)in->imm);
        s = &sv;
    }
    if (op == EBPF_ALU_MOV) {
        if (in->off) { /* MOVSX */
            if (is_ptr(s)) return fail(e, (int)i, "R%u partial copy of pointer", in->src);
            struct vreg r = *s;
            sext_scalar(&r, (unsigned)in->off);
            if (is32) set_zext32(&r, view_of(&r, 1));
            *d = r;
            return 0;
        }
        if (is32) {
            if (is_ptr(s)) { /* its low half: a number (privileged Linux) */
                set_range(d, 0, U32MAX);
                return 0;
            }
            struct vreg r = *s;
            if (r.umax <= U32MAX) {
                if (x && !is_const(s) && !s->id) s->id = r.id = ++e->id_gen;
            } else {
                set_zext32(&r, view_of(s, 1));
            }
            *d = r;
            return 0;
        }
        if (x && s->type == T_SCALAR && !is_const(s) && !s->id) s->id = ++e->id_gen;
        *d = *s;
        return 0;
    }
    if (check_read(e, i, d, in->dst)) return -1;
    if (op == EBPF_ALU_NEG || op == EBPF_ALU_END) {
        if (is_ptr(d)) return fail(e, (int)i, "R%u pointer arithmetic with %s operator prohibited", in->dst, op_name(op));
        if (op == EBPF_ALU_NEG) {
            scalar_alu(d, s, op, is32, 0);
            return 0;
        }
        unsigned bits = (unsigned)in->imm;
        int le = is32 && !x;
        uint64_t mask = size_mask(bits / 8);
        if (is_const(d)) {
            uint64_t v = d->umin;
            if (!le) v = bits == 16 ? __builtin_bswap16((uint16_t)v) : bits == 32 ? __builtin_bswap32((uint32_t)v)
                                                                                  : __builtin_bswap64(v);
            else v &= mask;
            set_const(d, v);
        } else if (le && d->umax <= mask) {
            set_range(d, d->umin, d->umax);
        } else {
            set_range(d, 0, mask);
        }
        return 0;
    }
    if (is_ptr(d) || is_ptr(s)) {
        uint32_t pr = is_ptr(d) ? in->dst : in->src;
        if (op == EBPF_ALU_SUB && is_ptr(d) && is_ptr(s)) {
            if (ptr_diff(e, i, in->dst, d, s)) return -1;
            if (is32) set_zext32(d, view_of(d, 1)); /* the low half (clang -mcpu=v3: `__u32 len = end - data`) */
            return 0;
        }
        if (is32) {
            if (op != EBPF_ALU_SUB) return fail(e, (int)i, "R%u 32-bit pointer arithmetic prohibited", pr);
            set_range(d, 0, U32MAX); /* a meaningless number (privileged Linux) */
            return 0;
        }
        if (op == EBPF_ALU_ADD) {
            if (is_ptr(d) && is_ptr(s)) return fail(e, (int)i, "R%u pointer += pointer prohibited", in->dst);
            return is_ptr(d) ? ptr_add(e, i, in->dst, d, d, s, 0) : ptr_add(e, i, in->dst, d, s, d, 0);
        }
        if (op == EBPF_ALU_SUB) {
            if (!is_ptr(d)) return fail(e, (int)i, "R%u tried to subtract pointer from scalar", in->dst);
            return ptr_add(e, i, in->dst, d, d, s, 1);
        }
        return fail(e, (int)i, "R%u pointer arithmetic with %s operator prohibited", pr, op_name(op));
    }
    uint32_t id = d->id;
    int32_t off = d->off;
    scalar_alu(d, s, op, is32, in->off);
    keep_link(d, id, off, op, is32, s);
    return 0;
}

static int do_ldx_st(struct env *e, uint32_t i, struct vstate *st) {
    const struct ebpf_insn *in = &e->in[i];
    struct vframe *f = &st->f[st->nframes - 1];
    uint32_t size = size_of(in->code);
    switch (EBPF_CLASS(in->code)) {
    case EBPF_CLS_LDX: {
        struct vreg v;
        if (mem_access(e, i, st, in->src, ACC_READ, size, NULL, 0, &v, EBPF_MODE(in->code) == EBPF_MODE_MEMSX))
            return -1;
        st->f[st->nframes - 1].r[in->dst] = v;
        return 0;
    }
    case EBPF_CLS_ST: {
        struct vreg v;
        set_const(&v, size == 8 ? (uint64_t)(int64_t)in->imm : (uint64_t)(int64_t)in->imm & size_mask(size));
        return mem_access(e, i, st, in->dst, ACC_WRITE, size, &v, 0, NULL, 0);
    }
    default: /* STX */
        if (check_read(e, i, &f->r[in->src], in->src)) return -1;
        if (EBPF_MODE(in->code) == EBPF_MODE_MEM) {
            struct vreg v = f->r[in->src];
            return mem_access(e, i, st, in->dst, ACC_WRITE, size, &v, in->src, NULL, 0);
        }
        /* atomic */
        if (is_ptr(&f->r[in->src])) return fail(e, (int)i, "R%u leaks addr into mem", in->src);
        if (in->imm == EBPF_ATOMIC_CMPXCHG) {
            if (check_read(e, i, &f->r[0], 0)) return -1;
            if (is_ptr(&f->r[0])) return fail(e, (int)i, "R0 leaks addr into mem");
        }
        if (mem_access(e, i, st, in->dst, ACC_ATOMIC, size, NULL, 0, NULL, 0)) return -1;
        f = &st->f[st->nframes - 1];
        if (in->imm == EBPF_ATOMIC_CMPXCHG) set_loaded(&f->r[0], size, 0);
        else if (in->imm & EBPF_ATOMIC_FETCH) set_loaded(&f->r[in->src], size, 0);
        return 0;
    }
}

/* The key table map: the hash map whose storage is the device key table (maps.c binds it by name). */
static int is_keytable(const struct ebpf_map *m) {
    return m->type == NANOBPF_MAP_TYPE_HASH && !strcmp(m->name, NANOBPF_KEYTABLE_MAP_NAME) &&
           m->key_size == NANOBPF_QUIC_CID_SIZE && m->value_size == NANOBPF_QUIC_KEYS_SIZE;
}

static int is_devmap(const struct ebpf_map *m) {
    return m->type == NANOBPF_MAP_TYPE_DEVMAP || m->type == NANOBPF_MAP_TYPE_DEVMAP_HASH;
}

/* The key table's packet-number map (maps.c binds it by name, one state per key table slot). */
static int is_keytable_pn(const struct ebpf_map *m) {
    return m->type == NANOBPF_MAP_TYPE_HASH && !strcmp(m->name, NANOBPF_KEYTABLE_PN_MAP_NAME) &&
           m->key_size == NANOBPF_QUIC_CID_SIZE && m->value_size == NANOBPF_QUIC_PN_STATE_SIZE;
}

/* Maps programs read but never write, and why: the key table (the control plane publishes each change
 * whole, and reuses a value's place after the data cores moved on: docs/control.md), devmaps (their
 * entries are the device's ports, which the host sets and maps.c checks). NULL for the others. */
static const char *readonly_map(const struct ebpf_map *m) {
    return is_keytable(m) ? "the key table" : is_devmap(m) ? "the devmap" : NULL;
}
static const char *readonly_map_why(const struct ebpf_map *m) {
    return is_keytable(m) ? "the control plane writes it" : "the host sets its ports";
}

/* Linux check_map_func_compatibility, for the map types and helpers the device has: a devmap is only
 * looked up or redirected to, and bpf_redirect_map takes only a devmap; an event map (no keys, a ring)
 * goes only to its output helper, which takes only that type. */
static int map_helper_compatible(struct env *e, uint32_t i, const struct ebpf_helper *h, const struct ebpf_map *m) {
    static const struct {
        uint32_t map_type, helper;
        const char *map, *type;
    } events[] = {{NANOBPF_MAP_TYPE_RINGBUF, NANOBPF_HELPER_RINGBUF_OUTPUT, "ringbuf", "RINGBUF"},
                  {NANOBPF_MAP_TYPE_PERF_EVENT_ARRAY, NANOBPF_HELPER_PERF_EVENT_OUTPUT, "perf event array",
                   "PERF_EVENT_ARRAY"},
                  {NANOBPF_MAP_TYPE_PROG_ARRAY, NANOBPF_HELPER_TAIL_CALL, "prog array", "PROG_ARRAY"}};
    for (unsigned k = 0; k < sizeof events / sizeof *events; k++) {
        if (m->type == NANOBPF_MAP_TYPE_RINGBUF && h->id == NANOBPF_HELPER_RINGBUF_RESERVE) continue;
        if (h->id == NANOBPF_HELPER_RINGBUF_RESERVE && m->type != NANOBPF_MAP_TYPE_RINGBUF)
            return fail(e, (int)i, "helper %s: map %s is not a RINGBUF", h->name, m->name);
        if (m->type == events[k].map_type && h->id != events[k].helper)
            return fail(e, (int)i, "helper %s: map %s is a %s: only bpf_%s takes it", h->name, m->name, events[k].map,
                        ebpf_helper_find(events[k].helper)->name);
        if (h->id == events[k].helper && m->type != events[k].map_type)
            return fail(e, (int)i, "helper %s: map %s is not a %s", h->name, m->name, events[k].type);
    }
    int keytable_helper = h->id == NANOBPF_HELPER_QUIC_KEYS_OF || h->id == NANOBPF_HELPER_QUIC_SEAL_CONN ||
                          h->id == NANOBPF_HELPER_QUIC_OPEN_CONN;
    if (keytable_helper && !is_keytable(m))
        return fail(e, (int)i, "helper %s: map %s is not the key table %s", h->name, m->name, NANOBPF_KEYTABLE_MAP_NAME);
    if (readonly_map(m) && h->id != NANOBPF_HELPER_MAP_LOOKUP_ELEM && h->id != NANOBPF_HELPER_REDIRECT_MAP && !keytable_helper)
        return fail(e, (int)i, "helper %s: %s %s is read-only for programs (%s)", h->name, readonly_map(m), m->name,
                    readonly_map_why(m));
    if (h->id == NANOBPF_HELPER_QUIC_PN_OF && !is_keytable_pn(m))
        return fail(e, (int)i, "helper %s: map %s is not the packet-number map %s (hash, key %u, value %u bytes)", h->name,
                    m->name, NANOBPF_KEYTABLE_PN_MAP_NAME, NANOBPF_QUIC_CID_SIZE, NANOBPF_QUIC_PN_STATE_SIZE);
    if (h->id == NANOBPF_HELPER_REDIRECT_MAP && !is_devmap(m))
        return fail(e, (int)i, "helper %s: map %s is not a DEVMAP or DEVMAP_HASH (the ports to redirect to)", h->name,
                    m->name);
    return 0;
}

/* A helper reading a connection's keys takes the start of a key table value: what a lookup in the
 * key table returned, after its NULL check. The helper reads the whole struct nanobpf_quic_keys. */
static int keytable_value_arg(struct env *e, uint32_t i, const struct vreg *r, uint32_t rn, const char *helper) {
    if (r->type == T_MAP_VALUE_OR_NULL)
        return fail(e, (int)i, "R%u may be NULL: helper %s needs a %s value (check the lookup's result first)", rn,
                    helper, NANOBPF_KEYTABLE_MAP_NAME);
    if (r->type != T_MAP_VALUE)
        return fail(e, (int)i, "R%u type=%s expected=map_value of the key table %s (helper %s)", rn, tname[r->type],
                    NANOBPF_KEYTABLE_MAP_NAME, helper);
    const struct ebpf_map *m = e->prog->maps[r->map];
    if (!is_keytable(m))
        return fail(e, (int)i, "R%u is a value of map %s: helper %s needs a value of the key table %s", rn, m->name,
                    helper, NANOBPF_KEYTABLE_MAP_NAME);
    if (r->off || r->umin || r->umax)
        return fail(e, (int)i, "R%u points %lld..%lld bytes into a %s value: helper %s needs its start", rn,
                    (long long)r->off + (long long)r->umin, (long long)r->off + (long long)r->umax,
                    NANOBPF_KEYTABLE_MAP_NAME, helper);
    return 0;
}

/* bpf_spin_lock's argument: a map value (not NULL) pointing exactly at its map's lock. */
static int spin_lock_arg(struct env *e, uint32_t i, const struct vreg *r, uint32_t rn, const char *helper) {
    if (r->type != T_MAP_VALUE)
        return fail(e, (int)i, "R%u type=%s expected=map_value with a bpf_spin_lock (helper %s)", rn, tname[r->type], helper);
    const struct ebpf_map *m = e->prog->maps[r->map];
    if (!m->spin_lock_off)
        return fail(e, (int)i, "map %s has no bpf_spin_lock in its value (helper %s)", m->name, helper);
    if (r->umin != r->umax || (int64_t)r->off + (int64_t)r->umin != (int64_t)m->spin_lock_off - 1)
        return fail(e, (int)i, "R%u points %lld..%lld bytes into a %s value: helper %s needs its bpf_spin_lock at %u", rn,
                    (long long)r->off + (long long)r->umin, (long long)r->off + (long long)r->umax, m->name, helper,
                    m->spin_lock_off - 1);
    return 0;
}

/* bpf_spin_lock/unlock (Linux process_spin_lock): one lock at a time, released by the same value's. */
static int spin_lock_change(struct env *e, uint32_t i, struct vframe *f, const struct vreg *r, int lock) {
    if (lock) {
        if (f->lock_map) return fail(e, (int)i, "Locking two bpf_spin_locks are not allowed");
        f->lock_map = r->map + 1u, f->lock_id = r->id;
        return 0;
    }
    if (!f->lock_map) return fail(e, (int)i, "bpf_spin_unlock without taking a lock");
    if (f->lock_map != r->map + 1u || f->lock_id != r->id) return fail(e, (int)i, "bpf_spin_unlock of different lock");
    f->lock_map = f->lock_id = 0;
    return 0;
}

static int do_helper(struct env *e, uint32_t i, struct vstate *st) {
    const struct ebpf_insn *in = &e->in[i];
    const struct ebpf_helper *h = ebpf_helper_find((uint32_t)in->imm);
    struct vframe *f = &st->f[st->nframes - 1];
    int map = -1;
    /* while a core holds a lock no other core can take it: nothing but the unlock may run meanwhile */
    if (f->lock_map && h->id != NANOBPF_HELPER_SPIN_UNLOCK && h->id != NANOBPF_HELPER_SPIN_LOCK)
        return fail(e, (int)i, "function calls are not allowed while holding a lock (helper %s)", h->name);
    /* a tail call replaces the program: from its own function only (the runtimes drop its one frame) */
    if (h->id == NANOBPF_HELPER_TAIL_CALL && (st->nframes != 1 || (e->root && !is_program(e, e->root))))
        return fail(e, (int)i, "bpf_tail_call from a subprogram or global function is not supported (only from a "
                    "program's own function)");
    if (h->id == NANOBPF_HELPER_TAIL_CALL && st->f[0].nrefs)
        return fail(e, (int)i, "tail_call would lead to reference leak (a ring buffer record reserved at insn %u)",
                    st->f[0].ref_insn[0]);
    uint64_t alloc = 0;
    uint32_t release = 0;
    for (uint32_t a = 0; a < 5; a++) {
        uint32_t rn = a + 1;
        struct vreg *r = &f->r[rn];
        int t = h->args[a];
        if (t == EBPF_ARG_NONE) continue;
        if (check_read(e, i, r, rn)) return -1;
        switch (t) {
        case EBPF_ARG_ANYTHING: break;
        case EBPF_ARG_CONST_MAP_PTR:
            if (r->type != T_MAP_PTR) return fail(e, (int)i, "R%u type=%s expected=map_ptr", rn, tname[r->type]);
            map = r->map;
            if (map_helper_compatible(e, i, h, e->prog->maps[map])) return -1;
            break;
        case EBPF_ARG_PTR_TO_MAP_KEY:
        case EBPF_ARG_PTR_TO_MAP_VALUE: {
            if (map < 0) return fail(e, (int)i, "helper %s: no map argument before R%u", h->name, rn);
            const struct ebpf_map *m = e->prog->maps[map];
            uint32_t size = t == EBPF_ARG_PTR_TO_MAP_KEY ? m->key_size : m->value_size;
            if (helper_mem(e, i, st, rn, size, size, 0)) return -1;
            break;
        }
        case EBPF_ARG_PTR_TO_MEM:
        case EBPF_ARG_PTR_TO_MEM_OR_NULL:
        case EBPF_ARG_PTR_TO_RW_MEM:
        case EBPF_ARG_PTR_TO_UNINIT_MEM: {
            int write = t == EBPF_ARG_PTR_TO_UNINIT_MEM;
            if ((write || t == EBPF_ARG_PTR_TO_RW_MEM) && r->type == T_MAP_VALUE && readonly_map(e->prog->maps[r->map]))
                return fail(e, (int)i, "helper %s: %s %s is read-only for programs (%s)", h->name,
                            readonly_map(e->prog->maps[r->map]), e->prog->maps[r->map]->name,
                            readonly_map_why(e->prog->maps[r->map]));
            int zero_ok = a < 4 && h->args[a + 1] == EBPF_ARG_CONST_SIZE_OR_ZERO;
            if (a == 4 || (h->args[a + 1] != EBPF_ARG_CONST_SIZE && !zero_ok))
                return fail(e, (int)i, "helper %s: memory argument R%u without a size", h->name, rn);
            struct vreg *sz = &f->r[rn + 1];
            if (check_read(e, i, sz, rn + 1)) return -1;
            if (sz->type != T_SCALAR) return fail(e, (int)i, "R%u type=%s expected=scalar", rn + 1, tname[sz->type]);
            if (t == EBPF_ARG_PTR_TO_MEM_OR_NULL && r->type == T_SCALAR && is_const(r) && r->umin == 0) {
                /* NULL: only with 0 bytes (Linux allows a zero-byte access to NULL, nothing else) */
                if (sz->umax) return fail(e, (int)i, "R%u is NULL but R%u may be %llu bytes", rn, rn + 1,
                                          (unsigned long long)sz->umax);
                a++;
                break;
            }
            if (sz->umin == 0 && !zero_ok)
                return fail(e, (int)i, "R%u invalid zero-sized %s", rn + 1, write ? "write" : "read");
            if (sz->umax == 0 && r->type != T_SCALAR) { /* zero bytes of a pointer: nothing is accessed */
                a++;
                break;
            }
            if (sz->umax > MAX_VAR_OFF) return fail(e, (int)i, "R%u unbounded memory access size", rn + 1);
            if (helper_mem(e, i, st, rn, sz->umin, sz->umax, write)) return -1;
            /* read and then overwritten: spilled values in it are gone, the bytes stay initialised */
            if (t == EBPF_ARG_PTR_TO_RW_MEM && helper_mem(e, i, st, rn, sz->umin, sz->umax, 1)) return -1;
            a++;
            break;
        }
        case EBPF_ARG_PTR_TO_CTX:
            if (r->type != T_CTX) return fail(e, (int)i, "R%u type=%s expected=ctx", rn, tname[r->type]);
            if (r->off || r->umax)
                return fail(e, (int)i, "dereference of modified ctx ptr R%u off=%lld disallowed", rn,
                            (long long)r->off + (long long)r->umin);
            break;
        case EBPF_ARG_PTR_TO_KEYTABLE_VALUE:
            if (keytable_value_arg(e, i, r, rn, h->name)) return -1;
            break;
        case EBPF_ARG_PTR_TO_SPIN_LOCK:
            if (spin_lock_arg(e, i, r, rn, h->name) ||
                spin_lock_change(e, i, f, r, h->id == NANOBPF_HELPER_SPIN_LOCK))
                return -1;
            break;
        case EBPF_ARG_CONST_ALLOC_SIZE:
            if (!is_const(r)) return fail(e, (int)i, "R%u is not a known constant (the bytes to reserve)", rn);
            alloc = r->umin;
            if (alloc > NANOBPF_EVENT_MAX)
                return fail(e, (int)i, "R%u: %llu bytes to reserve, more than a record holds (%d)", rn,
                            (unsigned long long)alloc, NANOBPF_EVENT_MAX);
            break;
        case EBPF_ARG_PTR_TO_RINGBUF_MEM:
            if (r->type == T_MEM_OR_NULL && MEM_KIND(r->map) == MEM_RINGBUF)
                return fail(e, (int)i, "R%u may be NULL: check what bpf_ringbuf_reserve returned first", rn);
            if (r->type != T_MEM || MEM_KIND(r->map) != MEM_RINGBUF)
                return fail(e, (int)i, "R%u type=%s expected=ringbuf_mem (a record bpf_ringbuf_reserve returned)", rn,
                            tname[r->type]);
            if (r->off || r->umax)
                return fail(e, (int)i, "R%u points %lld bytes into the record: helper %s needs its start", rn,
                            (long long)r->off + (long long)r->umin, h->name);
            release = r->id;
            break;
        default: return fail(e, (int)i, "helper %s: bad argument type %d", h->name, t);
        }
    }
    if (h->flags & EBPF_HELPER_CHANGES_PKT) {
        FOR_ALL_REGS(st, q, {
            if (is_pkt_kind(q)) set_unknown(q);
        })
    }
    if (release) release_ref(st, release); /* submitted or discarded: gone */
    clear_regs(&f->r[1], 5);
    switch (h->ret) {
    case EBPF_RET_VOID: set_not_init(&f->r[0]); break;
    case EBPF_RET_PTR_TO_MAP_VALUE_OR_NULL:
        if (map < 0) return fail(e, (int)i, "helper %s returns a map value without a map argument", h->name);
        set_type(&f->r[0], T_MAP_VALUE_OR_NULL);
        f->r[0].map = (uint16_t)map;
        f->r[0].id = ++e->id_gen;
        break;
    case EBPF_RET_PTR_TO_RINGBUF_MEM_OR_NULL: { /* a reference the program must give back */
        struct vframe *f0 = &st->f[0];
        if (f0->nrefs == MAX_REFS)
            return fail(e, (int)i, "more than %d ring buffer records reserved at once", MAX_REFS);
        set_type(&f->r[0], T_MEM_OR_NULL);
        f->r[0].map = MEM_RINGBUF;
        f->r[0].range = (uint32_t)alloc;
        f->r[0].id = ++e->id_gen;
        f0->ref_id[f0->nrefs] = f->r[0].id;
        f0->ref_insn[f0->nrefs++] = i;
        break;
    }
    default: set_unknown(&f->r[0]);
    }
    return 0;
}

/* A call to a global function (verified on its own): the arguments must match its prototype; the
 * callee may overwrite the memory they point to, returns an unknown scalar and, if it moves packet
 * data, invalidates the caller's packet pointers. */
static int do_global_call(struct env *e, uint32_t i, struct vstate *st, uint32_t callee) {
    const struct nanobpf_image_func *g = e->gsig[callee];
    struct vframe *f = &st->f[st->nframes - 1];
    if (f->lock_map) return fail(e, (int)i, "function calls are not allowed while holding a lock");
    for (uint32_t a = 0; a < g->n_args; a++) {
        uint32_t rn = a + 1, size = sig_size(g, a);
        struct vreg *r = &f->r[rn];
        if (check_read(e, i, r, rn)) return -1;
        switch (g->arg_type[a]) {
        case NANOBPF_FUNC_ARG_SCALAR:
            if (r->type != T_SCALAR)
                return fail(e, (int)i, "R%u type=%s expected=scalar (argument %u of the global function at insn %u)", rn,
                            tname[r->type], rn, e->fstart[callee]);
            break;
        case NANOBPF_FUNC_ARG_CTX:
            if (r->type != T_CTX || r->off || r->umax)
                return fail(e, (int)i, "R%u type=%s expected=ctx (argument %u of the global function at insn %u)", rn,
                            tname[r->type], rn, e->fstart[callee]);
            break;
        default: { /* MEM or MEM_RO: size bytes, or NULL */
            int write = g->arg_type[a] == NANOBPF_FUNC_ARG_MEM;
            if (r->type == T_SCALAR && is_const(r) && r->umin == 0) break;
            unsigned al = ptr_align(r, 0);
            if (al < e->arg_align[callee][a]) {
                /* explore_order explores a function after every caller: this cannot happen */
                if (e->explored[callee])
                    return fail(e, (int)i, "internal: the global function at insn %u was explored before this call",
                                e->fstart[callee]);
                e->arg_align[callee][a] = (uint8_t)al;
            }
            if (write && r->type == T_MAP_VALUE && is_keytable(e->prog->maps[r->map]))
                return fail(e, (int)i, "R%u: the key table %s is read-only for programs, and argument %u of the global "
                            "function at insn %u may be written (make it a pointer to const)", rn,
                            NANOBPF_KEYTABLE_MAP_NAME, rn, e->fstart[callee]);
            if (r->type == T_STACK) {
                /* initialised (the callee may read it), then overwritten with plain data unless const */
                if (helper_mem(e, i, st, rn, size, size, 0) || (write && helper_mem(e, i, st, rn, size, size, 1)))
                    return -1;
            } else if (is_pkt(r) || r->type == T_MAP_VALUE || r->type == T_MEM) {
                if (helper_mem(e, i, st, rn, size, size, write)) return -1;
            } else {
                return fail(e, (int)i, "R%u type=%s expected=fp, pkt, map_value, mem or NULL (argument %u of the global "
                            "function at insn %u, %u bytes)", rn, tname[r->type], rn, e->fstart[callee], size);
            }
        }
        }
    }
    if (e->changes_pkt[callee]) {
        FOR_ALL_REGS(st, q, {
            if (is_pkt_kind(q)) set_unknown(q);
        })
    }
    clear_regs(&f->r[1], 5);
    if (g->ret == NANOBPF_FUNC_ARG_SCALAR) set_unknown(&f->r[0]);
    else set_not_init(&f->r[0]);
    return 0;
}

/* The program after bpf_loop's calls (nr_loops of them, one that returned 1, or none: nr_loops 0 or
 * bad flags): r0 the result, an unknown scalar as in Linux, r1-r5 clobbered; pushed as a pending state
 * at i + 1 while the current state goes on into the callback. */
static int push_after_loop(struct env *e, uint32_t i) {
    struct vframe *f = &e->cur->f[e->cur->nframes - 1];
    struct vreg keep[6];
    for (uint32_t r = 0; r < 6; r++) keep[r] = f->r[r];
    set_unknown(&f->r[0]);
    clear_regs(&f->r[1], 5);
    int rc = push_branch(e, i + 1, BR_RESUME);
    f = &e->cur->f[e->cur->nframes - 1];
    for (uint32_t r = 0; r < 6; r++) f->r[r] = keep[r];
    return rc;
}

/* bpf_loop(nr_loops, callback, callback_ctx, flags), verified as Linux verifies it: the callback runs as
 * a frame below the caller with r1 an unknown index (Linux does not bound it by nr_loops either) and r2
 * callback_ctx (a stack pointer of any frame, or NULL), and returns 0 (go on) or 1 (stop). Each return
 * comes back to this call (do_exit), with the caller's arguments kept: the state here is the loop's
 * head, where visit_state ends a path that a stored state covers. The path after the calls is pushed
 * at every arrival (the calls may end there). */
static int do_loop_call(struct env *e, uint32_t i, struct vstate *st, uint32_t *next) {
    struct vframe *f = &st->f[st->nframes - 1];
    if (f->lock_map) return fail(e, (int)i, "function calls are not allowed while holding a lock (helper loop)");
    for (uint32_t rn = 1; rn <= 4; rn++)
        if (check_read(e, i, &f->r[rn], rn)) return -1;
    const struct vreg *fn = &f->r[2], *ctx = &f->r[3];
    if (fn->type != T_FUNC)
        return fail(e, (int)i, "R2 type=%s expected=func (the address of a static function: the callback)", tname[fn->type]);
    if ((uint32_t)fn->off != f->func)
        return fail(e, (int)i, "R2: the callback's address was taken in the function at insn %u, not in this one (insn %u)",
                    e->fstart[fn->off], e->fstart[f->func]);
    if (ctx->type != T_STACK && !(is_const(ctx) && ctx->umin == 0))
        return fail(e, (int)i, "R3 type=%s expected=fp or NULL (the callback's context)", tname[ctx->type]);
    if (st->nframes >= e->maxframes) /* cannot happen: the call graph has the callback one frame below */
        return fail(e, (int)i, "the call stack of %u frames is too deep (at most %u)", st->nframes + 1, e->maxframes);
    if (push_after_loop(e, i)) return -1;
    f = &st->f[st->nframes - 1];
    struct vframe *callee = &st->f[st->nframes];
    clear_frame(callee);
    set_unknown(&callee->r[1]);
    callee->r[2] = f->r[3];
    callee->r[EBPF_REG_FP].type = T_STACK;
    callee->r[EBPF_REG_FP].frame = (uint8_t)st->nframes;
    callee->callsite = i;
    callee->func = f->r[2].map;
    callee->entry_refs = st->f[0].nrefs; /* what the callback must leave */
    st->nframes++;
    *next = e->fstart[callee->func];
    return 0;
}

static int do_local_call(struct env *e, uint32_t i, struct vstate *st, uint32_t *next) {
    uint32_t t = i + 1 + (uint32_t)e->in[i].imm;
    if (e->gsig[e->func[t]]) return do_global_call(e, i, st, e->func[t]);
    if (st->f[st->nframes - 1].lock_map) return fail(e, (int)i, "function calls are not allowed while holding a lock");
    if (st->nframes >= e->maxframes) /* cannot happen: the call graph bounds the depth */
        return fail(e, (int)i, "the call stack of %u frames is too deep (at most %u)", st->nframes + 1, e->maxframes);
    struct vframe *caller = &st->f[st->nframes - 1], *callee = &st->f[st->nframes];
    clear_frame(callee);
    for (uint32_t r = 1; r <= 5; r++) {
        callee->r[r] = caller->r[r];
        set_not_init(&caller->r[r]);
    }
    set_not_init(&caller->r[0]);
    callee->r[EBPF_REG_FP].type = T_STACK;
    callee->r[EBPF_REG_FP].frame = (uint8_t)st->nframes;
    callee->callsite = i;
    callee->func = e->func[t];
    st->nframes++;
    *next = t;
    return 0;
}

/* 1 = the path ended (exit of the main program), 0 = go on at *next. */
static int do_exit(struct env *e, uint32_t i, struct vstate *st, uint32_t *next) {
    struct vframe *f = &st->f[st->nframes - 1];
    if (f->lock_map) return fail(e, (int)i, "bpf_spin_unlock is missing (a bpf_spin_lock is held at exit)");
    if (st->nframes == 1 && st->f[0].nrefs)
        return fail(e, (int)i, "Unreleased reference id=%u alloc_insn=%u (a ring buffer record neither submitted nor "
                    "discarded)", st->f[0].ref_id[0], st->f[0].ref_insn[0]);
    if (st->nframes == 1 && e->root && !is_program(e, e->root)) { /* a global function returns to any caller */
        if (e->gsig[e->root]->ret == NANOBPF_FUNC_ARG_NONE) return 1;
        if (f->r[0].type == T_NOT_INIT) return fail(e, (int)i, "R0 !read_ok at exit");
        if (f->r[0].type != T_SCALAR)
            return fail(e, (int)i, "R0 is %s at the exit of a global function, expected a scalar", tname[f->r[0].type]);
        return 1;
    }
    if (st->nframes == 1) { /* a program's exit. A pointer is an action too (privileged Linux): none of the
                             * five, so aborted */
        if (f->r[0].type == T_NOT_INIT) return fail(e, (int)i, "R0 !read_ok at exit");
        return 1;
    }
    uint32_t call = f->callsite;
    if (is_loop_call(&e->in[call])) { /* a bpf_loop callback: back to the call (do_loop_call) */
        const struct vreg *r0 = &f->r[0];
        if (st->f[0].nrefs != f->entry_refs) /* each call gives back what it reserved, and only that */
            return fail(e, (int)i, "Unreleased reference at callback return (a ring buffer record reserved or released "
                        "in the callback must be both there)");
        if (r0->type != T_SCALAR)
            return fail(e, (int)i, "At callback return the register R0 is %s, should be a scalar in [0, 1]",
                        tname[r0->type]);
        if (r0->umax > 1)
            return fail(e, (int)i, "At callback return the register R0 has value [%llu, %llu], should have been in [0, 1]",
                        (unsigned long long)r0->umin, (unsigned long long)r0->umax);
        int may_stop = r0->umax == 1, may_go_on = r0->umin == 0;
        st->nframes--;
        if (may_stop && !may_go_on) { /* the calls end here */
            struct vframe *c = &st->f[st->nframes - 1];
            set_unknown(&c->r[0]);
            clear_regs(&c->r[1], 5);
            *next = call + 1;
            return 0;
        }
        if (may_stop && push_after_loop(e, call)) return -1;
        e->loop_arrival = 1;
        *next = call;
        return 0;
    }
    /* a function may leave r0 unset (clang's void functions): the caller then cannot read it */
    if (f->r[0].type == T_STACK && f->r[0].frame == st->nframes - 1)
        return fail(e, (int)i, "cannot return stack pointer to the caller");
    struct vframe *caller = &st->f[st->nframes - 2];
    caller->r[0] = f->r[0];
    clear_regs(&caller->r[1], 5);
    *next = f->callsite + 1;
    st->nframes--;
    return 0;
}

/* The views of scalar v that say more than its unsigned range (as the encoding keeps them), for the log:
 * at most 170 characters. */
static int log_views(char *p, const struct vreg *v) {
    struct vreg c;
    set_range(&c, v->umin, v->umax);
    int len = 0;
    if (v->smin != c.smin || v->smax != c.smax)
        len += sprintf(p + len, " s=[%lld,%lld]", (long long)v->smin, (long long)v->smax);
    if (v->u32min != c.u32min || v->u32max != c.u32max) len += sprintf(p + len, " w=[%u,%u]", v->u32min, v->u32max);
    if (v->s32min != c.s32min || v->s32max != c.s32max) len += sprintf(p + len, " ws=[%d,%d]", v->s32min, v->s32max);
    if (v->t.v != c.t.v || v->t.m != c.t.m)
        len += sprintf(p + len, " t=%llx/%llx", (unsigned long long)v->t.v, (unsigned long long)v->t.m);
    return len;
}

static void log_state(const struct env *e, uint32_t i) {
    const struct vstate *st = e->cur;
    const struct vframe *f = &st->f[st->nframes - 1];
    const struct ebpf_insn *in = &e->in[i];
    char line[2048];
    int len = snprintf(line, sizeof line, "%u: (%02x) d%u s%u off %d imm %d [frame %u]", i, in->code, in->dst, in->src,
                       in->off, in->imm, st->nframes - 1);
    for (uint32_t r = 0; r < EBPF_NREGS && len < (int)sizeof line - 250; r++) {
        const struct vreg *v = &f->r[r];
        if (v->type == T_NOT_INIT) continue;
        if (v->type == T_SCALAR && v->umin == v->umax)
            len += snprintf(line + len, sizeof line - (size_t)len, " R%u=%llu", r, (unsigned long long)v->umin);
        else if (v->type == T_SCALAR)
            len += snprintf(line + len, sizeof line - (size_t)len, " R%u=[%llu,%llu]%s", r, (unsigned long long)v->umin,
                            (unsigned long long)v->umax, v->id ? "#" : ""),
            len += v->off ? snprintf(line + len, sizeof line - (size_t)len, "%+d", v->off) : 0,
            len += log_views(line + len, v);
        else
            len += snprintf(line + len, sizeof line - (size_t)len, " R%u=%s(off=%d,id=%u,r=%u,var=%llu..%llu)", r,
                            tname[v->type], v->off, v->id, v->range, (unsigned long long)v->umin,
                            (unsigned long long)v->umax);
    }
    /* log level 2: also the stack slots of the current frame (spilled scalars shown as ranges) */
    for (uint32_t k = 0; e->log >= 2 && k < f->nslots && len < (int)sizeof line - 60; k++) {
        const struct vslot *sl = &f->s[k];
        if (!sl->init) continue;
        if (sl->spill && sl->reg.type == T_SCALAR)
            len += snprintf(line + len, sizeof line - (size_t)len, " fp-%u=[%llu,%llu]", 8 * (k + 1),
                            (unsigned long long)sl->reg.umin, (unsigned long long)sl->reg.umax);
        else if (sl->spill)
            len += snprintf(line + len, sizeof line - (size_t)len, " fp-%u=%s", 8 * (k + 1), tname[sl->reg.type]);
        else
            len += snprintf(line + len, sizeof line - (size_t)len, " fp-%u=m%02x", 8 * (k + 1), sl->init);
    }
    if (len > (int)sizeof line - 2) len = (int)sizeof line - 2;
    line[len++] = '\n';
    ebpf_console_write(line, (size_t)len); /* whole: vlog's buffer is shorter than a state */
}

/* Which side of a two-way branch at insn i to explore first (the other waits as a pending branch): the
 * side that leaves a loop around i, whose path soon ends or meets states explored before, so that a
 * bounded loop that may be left at each iteration (a bounds check against data_end, say) keeps one
 * pending branch, not one per iteration. Otherwise Linux's order: the fall-through first. */
static int first_side(const struct env *e, uint32_t i) {
    uint8_t d = e->loopd[i];
    return e->loopd[jump_target(&e->in[i], i)] < d && e->loopd[i + 1] >= d ? BR_TAKEN : BR_FALL;
}

/* ---- An if in a loop ----
 * A branch both of whose sides stay in the loop pends one side per iteration when explored depth first:
 * that side is pruned only against the other's state at their join, which is finished only when the
 * rest of the loop is (Linux pends up to 8,192 of them). When both sides run straight to the same prune
 * point (clang's `if (c) n++;`), both are followed there at once and compared before either goes on: a
 * side that the other's state covers ends there. That other state has explored nothing yet, and nothing
 * will be pruned against the side that ended, so no proof leans on itself. */
#define NO_JOIN UINT32_MAX

static int step(struct env *e, uint32_t i, uint32_t *next);

/* The first prune point from insn k through straight-line code (no branch, call or exit), or NO_JOIN. */
static uint32_t straight_to_prune(const struct env *e, uint32_t k) {
    for (uint32_t steps = 0; steps < e->n; steps++) {
        if (e->flags[k] & F_PRUNE) return k;
        if (e->nsucc[k] != 1 || is_local_call(&e->in[k])) return NO_JOIN;
        k = e->succ[2 * k];
    }
    return NO_JOIN;
}

/* Do both sides of the conditional jump at i reach the same prune point (*join) first? */
static int if_join(const struct env *e, uint32_t i, uint32_t *join) {
    *join = straight_to_prune(e, i + 1);
    return *join != NO_JOIN && *join == straight_to_prune(e, jump_target(&e->in[i], i));
}

/* dst := src, working states (dst keeps clear_frame's invariant). */
static void copy_state(struct vstate *dst, const struct vstate *src) {
    dst->insn = src->insn;
    dst->nframes = src->nframes;
    for (uint32_t j = 0; j < src->nframes; j++) {
        struct vframe *f = &dst->f[j];
        uint32_t old_ns = f->nslots;
        copy_words(f, &src->f[j], RAW_FRAME);
        copy_words(f->s, src->f[j].s, f->nslots * sizeof(struct vslot));
        if (old_ns > f->nslots) clear_slots(&f->s[f->nslots], old_ns - f->nslots);
    }
}

/* Follows `side` of the conditional jump at i in e->cur up to `join`: 1 there, 0 when the side cannot
 * happen, -1 on an error. */
static int run_to_join(struct env *e, uint32_t i, int side, uint32_t join) {
    if (!cond_jump(e, i, e->cur, side)) return 0;
    for (uint32_t k = side == BR_TAKEN ? jump_target(&e->in[i], i) : i + 1, next; k != join; k = next) {
        if (++e->stats.processed > e->max_processed)
            return fail(e, (int)k, "program too complex (more than %u insns processed)", e->max_processed);
        if (e->log) log_state(e, k);
        int r = step(e, k, &next);
        if (r) return r < 0 ? -1 : 0;
    }
    e->cur->insn = join;
    return 1;
}

/* Does state a (at its insn) cover state b? */
static int state_covers(struct env *e, const struct vstate *a, const struct vstate *b) {
    uint32_t hint;
    encode(e, a);
    return encoded_covers(e, e->buf, b, 0, &hint);
}

/* Both sides of the conditional jump at i up to their join; the one going on is left in e->cur (*next:
 * the join), the other ends or waits as a pending state. 1 when neither side can happen. */
static int explore_if(struct env *e, uint32_t i, uint32_t join, uint32_t *next) {
    struct vstate *fall = e->cur, *taken = e->tmp; /* tmp is free outside visit_state */
    copy_state(taken, fall);
    e->cur = taken;
    int rt = run_to_join(e, i, BR_TAKEN, join);
    e->cur = fall;
    int rf = rt < 0 ? -1 : run_to_join(e, i, BR_FALL, join);
    if (rf < 0) return -1;
    *next = join;
    if (!rt) return !rf;
    if (!rf || state_covers(e, taken, fall)) { /* go on with the taken side */
        copy_state(fall, taken);
        return 0;
    }
    if (state_covers(e, fall, taken)) return 0;
    e->cur = taken;
    int r = push_branch(e, join, BR_RESUME);
    e->cur = fall;
    return r;
}

/* One instruction: 0 = go on at *next, 1 = path ended, -1 = error. */
static int step(struct env *e, uint32_t i, uint32_t *next) {
    struct vstate *st = e->cur;
    const struct ebpf_insn *in = &e->in[i];
    struct vframe *f = &st->f[st->nframes - 1];
    *next = i + 1;
    switch (EBPF_CLASS(in->code)) {
    case EBPF_CLS_ALU:
    case EBPF_CLS_ALU64: return do_alu(e, i, st);
    case EBPF_CLS_LD: {
        struct vreg *d = &f->r[in->dst];
        set_not_init(d);
        switch (in->src) {
        case EBPF_PSEUDO_IMM64: set_const(d, (uint32_t)in->imm | (uint64_t)(uint32_t)in[1].imm << 32); break;
        case EBPF_PSEUDO_FUNC: /* the function, and the one that took its address */
            d->type = T_FUNC;
            d->map = e->func[i + 1 + (uint32_t)in->imm];
            d->off = e->func[i];
            break;
        case EBPF_PSEUDO_MAP_FD:
        case EBPF_PSEUDO_MAP_IDX:
            d->type = T_MAP_PTR;
            d->map = (uint16_t)in->imm;
            break;
        default:
            d->type = T_MAP_VALUE;
            d->map = (uint16_t)in->imm;
            d->off = in[1].imm;
        }
        *next = i + 2;
        return 0;
    }
    case EBPF_CLS_LDX:
    case EBPF_CLS_ST:
    case EBPF_CLS_STX: return do_ldx_st(e, i, st);
    default: break;
    }
    /* jumps */
    if (is_ja(in)) {
        *next = jump_target(in, i);
        return 0;
    }
    if (is_call(in)) {
        if (in->src == EBPF_PSEUDO_CALL) return do_local_call(e, i, st, next);
        if (is_loop_call(in)) return do_loop_call(e, i, st, next);
        return do_helper(e, i, st);
    }
    if (is_exit(in)) return do_exit(e, i, st, next);
    if (check_read(e, i, &f->r[in->dst], in->dst)) return -1;
    if ((in->code & EBPF_SRC_X) && check_read(e, i, &f->r[in->src], in->src)) return -1;
    int mask = cond_jump(e, i, st, 0);
    if (mask < 0) return -1;
    if (mask == (BR_TAKEN | BR_FALL)) {
        int first = first_side(e, i);
        uint32_t join;
        if (first == BR_FALL && e->loopd[i] && if_join(e, i, &join)) return explore_if(e, i, join, next);
        if (push_branch(e, i, (BR_TAKEN | BR_FALL) ^ first)) return -1;
        mask = first;
    }
    if (!mask || !cond_jump(e, i, st, mask)) return 1; /* contradictory state: no outcome possible */
    if (mask == BR_TAKEN) *next = jump_target(in, i);
    return 0;
}

/* The roots in the order they are explored: the program, then each global function once every root that
 * calls it (directly, or through static functions and callbacks it enters) is done, so that its memory
 * arguments' alignment (arg_align) is final when it is explored. The call graph has no cycles
 * (recursion is refused before), so each round places one at least. Returns how many. */
static uint32_t explore_order(struct env *e, uint8_t *order) {
    uint32_t direct[EBPF_MAX_SUBPROGS] = {0}, gcalls[EBPF_MAX_SUBPROGS] = {0}, globals = 0, done = 1, n = 0;
    for (uint32_t i = 0; i < e->n; i++)
        if (!(e->flags[i] & F_LDIMM2) && has_call_edge(&e->in[i]))
            direct[e->func[i]] |= 1u << e->func[i + 1 + (uint32_t)e->in[i].imm];
    for (uint32_t f = 1; f < e->nfuncs; f++)
        if (e->gsig[f]) globals |= 1u << f;
    for (uint32_t f = 0; f < e->nfuncs; f++) {
        if (f && !e->gsig[f]) continue;
        uint32_t reach = direct[f], seen = 0;
        for (uint32_t stat; (stat = reach & ~globals & ~seen);) { /* static functions entered from f */
            uint32_t s = (uint32_t)__builtin_ctz(stat);
            seen |= 1u << s;
            reach |= direct[s];
        }
        gcalls[f] = reach & globals;
    }
    order[n++] = 0;
    while (done != (globals | 1)) {
        uint32_t before = done;
        for (uint32_t g = 1; g < e->nfuncs; g++) {
            if (!(globals >> g & 1) || (done >> g & 1)) continue;
            int ready = 1;
            for (uint32_t r = 0; r < e->nfuncs && ready; r++)
                if (r != g && ((globals | 1) >> r & 1) && !(done >> r & 1) && (gcalls[r] >> g & 1)) ready = 0;
            if (ready) order[n++] = (uint8_t)g, done |= 1u << g;
        }
        if (done == before) break; /* no cycle gets here; were there one, the rest would still be explored */
    }
    for (uint32_t g = 1; g < e->nfuncs; g++)
        if ((globals >> g & 1) && !(done >> g & 1)) order[n++] = (uint8_t)g;
    return n;
}

/* Explore every path of function `root` from its entry: the program (0, r1 = ctx) or a global function
 * (arguments from its prototype: unknown scalars, the ctx, memory that may be NULL). */
static int do_check(struct env *e, uint32_t root) {
    struct vstate *st = e->cur;
    clear_frame(&st->f[0]);
    st->nframes = 1;
    st->f[0].func = (uint16_t)root;
    e->root = root;
    e->explored[root] = 1;
    if (!root) st->f[0].r[1].type = T_CTX;
    for (uint32_t a = 0; root && a < e->gsig[root]->n_args; a++) {
        struct vreg *r = &st->f[0].r[a + 1];
        switch (e->gsig[root]->arg_type[a]) {
        case NANOBPF_FUNC_ARG_SCALAR: set_unknown(r); break;
        case NANOBPF_FUNC_ARG_CTX: r->type = T_CTX; break;
        default:
            r->type = T_MEM_OR_NULL;
            r->map = (uint16_t)((e->gsig[root]->arg_type[a] == NANOBPF_FUNC_ARG_MEM_RO ? MEM_READONLY : 0) |
                                e->arg_align[root][a] << MEM_ALIGN_SHIFT);
            r->range = sig_size(e->gsig[root], a);
            r->id = ++e->id_gen;
        }
    }
    st->f[0].r[EBPF_REG_FP].type = T_STACK;
    e->parent = NULL;
    uint32_t i = e->fstart[root];
    for (;;) {
        int r = 0;
        if (e->flags[i] & F_PRUNE) {
            r = visit_state(e, i);
            if (r < 0) return -1;
        }
        if (!r) {
            if (++e->stats.processed > e->max_processed)
                return fail(e, (int)i, "program too complex (more than %u insns processed)", e->max_processed);
            if (e->log) log_state(e, i);
            uint32_t next;
            r = step(e, i, &next);
            if (r < 0) return -1;
            if (!r) {
                i = next;
                continue;
            }
        }
        /* the path ended: continue with the newest pending branch (whose side may prove impossible) */
        int side;
        do {
            finish_path(e);
            struct pnode *p = e->pending;
            if (!p) return 0;
            e->pending = p->next;
            e->npending--;
            *(p->raw ? &e->raw_bytes : &e->pending_bytes) -= sizeof *p + p->size;
            if (p->raw) restore_raw(e, p->data, st);
            else decode(p->data, st);
            e->parent = p->parent;
            side = p->side;
            pending_free(e, p, sizeof *p + p->size);
            i = st->insn;
        } while (side != BR_RESUME && !cond_jump(e, i, st, side));
        if (side != BR_RESUME) i = side == BR_TAKEN ? jump_target(&e->in[i], i) : i + 1;
        if (e->log) vlog("verifier: from pending branch to insn %u\n", i);
    }
}

/* Forget the states stored for pruning (between explorations of different functions). */
static void free_states(struct env *e) {
    for (uint32_t k = 0; e->heads && k < e->nprune; k++)
        while (e->heads[k]) {
            struct snode *s = e->heads[k];
            e->heads[k] = s->next;
            pool_free(&e->pool, s, sizeof *s + s->size);
        }
    pool_reset(&e->pool);
    e->nstates = 0;
    e->state_bytes = 0;
    e->parent = NULL;
}

/* ---- After acceptance ---- */
static uint32_t round16(uint32_t v) { return (v + 15u) & ~15u; }

/* Stack bytes along the deepest call chain from function f (memoised in sdepth/sframes). */
static void chain_stack(const struct env *e, uint32_t f, uint32_t *sdepth, uint32_t *sframes, uint8_t *done) {
    uint32_t best = 0, best_frames = 0;
    for (uint32_t i = e->fstart[f]; i < e->fstart[f + 1]; i++) {
        if (!has_call_edge(&e->in[i]) || (e->flags[i] & F_LDIMM2)) continue;
        uint32_t g = e->func[i + 1 + (uint32_t)e->in[i].imm];
        if (!done[g]) chain_stack(e, g, sdepth, sframes, done);
        if (sdepth[g] > best || (sdepth[g] == best && sframes[g] > best_frames)) best = sdepth[g], best_frames = sframes[g];
    }
    sdepth[f] = round16(e->fdepth[f]) + best;
    sframes[f] = best_frames + 1;
    done[f] = 1;
}

static int check_stack_chains(struct env *e) {
    uint32_t sdepth[EBPF_MAX_SUBPROGS], sframes[EBPF_MAX_SUBPROGS];
    uint8_t done[EBPF_MAX_SUBPROGS] = {0};
    for (uint32_t f = 1; f < e->nfuncs; f++) /* the other programs: a tail call starts a fresh stack */
        if (is_program(e, f)) {
            if (!done[f]) chain_stack(e, f, sdepth, sframes, done);
            if (sdepth[f] > EBPF_STACK_SIZE)
                return fail(e, (int)e->fstart[f], "combined stack size of %u calls from the program at insn %u is %u "
                            "bytes, more than %d", sframes[f], e->fstart[f], sdepth[f], EBPF_STACK_SIZE);
        }
    chain_stack(e, 0, sdepth, sframes, done);
    if (sdepth[0] <= EBPF_STACK_SIZE) return 0;
    /* report the call where the deepest chain goes over the limit */
    uint32_t f = 0, sum = 0, call = 0;
    for (;;) {
        sum += round16(e->fdepth[f]);
        if (sum > EBPF_STACK_SIZE) break;
        uint32_t best_g = f;
        for (uint32_t i = e->fstart[f]; i < e->fstart[f + 1]; i++) {
            if (!has_call_edge(&e->in[i]) || (e->flags[i] & F_LDIMM2)) continue;
            uint32_t g = e->func[i + 1 + (uint32_t)e->in[i].imm];
            if (best_g == f || sdepth[g] > sdepth[best_g]) best_g = g, call = i;
        }
        if (best_g == f) break;
        f = best_g;
    }
    return fail(e, (int)call, "combined stack size of %u calls is %u bytes, more than %d", sframes[0], sdepth[0],
                EBPF_STACK_SIZE);
}

int ebpf_ctx_field_load(uint32_t field, uint8_t *code, int16_t *off) {
    static const uint8_t field_off[] = {
        offsetof(struct ebpf_xdp_buff, data),           offsetof(struct ebpf_xdp_buff, data_end),
        offsetof(struct ebpf_xdp_buff, data_meta),      offsetof(struct ebpf_xdp_buff, ingress_ifindex),
        offsetof(struct ebpf_xdp_buff, rx_queue_index), offsetof(struct ebpf_xdp_buff, egress_ifindex),
        offsetof(struct ebpf_xdp_buff, l3_off),         offsetof(struct ebpf_xdp_buff, l4_off),
        offsetof(struct ebpf_xdp_buff, quic_off),       offsetof(struct ebpf_xdp_buff, pn_off),
        offsetof(struct ebpf_xdp_buff, cid_len),        offsetof(struct ebpf_xdp_buff, conn)};
    _Static_assert(sizeof field_off == sizeof(struct nanobpf_xdp_ctx) / 4, "one runtime field per context field");
    if (field >= sizeof field_off) return -1;
    *code = (uint8_t)(EBPF_CLS_LDX | EBPF_MODE_MEM | (field < 3 ? EBPF_SIZE_DW : EBPF_SIZE_W)); /* 64-bit pointers */
    *off = field_off[field];
    return 0;
}

static void rewrite_ctx(struct env *e) {
    for (uint32_t i = 0; i < e->n; i++) {
        uint8_t a = e->aux[i];
        if (!a || a == AUX_OTHER) continue;
        struct ebpf_insn *in = &e->prog->insns[i];
        ebpf_ctx_field_load(a - 1u, &in->code, &in->off); /* mem_access marked only fields that exist */
    }
}

/* ---- Entry point ---- */
int ebpf_verify(struct ebpf_prog *prog, const struct ebpf_verify_opts *opts, struct ebpf_error *err) {
    struct env env, *e = &env;
    int rc = -1;
    memset(e, 0, sizeof *e);
    memset(e->arg_align, 3, sizeof e->arg_align); /* no call seen yet: lowered by each (do_global_call) */
    memset(&ebpf_verify_last_stats, 0, sizeof ebpf_verify_last_stats);
    e->prog = prog;
    e->err = err;
    e->log = opts ? opts->log_level : 0;
    e->max_processed = opts && opts->max_processed ? opts->max_processed : DEFAULT_MAX_PROCESSED;
    e->max_states = opts && opts->max_states ? opts->max_states : DEFAULT_MAX_STATES;
    if (prog->verified) return ebpf_fail(err, -1, "program already verified");
    if (prog->resolved) return ebpf_fail(err, -1, "program already resolved (verify before ebpf_prog_resolve)");
    if (prog->n_insns == 0 || prog->n_insns > EBPF_MAX_INSNS || !prog->insns)
        return ebpf_fail(err, -1, "program of %u insns (1..%d)", prog->n_insns, EBPF_MAX_INSNS);
    if (prog->n_maps && !prog->maps) return ebpf_fail(err, -1, "program has %u maps but no map table", prog->n_maps);
    uint64_t t_start = ebpf_cycles();
    e->in = prog->insns;
    e->n = prog->n_insns;
    uint32_t n = e->n;
    e->flags = ebpf_alloc(n);
    e->aux = ebpf_alloc(n);
    e->func = ebpf_alloc(n);
    e->live = ebpf_alloc(n * sizeof *e->live);
    e->prune = ebpf_alloc(n * sizeof *e->prune);
    if (!e->flags || !e->aux || !e->func || !e->live || !e->prune) {
        ebpf_fail(err, -1, "verifier: out of memory");
        goto out;
    }
    if (check_structure(e)) goto out;
    compute_changes_pkt(e);
    if (compute_liveness(e)) {
        ebpf_fail(err, -1, "verifier: out of memory");
        goto out;
    }
    e->no_relevance = ebpf_verify_no_relevance;
    for (uint32_t i = 0; i < n; i++) {
        e->prune[i] = NO_PRUNE;
        if (e->flags[i] & (F_PRUNE | F_LEADER)) e->prune[i] = (uint16_t)e->nprune++;
    }
    if (compute_relevance(e)) {
        ebpf_fail(err, -1, "verifier: out of memory");
        goto out;
    }
    uint64_t t_explore = ebpf_cycles();
    e->stats.static_cycles = t_explore - t_start;
    e->heads = ebpf_alloc((e->nprune ? e->nprune : 1) * sizeof *e->heads);
    size_t state_size = sizeof(struct vstate) + e->maxframes * sizeof(struct vframe);
    e->cur = ebpf_alloc(state_size);
    e->tmp = ebpf_alloc(state_size);
    e->buf = ebpf_alloc(16 + e->maxframes * ENC_FRAME_MAX + 8); /* + 8: copy_encoding's last word */
    if (!e->heads || !e->cur || !e->tmp || !e->buf) {
        ebpf_fail(err, -1, "verifier: out of memory");
        goto out;
    }
    /* the program, then each global function once, on its own, after its callers */
    uint8_t order[EBPF_MAX_SUBPROGS];
    uint32_t nroots = explore_order(e, order);
    for (uint32_t k = 0; k < nroots; k++) {
        free_states(e);
        if (do_check(e, order[k])) goto out;
    }
    e->stats.explore_cycles = ebpf_cycles() - t_explore;
    if (check_stack_chains(e)) goto out;
    /* accepted */
    prog->insn_flags = ebpf_alloc(n);
    if (!prog->insn_flags) {
        ebpf_fail(err, -1, "verifier: out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < n; k++) {
        if (e->flags[k] & F_PKTACC) prog->insn_flags[k] |= EBPF_INSN_PKT_ACCESS;
        if (e->aux[k] == 1 + offsetof(struct nanobpf_xdp_ctx, data_meta) / 4) prog->insn_flags[k] |= EBPF_INSN_READS_META;
    }
    rewrite_ctx(e);
    for (uint32_t f = 0; f < e->nfuncs; f++) {
        prog->subprogs[f].start = e->fstart[f];
        prog->subprogs[f].stack_depth = round16(e->fdepth[f]);
    }
    prog->n_subprogs = e->nfuncs;
    prog->verified = 1;
    rc = 0;
out:
    while (e->pending) {
        struct pnode *p = e->pending;
        e->pending = p->next;
        pending_free(e, p, sizeof *p + p->size);
    }
    free_states(e);
    arena_destroy(&e->pool.arena);
    arena_destroy(&e->pending_mem);
    ebpf_free(e->heads);
    ebpf_free(e->cur);
    ebpf_free(e->tmp);
    ebpf_free(e->buf);
    ebpf_free(e->flags);
    ebpf_free(e->aux);
    ebpf_free(e->func);
    ebpf_free(e->live);
    ebpf_free(e->succ);
    ebpf_free(e->nsucc);
    ebpf_free(e->pstart);
    ebpf_free(e->preds);
    ebpf_free(e->prune);
    ebpf_free(e->loopd);
    ebpf_free(e->finfo);
    ebpf_free(e->relR);
    ebpf_free(e->relS);
    ebpf_verify_last_stats = e->stats;
    return rc;
}
