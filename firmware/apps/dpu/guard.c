/* The host link's contract around each run of the program: what guard.h's per-packet checks look up
 * once per program and core, the DECRYPTED shim, and a forged tag's counts. */
#include <string.h>
#include "guard.h"

/* The DECRYPTED shim after the MAC addresses of the frame at data, which then starts at data - 4: the
 * 12 address bytes move 4 down and the shim follows them. Where the frame starts 8-byte aligned (as
 * it came in), that is two uncached loads and three stores; else byte by byte (28 accesses). */
void dpu_guard_add_decrypted_shim(uint64_t data) {
    static const uint8_t shim[4] = {NANOBPF_SHIM_ETHERTYPE >> 8, NANOBPF_SHIM_ETHERTYPE & 0xff, NANOBPF_SHIM_F_DECRYPTED, 0};
    if (!(data & 7)) {
        volatile uint64_t *w = (volatile uint64_t *)(uintptr_t)data;
        uint64_t b0_7 = w[0];
        uint32_t b8_11 = *(volatile uint32_t *)(uintptr_t)(data + 8);
        /* the shim's bytes as one little-endian word (a memcpy from the byte array was a memmove call) */
        uint32_t s = (uint32_t)shim[0] | (uint32_t)shim[1] << 8 | (uint32_t)shim[2] << 16 | (uint32_t)shim[3] << 24;
        *(volatile uint32_t *)(uintptr_t)(data - 4) = (uint32_t)b0_7; /* little-endian: bytes 0..3 */
        w[0] = b0_7 >> 32 | (uint64_t)b8_11 << 32;                   /* bytes 4..11 */
        *(volatile uint32_t *)(uintptr_t)(data + 8) = s;
        return;
    }
    volatile uint8_t *p = (volatile uint8_t *)(uintptr_t)(data - 4);
    for (int i = 0; i < 12; i++) p[i] = p[i + 4];
    for (int i = 0; i < 4; i++) p[12 + i] = shim[i];
}

__thread struct dpu_guard_cache dpu_guard_cache;

void dpu_guard_reset(void) { dpu_guard_cache.prog = NULL; }

/* Find the program's quic_stats map and this core's two counters (once per program and core). */
void dpu_guard_find(const struct ebpf_prog *prog) {
    struct ebpf_map *m = NULL;
    for (uint32_t i = 0; i < prog->n_maps; i++)
        if (!strcmp(prog->maps[i]->name, "quic_stats") && prog->maps[i]->value_size >= 8) m = prog->maps[i];
    int array = m && (m->type == NANOBPF_MAP_TYPE_ARRAY || m->type == NANOBPF_MAP_TYPE_PERCPU_ARRAY);
    uint32_t sealed = NANOBPF_QUIC_STAT_SEALED, opened = NANOBPF_QUIC_STAT_OPENED;
    dpu_guard_cache.map = m;
    dpu_guard_cache.sealed = array ? ebpf_map_lookup(m, &sealed) : NULL;
    dpu_guard_cache.opened = array ? ebpf_map_lookup(m, &opened) : NULL;
    dpu_guard_cache.prog = prog;
}

uint64_t dpu_guard_map_stat(struct ebpf_map *m, uint32_t index) {
    const volatile uint64_t *v = ebpf_map_lookup(m, &index);
    return v ? *v : 0;
}

/* This core's value `index` of prog's array map `name` (a counter) moved by delta, when there is one. */
static void count_in(const struct ebpf_prog *prog, const char *name, uint32_t index, int delta) {
    for (uint32_t i = 0; i < prog->n_maps; i++) {
        struct ebpf_map *m = prog->maps[i];
        if (strcmp(m->name, name) || m->value_size < 8 ||
            (m->type != NANOBPF_MAP_TYPE_ARRAY && m->type != NANOBPF_MAP_TYPE_PERCPU_ARRAY))
            continue;
        volatile uint64_t *v = ebpf_map_lookup(m, &index);
        if (v) *v += (uint64_t)(int64_t)delta;
        return;
    }
}

/* Rare (a forged tag), so the maps are looked up by name each time. */
void dpu_guard_forged(const struct ebpf_prog *prog) {
    if (!prog) return;
    count_in(prog, "quic_stats", NANOBPF_QUIC_STAT_OPENED, -1);
    count_in(prog, "quic_stats", NANOBPF_QUIC_STAT_DROPPED, 1);
    count_in(prog, "quic_drops", NANOBPF_QUIC_DROP_TAG_MISMATCH, 1);
}
