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

/* per hart, each written only by its own hart (one cache line each) */
static struct { uint64_t cycles; } __attribute__((aligned(64))) wait[NANOBPF_AEAD_CORE_CTL_COUNT];

uint64_t nb_aead_wait_cycles(void) { return wait[nb_hart_id()].cycles; }

static int run(const struct nb_aead_req *r, uint32_t *cycles, unsigned hart);

int nb_aead_run(const struct nb_aead_req *r, uint32_t *cycles) {
    unsigned hart = nb_hart_id();
    uint64_t t0 = nb_cycles();
    int rc = run(r, cycles, hart);
    wait[hart].cycles += nb_cycles() - t0;
    return rc;
}

static int run(const struct nb_aead_req *r, uint32_t *cycles, unsigned hart) {
    size_t tail = r->op == NB_AEAD_HP_MASK ? 16 : (size_t)r->data_len + 16;
    if (r->aad_len > 255 || r->data_len > 4095 || !nb_in_packet_mem(r->data, tail) ||
        !nb_in_packet_mem(r->aad, r->op == NB_AEAD_HP_MASK ? 16 : r->aad_len ? r->aad_len : 1))
        return -1;
    static uint16_t next_id[NANOBPF_AEAD_CORE_CTL_COUNT];
    uint16_t id = next_id[hart]++;
    AEAD(NANOBPF_AEAD_CORE_CTL_OFFSET(hart)) =
        NANOBPF_PUT(NANOBPF_AEAD_CTL_OP, r->op) | NANOBPF_PUT(NANOBPF_AEAD_CTL_NEXT_PHASE, !!r->next_phase) |
        NANOBPF_PUT(NANOBPF_AEAD_CTL_SLOT, r->slot) | NANOBPF_PUT(NANOBPF_AEAD_CTL_AAD_LEN, r->aad_len) |
        NANOBPF_PUT(NANOBPF_AEAD_CTL_DATA_LEN, r->data_len) | NANOBPF_PUT(NANOBPF_AEAD_CTL_ID, id);
    AEAD(NANOBPF_AEAD_CORE_ADDR_OFFSET(hart)) =
        NANOBPF_PUT(NANOBPF_AEAD_ADDR_AAD_ADDR, (uintptr_t)r->aad - NANOBPF_PACKET_MEM_BASE) |
        NANOBPF_PUT(NANOBPF_AEAD_ADDR_DATA_ADDR, (uintptr_t)r->data - NANOBPF_PACKET_MEM_BASE);
    /* the packet's bytes must be in packet memory before the engine reads them */
    __asm__ volatile("fence w, w" ::: "memory");
    AEAD(NANOBPF_AEAD_CORE_PN_OFFSET(hart)) = r->pn;
    for (;;) {
        uint64_t c = AEAD(NANOBPF_AEAD_CORE_COMP_OFFSET(hart));
        if (!NANOBPF_GET(c, NANOBPF_AEAD_COMP_VALID)) continue;
        if (NANOBPF_GET(c, NANOBPF_AEAD_COMP_ID) != id) return -1; /* someone else's request on our queue */
        if (cycles) *cycles = (uint32_t)NANOBPF_GET(c, NANOBPF_AEAD_COMP_CYCLES);
        __asm__ volatile("fence r, r" ::: "memory");
        return (int)NANOBPF_GET(c, NANOBPF_AEAD_COMP_STATUS);
    }
}

uint64_t nb_aead_counter(unsigned index) { return AEAD(NANOBPF_AEAD_COUNTER_OFFSET(index)); }
