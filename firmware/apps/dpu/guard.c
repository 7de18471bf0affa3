/* The host link's contract around each run of the program: what guard.h's per-packet checks look up
 * once per program and core, and a forged tag's counts. */
#include <string.h>
#include "guard.h"

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
