/* The host link's contract around each run of the program (docs/ebpf-quic.md "Seal contract"; the
 * device model's rules, nanobpf.devmodel): a host frame with the ENCRYPT shim leaves only towards the
 * network, without a shim, and only if the program counted it sealed during that run (its quic_stats
 * map, entry NANOBPF_QUIC_STAT_SEALED); a malformed shim is dropped; no frame leaves carrying a shim the
 * device did not add; a network frame the program counted opened reaches the host with the DECRYPTED
 * shim. Shims from the network never get here (the PISA parser drops them: shim_foreign). */
#include <string.h>
#include "dpu.h"
#include "nanobpf_ctrl.h"
#include "nanobpf_soc.h"

static int has_shim(uint64_t data, uint64_t end) {
    const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)data;
    return end - data >= 14 && p[12] == (NANOBPF_SHIM_ETHERTYPE >> 8) && p[13] == (NANOBPF_SHIM_ETHERTYPE & 0xff);
}

/* The program's quic_stats map (NULL: none), looked up once per program and core: its maps do not
 * change. One cache line per core, written only by that core (L1 caches are not coherent). */
static struct {
    const struct ebpf_prog *prog;
    struct ebpf_map *map;
} __attribute__((aligned(64))) stats_cache[NANOBPF_MAX_CORES];

void dpu_guard_reset(void) { stats_cache[ebpf_cpu_id()].prog = NULL; }

static struct ebpf_map *stats_map(const struct ebpf_prog *prog) {
    __typeof__(stats_cache[0]) *c = &stats_cache[ebpf_cpu_id()];
    if (c->prog != prog) {
        c->map = NULL;
        for (uint32_t i = 0; i < prog->n_maps; i++)
            if (!strcmp(prog->maps[i]->name, "quic_stats") && prog->maps[i]->value_size >= 8) c->map = prog->maps[i];
        c->prog = prog;
    }
    return c->map;
}

/* This core's quic_stats[index] of the program (0 when it has no such map). */
static uint64_t quic_stat(const struct ebpf_prog *prog, uint32_t index) {
    struct ebpf_map *m = prog ? stats_map(prog) : NULL;
    const uint64_t *v = m ? ebpf_map_lookup(m, &index) : NULL;
    return v ? *v : 0;
}

int dpu_guard_before(const struct ebpf_prog *prog, const struct ebpf_xdp_buff *xdp, struct dpu_guard *g) {
    g->seal = 0;
    g->watch = -1;
    if (xdp->ingress_ifindex == NANOBPF_IFINDEX_HOST && has_shim(xdp->data, xdp->data_end)) {
        const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)xdp->data;
        if (xdp->data_end - xdp->data < 16 || p[14] != NANOBPF_SHIM_F_ENCRYPT || p[15] > NANOBPF_CTRL_MAX_CID)
            return DPU_DROP_BAD_SHIM;
        if (!prog) return DPU_DROP_ENCRYPT_NO_PROG;
        g->seal = 1;
        g->watch = NANOBPF_QUIC_STAT_SEALED;
    } else if (xdp->ingress_ifindex == NANOBPF_IFINDEX_NET) {
        g->watch = NANOBPF_QUIC_STAT_OPENED;
    }
    if (g->watch >= 0) g->before = quic_stat(prog, (uint32_t)g->watch);
    return -1;
}

int dpu_guard_after(const struct ebpf_prog *prog, struct ebpf_xdp_buff *xdp, struct dpu_guard *g, uint32_t ifindex_out) {
    int counted = g->watch >= 0 && quic_stat(prog, (uint32_t)g->watch) > g->before;
    g->done = DPU_GUARD_NONE;
    if (g->seal && !(ifindex_out == NANOBPF_IFINDEX_NET && counted && !has_shim(xdp->data, xdp->data_end)))
        return DPU_DROP_ENCRYPT_UNSEALED; /* fail closed: never out unsealed */
    if (has_shim(xdp->data, xdp->data_end)) return DPU_DROP_BAD_SHIM; /* only the device adds a shim */
    if (xdp->ingress_ifindex == NANOBPF_IFINDEX_NET && ifindex_out == NANOBPF_IFINDEX_HOST && counted) {
        if (xdp->data - 4 < xdp->data_hard_start) return DPU_DROP_BAD_SHIM; /* no room: never unmarked */
        volatile uint8_t *p = (volatile uint8_t *)(uintptr_t)(xdp->data - 4);
        for (int i = 0; i < 12; i++) p[i] = p[i + 4];
        p[12] = NANOBPF_SHIM_ETHERTYPE >> 8, p[13] = NANOBPF_SHIM_ETHERTYPE & 0xff;
        p[14] = NANOBPF_SHIM_F_DECRYPTED, p[15] = 0;
        xdp->data -= 4;
        g->done = DPU_GUARD_OPENED;
    }
    if (g->seal) g->done = DPU_GUARD_SEALED;
    return -1;
}
