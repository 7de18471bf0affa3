/* Driver of the AES-128-GCM engine (docs/aead.md): key table storage, requests, completions.
 * Registers and layouts come from hw/defs/soc.toml (nanobpf_soc.h). Each hart uses its own request
 * registers, so harts may call these concurrently. Addresses are pointers into packet memory. */
#ifndef NANOBPF_AEAD_H
#define NANOBPF_AEAD_H
#include <stddef.h>
#include <stdint.h>
#include "nanobpf.h"
#include "nanobpf_soc.h"

enum nb_aead_op { NB_AEAD_SEAL = NANOBPF_AEAD_OP_SEAL, NB_AEAD_OPEN = NANOBPF_AEAD_OP_OPEN, NB_AEAD_HP_MASK = NANOBPF_AEAD_OP_HP_MASK,
                  NB_AEAD_SEAL_HP = NANOBPF_AEAD_OP_SEAL_HP };

struct nb_aead_req {
    enum nb_aead_op op;
    unsigned slot;       /* connection slot in the key table storage */
    int next_phase;      /* use the slot's next-phase key and IV */
    const void *aad;     /* additional data (hp_mask: the 16-byte sample), in packet memory */
    unsigned aad_len;
    void *data;          /* payload, then the 16-byte tag (hp_mask: where the mask goes), in packet memory */
    unsigned data_len;
    uint64_t pn;         /* packet number: nonce = IV xor pn */
};

/* Pointer p lies in packet memory with n bytes after it. */
static inline int nb_in_packet_mem(const void *p, size_t n) {
    uintptr_t a = (uintptr_t)p;
    return a >= NANOBPF_PACKET_MEM_BASE && n <= NANOBPF_PACKET_MEM_SIZE &&
           a - NANOBPF_PACKET_MEM_BASE <= NANOBPF_PACKET_MEM_SIZE - n;
}

/* Copy an 80-byte struct nanobpf_quic_keys into key table slot `slot` (64-bit stores). */
void nb_aead_set_keys(unsigned slot, const void *value);
/* Run one request on the engine and wait for it. Returns the aead_status (NANOBPF_AEAD_STATUS_*),
 * or -1 when the request cannot be expressed (pointers outside packet memory, lengths out of range)
 * or the engine refused it; *cycles (if not NULL) gets the engine cycles of the request. */
int nb_aead_run(const struct nb_aead_req *r, uint32_t *cycles);
/* One of the engine's counters (NANOBPF_AEAD_COUNTER_*). */
uint64_t nb_aead_counter(unsigned index);
/* Core cycles each hart has spent in engine requests (submitting, waiting for the engine, reading the
 * completion: nb_aead_run and what nb_aead_waited counts) since boot: where a packet's cycles go (the
 * dpu firmware's summary). Thread-local, in the hart's own RAM (core_local): read and added to inline,
 * twice a packet and at each request, with no bus write. */
extern __thread uint64_t nb_aead_wait;
static inline uint64_t nb_aead_wait_cycles(void) { return nb_aead_wait; }

/* ---- The fast path, for callers that checked the request (the eBPF helpers): inline, the request as
 * scalars, no struct on the stack (the D-cache writes through: every store is a bus write). A hart's
 * requests are served in the order it submits them (all harts share one FIFO), so a request may read
 * what the one before wrote, and their completions come in that order. */
/* off: a register's offset, from a hart number of type uintptr_t (32-bit arithmetic on an unsigned hart
 * number costs a zero extension at each use) */
#define NB_AEAD_REG(off) NB_REG64(NANOBPF_AEAD_BASE + (off))
extern __thread uint16_t nb_aead_next_id; /* this hart's next request id (thread-local: no bus write) */

/* Submit a request (aad and data: packet memory addresses; nb_in_packet_mem and the field ranges are
 * the caller's): its id. The packet's bytes must be in packet memory already (a fence w, w before). */
static inline uint16_t nb_aead_submit(uintptr_t hart, unsigned op, unsigned slot, int next, uintptr_t aad,
                                      unsigned aad_len, uintptr_t data, unsigned data_len, uint64_t pn) {
    uint16_t id = nb_aead_next_id++;
    NB_AEAD_REG(NANOBPF_AEAD_CORE_CTL_OFFSET(hart)) =
        NANOBPF_PUT(NANOBPF_AEAD_CTL_OP, op) | NANOBPF_PUT(NANOBPF_AEAD_CTL_NEXT_PHASE, !!next) |
        NANOBPF_PUT(NANOBPF_AEAD_CTL_SLOT, slot) | NANOBPF_PUT(NANOBPF_AEAD_CTL_AAD_LEN, aad_len) |
        NANOBPF_PUT(NANOBPF_AEAD_CTL_DATA_LEN, data_len) | NANOBPF_PUT(NANOBPF_AEAD_CTL_ID, id);
    NB_AEAD_REG(NANOBPF_AEAD_CORE_ADDR_OFFSET(hart)) =
        NANOBPF_PUT(NANOBPF_AEAD_ADDR_AAD_ADDR, aad - NANOBPF_PACKET_MEM_BASE) |
        NANOBPF_PUT(NANOBPF_AEAD_ADDR_DATA_ADDR, data - NANOBPF_PACKET_MEM_BASE);
    NB_AEAD_REG(NANOBPF_AEAD_CORE_PN_OFFSET(hart)) = pn; /* submits */
    return id;
}

/* Wait for this hart's next completion, which must be request id's: its aead_status, or -1 (someone
 * else's request on the queue); *cycles (if not NULL) the engine cycles it took. */
static inline int nb_aead_collect(uintptr_t hart, uint16_t id, uint32_t *cycles) {
    for (;;) {
        uint64_t c = NB_AEAD_REG(NANOBPF_AEAD_CORE_COMP_OFFSET(hart));
        if (!NANOBPF_GET(c, NANOBPF_AEAD_COMP_VALID)) continue;
        if (NANOBPF_GET(c, NANOBPF_AEAD_COMP_ID) != id) return -1;
        if (cycles) *cycles = (uint32_t)NANOBPF_GET(c, NANOBPF_AEAD_COMP_CYCLES);
        __asm__ volatile("fence r, r" ::: "memory"); /* what the engine wrote, after its completion */
        return (int)NANOBPF_GET(c, NANOBPF_AEAD_COMP_STATUS);
    }
}

/* Add the core cycles a fast-path caller spent on requests to nb_aead_wait_cycles. */
static inline void nb_aead_waited(unsigned hart, uint64_t cycles) {
    (void)hart;
    nb_aead_wait += cycles;
}
#endif
