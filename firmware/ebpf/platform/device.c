/* Platform hooks for the device (bare-metal firmware on the CVA6 cores): picolibc's heap in main
 * memory (which is executable, so JIT code lives there too), the core's cycle counter and console. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "aead.h"
#include "ebpf.h"
#include "nanobpf_aead.h"
#include "nanobpf.h"

void *ebpf_alloc(size_t size) { return calloc(1, size ? size : 1); }

/* Shared memory: the uncached shared_mem region, first fit over the blocks in use (kept sorted by
 * address). Only the control core allocates; a program swap holds the old program's maps and the new
 * one's at once, so blocks are given back one by one. */
#define SHARED_BLOCKS 64
static struct { uint32_t off, size; } shared[SHARED_BLOCKS];
static unsigned shared_n;

void *ebpf_alloc_shared(size_t size) {
    size_t n = (size + 63) & ~(size_t)63;
    if (size == 0 || n > NANOBPF_SHARED_MEM_SIZE || shared_n == SHARED_BLOCKS) return NULL;
    uint32_t at = 0;
    unsigned k = 0;
    for (; k < shared_n && shared[k].off - at < n; k++) at = shared[k].off + shared[k].size;
    if (k == shared_n && NANOBPF_SHARED_MEM_SIZE - at < n) return NULL;
    for (unsigned j = shared_n++; j > k; j--) shared[j] = shared[j - 1];
    shared[k].off = at, shared[k].size = (uint32_t)n;
    volatile uint64_t *p = (volatile uint64_t *)(uintptr_t)(NANOBPF_SHARED_MEM_BASE + at);
    for (size_t i = 0; i < n / 8; i++) p[i] = 0;
    return (void *)p;
}

void ebpf_free_shared(void *p) {
    if (!p) return;
    uint32_t off = (uint32_t)((uintptr_t)p - NANOBPF_SHARED_MEM_BASE);
    for (unsigned k = 0; k < shared_n; k++)
        if (shared[k].off == off) {
            for (shared_n--; k < shared_n; k++) shared[k] = shared[k + 1];
            return;
        }
}

size_t ebpf_shared_in_use(void) {
    size_t used = 0;
    for (unsigned k = 0; k < shared_n; k++) used += shared[k].size;
    return used;
}

/* Without data cores (the test and benchmark firmwares) nothing runs alongside the control core; the
 * data-plane firmware overrides this with its wait for the data cores. */
__attribute__((weak)) void ebpf_quiesce(void) {}
void ebpf_free(void *p) { free(p); }
void *ebpf_jit_alloc(size_t size) { return calloc(1, size); }
void ebpf_jit_free(void *p, size_t size) {
    (void)size;
    free(p);
}
void ebpf_jit_flush(void *code, size_t size) {
    (void)code;
    (void)size;
    /* CVA6's D$ is write-through; fence.i empties the I$ so fetches see the new code. */
    __asm__ volatile("fence rw, rw\n\tfence.i" ::: "memory");
}
uint64_t ebpf_cycles(void) { return nb_cycles(); }
uint64_t ebpf_ktime_ns(void) { return nb_cycles() * (1000000000u / NANOBPF_CORE_CLOCK_HZ); }
uint32_t ebpf_cpu_id(void) { return nb_hart_id(); }
uint32_t ebpf_num_cpus(void) { return nb_num_cores(); }
int ebpf_jit_cpu_is_hartid(void) { return 1; }
void ebpf_console_write(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) nb_putc(s[i]);
}
/* The AEAD engine's key table storage (uncached, so every core sees the control core's updates). */
uint8_t *ebpf_keytable_values(void) {
    _Static_assert(NANOBPF_KEYTABLE_SLOTS * NANOBPF_QUIC_KEYS_SIZE <= NANOBPF_KEYTABLE_SIZE, "key table storage too small");
    return (uint8_t *)(uintptr_t)NANOBPF_KEYTABLE_BASE;
}

/* The AEAD engine (docs/aead.md) behind the QUIC helpers: the keys must be a slot of its key table
 * storage (the key table map keeps its values there) and the data in packet memory; otherwise, or when
 * the engine refuses, the helpers compute in software. The header-protection block usually lives on
 * the program's stack, so it goes through 32 bytes of packet memory: the context's hp_scratch (the
 * data-plane loop gives the end of the packet's own slot, which no other core touches), else this
 * hart's 32 bytes at the top of packet memory. */
static int keys_slot(const void *keys) { return ebpf_keytable_place((uintptr_t)keys - NANOBPF_KEYTABLE_BASE); }

static volatile uint8_t *hp_scratch_here(void) {
    const struct ebpf_xdp_buff *x = ebpf_current_xdp;
    volatile uint8_t *scratch = x ? (volatile uint8_t *)(uintptr_t)x->hp_scratch : NULL;
    return scratch ? scratch
                   : (volatile uint8_t *)(uintptr_t)(NANOBPF_PACKET_MEM_BASE + NANOBPF_PACKET_MEM_SIZE - 32u * (ebpf_cpu_id() + 1));
}

/* The requests of this hart left to their callers (seal_hp, open with commit), oldest first: at most
 * two, the frame the data loop holds and the one the program running now submitted; and the ones
 * collected that the engine refused (1 + id; their frames must be dropped). The engine completes a
 * hart's requests in order, so a request the caller waits for first collects every pending one
 * (settle), and a third one left pending collects the oldest (make_room). Thread-local: in the core's
 * own RAM, no bus write. */
#define PENDING_MAX 2
static __thread struct pending {
    uint32_t id1;      /* 1 + the request's id */
    void *state;       /* an open's packet-number state, to record pn in if the tag is authentic (NULL: a seal, or none kept) */
    uint64_t pn;
    int phase;
} pend[PENDING_MAX];
static __thread unsigned n_pend;
/* Each refused id belongs to a frame not finished yet whose request was pending: never more than
 * PENDING_MAX at once, so a free place is always there (a lost one would let the frame out). */
static __thread uint32_t refused_id1[PENDING_MAX];

/* Collect the oldest pending request. No fence after the completion (nb_aead_collect has one): this
 * core reads nothing the engine wrote for that frame, the egress does. */
static __attribute__((noinline)) void settle_oldest(uintptr_t hart) {
    uint64_t c;
    do c = NB_AEAD_REG(NANOBPF_AEAD_CORE_COMP_OFFSET(hart));
    while (!NANOBPF_GET(c, NANOBPF_AEAD_COMP_VALID));
    struct pending p = pend[0];
    for (unsigned i = 1; i < n_pend; i++) pend[i - 1] = pend[i];
    n_pend--;
    if (NANOBPF_GET(c, NANOBPF_AEAD_COMP_ID) != (uint16_t)(p.id1 - 1) ||
        NANOBPF_GET(c, NANOBPF_AEAD_COMP_STATUS) != NANOBPF_AEAD_STATUS_OK) {
        unsigned i = 0;
        while (i < PENDING_MAX - 1 && refused_id1[i]) i++;
        refused_id1[i] = p.id1;
    } else if (p.state)
        ebpf_quic_pn_record(p.state, p.pn, p.phase);
}
static inline void settle(uintptr_t hart) {
    while (n_pend) settle_oldest(hart);
}
static inline void make_room(uintptr_t hart) {
    if (n_pend == PENDING_MAX) settle_oldest(hart);
}
static inline uint32_t push_pending(uint16_t id, void *state, uint64_t pn, int phase) {
    struct pending *p = &pend[n_pend++];
    p->id1 = id + 1u, p->state = state, p->pn = pn, p->phase = phase;
    return p->id1;
}

int ebpf_aead_finish(uint32_t pending) {
    if (!pending) return 0; /* nothing was left to the engine */
    for (unsigned i = 0; i < n_pend; i++)
        if (pend[i].id1 == pending) { /* still in the engine: the only wait of a held frame */
            uintptr_t hart = nb_hart_id();
            uint64_t t0 = nb_cycles();
            for (unsigned k = 0; k <= i; k++) settle_oldest(hart);
            nb_aead_waited(hart, nb_cycles() - t0);
            break;
        }
    for (unsigned i = 0; i < PENDING_MAX; i++)
        if (refused_id1[i] == pending) {
            refused_id1[i] = 0;
            return -1;
        }
    return 0;
}

/* A request left pending (seal_hp, open with commit): room for it (at most PENDING_MAX) made by collecting
 * the oldest, then submitted. Out of line: the common way (room already there) is the callers', in
 * few instructions and registers. */
static __attribute__((noinline)) uint32_t submit_pending(unsigned op, int slot, int next, uint64_t pn, const uint8_t *aad,
                                                         size_t aad_len, uint8_t *text, size_t len, void *state, int phase) {
    uintptr_t hart = nb_hart_id();
    uint64_t t0 = nb_cycles();
    make_room(hart);
    __asm__ volatile("fence w, w" ::: "memory"); /* the packet's bytes in packet memory before the engine reads them */
    uint16_t id = nb_aead_submit(hart, op, (unsigned)slot, next, (uintptr_t)aad, (unsigned)aad_len, (uintptr_t)text, (unsigned)len, pn);
    nb_aead_waited(hart, nb_cycles() - t0);
    return push_pending(id, state, pn, phase);
}
static inline uint32_t submit_pending_now(unsigned op, int slot, int next, uint64_t pn, const uint8_t *aad, size_t aad_len,
                                          uint8_t *text, size_t len, void *state, int phase) {
    if (n_pend == PENDING_MAX) return submit_pending(op, slot, next, pn, aad, aad_len, text, len, state, phase);
    uint64_t t0 = nb_cycles();
    __asm__ volatile("fence w, w" ::: "memory");
    uint16_t id = nb_aead_submit(nb_hart_id(), op, (unsigned)slot, next, (uintptr_t)aad, (unsigned)aad_len, (uintptr_t)text,
                                 (unsigned)len, pn);
    nb_aead_waited(0, nb_cycles() - t0);
    return push_pending(id, state, pn, phase);
}
static int req_fits(int slot, const void *aad, size_t aad_len, const void *text, size_t len) {
    return slot >= 0 && aad_len <= 255 && len <= 4095 && nb_in_packet_mem(aad, aad_len ? aad_len : 1) && nb_in_packet_mem(text, len + 16);
}

/* A seal the caller does not leave pending (or a second one for its frame): every request before it
 * collected, then this one. */
static __attribute__((noinline)) int seal_hp_now(int slot, int next, uint64_t pn, uint8_t *aad, size_t aad_len, uint8_t *text,
                                                 size_t len) {
    uintptr_t hart = nb_hart_id();
    uint64_t t0 = nb_cycles();
    settle(hart);
    __asm__ volatile("fence w, w" ::: "memory"); /* the packet's bytes in packet memory before the engine reads them */
    uint16_t id = nb_aead_submit(hart, NB_AEAD_SEAL_HP, (unsigned)slot, next, (uintptr_t)aad, (unsigned)aad_len,
                                 (uintptr_t)text, (unsigned)len, pn);
    int st = nb_aead_collect(hart, id, NULL);
    nb_aead_waited(hart, nb_cycles() - t0);
    return st == NANOBPF_AEAD_STATUS_OK ? 0 : -1; /* refused before writing anything: software then */
}

int ebpf_aead_engine_seal_hp(const void *keys, int next, uint64_t pn, uint8_t *aad, size_t aad_len, uint8_t *text,
                             size_t len, uint32_t *pending) {
    int slot = keys_slot(keys);
    if (!req_fits(slot, aad, aad_len, text, len)) return -1;
    if (!pending || *pending) return seal_hp_now(slot, next, pn, aad, aad_len, text, len); /* one left to the caller per frame */
    *pending = submit_pending_now(NB_AEAD_SEAL_HP, slot, next, pn, aad, aad_len, text, len, NULL, -1);
    return 0;
}

int ebpf_aead_engine_open_commit(const void *keys, void *state, int next, uint64_t pn, const uint8_t *aad, size_t aad_len,
                                 uint8_t *text, size_t len, int phase, uint32_t *pending) {
    int slot = keys_slot(keys);
    if (!pending || *pending || !req_fits(slot, aad, aad_len, text, len)) return -1;
    *pending = submit_pending_now(NB_AEAD_OPEN, slot, next, pn, aad, aad_len, text, len, state, phase);
    return 0;
}

/* The engine's fast path (nanobpf_aead.h): the ranges are checked here, once; the requests go out as
 * scalars. A seal asked for the mask too gets the mask request right behind it, and one wait for both. */
int ebpf_aead_engine(int seal, const void *keys, int next, uint64_t pn, const uint8_t *aad, size_t aad_len,
                     uint8_t *text, size_t len, const uint8_t *sample, uint64_t *mask) {
    int slot = keys_slot(keys);
    if (slot < 0 || aad_len > 255 || len > 4095 || !nb_in_packet_mem(aad, aad_len ? aad_len : 1) ||
        !nb_in_packet_mem(text, len + 16) || (sample && !nb_in_packet_mem(sample, 16)))
        return -1;
    uintptr_t hart = nb_hart_id();
    uint64_t t0 = nb_cycles();
    settle(hart);
    __asm__ volatile("fence w, w" ::: "memory"); /* the packet's bytes in packet memory before the engine reads them */
    uint16_t id = nb_aead_submit(hart, seal ? NB_AEAD_SEAL : NB_AEAD_OPEN, (unsigned)slot, next, (uintptr_t)aad,
                                 (unsigned)aad_len, (uintptr_t)text, (unsigned)len, pn);
    volatile uint8_t *scratch = hp_scratch_here();
    uint16_t hid = sample ? nb_aead_submit(hart, NB_AEAD_HP_MASK, (unsigned)slot, 0, (uintptr_t)sample, 0,
                                           (uintptr_t)(scratch + 16), 0, 0) : 0;
    int st = nb_aead_collect(hart, id, NULL);
    int hst = sample ? nb_aead_collect(hart, hid, NULL) : NANOBPF_AEAD_STATUS_OK;
    nb_aead_waited(hart, nb_cycles() - t0);
    if (st != NANOBPF_AEAD_STATUS_OK) /* the engine writes nothing then: the caller may compute in software */
        return st == NANOBPF_AEAD_STATUS_TAG_MISMATCH && !seal ? 1 : -1;
    if (sample && hst == NANOBPF_AEAD_STATUS_OK) {
        *mask = *(volatile uint64_t *)(scratch + 16); /* one load: the mask's bytes 0..7 */
    } else if (sample) { /* sealed already: never seal twice, only the mask in software */
        *mask = ebpf_hp_mask_soft(((const struct nanobpf_quic_keys *)keys)->hp, sample);
    }
    return 0;
}

/* The scratch is 8-byte aligned (the end of a slot, or the top of packet memory), and every access to
 * it is a bus transaction: copied 8 bytes at a time where the block is aligned too. */
static void copy16(volatile uint8_t *dst, const volatile uint8_t *src) {
    if (!(((uintptr_t)dst | (uintptr_t)src) & 7)) {
        ((volatile uint64_t *)dst)[0] = ((const volatile uint64_t *)src)[0];
        ((volatile uint64_t *)dst)[1] = ((const volatile uint64_t *)src)[1];
        return;
    }
    for (int i = 0; i < 16; i++) dst[i] = src[i];
}

int ebpf_hp_engine(const void *keys, uint8_t block[16]) {
    int slot = keys_slot(keys);
    if (slot < 0) return -1;
    volatile uint8_t *scratch = hp_scratch_here();
    settle(nb_hart_id());
    copy16(scratch, block);
    struct nb_aead_req r = {NB_AEAD_HP_MASK, (unsigned)slot, 0, (const void *)scratch, 0, (void *)(scratch + 16), 0, 0};
    if (nb_aead_run(&r, NULL) != NANOBPF_AEAD_STATUS_OK) return -1;
    copy16(block, scratch + 16);
    return 0;
}

/* The mask of an open's sample by the masker beside the engine (AeadRegs' core_hp_*, docs/aead.md): the
 * core hands it the sample it reads from the packet, and waits for one AES block only, never behind
 * the engine's queue - so no pending request of this hart is collected first either. The sample is
 * read as the aligned words around it (two or three loads, all inside packet memory: its end is a
 * whole word). */
int ebpf_hp_engine_submit(const void *keys, const uint8_t *sample) {
    int slot = keys_slot(keys);
    if (slot < 0 || !nb_in_packet_mem(sample, 16)) return -1;
    uintptr_t hart = nb_hart_id();
    uint64_t t0 = nb_cycles();
    const volatile uint64_t *w = (const volatile uint64_t *)((uintptr_t)sample & ~(uintptr_t)7);
    unsigned sh = ((uintptr_t)sample & 7) * 8;
    uint64_t w0 = w[0], w1 = w[1], s0 = w0, s1 = w1;
    if (sh) {
        uint64_t w2 = w[2];
        s0 = w0 >> sh | w1 << (64 - sh);
        s1 = w1 >> sh | w2 << (64 - sh);
    }
    NB_AEAD_REG(NANOBPF_AEAD_CORE_HP_SAMPLE0_OFFSET(hart)) = s0;
    NB_AEAD_REG(NANOBPF_AEAD_CORE_HP_SAMPLE1_OFFSET(hart)) = s1;
    NB_REG32(NANOBPF_AEAD_BASE + NANOBPF_AEAD_CORE_HP_SLOT_OFFSET(hart)) = (uint32_t)slot; /* asks */
    nb_aead_waited(hart, nb_cycles() - t0);
    return 0;
}
int ebpf_hp_engine_collect(int ticket, uint64_t *mask) {
    (void)ticket;
    uintptr_t hart = nb_hart_id();
    uint64_t t0 = nb_cycles(), v;
    do v = NB_AEAD_REG(NANOBPF_AEAD_CORE_HP_MASK_OFFSET(hart));
    while (!NANOBPF_GET(v, NANOBPF_HP_MASK_VALID));
    nb_aead_waited(hart, nb_cycles() - t0);
    if (NANOBPF_GET(v, NANOBPF_HP_MASK_REFUSED)) return -1;
    *mask = NANOBPF_GET(v, NANOBPF_HP_MASK_MASK); /* bytes 0..4, byte 0 the lowest */
    return 0;
}
int ebpf_hp_engine_at(const void *keys, const uint8_t *sample, uint64_t *mask) {
    int ticket = ebpf_hp_engine_submit(keys, sample);
    return ticket < 0 ? -1 : ebpf_hp_engine_collect(ticket, mask);
}
