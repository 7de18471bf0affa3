/* The data-plane firmware's parts (firmware/apps/dpu): the packet loop (dpu.c) and the host link's
 * fail-closed contract around each run of the program (guard.h, guard.c). */
#ifndef DPU_H
#define DPU_H

#include <stdint.h>
#include "ebpf.h"

/* Why the firmware itself dropped a frame (counted per core, printed in the summary). */
enum dpu_drop { DPU_DROP_BAD_SHIM, DPU_DROP_ENCRYPT_NO_PROG, DPU_DROP_ENCRYPT_UNSEALED, DPU_DROP_CTRL, DPU_DROP_CTRL_SHED,
                DPU_DROPS };
#define DPU_DROP_NAMES {"bad_shim", "encrypt_no_prog", "encrypt_unsealed", "ctrl_unanswered", "ctrl_shed"}

/* Forget this core's per-program lookups (a new program may sit where the old one was). The guard's
 * per-packet checks: guard.h. */
void dpu_guard_reset(void);
/* A frame prog counted opened whose tag the engine found forged after the program returned (quic_aead_open
 * with NANOBPF_AEAD_COMMIT): this core's counts in the program's maps become what the program counts for
 * a forged tag itself (quic_stats OPENED back, DROPPED and quic_drops TAG_MISMATCH up). */
void dpu_guard_forged(const struct ebpf_prog *prog);

/* Write the boot configuration linked into the image (boot.c) into the program's maps: 0, or -1 after
 * printing why. */
int dpu_boot_config_apply(const struct ebpf_prog *prog, unsigned *applied);

/* dpu.c, for the control plane (ctrl.h). The attached program (NULL: none), as core 0 sees it. */
const struct ebpf_prog *dpu_prog_current(void);
/* Attach prog (NULL: detach): every data core runs it from its next packet; returns once none still
 * runs the previous one (ebpf_quiesce), which the caller may then free. */
void dpu_prog_publish(const struct ebpf_prog *prog);
unsigned dpu_data_cores(void); /* cores that run programs */
/* The default tables of PISA (every other table word 0), written first at boot; the tables as the boot
 * left them (the boot configuration's @table words too) saved, and restored (RESET). */
void dpu_tables_default(void);
void dpu_tables_save(void);
void dpu_tables_restore(void);
/* A command (NANOBPF_PISA_CID_OP_*) of PISA's CID table on (cid, len, seal: a seal entry's) -> slot
 * (len 0: cid is a peer's 20-byte address id): its NANOBPF_PISA_CID_STATUS_*. */
unsigned dpu_cid_command(unsigned op, const uint8_t *cid, unsigned len, int seal, unsigned slot);
/* Another core's 64-bit word as memory holds it. The L1 caches are not coherent, and with CVA6's
 * write-through D-cache (WT_DCACHE) a fence does not invalidate them: a plain load may return a line
 * this core cached earlier. An AMO's result comes from memory (as `attached` is read). */
static inline uint64_t dpu_read_fresh(uint64_t *p) { return __atomic_fetch_or(p, 0, __ATOMIC_ACQUIRE); }

/* Core 0, when it finds its queue empty: the board's LEDs and Ethernet counters once a second (status.c). */
void dpu_status_tick(void);

/* The data path's STATS counters (NANOBPF_CTRL_STAT_* indices) into v, since power-on or the last
 * dpu_stats_zero; the others are left as they are. */
void dpu_stats_read(uint64_t *v);
void dpu_stats_zero(void);

#endif
