/* Driver of the AES-128-GCM engine: see nanobpf_aead.h. */
#include "nanobpf.h"
#include "nanobpf_aead.h"

#define AEAD(off) NB_REG64(NANOBPF_AEAD_BASE + (off))

void nb_aead_set_keys(unsigned slot, const void *value) {
    const uint8_t *v = value;
    for (unsigned w = 0; w < 80 / 8; w++) {
        uint64_t x = 0;
        for (unsigned b = 0; b < 8; b++) x |= (uint64_t)v[8 * w + b] << (8 * b);
        NB_REG64(NANOBPF_KEYTABLE_BASE + 80ull * slot + 8 * w) = x;
    }
}

__thread uint64_t nb_aead_wait;
__thread uint16_t nb_aead_next_id;

int nb_aead_run(const struct nb_aead_req *r, uint32_t *cycles) {
    size_t tail = r->op == NB_AEAD_HP_MASK ? 16 : (size_t)r->data_len + 16;
    if (r->aad_len > 255 || r->data_len > 4095 || !nb_in_packet_mem(r->data, tail) ||
        !nb_in_packet_mem(r->aad, r->op == NB_AEAD_HP_MASK ? 16 : r->aad_len ? r->aad_len : 1))
        return -1;
    unsigned hart = nb_hart_id();
    uint64_t t0 = nb_cycles();
    /* the packet's bytes must be in packet memory before the engine reads them */
    __asm__ volatile("fence w, w" ::: "memory");
    uint16_t id = nb_aead_submit(hart, r->op, r->slot, r->next_phase, (uintptr_t)r->aad, r->aad_len,
                                 (uintptr_t)r->data, r->data_len, r->pn);
    int rc = nb_aead_collect(hart, id, cycles);
    nb_aead_waited(hart, nb_cycles() - t0);
    return rc;
}

uint64_t nb_aead_counter(unsigned index) { return AEAD(NANOBPF_AEAD_COUNTER_OFFSET(index)); }
