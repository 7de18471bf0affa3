/* NanoBPF eBPF runtime: the one public header of the VM (RFC 9669 instruction set, Linux XDP
 * conventions). The same sources build for the device (bare-metal RV64, firmware/ebpf/Makefile
 * rules), for the host (x86-64, fast tests and nanobpf-run) and for RV64 Linux user mode (the JIT run
 * under qemu-riscv64).
 *
 * Life of a program: ebpf_image_load() (maps created, program copied) -> ebpf_verify() (proves it safe,
 * rewrites xdp_md accesses to the runtime context, records per-function stack depths) ->
 * ebpf_prog_resolve() (map references become addresses) -> ebpf_interp() or ebpf_jit_compile() +
 * ebpf_jit_run(). */
#ifndef NANOBPF_EBPF_H
#define NANOBPF_EBPF_H

#include <stddef.h>
#include <stdint.h>
#include "nanobpf_ebpf_defs.h" /* generated from hw/defs/ebpf.toml: helper ids, map types, image layout */

/* ---- Instruction encoding (RFC 9669 section 3) ---- */
struct ebpf_insn {
    uint8_t code;
    uint8_t dst : 4;
    uint8_t src : 4;
    int16_t off;
    int32_t imm;
};

/* Classes (low 3 bits of code). */
#define EBPF_CLS_LD 0x00
#define EBPF_CLS_LDX 0x01
#define EBPF_CLS_ST 0x02
#define EBPF_CLS_STX 0x03
#define EBPF_CLS_ALU 0x04
#define EBPF_CLS_JMP 0x05
#define EBPF_CLS_JMP32 0x06
#define EBPF_CLS_ALU64 0x07
#define EBPF_CLASS(code) ((code) & 0x07)

/* ALU/JMP: source (bit 3) and operation (high 4 bits). */
#define EBPF_SRC_K 0x00
#define EBPF_SRC_X 0x08
#define EBPF_OP(code) ((code) & 0xf0)

#define EBPF_ALU_ADD 0x00
#define EBPF_ALU_SUB 0x10
#define EBPF_ALU_MUL 0x20
#define EBPF_ALU_DIV 0x30 /* off = 1: signed (SDIV) */
#define EBPF_ALU_OR 0x40
#define EBPF_ALU_AND 0x50
#define EBPF_ALU_LSH 0x60
#define EBPF_ALU_RSH 0x70
#define EBPF_ALU_NEG 0x80
#define EBPF_ALU_MOD 0x90 /* off = 1: signed (SMOD) */
#define EBPF_ALU_XOR 0xa0
#define EBPF_ALU_MOV 0xb0 /* off = 8/16/32: sign-extending move (MOVSX) */
#define EBPF_ALU_ARSH 0xc0
#define EBPF_ALU_END 0xd0 /* ALU: TO_LE (src bit 0) / TO_BE (src bit 1); ALU64: unconditional bswap */

#define EBPF_JMP_JA 0x00 /* JMP32 class: 32-bit offset in imm (gotol) */
#define EBPF_JMP_JEQ 0x10
#define EBPF_JMP_JGT 0x20
#define EBPF_JMP_JGE 0x30
#define EBPF_JMP_JSET 0x40
#define EBPF_JMP_JNE 0x50
#define EBPF_JMP_JSGT 0x60
#define EBPF_JMP_JSGE 0x70
#define EBPF_JMP_CALL 0x80 /* src 0: helper id in imm; src 1: bpf-to-bpf, imm = insn offset */
#define EBPF_JMP_EXIT 0x90
#define EBPF_JMP_JLT 0xa0
#define EBPF_JMP_JLE 0xb0
#define EBPF_JMP_JSLT 0xc0
#define EBPF_JMP_JSLE 0xd0

/* Load/store: size (bits 3-4) and mode (bits 5-7). */
#define EBPF_SIZE(code) ((code) & 0x18)
#define EBPF_SIZE_W 0x00
#define EBPF_SIZE_H 0x08
#define EBPF_SIZE_B 0x10
#define EBPF_SIZE_DW 0x18
#define EBPF_MODE(code) ((code) & 0xe0)
#define EBPF_MODE_IMM 0x00    /* LD | IMM | DW: 64-bit immediate, two slots */
#define EBPF_MODE_ABS 0x20    /* legacy packet access: refused */
#define EBPF_MODE_IND 0x40    /* legacy packet access: refused */
#define EBPF_MODE_MEM 0x60
#define EBPF_MODE_MEMSX 0x80  /* sign-extending load */
#define EBPF_MODE_ATOMIC 0xc0 /* STX only, W or DW; operation in imm */

/* Atomic operations (imm of STX | ATOMIC). */
#define EBPF_ATOMIC_FETCH 0x01
#define EBPF_ATOMIC_ADD 0x00
#define EBPF_ATOMIC_OR 0x40
#define EBPF_ATOMIC_AND 0x50
#define EBPF_ATOMIC_XOR 0xa0
#define EBPF_ATOMIC_XCHG (0xe0 | EBPF_ATOMIC_FETCH)
#define EBPF_ATOMIC_CMPXCHG (0xf0 | EBPF_ATOMIC_FETCH)

/* ld_imm64 src values (RFC 9669 section 5.4). The device image uses MAP_IDX and MAP_IDX_VALUE; after
 * ebpf_prog_resolve() every ld_imm64 is a plain 64-bit immediate (src 0). */
#define EBPF_PSEUDO_IMM64 0
#define EBPF_PSEUDO_MAP_FD 1
#define EBPF_PSEUDO_MAP_VALUE 2
#define EBPF_PSEUDO_MAP_IDX 5
#define EBPF_PSEUDO_MAP_IDX_VALUE 6
#define EBPF_PSEUDO_CALL 1 /* src of a bpf-to-bpf call */
#define EBPF_PSEUDO_FUNC 4 /* ld_imm64 src: the address of the function at insn + 1 + imm (a callback) */

/* Registers. */
#define EBPF_NREGS 11
#define EBPF_REG_FP 10
#define EBPF_STACK_SIZE 512   /* per program, all call frames together (Linux MAX_BPF_STACK) */
#define EBPF_MAX_CALL_DEPTH 8 /* frames, main program included (Linux MAX_CALL_FRAMES) */
#define EBPF_MAX_INSNS NANOBPF_PROG_MAX_INSNS /* program length limit on the device (hw/defs/ebpf.toml) */

/* struct ebpf_xdp_buff.csum_offload: what the egress does for the program (pkt_comp.fix_csum, fix_len) */
#define EBPF_XDP_OFFLOAD_CSUM 1u /* the IPv4 header and UDP checksums recomputed */
#define EBPF_XDP_OFFLOAD_LEN 2u  /* the IP and UDP lengths set from the frame's end first (and the checksums) */

/* ---- Runtime XDP context ----
 * Programs see the Linux `struct xdp_md` (32-bit data/data_end/data_meta), followed by what PISA parsed
 * (struct nanobpf_xdp_ctx, hw/defs/ebpf.toml). The verifier rewrites each context field access into an
 * access to this structure (64-bit pointers), as Linux's convert_ctx_access does, so the same program
 * runs wherever buffers live. */
struct ebpf_xdp_buff {
    uint64_t data;            /* xdp_md.data (offset 0) */
    uint64_t data_end;        /* xdp_md.data_end (offset 4) */
    uint64_t data_meta;       /* xdp_md.data_meta (offset 8): metadata [data_meta, data) (bpf_xdp_adjust_meta) */
    uint64_t data_hard_start; /* lowest address data may move to (xdp_adjust_head) */
    uint64_t frame_end;       /* highest address data_end may move to (xdp_adjust_tail) */
    uint32_t ingress_ifindex; /* xdp_md.ingress_ifindex (offset 12) */
    uint32_t rx_queue_index;  /* xdp_md.rx_queue_index (offset 16) */
    uint32_t egress_ifindex;  /* xdp_md.egress_ifindex (offset 20) */
    uint32_t redirect_ifindex; /* set by bpf_redirect */
    /* what PISA parsed (struct nanobpf_xdp_ctx offsets 24..44, read-only): 0 = not found */
    uint32_t l3_off, l4_off, quic_off, pn_off, cid_len, conn;
    /* data as PISA parsed the frame (the offsets above count from it), set by ebpf_xdp_exec */
    uint64_t parse_data;
    /* what the program left to the egress, EBPF_XDP_OFFLOAD_* bits: the IPv4/UDP checksums
     * (bpf_xdp_csum_offload: pkt_comp.fix_csum), and with them the IP and UDP lengths (the one-call QUIC
     * helpers: pkt_comp.fix_len, set so that the datagram ends where the frame ends) */
    uint32_t csum_offload;
    /* Set by the caller when it collects a seal the engine finishes after the program returns
     * (ebpf_aead_finish): then quic_aead_seal with NANOBPF_AEAD_HP_APPLY leaves its engine request in
     * aead_pending (1 + its id), and the frame must not leave before the caller collected it. */
    uint32_t aead_defer, aead_pending;
    /* The 32 bytes of packet memory the device's header-protection requests of this run go through
     * (0: this core's 32 bytes at the top of packet memory); the data-plane loop gives the end of the
     * packet's own slot, past frame_end, which no other core touches. Set by the caller. */
    uint64_t hp_scratch;
};
/* The ranges the verifier gives the parse-result fields, which ebpf_xdp_exec enforces: offsets below
 * 4 KiB (the largest frame offset, pkt_comp.offset), cid_len <= NANOBPF_KEYTABLE_CID_MAX, conn = 1 + a connection tag. */
#define EBPF_CTX_OFF_MAX 0xfffu
#define EBPF_CTX_CONN_MAX (1u << NANOBPF_KEYTABLE_CONN_BITS)
/* The verifier's rewrite of a 4-byte load of context field `field` (its xdp_md/nanobpf_xdp_ctx offset
 * / 4): the load's opcode and its offset in struct ebpf_xdp_buff; -1 when there is no such field. */
int ebpf_ctx_field_load(uint32_t field, uint8_t *code, int16_t *off);

/* ---- Maps ---- */
struct ebpf_map {
    uint32_t type; /* NANOBPF_MAP_TYPE_* (Linux BPF_MAP_TYPE_* numbers) */
    uint32_t key_size;
    uint32_t value_size;
    uint32_t max_entries;
    uint32_t flags;
    uint32_t spin_lock_off; /* 1 + offset of the value's struct bpf_spin_lock, 0 = none (HASH and ARRAY) */
    char name[NANOBPF_MAP_NAME_LEN];
    /* implementation (maps.c) */
    uint32_t value_stride; /* value_size rounded up to 8 */
    uint32_t n_slots;      /* hash: table slots (power of two); array: max_entries; event map: ring bytes */
    uint32_t count;        /* hash: entries in use (atomic accesses only: cores' caches are not coherent) */
    uint32_t lock;         /* hash: held (atomic swap) by whoever inserts or deletes; lookups take no lock */
    uint32_t n_cpus;       /* per-CPU maps: copies of each value */
    uint32_t hand;         /* LRU hash: the clock hand (the next slot eviction looks at; under the lock) */
    uint32_t pinned_refs;  /* pinned map (NANOBPF_PIN_BY_NAME): programs holding it; 0 for other maps */
    uint32_t n_progs;      /* PROG_ARRAY: programs of its image (values must be below) */
    uint8_t *storage;
    uint8_t *values;       /* hash: values kept apart from the slots, value_stride each (key table), or NULL */
    int external;          /* values not owned by the map (the key table's, in the key table storage) */
};

/* ---- Helpers ---- */
/* Argument and return types checked by the verifier (Linux bpf_arg_type / bpf_return_type subset). */
enum ebpf_arg_type {
    EBPF_ARG_NONE = 0,       /* unused argument */
    EBPF_ARG_ANYTHING,       /* any initialised scalar */
    EBPF_ARG_CONST_MAP_PTR,  /* a map (ld_imm64 of a map) */
    EBPF_ARG_PTR_TO_MAP_KEY, /* key_size initialised bytes (stack, packet or map value) */
    EBPF_ARG_PTR_TO_MAP_VALUE, /* value_size initialised bytes */
    EBPF_ARG_PTR_TO_MEM,     /* initialised memory whose size is the next argument */
    EBPF_ARG_PTR_TO_UNINIT_MEM, /* writable memory whose size is the next argument */
    EBPF_ARG_CONST_SIZE,     /* size of the previous memory argument, known bounded > 0 */
    EBPF_ARG_PTR_TO_CTX,     /* the program's context */
    EBPF_ARG_PTR_TO_RW_MEM,  /* initialised memory the helper reads and may overwrite; size is the next argument */
    EBPF_ARG_PTR_TO_KEYTABLE_VALUE, /* a value of the key table map (NANOBPF_KEYTABLE_MAP_NAME), non-NULL, at offset 0 */
    EBPF_ARG_PTR_TO_MEM_OR_NULL, /* as PTR_TO_MEM (read only), or NULL when the size is 0 */
    EBPF_ARG_CONST_SIZE_OR_ZERO, /* as CONST_SIZE, 0 allowed */
    EBPF_ARG_PTR_TO_SPIN_LOCK,   /* the struct bpf_spin_lock of a map value (ebpf_map.spin_lock_off) */
    EBPF_ARG_PTR_TO_FUNC,        /* a static function (ld_imm64 src EBPF_PSEUDO_FUNC): bpf_loop's callback */
    EBPF_ARG_PTR_TO_STACK_OR_NULL, /* a stack pointer of any frame, or NULL: bpf_loop's callback_ctx */
    EBPF_ARG_CONST_ALLOC_SIZE,   /* bytes to reserve: a known constant */
    EBPF_ARG_PTR_TO_RINGBUF_MEM, /* a reserved ring buffer record (released by the call) */
};
enum ebpf_ret_type {
    EBPF_RET_INTEGER = 0,
    EBPF_RET_VOID,
    EBPF_RET_PTR_TO_MAP_VALUE_OR_NULL,
    EBPF_RET_PTR_TO_RINGBUF_MEM_OR_NULL, /* a record of the size argument reserved in the map's ring, or NULL */
};
#define EBPF_HELPER_CHANGES_PKT 0x1 /* invalidates every packet pointer (adjust_head/tail) */

typedef uint64_t (*ebpf_helper_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
struct ebpf_helper {
    uint32_t id;
    const char *name;
    ebpf_helper_fn fn;
    uint8_t ret;    /* enum ebpf_ret_type */
    uint8_t args[5]; /* enum ebpf_arg_type */
    uint8_t flags;  /* EBPF_HELPER_* */
};
/* The helper with this id, or NULL. */
const struct ebpf_helper *ebpf_helper_find(uint32_t id);

/* ---- Programs ---- */
#define EBPF_MAX_SUBPROGS 32
struct ebpf_subprog {
    uint32_t start;       /* first instruction */
    uint32_t stack_depth; /* bytes of stack this function uses (multiple of 16); 0 = unknown */
};

/* Facts the verifier records per instruction for the JIT. */
#define EBPF_INSN_PKT_ACCESS 0x1 /* a load/store of more than one byte that may be misaligned (the packet,
                                  * or a global function's argument some caller passes unaligned) */
#define EBPF_INSN_READS_META 0x2 /* a read of xdp_md.data_meta: the program's frames carry struct nanobpf_xdp_meta */

struct ebpf_prog {
    struct ebpf_insn *insns;
    uint32_t n_insns;
    struct ebpf_map **maps; /* maps referenced by index from ld_imm64 MAP_IDX / MAP_IDX_VALUE */
    uint32_t n_maps;
    char name[NANOBPF_PROG_NAME_LEN];
    /* global functions (the image's function table): verified once on their own, for every caller */
    struct nanobpf_image_func *funcs;
    uint32_t n_funcs;
    /* the programs bpf_tail_call may jump to (PROG_ARRAY values): 0 is this one, then the function table's
     * NANOBPF_FUNC_PROGRAM entries; their first instructions */
    uint32_t n_progs;
    uint32_t prog_start[NANOBPF_IMAGE_MAX_FUNCS + 1];
    /* filled by ebpf_verify(); n_subprogs == 0 means "not verified" (raw programs) */
    struct ebpf_subprog subprogs[EBPF_MAX_SUBPROGS];
    uint32_t n_subprogs;
    uint8_t *insn_flags; /* per instruction EBPF_INSN_* facts from the verifier (NULL: none) */
    uint32_t verified;
    uint32_t resolved;
    uint32_t parse_in_meta; /* some instruction has EBPF_INSN_READS_META (set by ebpf_prog_resolve) */
    /* filled by ebpf_jit_compile() */
    void *jit_code;
    uint32_t jit_size;
    uint32_t jit_prog_off[NANOBPF_IMAGE_MAX_FUNCS + 1]; /* each program's entry in jit_code */
};

struct ebpf_error {
    int insn;      /* instruction index, or -1 when not about one instruction */
    char msg[160];
};

/* Reports an error: returns -1 after filling err (err may be NULL). */
int ebpf_fail(struct ebpf_error *err, int insn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Load a device image (layout: docs/ebpf-abi.md): creates its maps and copies its program. On an error
 * (-1, err filled) nothing stays allocated and prog is zeroed (ebpf_prog_free on it does nothing). */
int ebpf_image_load(const void *image, size_t size, struct ebpf_prog *prog, struct ebpf_error *err);
/* Free everything ebpf_image_load / ebpf_jit_compile allocated. */
void ebpf_prog_free(struct ebpf_prog *prog);

/* Verifier options; zero fields take defaults. */
struct ebpf_verify_opts {
    uint32_t max_processed; /* instructions explored over all paths (default 1,000,000) */
    uint32_t max_states;    /* verifier states kept for pruning (default 4096) */
    int log_level;          /* 0 quiet; 1 prints each explored instruction (host tests); 2 also its stack */
};
/* What the last ebpf_verify() call on this core cost. */
struct ebpf_verify_stats {
    uint32_t processed;    /* instructions explored over all paths */
    uint32_t states;       /* states stored for pruning (total) */
    uint32_t peak_states;  /* states stored at the same time, peak */
    uint32_t pruned;       /* paths cut by a stored state */
    uint32_t peak_pending; /* pending branches, peak */
    uint32_t peak_bytes;   /* bytes of stored and pending states, peak */
    uint64_t static_cycles;  /* ebpf_cycles() spent on structure, liveness and relevance */
    uint64_t explore_cycles; /* and on exploring the paths */
};
extern struct ebpf_verify_stats ebpf_verify_last_stats;
/* Test knob: compare every scalar when pruning (measures what the relevance analysis saves). */
extern int ebpf_verify_no_relevance;
/* Test knob: keep every pending branch encoded (the raw copies must not change any result). */
extern int ebpf_verify_no_raw_pending;

/* Prove the program safe as an XDP program; rewrites context accesses and fills prog->subprogs.
 * Returns 0, or -1 with err->insn / err->msg saying which instruction and why. */
int ebpf_verify(struct ebpf_prog *prog, const struct ebpf_verify_opts *opts, struct ebpf_error *err);

/* Verification records (record.c): ebpf_verify()'s conclusions about an image, made on the build host so
 * that a firmware's built-in program is not verified again at boot. Write: prog verified, not resolved;
 * 0 or -1 with err. Apply: to a program just loaded from `image`, as ebpf_verify() would leave it;
 * refuses (-1, prog unchanged) a record made for another image or changing more than the verifier does. */
size_t ebpf_record_size(const struct ebpf_prog *prog);
/* The CRC-32 of the image a record was made for (what ebpf_record_apply checked the image against). */
uint32_t ebpf_record_crc(const void *record);
/* CRC-32 (IEEE 802.3, as zlib's crc32): records bind their image with it, PROG_LOAD images carry it. */
uint32_t ebpf_crc32(const void *data, size_t n);
int ebpf_record_write(const struct ebpf_prog *prog, const void *image, size_t image_size, void *out, size_t out_size,
                      struct ebpf_error *err);
int ebpf_record_apply(struct ebpf_prog *prog, const void *image, size_t image_size, const void *record, size_t size,
                      struct ebpf_error *err);

/* Replace map references (ld_imm64 src 5/6, also 1/2 with imm = map index) by addresses. */
int ebpf_prog_resolve(struct ebpf_prog *prog, struct ebpf_error *err);

/* Interpreter. r1/r2 are the initial registers (XDP: r1 = struct ebpf_xdp_buff *). Returns 0 with the
 * program's r0 in *r0 (any value, -1 included), or -1 on a fault: the interpreter stopped, err is filled
 * and *r0 is 0. Faults are only possible for unverified programs: an opcode the verifier refuses as
 * unknown (callx among them), call depth, bounds when ebpf_interp_bounds is set. */
int ebpf_interp(const struct ebpf_prog *prog, uint64_t r1, uint64_t r2, uint64_t *r0, struct ebpf_error *err);
/* Outcome of conditional jump `op` (EBPF_JMP_JEQ..JSLE, JSET) on a and b (is32: low halves): 1 taken,
 * 0 not taken, -1 not a comparison. Shared by the interpreter and the verifier's constant folding. */
static inline int ebpf_jmp_cond(int op, uint64_t a, uint64_t b, int is32) {
    int64_t sa = (int64_t)a, sb = (int64_t)b;
    if (is32) {
        a = (uint32_t)a;
        b = (uint32_t)b;
        sa = (int32_t)a;
        sb = (int32_t)b;
    }
    switch (op) {
    case EBPF_JMP_JEQ: return a == b;
    case EBPF_JMP_JNE: return a != b;
    case EBPF_JMP_JGT: return a > b;
    case EBPF_JMP_JGE: return a >= b;
    case EBPF_JMP_JLT: return a < b;
    case EBPF_JMP_JLE: return a <= b;
    case EBPF_JMP_JSET: return (a & b) != 0;
    case EBPF_JMP_JSGT: return sa > sb;
    case EBPF_JMP_JSGE: return sa >= sb;
    case EBPF_JMP_JSLT: return sa < sb;
    case EBPF_JMP_JSLE: return sa <= sb;
    }
    return -1;
}
/* Raw mode (nanobpf-run): when set, loads/stores must fall inside [base, base+size) or the stack. */
struct ebpf_bounds {
    uint64_t base;
    uint64_t size;
};
extern const struct ebpf_bounds *ebpf_interp_bounds;

/* JIT to RV64 (RV64IMAC; the flags add optional extensions). Code is generated into memory from
 * ebpf_jit_alloc(). Returns 0 or -1 with err. */
#define EBPF_JIT_RVC 0x1 /* compressed instructions */
#define EBPF_JIT_ZBA 0x2
#define EBPF_JIT_ZBB 0x4
int ebpf_jit_compile(struct ebpf_prog *prog, unsigned flags, struct ebpf_error *err);
/* Statistics of the last compile: RV64 instructions emitted per eBPF instruction class (index
 * EBPF_CLASS(code)), and eBPF instructions per class; map lookups compiled inline (array maps). */
struct ebpf_jit_stats {
    uint32_t rv_insns[8];
    uint32_t bpf_insns[8];
    uint32_t rv_bytes;
    uint32_t inline_lookups;
    uint32_t align_tests; /* multi-byte accesses compiled with a run-time alignment test (EBPF_INSN_PKT_ACCESS) */
};
int ebpf_jit_stats(const struct ebpf_prog *prog, unsigned flags, struct ebpf_jit_stats *stats,
                   struct ebpf_error *err);
typedef uint64_t (*ebpf_jit_fn)(uint64_t r1, uint64_t r2);
static inline uint64_t ebpf_jit_run(const struct ebpf_prog *prog, uint64_t r1, uint64_t r2) {
    return ((ebpf_jit_fn)prog->jit_code)(r1, r2);
}

/* ---- Platform hooks (ebpf_platform_*.c: device, host, rv64 Linux user) ---- */
void *ebpf_alloc(size_t size);           /* zeroed; NULL when out of memory */
void ebpf_free(void *p);
/* Zeroed memory every core sees at once (device: the uncached shared_mem region, since L1 caches are
 * not coherent; elsewhere ebpf_alloc): the storage of maps other than per-CPU ones. Called by one core
 * at a time (the control core). */
void *ebpf_alloc_shared(size_t size);
void ebpf_free_shared(void *p);
void *ebpf_jit_alloc(size_t size);       /* executable memory (NULL when the platform cannot run code) */
void ebpf_jit_free(void *p, size_t size);
void ebpf_jit_flush(void *code, size_t size); /* make written code visible to instruction fetch */
uint64_t ebpf_ktime_ns(void);
uint64_t ebpf_cycles(void);             /* core cycle counter (host: a monotonic counter) */
uint32_t ebpf_cpu_id(void);
uint32_t ebpf_num_cpus(void);
/* 1 when JIT code may take ebpf_cpu_id() from the mhartid CSR (the device: cores run in machine mode),
 * so that it indexes per-CPU array values itself; 0 elsewhere (the helper call does it). */
int ebpf_jit_cpu_is_hartid(void);
void ebpf_console_write(const char *s, size_t n); /* trace_printk output */
/* The key table storage: NANOBPF_KEYTABLE_SLOTS values of NANOBPF_QUIC_KEYS_SIZE bytes, slot i's
 * at i * NANOBPF_QUIC_KEYS_SIZE (device: the AEAD engine's key table storage, which reads them). */
uint8_t *ebpf_keytable_values(void);
/* The place (slot index) of the value at byte off of the key table storage, or -1 when off is not the
 * start of a value there: a multiply and a shift, not a division (GCC divides by a constant with the
 * core's serial divider, tens of cycles, and this runs for every engine request). Exact for every off
 * below 2^KEYS_DIV_SHIFT / (KEYS_DIV_MUL * NANOBPF_QUIC_KEYS_SIZE - 2^KEYS_DIV_SHIFT). */
#define EBPF_KEYS_DIV_SHIFT 22
#define EBPF_KEYS_DIV_MUL (((1ull << EBPF_KEYS_DIV_SHIFT) + NANOBPF_QUIC_KEYS_SIZE - 1) / NANOBPF_QUIC_KEYS_SIZE)
_Static_assert((1ull << EBPF_KEYS_DIV_SHIFT) / (EBPF_KEYS_DIV_MUL * NANOBPF_QUIC_KEYS_SIZE - (1ull << EBPF_KEYS_DIV_SHIFT)) >=
                   (unsigned long long)NANOBPF_KEYTABLE_SLOTS * NANOBPF_QUIC_KEYS_SIZE,
               "the reciprocal divides every offset of the key table storage exactly");
static inline int32_t ebpf_keytable_place(uint64_t off) {
    if (off >= (uint64_t)NANOBPF_KEYTABLE_SLOTS * NANOBPF_QUIC_KEYS_SIZE) return -1;
    uint32_t q = (uint32_t)((off * EBPF_KEYS_DIV_MUL) >> EBPF_KEYS_DIV_SHIFT);
    return (uint64_t)q * NANOBPF_QUIC_KEYS_SIZE == off ? (int32_t)q : -1;
}

/* Wait until no core is still running a program on a packet it started before this call (device: the
 * data cores have each finished their packet or are between packets; elsewhere nothing runs alongside).
 * What was unpublished before it (a key table value, a program) may then be reused. */
void ebpf_quiesce(void);

/* ---- Maps API (used by helpers and the control plane) ---- */
int ebpf_map_create(struct ebpf_map *map, struct ebpf_error *err); /* fields type..name set; not a device map */
void ebpf_map_destroy(struct ebpf_map *map); /* a map's storage; a device or pinned map is unbound instead */
/* Release a map of a program (device and pinned maps: one reference; others are destroyed and freed). */
void ebpf_map_release(struct ebpf_map *map);
/* The device maps: the key table (NANOBPF_KEYTABLE_MAP_NAME) and its packet-number map
 * (NANOBPF_KEYTABLE_PN_MAP_NAME). Each is one object for every program that declares it (decl: the
 * program's declaration, checked against the device's shape), created by the first bind, its entries
 * kept until the last unbind; NULL with err when the declaration does not fit. A changed key table
 * value is published with one store (a reader sees the whole old or the whole new value); its old place
 * is reused after ebpf_quiesce(). The packet-number map holds one state per key table slot: a key has
 * one while it has a key table entry, zero from the insert that gave it its slot (maps.c). */
int ebpf_device_map_named(const char *name);
struct ebpf_map *ebpf_device_map_bind(const struct ebpf_map *decl, struct ebpf_error *err);
void ebpf_device_map_unbind(struct ebpf_map *map);
int ebpf_map_is_device(const struct ebpf_map *map);
int ebpf_map_is_keytable(const struct ebpf_map *map);
int ebpf_map_is_keytable_pn(const struct ebpf_map *map);
/* Connection tags (NANOBPF_KEYTABLE_CONN_BITS): what PISA's CID table gives an entry's frames (the
 * context field conn is 1 + it), the entry's hash slot in the low bits and the slot's generation above,
 * which changes each time the slot takes another entry. */
_Static_assert(NANOBPF_KEYTABLE_SLOTS == 1u << NANOBPF_KEYTABLE_SLOT_BITS, "a slot index's bits");
_Static_assert(NANOBPF_KEYTABLE_CONN_BITS > NANOBPF_KEYTABLE_SLOT_BITS && NANOBPF_KEYTABLE_CONN_BITS - NANOBPF_KEYTABLE_SLOT_BITS <= 8,
               "a generation of 1..8 bits (one byte of the hash slot's header)");
static inline uint32_t ebpf_conn_slot(uint32_t conn) { return (conn - 1) & (NANOBPF_KEYTABLE_SLOTS - 1); }
/* 1 + the connection tag of key's entry (what PISA's CID table is given for it), or 0 without one. */
uint32_t ebpf_keytable_conn_of(const void *key);
/* The value of the dir entry (NANOBPF_QUIC_DIR_*) conn names, when its slot still holds the entry the
 * tag was made for (the generation), else NULL: one load, no key compared (bpf_quic_seal_conn). */
void *ebpf_keytable_by_conn(uint32_t conn, uint32_t dir);
/* A key table lookup (as ebpf_map_lookup) that reads hash slot slot_hint first: PISA's CID table
 * gives a packet's entry's slot (ebpf_conn_slot of struct ebpf_xdp_buff conn), so its lookup needs no hash. */
void *ebpf_keytable_lookup_at(const void *key, uint32_t slot_hint);
/* The value at hash slot slot_i only when that slot holds key, else NULL (bpf_quic_keys_of). */
void *ebpf_keytable_at(const void *key, uint32_t slot_i);
/* The packet-number state of the key table entry whose value keys is (a lookup's result), or NULL
 * without the packet-number map: bpf_quic_pn_state. */
void *ebpf_keytable_pn(const void *keys);
/* The packet-number state of the entry at hash slot slot_i (found there by ebpf_keytable_at), or NULL
 * without the packet-number map. */
void *ebpf_keytable_pn_at(uint32_t slot_i);
/* Pinned maps (NANOBPF_PIN_BY_NAME): one map per name, created by the first program that declares it
 * and shared by every later declaration of the same shape (else NULL with err naming the map), until
 * the last program holding it is freed. */
struct ebpf_map *ebpf_pinned_map_bind(const struct ebpf_map *decl, struct ebpf_error *err);
int ebpf_map_is_percpu(const struct ebpf_map *map);
/* Is the map read-only for programs (the key table; DEVMAP/DEVMAP_HASH, which the host fills)? */
int ebpf_map_is_prog_readonly(const struct ebpf_map *map);
/* The value of key on core cpu (< map->n_cpus; 0 for maps that are not per-CPU), or NULL when the key
 * has no entry; unlike ebpf_map_lookup, an LRU entry is not marked used (the host's reads). */
void *ebpf_map_value(struct ebpf_map *map, const void *key, uint32_t cpu);
/* Lookup as a program does: a per-CPU map gives this core's copy; an LRU hash marks the entry used. */
void *ebpf_map_lookup(struct ebpf_map *map, const void *key);
int ebpf_map_update(struct ebpf_map *map, const void *key, const void *value, uint64_t flags);
int ebpf_map_delete(struct ebpf_map *map, const void *key);
/* Linux BPF_MAP_GET_NEXT_KEY: key NULL or absent gives the first key; -ENOENT after the last. */
int ebpf_map_get_next_key(struct ebpf_map *map, const void *key, void *next);
/* Slot index of key in a hash map (the key table's connection slot), or -1. */
int64_t ebpf_map_slot_of(struct ebpf_map *map, const void *key);

/* Event maps (RINGBUF, PERF_EVENT_ARRAY): a ring of records in shared memory. Any core appends (under
 * the ring's lock); one core at a time reads (the control core: peek, then pop what it took). They have
 * no keys: the map calls above refuse them (lookup/value NULL, update/delete -EINVAL, next -ENOENT). */
int ebpf_map_is_event(const struct ebpf_map *map);
/* Append one record: a_len bytes of a, then b_len of b (either may be 0 bytes), tagged with index (the
 * perf array index; a ringbuf record gets the core). 0, or -1 when it did not fit (the ring full, or
 * more than NANOBPF_EVENT_MAX bytes): then the record is dropped and counted in the ring's lost count. */
int ebpf_event_output(struct ebpf_map *map, uint32_t index, const void *a, uint32_t a_len, const void *b, uint32_t b_len);
/* bpf_ringbuf_reserve: size zeroed bytes of a record in the ring (contiguous), or NULL when it has no room
 * (dropped and counted); the reader waits at it until ebpf_event_commit publishes or discards it. */
void *ebpf_event_reserve(struct ebpf_map *map, uint32_t size);
void ebpf_event_commit(void *data, int discard);
/* The oldest record: its length (0..NANOBPF_EVENT_MAX), its data copied to buf (NANOBPF_EVENT_MAX bytes)
 * and its index to *index; -1 when the ring is empty. The record stays until ebpf_event_pop. */
int ebpf_event_peek(struct ebpf_map *map, void *buf, uint32_t *index);
void ebpf_event_pop(struct ebpf_map *map); /* drop the oldest record (after a peek that found one) */
/* Records dropped since the last call (which resets the count), and records waiting. */
uint32_t ebpf_event_take_lost(struct ebpf_map *map);
uint32_t ebpf_event_pending(struct ebpf_map *map);

/* ---- Running XDP programs ---- */
/* The context of the XDP run in progress on this core (for bpf_redirect), its program, and the tail
 * calls it made (bpf_tail_call). */
extern __thread struct ebpf_xdp_buff *ebpf_current_xdp;
extern __thread const struct ebpf_prog *ebpf_current_prog;
extern __thread uint32_t ebpf_tail_calls;
/* The program a tail call through PROG_ARRAY m at index goes to (its index in prog), counted against
 * NANOBPF_MAX_TAIL_CALLS; -1 when the call fails (the caller goes on). */
int ebpf_tail_call_target(const struct ebpf_prog *prog, struct ebpf_map *m, uint64_t index, uint32_t *prog_index);
/* PROG_ARRAY element index: its program index, or -1 when empty or out of range (maps.c). */
int ebpf_prog_array_get(struct ebpf_map *m, uint64_t index, uint32_t *prog_index);
/* Run a verified, resolved program on one packet (JIT code when compiled and use_jit is set).
 * The context must keep what the verifier assumed of it: data_hard_start <= data_meta <= data <=
 * data_end <= frame_end with data - data_meta <= NANOBPF_XDP_META_MAX (metadata bounds are proven
 * against data, packet bounds against data_end; the helpers move all three within the buffer), and the
 * parse result within EBPF_CTX_OFF_MAX / NANOBPF_KEYTABLE_CID_MAX / EBPF_CTX_CONN_MAX; a context
 * that does not is refused, the program does not run. Returns 0 with the program's r0 in *action, or -1
 * when the context was refused or the interpreter faulted: *action is NANOBPF_XDP_ABORTED and err says
 * why. */
int ebpf_xdp_exec(const struct ebpf_prog *prog, struct ebpf_xdp_buff *xdp, int use_jit, uint64_t *action,
                  struct ebpf_error *err);
/* ebpf_xdp_exec's every way (checks, the parse result into the metadata, an error report, the
 * interpreter). */
int ebpf_xdp_exec_general(const struct ebpf_prog *prog, struct ebpf_xdp_buff *xdp, int use_jit, uint64_t *action,
                          struct ebpf_error *err);
/* What the verifier assumed of a context (ebpf_xdp_exec above). */
static inline int ebpf_xdp_ctx_ok(const struct ebpf_xdp_buff *xdp) {
    return !(xdp->data_hard_start > xdp->data_meta || xdp->data_meta > xdp->data || xdp->data > xdp->data_end ||
             xdp->data_end > xdp->frame_end || xdp->data - xdp->data_meta > NANOBPF_XDP_META_MAX ||
             (xdp->l3_off | xdp->l4_off | xdp->quic_off | xdp->pn_off) > EBPF_CTX_OFF_MAX ||
             xdp->cid_len > NANOBPF_KEYTABLE_CID_MAX || xdp->conn > EBPF_CTX_CONN_MAX);
}
/* What a run starts with: the parse result's base, the program and context the helpers see. */
static inline void ebpf_xdp_begin(const struct ebpf_prog *prog, struct ebpf_xdp_buff *xdp) {
    xdp->parse_data = xdp->data;
    ebpf_current_xdp = xdp;
    ebpf_current_prog = prog;
    ebpf_tail_calls = 0;
    xdp->redirect_ifindex = 0;
    xdp->csum_offload = 0;
}
/* ebpf_xdp_exec with the JIT code and no error report, for a context the caller found ebpf_xdp_ctx_ok
 * and has not changed since (inline: the device's packet loop checks the context where it builds it,
 * with its fields still in registers); every other way by ebpf_xdp_exec_general. */
static inline int ebpf_xdp_exec_jit_ok(const struct ebpf_prog *prog, struct ebpf_xdp_buff *xdp, uint64_t *action) {
    if (!prog->jit_code || prog->parse_in_meta) return ebpf_xdp_exec_general(prog, xdp, 1, action, NULL);
    ebpf_xdp_begin(prog, xdp);
    uint64_t r0 = ebpf_jit_run(prog, (uint64_t)(uintptr_t)xdp, 0);
    ebpf_current_xdp = NULL;
    ebpf_current_prog = NULL;
    *action = r0;
    return 0;
}
/* The same returning the action: NANOBPF_XDP_ABORTED with err->msg set when ebpf_xdp_exec failed;
 * err->msg is empty (and err->insn -1) after a run that did not. */
uint64_t ebpf_xdp_run(const struct ebpf_prog *prog, struct ebpf_xdp_buff *xdp, int use_jit,
                      struct ebpf_error *err);

#endif
