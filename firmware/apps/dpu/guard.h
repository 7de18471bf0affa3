/* The host link's contract around each run of the program (docs/ebpf-quic.md "Seal contract"; the
 * device model's rules, nanobpf.devmodel): a host frame with the ENCRYPT shim leaves only towards the
 * network, without a shim, and only if the program counted it sealed during that run (its quic_stats
 * map, entry NANOBPF_QUIC_STAT_SEALED); a malformed shim is dropped; no frame leaves carrying a shim the
 * device did not add; a network frame the program counted opened reaches the host with the DECRYPTED
 * shim. Shims from the network never get here (the PISA parser drops them: shim_foreign).
 *
 * The shim's bytes are the egress's to move (the completion's shim, egress_shim): a sealed frame that
 * still carries the host's ENCRYPT shim where it came, unchanged, leaves without it (strip), and an
 * opened frame gets the DECRYPTED shim on its way out (decrypted); no core moves the MAC addresses for
 * a shim. The egress's deparser drops any frame that would still carry a shim towards the network
 * (tx_shim), whatever the program left behind the one stripped.
 *
 * The checks of every packet are inline here, in the packet loop (dpu.c): as calls they cost a frame of
 * saved registers each and the loop's own around them. What is looked up once per program, and the
 * rare ways, are in guard.c. */
#ifndef DPU_GUARD_H
#define DPU_GUARD_H

#include "dpu.h"
#include "nanobpf.h"
#include "nanobpf_ctrl.h"
#include "nanobpf_soc.h"

/* What the guard learnt about a frame before the program ran. */
struct dpu_guard {
    int seal;          /* a host frame with the ENCRYPT shim: it may leave only sealed, towards the network */
    uint32_t shim;     /* that shim (frame bytes 12..15 as dpu_guard_word12 reads them) */
    int watch;         /* quic_stats index whose rise this run is judged by (-1: none) */
    const volatile uint64_t *counter; /* where it is, when quic_stats is an array (else looked up) */
    uint64_t before;   /* its value before the run */
    int done;          /* after the run: DPU_GUARD_SEALED, _OPENED (for the host, with the shim) or _NONE */
    unsigned egress;   /* after the run: what the egress does to the shim (NANOBPF_EGRESS_SHIM_*) */
};
enum { DPU_GUARD_NONE, DPU_GUARD_SEALED, DPU_GUARD_OPENED };

/* The program's quic_stats map (NULL: none) and, when it is an array, this core's two values the guard
 * reads, found once per program and core (dpu_guard_find): a program's maps do not change, and an
 * array's values do not move. Thread-local: in the core's own RAM. */
struct dpu_guard_cache {
    const struct ebpf_prog *prog;
    struct ebpf_map *map;
    const volatile uint64_t *sealed, *opened;
};
extern __thread struct dpu_guard_cache dpu_guard_cache;
void dpu_guard_find(const struct ebpf_prog *prog);
/* This core's quic_stats[index] of the program's map m, another kind than an array (its value may move). */
uint64_t dpu_guard_map_stat(struct ebpf_map *m, uint32_t index);

/* Frame bytes 12..15 (where a shim is: EtherType, flags, cid_len) as a little-endian word (byte 12
 * lowest): one uncached load when they are 4-byte aligned (the frame starts at the slot's headroom
 * unless the program moved it), else four. Bytes past a short frame's end are the slot's, never
 * outside packet memory. */
static inline uint32_t dpu_guard_word12(uint64_t data) {
    uintptr_t a = (uintptr_t)data + 12;
    if (!(a & 3)) return *(const volatile uint32_t *)a;
    const volatile uint8_t *p = (const volatile uint8_t *)a;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
#define SHIM_ET_LE ((NANOBPF_SHIM_ETHERTYPE >> 8) | (NANOBPF_SHIM_ETHERTYPE & 0xff) << 8) /* as word12's low half */
#define SHIM_FLAGS(w) ((w) >> 16 & 0xff)
#define SHIM_CID_LEN(w) ((w) >> 24)

/* This core's quic_stats[g->watch] of the program the guard watches (g->watch >= 0). */
static inline uint64_t dpu_guard_watched(const struct dpu_guard *g) {
    return g->counter ? *g->counter : dpu_guard_map_stat(dpu_guard_cache.map, (uint32_t)g->watch);
}

/* Before the run (prog NULL: no program attached): checks the shim of a frame from the host; returns
 * a dpu_drop (the frame is dropped) or -1 (run the program). */
static inline int dpu_guard_before(const struct ebpf_prog *prog, const struct ebpf_xdp_buff *xdp, struct dpu_guard *g) {
    g->seal = 0, g->shim = 0;
    g->watch = -1;
    g->egress = NANOBPF_EGRESS_SHIM_KEEP;
    uint32_t w = xdp->ingress_ifindex == NANOBPF_IFINDEX_HOST && xdp->data_end - xdp->data >= 14 ? dpu_guard_word12(xdp->data) : 0;
    if ((w & 0xffff) == SHIM_ET_LE) { /* from the host (network frames with a shim: PISA drops them) */
        if (xdp->data_end - xdp->data < 16 || SHIM_FLAGS(w) != NANOBPF_SHIM_F_ENCRYPT || SHIM_CID_LEN(w) > NANOBPF_CTRL_MAX_CID)
            return DPU_DROP_BAD_SHIM;
        if (!prog) return DPU_DROP_ENCRYPT_NO_PROG;
        g->seal = 1;
        g->shim = w;
    } else if (xdp->ingress_ifindex != NANOBPF_IFINDEX_NET || !prog) {
        return -1;
    }
    /* a program without quic_stats never counts a frame sealed or opened: nothing to read before and after */
    if (dpu_guard_cache.prog != prog) dpu_guard_find(prog);
    if (!dpu_guard_cache.map) return -1;
    g->watch = g->seal ? NANOBPF_QUIC_STAT_SEALED : NANOBPF_QUIC_STAT_OPENED;
    g->counter = g->seal ? dpu_guard_cache.sealed : dpu_guard_cache.opened;
    g->before = dpu_guard_watched(g);
    return -1;
}

/* After the run with `action` towards `ifindex_out`: returns a dpu_drop, or -1 when the frame may leave
 * (g->egress: what the egress does to its shim then). */
static inline int dpu_guard_after(struct ebpf_xdp_buff *xdp, struct dpu_guard *g, uint32_t ifindex_out) {
    int counted = g->watch >= 0 && dpu_guard_watched(g) > g->before;
    uint64_t len = xdp->data_end - xdp->data;
    uint32_t w = len >= 14 ? dpu_guard_word12(xdp->data) : 0;
    int shim = (w & 0xffff) == SHIM_ET_LE;
    g->done = DPU_GUARD_NONE;
    if (g->seal) {
        if (!(ifindex_out == NANOBPF_IFINDEX_NET && counted))
            return DPU_DROP_ENCRYPT_UNSEALED; /* fail closed: never out unsealed */
        if (shim) { /* the host's shim left where it came, unchanged: the egress leaves it out */
            if (w != g->shim || len < 18) return DPU_DROP_ENCRYPT_UNSEALED;
            g->egress = NANOBPF_EGRESS_SHIM_STRIP;
        }
        g->done = DPU_GUARD_SEALED;
        return -1;
    }
    if (shim) return DPU_DROP_BAD_SHIM; /* only the device adds a shim */
    if (xdp->ingress_ifindex == NANOBPF_IFINDEX_NET && ifindex_out == NANOBPF_IFINDEX_HOST && counted) {
        g->egress = NANOBPF_EGRESS_SHIM_DECRYPTED;
        g->done = DPU_GUARD_OPENED;
    }
    return -1;
}
#endif
