/* Driver of the AES-128-GCM engine (docs/aead.md): key table storage, requests, completions.
 * Registers and layouts come from hw/defs/soc.toml (nanobpf_soc.h). Each hart uses its own request
 * registers, so harts may call these concurrently. Addresses are pointers into packet memory. */
#ifndef NANOBPF_AEAD_H
#define NANOBPF_AEAD_H
#include <stddef.h>
#include <stdint.h>
#include "nanobpf_soc.h"

enum nb_aead_op { NB_AEAD_SEAL = NANOBPF_AEAD_OP_SEAL, NB_AEAD_OPEN = NANOBPF_AEAD_OP_OPEN, NB_AEAD_HP_MASK = NANOBPF_AEAD_OP_HP_MASK };

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
/* Core cycles this hart has spent in nb_aead_run (submitting, waiting for the engine, reading the
 * completion) since boot: where a packet's cycles go (the dpu firmware's summary). */
uint64_t nb_aead_wait_cycles(void);
#endif
