/* The host link's contract around each run of the program (docs/ebpf-quic.md "Seal contract"; the
 * device model's rules, nanobpf.devmodel): a host frame with the ENCRYPT shim leaves only towards the
 * network, without a shim, and only if the program counted it sealed during that run (its quic_stats
 * map, entry NANOBPF_QUIC_STAT_SEALED); a malformed shim is dropped; no frame leaves carrying a shim the
 * device did not add; a network frame the program counted opened reaches the host with the DECRYPTED
 * shim. Shims from the network never get here (the PISA parser drops them: shim_foreign). */
#include <string.h>
#include "dpu.h"
#include "nanobpf.h"
#include "nanobpf_ctrl.h"
#include "nanobpf_soc.h"

/* Frame bytes 12..15 (where a shim is: EtherType, flags, cid_len) as a little-endian word (byte 12
 * lowest): one uncached load when they are 4-byte aligned (the frame starts at the slot's headroom
 * unless the program moved it), else four. Bytes past a short frame's end are the slot's, never
 * outside packet memory. */
static uint32_t word12(uint64_t data) {
    uintptr_t a = (uintptr_t)data + 12;
    if (!(a & 3)) return *(const volatile uint32_t *)a;
    const volatile uint8_t *p = (const volatile uint8_t *)a;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
#define SHIM_ET_LE ((NANOBPF_SHIM_ETHERTYPE >> 8) | (NANOBPF_SHIM_ETHERTYPE & 0xff) << 8) /* as word12's low half */
#define SHIM_FLAGS(w) ((w) >> 16 & 0xff)
#define SHIM_CID_LEN(w) ((w) >> 24)

static int has_shim(uint64_t data, uint64_t end) {
    return end - data >= 14 && (word12(data) & 0xffff) == SHIM_ET_LE;
}

/* The DECRYPTED shim after the MAC addresses of the frame at data, which then starts at data - 4: the
 * 12 address bytes move 4 down and the shim follows them. Where the frame starts 8-byte aligned (as
 * it came in), that is two uncached loads and three stores; else byte by byte (28 accesses). */
static void add_decrypted_shim(uint64_t data) {
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

/* The program's quic_stats map (NULL: none) and, when it is an array, this core's two values the guard
 * reads, found once per program and core: a program's maps do not change, and an array's values do not
 * move (the map lookup cost two calls a packet). Thread-local: in the core's own RAM. */
static __thread struct {
    const struct ebpf_prog *prog;
    struct ebpf_map *map;
    const volatile uint64_t *sealed, *opened;
} stats_cache;

void dpu_guard_reset(void) { stats_cache.prog = NULL; }

/* Find the program's quic_stats map and this core's two counters (once per program and core). */
static __attribute__((noinline)) void find_quic_stats(const struct ebpf_prog *prog) {
    struct ebpf_map *m = NULL;
    for (uint32_t i = 0; i < prog->n_maps; i++)
        if (!strcmp(prog->maps[i]->name, "quic_stats") && prog->maps[i]->value_size >= 8) m = prog->maps[i];
    int array = m && (m->type == NANOBPF_MAP_TYPE_ARRAY || m->type == NANOBPF_MAP_TYPE_PERCPU_ARRAY);
    uint32_t sealed = NANOBPF_QUIC_STAT_SEALED, opened = NANOBPF_QUIC_STAT_OPENED;
    stats_cache.map = m;
    stats_cache.sealed = array ? ebpf_map_lookup(m, &sealed) : NULL;
    stats_cache.opened = array ? ebpf_map_lookup(m, &opened) : NULL;
    stats_cache.prog = prog;
}

/* This core's quic_stats[index] of the program's map m, another kind than an array (its value may move). */
static __attribute__((noinline)) uint64_t map_stat(struct ebpf_map *m, uint32_t index) {
    const volatile uint64_t *v = ebpf_map_lookup(m, &index);
    return v ? *v : 0;
}

/* This core's quic_stats[g->watch] of the program the guard watches (g->watch >= 0). */
static inline uint64_t watched(const struct dpu_guard *g) {
    return g->counter ? *g->counter : map_stat(stats_cache.map, (uint32_t)g->watch);
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

int dpu_guard_before(const struct ebpf_prog *prog, const struct ebpf_xdp_buff *xdp, struct dpu_guard *g) {
    g->seal = 0;
    g->watch = -1;
    uint32_t w = xdp->ingress_ifindex == NANOBPF_IFINDEX_HOST && xdp->data_end - xdp->data >= 14 ? word12(xdp->data) : 0;
    if ((w & 0xffff) == SHIM_ET_LE) { /* from the host (network frames with a shim: PISA drops them) */
        if (xdp->data_end - xdp->data < 16 || SHIM_FLAGS(w) != NANOBPF_SHIM_F_ENCRYPT || SHIM_CID_LEN(w) > NANOBPF_CTRL_MAX_CID)
            return DPU_DROP_BAD_SHIM;
        if (!prog) return DPU_DROP_ENCRYPT_NO_PROG;
        g->seal = 1;
    } else if (xdp->ingress_ifindex != NANOBPF_IFINDEX_NET || !prog) {
        return -1;
    }
    /* a program without quic_stats never counts a frame sealed or opened: nothing to read before and after */
    if (stats_cache.prog != prog) find_quic_stats(prog);
    if (!stats_cache.map) return -1;
    g->watch = g->seal ? NANOBPF_QUIC_STAT_SEALED : NANOBPF_QUIC_STAT_OPENED;
    g->counter = g->seal ? stats_cache.sealed : stats_cache.opened;
    g->before = watched(g);
    return -1;
}

int dpu_guard_after(struct ebpf_xdp_buff *xdp, struct dpu_guard *g, uint32_t ifindex_out) {
    int counted = g->watch >= 0 && watched(g) > g->before;
    int shim = has_shim(xdp->data, xdp->data_end);
    g->done = DPU_GUARD_NONE;
    if (g->seal && !(ifindex_out == NANOBPF_IFINDEX_NET && counted && !shim))
        return DPU_DROP_ENCRYPT_UNSEALED; /* fail closed: never out unsealed */
    if (shim) return DPU_DROP_BAD_SHIM; /* only the device adds a shim */
    if (xdp->ingress_ifindex == NANOBPF_IFINDEX_NET && ifindex_out == NANOBPF_IFINDEX_HOST && counted) {
        if (xdp->data - 4 < xdp->data_hard_start) return DPU_DROP_BAD_SHIM; /* no room: never unmarked */
        add_decrypted_shim(xdp->data);
        xdp->data -= 4;
        g->done = DPU_GUARD_OPENED;
    }
    if (g->seal) g->done = DPU_GUARD_SEALED;
    return -1;
}
