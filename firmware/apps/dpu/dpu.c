/* dpu: the DPU's data-plane firmware (docs/dataplane.md).
 *
 * Core 0 is the control core: at boot it loads, verifies (or applies the build host's verification
 * record, when the image carries one) and JIT-compiles the built-in XDP program, if the firmware has
 * one (linked into the image, images.S), sets up the PISA pipeline (host and network logical ports,
 * every frame to the cores) and the core select, then wakes the data cores; its own queue then holds
 * the control frames from the host, which it answers (the control protocol: ctrl.c; keys, programs and
 * maps change while the data cores run). Every data core loops: pop a
 * descriptor from its queue (sleeping a little when the queue is empty, instead of spinning on the
 * interconnect), run the program on the frame in place in packet memory, push the completion (action,
 * where the frame now starts and how long it is, the redirect port). With one core, core 0 is also the
 * data core. Around each run, the host link's fail-closed contract (guard.c).
 *
 * In simulation the harness raises dpu.sim_drain when it has sent every frame and the ports are idle:
 * once every slot is free again, core 0 prints the counters (per port: frames in = frames out + drops by reason) and ends the run. */
#include <stdio.h>
#include <string.h>
#include "aead.h"
#include "ctrl.h"
#include "dpu.h"
#include "guard.h"
#include "nanobpf.h"
#include "nanobpf_aead.h"

extern const uint8_t dpu_prog_image[], dpu_prog_image_end[], dpu_prog_record[], dpu_prog_record_end[];

#define PISA(off) NB_REG64(NANOBPF_PISA_BASE + (off))
#define PKT(off) NB_REG64(NANOBPF_PKT_BASE + (off))
#define HOST_LPORT NANOBPF_DATAPATH_HOST_LPORT /* the default tables (hw/defs/soc.toml [datapath]) */
#define NET_LPORT NANOBPF_DATAPATH_NET_LPORT
#define IDLE_CYCLES 128 /* a data core with an empty queue sleeps this long before it looks again */
/* The control core of a multi-core DPU (its queue holds only control frames) looks less often: each
 * look is 5 bus transactions (timer, queue, drain flag) on the interconnect the data cores share,
 * about 8% of it at 128 cycles; 20 us more for a control frame is nothing to the host. */
#define CTRL_IDLE_CYCLES 1024
/* A data core reaches its loop about 1,000 cycles after it is woken (its data copied, its own RAM
 * cleared); one that has not after this long never will: the DPU does not say it is ready. */
#define DATA_CORE_START_CYCLES 4000000u
#define CTRL_SHED_FREE_SLOTS (NANOBPF_DATAPATH_SLOTS / 4) /* control frames are dropped at or below this (one_packet) */

/* The gate: core 0's word to the data cores, mailbox 0 (uncached: every core reads what core 0 wrote
 * last), the attached program in its low half and an epoch in its high half. Only core 0 writes it
 * (dpu_prog_publish, ebpf_quiesce); every core reads it once a packet and once each time it finds its
 * queue empty. A data core that sees a new epoch first finishes the frame it holds, publishes its
 * tallies and takes the program, then writes the epoch to its own mailbox: its acknowledgement. So
 * when core 0 has every data core's acknowledgement, no core still runs a packet with what was there
 * before (the old program, a key table value's old place): each one finished those before it said
 * so, and reads the gate again before its next packet. A packet costs one uncached load here, with
 * no atomic operation and no store (each store is a bus write: the D-cache writes through). */
#define GATE_PROG(g) ((const struct ebpf_prog *)(uintptr_t)(uint32_t)(g))
#define GATE_EPOCH(g) ((g) >> 32)
_Static_assert((uint64_t)NANOBPF_MAIN_MEM_BASE + NANOBPF_MAIN_MEM_SIZE <= 1ull << 32, "a program's address fits the gate's low half");
static const struct ebpf_prog *attached; /* core 0's: what the gate says */
static uint64_t epoch;                   /* core 0's: the gate's epoch; 0 until the data cores run */

static void gate_write(void) {
    __asm__ volatile("fence rw, rw" ::: "memory"); /* what the new epoch stands for is in memory first */
    nb_mailbox_write(0, ++epoch << 32 | (uint32_t)(uintptr_t)attached);
}

/* Per-core tallies. Each core counts in its own RAM (`tally`, thread-local: off the shared bus) and
 * publishes the whole set to `stats` in main memory, which core 0 reads (STATS, the summary), when its
 * queue is empty, before a control frame and every PUBLISH_EVERY frames: about one bus write a frame
 * where each count was one (the D-cache writes through, and the fence before each completion waits for
 * every write). While frames flow, core 0 may see a data core's counts up to PUBLISH_EVERY frames
 * behind; once the traffic stops they are exact. One cache line each. */
struct core_stats {
    uint64_t busy, actions[5], aborted_by_runtime, ctrl, drops[DPU_DROPS], sealed, opened;
    uint64_t rx[2], tx[2], encrypt_req, bad_port; /* data frames by ingress and egress port (0 host, 1 network) */
    /* program runs, their cycles and the engine's share, by ingress port (0 host, 1 network): with
     * xdp_quic_hw, seal and open (the totals are their sums: fewer stores a packet) */
    uint64_t port_packets[2], port_cycles[2], port_engine[2];
} __attribute__((aligned(64)));
static struct core_stats stats[NANOBPF_MAX_CORES];
static __thread struct core_stats tally;
#define PUBLISH_EVERY 32

static void publish(unsigned hart) {
    const uint64_t *src = (const uint64_t *)(const void *)&tally;
    volatile uint64_t *dst = (volatile uint64_t *)(void *)&stats[hart];
    for (size_t i = 0; i < sizeof tally / 8; i++) dst[i] = src[i];
}

/* The host's own port entry: control frames from the host reach core 0 through it. */
#define HOST_PORT_ENTRY (NANOBPF_PUT(NANOBPF_PISA_PORT_ENTRY_VALID, 1) | NANOBPF_PUT(NANOBPF_PISA_PORT_ENTRY_PORT, NANOBPF_DATAPATH_HOST_PORT) | \
                         NANOBPF_PUT(NANOBPF_PISA_PORT_ENTRY_LPORT, HOST_LPORT))

/* The tables as the boot left them (the defaults below and the boot configuration's @table words: the
 * board's one-arm VLANs), which RESET restores. */
static uint64_t boot_tables[NANOBPF_PISA_PORT_ENTRY_COUNT + NANOBPF_PISA_PROFILE_ENTRY_COUNT + NANOBPF_PISA_LPORT_CFG_COUNT + 1];
static unsigned table_reg(unsigned i) {
    if (i < NANOBPF_PISA_PORT_ENTRY_COUNT) return NANOBPF_PISA_PORT_ENTRY_OFFSET(i);
    i -= NANOBPF_PISA_PORT_ENTRY_COUNT;
    if (i < NANOBPF_PISA_PROFILE_ENTRY_COUNT) return NANOBPF_PISA_PROFILE_ENTRY_OFFSET(i);
    i -= NANOBPF_PISA_PROFILE_ENTRY_COUNT;
    if (i < NANOBPF_PISA_LPORT_CFG_COUNT) return NANOBPF_PISA_LPORT_CFG_OFFSET(i);
    return NANOBPF_PISA_ROLES_OFFSET;
}
void dpu_tables_save(void) {
    for (unsigned i = 0; i < sizeof boot_tables / sizeof *boot_tables; i++) boot_tables[i] = PISA(table_reg(i));
}
void dpu_tables_restore(void) {
    for (unsigned i = 0; i < sizeof boot_tables / sizeof *boot_tables; i++) PISA(table_reg(i)) = boot_tables[i];
}

void dpu_tables_default(void) {
    for (unsigned i = 0; i < NANOBPF_PISA_PORT_ENTRY_COUNT; i++) PISA(NANOBPF_PISA_PORT_ENTRY_OFFSET(i)) = 0;
    for (unsigned i = 0; i < NANOBPF_PISA_PROFILE_ENTRY_COUNT; i++) PISA(NANOBPF_PISA_PROFILE_ENTRY_OFFSET(i)) = 0;
    for (unsigned i = 0; i < NANOBPF_PISA_LPORT_CFG_COUNT; i++) PISA(NANOBPF_PISA_LPORT_CFG_OFFSET(i)) = 0;
    /* physical port -> logical port, untagged frames */
    PISA(NANOBPF_PISA_PORT_ENTRY_OFFSET(0)) = HOST_PORT_ENTRY;
    PISA(NANOBPF_PISA_PORT_ENTRY_OFFSET(1)) = NANOBPF_PUT(NANOBPF_PISA_PORT_ENTRY_VALID, 1) |
                                             NANOBPF_PUT(NANOBPF_PISA_PORT_ENTRY_PORT, NANOBPF_DATAPATH_NET_PORT) |
                                             NANOBPF_PUT(NANOBPF_PISA_PORT_ENTRY_LPORT, NET_LPORT);
    PISA(NANOBPF_PISA_ROLES_OFFSET) = NANOBPF_PUT(NANOBPF_PISA_ROLES_HOST_LPORT, HOST_LPORT) |
                                      NANOBPF_PUT(NANOBPF_PISA_ROLES_NETWORK_LPORT, NET_LPORT);
    /* every frame that parses goes to the cores: the program decides (as the device model does) */
    PISA(NANOBPF_PISA_LPORT_CFG_OFFSET(HOST_LPORT)) = NANOBPF_PUT(NANOBPF_PISA_LPORT_CFG_DEFAULT_ACTION, NANOBPF_PISA_ACTION_TO_CORES) |
                                                      NANOBPF_PUT(NANOBPF_PISA_LPORT_CFG_EGRESS_PORT, NANOBPF_DATAPATH_HOST_PORT);
    PISA(NANOBPF_PISA_LPORT_CFG_OFFSET(NET_LPORT)) = NANOBPF_PUT(NANOBPF_PISA_LPORT_CFG_DEFAULT_ACTION, NANOBPF_PISA_ACTION_TO_CORES) |
                                                     NANOBPF_PUT(NANOBPF_PISA_LPORT_CFG_EGRESS_PORT, NANOBPF_DATAPATH_NET_PORT);
}

static int brings_host_in(uint64_t e) {
    return NANOBPF_GET(e, NANOBPF_PISA_PORT_ENTRY_VALID) && NANOBPF_GET(e, NANOBPF_PISA_PORT_ENTRY_LPORT) == HOST_LPORT;
}

/* A TABLE_SET/TABLE_DEL word (checked by ctrl.c). Some port entry must still bring the host's control
 * frames in: without one no later request (RESET included) could reach this core. The host may move
 * itself (another VLAN, another port) by adding its new entry before it removes the old one. */
int dpu_table_write(unsigned table, unsigned index, uint32_t value, struct ctrl_reply *r) {
    static const unsigned offsets[] = {NANOBPF_PISA_PORT_ENTRY_OFFSET(0), NANOBPF_PISA_PROFILE_ENTRY_OFFSET(0),
                                       NANOBPF_PISA_LPORT_CFG_OFFSET(0)};
    unsigned off = offsets[table] + 8 * index;
    if (table == NANOBPF_CTRL_TABLE_PORT && !brings_host_in(value)) {
        int kept = 0;
        for (unsigned i = 0; i < NANOBPF_PISA_PORT_ENTRY_COUNT; i++) kept |= i != index && brings_host_in(PISA(NANOBPF_PISA_PORT_ENTRY_OFFSET(i)));
        if (!kept)
            return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID,
                               "port_entry[%u] is the last one that brings the host's control frames in: changing it would cut the control link",
                               index);
    }
    PISA(off) = value;
    return 0;
}

/* One command of PISA's CID table (the hardware takes 2..11 cycles; traffic keeps flowing, and a lookup sees
 * the table before or after it, never half of it): the pisa_cid_status it ended with. */
unsigned dpu_cid_command(unsigned op, const uint8_t *cid, unsigned len, int seal, unsigned slot) {
    for (unsigned w = 0; w < NANOBPF_PISA_CID_KEY_COUNT; w++) {
        uint64_t v = 0;
        /* length 0: the 20 bytes are a peer's address id (NANOBPF_QUIC_ADDR_*) */
        for (unsigned b = 0; b < 8 && 8 * w + b < (len ? len : NANOBPF_KEYTABLE_CID_MAX); b++) v |= (uint64_t)cid[8 * w + b] << (8 * b);
        PISA(NANOBPF_PISA_CID_KEY_OFFSET(w)) = v;
    }
    PISA(NANOBPF_PISA_CID_ARG_OFFSET) = NANOBPF_PUT(NANOBPF_PISA_CID_ARG_LEN, len) | NANOBPF_PUT(NANOBPF_PISA_CID_ARG_SEAL, seal != 0) |
                                        NANOBPF_PUT(NANOBPF_PISA_CID_ARG_SLOT, slot);
    PISA(NANOBPF_PISA_CID_CMD_OFFSET) = NANOBPF_PUT(NANOBPF_PISA_CID_CMD_OP, op);
    uint64_t r;
    while (NANOBPF_GET(r = PISA(NANOBPF_PISA_CID_RESULT_OFFSET), NANOBPF_PISA_CID_RESULT_BUSY)) {
    }
    return (unsigned)NANOBPF_GET(r, NANOBPF_PISA_CID_RESULT_STATUS);
}

const struct ebpf_prog *dpu_prog_current(void) { return attached; }

unsigned dpu_data_cores(void) { return nb_num_cores() > 1 ? nb_num_cores() - 1 : 1; }

/* Core 0 only (the control plane; programs cannot change the key table): a new epoch, then every
 * other core's acknowledgement of it. Core 0 itself is between packets while it runs this. Before
 * the data cores run (boot) there is nobody to wait for. */
void ebpf_quiesce(void) {
    __asm__ volatile("fence rw, rw" ::: "memory");
    if (!epoch) return;
    gate_write();
    for (unsigned h = 1; h < nb_num_cores(); h++)
        while (nb_mailbox_read(h) != epoch) {
        }
}

void dpu_prog_publish(const struct ebpf_prog *prog) {
    attached = prog; /* the program's code and data reach memory before the gate (gate_write's fence) */
    ebpf_quiesce();
}

/* Sleep about `cycles` core cycles: the timer interrupt (enabled in mie, taken by nobody: mstatus.MIE
 * is clear) ends the wfi. */
static void idle(unsigned hart, unsigned cycles) {
    volatile uint64_t *cmp = (volatile uint64_t *)(uintptr_t)(NANOBPF_CLINT_BASE + NANOBPF_CLINT_MTIMECMP_OFFSET(hart));
    uint64_t now = NB_REG64(NANOBPF_CLINT_BASE + NANOBPF_CLINT_MTIME_OFFSET);
    *cmp = now + cycles;
    __asm__ volatile("csrs mie, %0; wfi" ::"r"(1ul << 7));
    *cmp = ~0ull;
}

/* What PISA parsed, from the descriptor and the slot's pkt_meta word, as the program's context fields
 * (ebpf abi struct nanobpf_xdp_ctx): 0 where PISA found nothing. The device model derives the same
 * from its PISA model (nanobpf.models.pisa.xdp_parse); the wire tests compare the two. */
static void parse_result(struct ebpf_xdp_buff *xdp, uint64_t d, uint64_t meta) {
    unsigned ipver = (unsigned)NANOBPF_GET(meta, NANOBPF_PKT_META_IPVER);
    unsigned quic = (unsigned)NANOBPF_GET(d, NANOBPF_PKT_DESC_QUIC);
    uint32_t l3 = 0, l4 = 0, q = 0, cid_len = 0, pn = 0, conn = 0;
    if (ipver == 4 || ipver == 6) {
        l3 = (uint32_t)NANOBPF_GET(meta, NANOBPF_PKT_META_L3_OFF);
        if (NANOBPF_GET(meta, NANOBPF_PKT_META_UDP)) {
            l4 = (uint32_t)NANOBPF_GET(meta, NANOBPF_PKT_META_L4_OFF);
            if (quic != NANOBPF_PISA_QUIC_NONE) {
                q = l4 + 8;
                cid_len = (uint32_t)NANOBPF_GET(meta, NANOBPF_PKT_META_CID_LEN);
                if (quic == NANOBPF_PISA_QUIC_SHORT) pn = q + 1 + cid_len;
                if (NANOBPF_GET(d, NANOBPF_PKT_DESC_CONN_VALID)) conn = 1 + (uint32_t)NANOBPF_GET(d, NANOBPF_PKT_DESC_CONN_SLOT);
            }
        }
    }
    xdp->l3_off = l3, xdp->l4_off = l4, xdp->quic_off = q, xdp->pn_off = pn, xdp->cid_len = cid_len, xdp->conn = conn;
}

/* The program's context: one per core, in its own RAM (thread-local). What never changes between
 * packets is set here once (aead_defer: this loop collects what the engine finishes after the
 * program; the queue and egress indexes are 0), the rest by one_packet and ebpf_xdp_exec for each
 * packet: fewer stores than a struct built anew (each one a write through the D-cache). */
static __thread struct ebpf_xdp_buff xdp_ctx = {.aead_defer = 1};

/* A frame whose seal or open the engine finishes after the program returned (quic_aead_seal with
 * NANOBPF_AEAD_HP_APPLY, quic_aead_open with NANOBPF_AEAD_COMMIT): its completion word waits here while
 * the core runs the next frame, and what one_packet counted for it, to be taken back if the engine
 * refused the seal or found the open's tag forged. */
struct held {
    uint64_t comp;
    const struct ebpf_prog *prog; /* the program that ran it (its counters, for a forged tag) */
    uint32_t pending; /* 1 + the engine request's id; 0: nothing held */
    int8_t tx;        /* the stats.tx index counted, or -1 */
    int8_t sealed;    /* stats.sealed counted */
    int8_t opened;    /* stats.opened counted (the program counted it opened: the DECRYPTED shim) */
};

/* One packet: the frame at its slot in packet memory, run in place; returns the completion word, and in
 * *h the engine request it must wait for (h->pending 0: none). */
static uint64_t one_packet(unsigned hart, uint64_t d, const struct ebpf_prog *prog, struct held *h) {
    unsigned slot = (unsigned)NANOBPF_GET(d, NANOBPF_PKT_DESC_SLOT);
    unsigned len = (unsigned)NANOBPF_GET(d, NANOBPF_PKT_DESC_LEN);
    unsigned lport = (unsigned)NANOBPF_GET(d, NANOBPF_PKT_DESC_LPORT);
    struct core_stats *s = &tally;
    (void)hart;
    uint64_t drop = NANOBPF_PUT(NANOBPF_PKT_COMP_SLOT, slot) | NANOBPF_PUT(NANOBPF_PKT_COMP_ACTION, NANOBPF_XDP_DROP);
    uintptr_t base = NANOBPF_PACKET_MEM_BASE + (uintptr_t)slot * NANOBPF_DATAPATH_SLOT_BYTES;
    uintptr_t data = base + NANOBPF_DATAPATH_HEADROOM;
    if (NANOBPF_GET(d, NANOBPF_PKT_DESC_CTRL)) { /* a control request from the host: answered in place */
        unsigned n;
        s->ctrl++;
        /* Data first: while control frames wait here they hold packet-memory slots, and a flood of them
         * would leave none for data frames. With a quarter of the slots or fewer free, a control frame
         * is dropped unanswered (the host retransmits after its timeout), at once, freeing its slot. */
        if (PKT(NANOBPF_PKT_FREE_SLOTS_OFFSET) <= CTRL_SHED_FREE_SLOTS) {
            s->drops[DPU_DROP_CTRL_SHED]++;
            return drop;
        }
        ctrl_frame(data, len, &n);
        if (!n) {
            s->drops[DPU_DROP_CTRL]++;
            return drop;
        }
        return NANOBPF_PUT(NANOBPF_PKT_COMP_SLOT, slot) | NANOBPF_PUT(NANOBPF_PKT_COMP_ACTION, NANOBPF_XDP_TX) |
               NANOBPF_PUT(NANOBPF_PKT_COMP_LEN, n) | NANOBPF_PUT(NANOBPF_PKT_COMP_OFFSET, NANOBPF_DATAPATH_HEADROOM) |
               NANOBPF_PUT(NANOBPF_PKT_COMP_PORT, HOST_LPORT);
    }
    /* the last 32 bytes of the slot are this packet's header-protection scratch, out of the program's reach */
    uintptr_t end_of_room = base + NANOBPF_DATAPATH_SLOT_BYTES - 32;
    struct ebpf_xdp_buff *xdp = &xdp_ctx;
    xdp->data = xdp->data_meta = data, xdp->data_end = data + len, xdp->data_hard_start = base, xdp->frame_end = end_of_room;
    xdp->hp_scratch = end_of_room;
    xdp->ingress_ifindex = lport == HOST_LPORT ? NANOBPF_IFINDEX_HOST : NANOBPF_IFINDEX_NET;
    xdp->aead_pending = 0;
    parse_result(xdp, d, PKT(NANOBPF_PKT_SLOT_META_OFFSET(slot)));
    /* what the program may assume of its context, checked here with the fields still in registers (the
     * guard reads them and changes none): a descriptor the hardware got wrong aborts the run */
    const int ctx_ok = ebpf_xdp_ctx_ok(xdp);
    struct dpu_guard g;
    unsigned from = lport == HOST_LPORT ? 0 : 1;
    s->rx[from]++;
    int why = dpu_guard_before(prog, xdp, &g);
    if (g.seal || why == DPU_DROP_ENCRYPT_NO_PROG) s->encrypt_req++;
    if (why >= 0) {
        s->drops[why]++;
        return drop;
    }
    if (!prog) { /* nothing attached: onwards, unchanged (the device model's rule) */
        s->tx[!from]++;
        return NANOBPF_PUT(NANOBPF_PKT_COMP_SLOT, slot) | NANOBPF_PUT(NANOBPF_PKT_COMP_ACTION, NANOBPF_XDP_PASS) |
               NANOBPF_PUT(NANOBPF_PKT_COMP_LEN, len) | NANOBPF_PUT(NANOBPF_PKT_COMP_OFFSET, NANOBPF_DATAPATH_HEADROOM) |
               NANOBPF_PUT(NANOBPF_PKT_COMP_PORT, from ? HOST_LPORT : NET_LPORT);
    }
    /* no error report: nothing here would read it (a refused context or a faulting run is ABORTED) */
    uint64_t action, e0 = nb_aead_wait_cycles(), c0 = nb_cycles();
    if (ctx_ok) ebpf_xdp_exec_jit_ok(prog, xdp, &action);
    else ebpf_xdp_exec_general(prog, xdp, 1, &action, NULL); /* refuses it: ABORTED */
    uint64_t cycles = nb_cycles() - c0, engine = nb_aead_wait_cycles() - e0;
    h->pending = xdp->aead_pending; /* whatever becomes of the frame, the engine may still be writing it */
    /* tallies are stored only when they change: main memory is write-through, so every store goes to
     * the bus, and the fence before the completion waits for all of them */
    s->port_packets[from]++;
    s->port_cycles[from] += cycles;
    if (engine) s->port_engine[from] += engine;
    if (action > NANOBPF_XDP_REDIRECT) action = NANOBPF_XDP_ABORTED, s->aborted_by_runtime++;
    s->actions[action]++;
    uint32_t out = action == NANOBPF_XDP_PASS ? (lport == HOST_LPORT ? NANOBPF_IFINDEX_NET : NANOBPF_IFINDEX_HOST)
                 : action == NANOBPF_XDP_TX ? xdp->ingress_ifindex
                 : action == NANOBPF_XDP_REDIRECT ? xdp->redirect_ifindex : 0;
    if (action == NANOBPF_XDP_REDIRECT && out != NANOBPF_IFINDEX_HOST && out != NANOBPF_IFINDEX_NET) {
        s->bad_port++;
        return drop; /* no such port */
    }
    if (out) {
        why = dpu_guard_after(xdp, &g, out);
        if (why >= 0) {
            s->drops[why]++;
            return drop;
        }
        if (g.done == DPU_GUARD_SEALED) s->sealed++, h->sealed = 1;
        if (g.done == DPU_GUARD_OPENED) s->opened++, h->opened = 1;
    }
    unsigned port = out == NANOBPF_IFINDEX_HOST ? HOST_LPORT : NET_LPORT;
    if (out) h->tx = out == NANOBPF_IFINDEX_HOST ? 0 : 1, s->tx[h->tx]++;
    /* the program left the checksums to the egress's deparser (bpf_xdp_csum_offload), or a helper the
     * lengths with them: it sets and sums them as the frame leaves, behind the DECRYPTED shim too */
    return NANOBPF_PUT(NANOBPF_PKT_COMP_SLOT, slot) | NANOBPF_PUT(NANOBPF_PKT_COMP_ACTION, action) |
           NANOBPF_PUT(NANOBPF_PKT_COMP_FIX_CSUM, xdp->csum_offload & EBPF_XDP_OFFLOAD_CSUM) |
           NANOBPF_PUT(NANOBPF_PKT_COMP_FIX_LEN, (xdp->csum_offload & EBPF_XDP_OFFLOAD_LEN) != 0) |
           NANOBPF_PUT(NANOBPF_PKT_COMP_LEN, xdp->data_end - xdp->data) |
           NANOBPF_PUT(NANOBPF_PKT_COMP_OFFSET, xdp->data - base) | NANOBPF_PUT(NANOBPF_PKT_COMP_PORT, port) |
           NANOBPF_PUT(NANOBPF_PKT_COMP_SHIM, g.egress);
}

/* The harness has sent every frame and the ports are idle, and every slot is free again: no frame is
 * left on a core, in the reorder buffer or in the egress (data cores may still be working when the
 * ports have been quiet for a while). */
static int drained(void) {
    return (NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_SIM_DRAIN_OFFSET) & 1) &&
           PKT(NANOBPF_PKT_FREE_SLOTS_OFFSET) == NANOBPF_DATAPATH_SLOTS;
}

static uint64_t pisa_count(unsigned i) { return PISA(NANOBPF_PISA_COUNTER_OFFSET(i)); }
static uint64_t pkt_count(unsigned i) { return PKT(NANOBPF_PKT_COUNTER_OFFSET(i)); }

/* Core c's tallies as memory holds them (the data cores write them through their own caches). */
static void stats_snapshot(unsigned c, struct core_stats *out) {
    uint64_t *src = (uint64_t *)(void *)&stats[c], *dst = (uint64_t *)(void *)out;
    for (size_t i = 0; i < sizeof *out / 8; i++) dst[i] = dpu_read_fresh(&src[i]);
}

/* The program's counter array `name` (quic_stats, quic_drops of the QUIC programs), summed over the
 * cores, as a summary line; nothing when the program has no such map. */
static void prog_counters(const struct ebpf_prog *prog, const char *name, const char *const *names, uint32_t count) {
    struct ebpf_map *m = NULL;
    for (uint32_t i = 0; prog && i < prog->n_maps; i++)
        if (!strcmp(prog->maps[i]->name, name)) m = prog->maps[i];
    if (!m || m->value_size != 8 || m->max_entries < count ||
        (m->type != NANOBPF_MAP_TYPE_ARRAY && m->type != NANOBPF_MAP_TYPE_PERCPU_ARRAY))
        return;
    printf("DPU %s", name);
    for (uint32_t k = 0; k < count; k++) {
        uint64_t sum = 0;
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++) {
            uint64_t *v = ebpf_map_value(m, &k, cpu);
            if (v) sum += dpu_read_fresh(v); /* each core wrote its own through its cache */
        }
        printf(" %s=%llu", names[k], (unsigned long long)sum);
    }
    printf("\n");
}

/* The summary the tests parse: one `DPU key=value ...` line per subject. */
static int summary(unsigned cores) {
    /* every slot is free: each data core has finished its frames; a new epoch, which each one
     * acknowledges only once it has published its tallies */
    ebpf_quiesce();
    printf("DPU pisa rx=%llu to_cores=%llu to_host=%llu to_network=%llu dropped=%llu tx=%llu tx_dropped=%llu\n",
           (unsigned long long)pisa_count(NANOBPF_PISA_COUNTER_RX_FRAMES),
           (unsigned long long)pisa_count(NANOBPF_PISA_COUNTER_TO_CORES),
           (unsigned long long)pisa_count(NANOBPF_PISA_COUNTER_TO_HOST),
           (unsigned long long)pisa_count(NANOBPF_PISA_COUNTER_TO_NETWORK),
           (unsigned long long)pisa_count(NANOBPF_PISA_COUNTER_DROPPED),
           (unsigned long long)pisa_count(NANOBPF_PISA_COUNTER_TX_FRAMES),
           (unsigned long long)pisa_count(NANOBPF_PISA_COUNTER_TX_DROPPED));
    printf("DPU pisa_drops");
    static const char *const reasons[] = NANOBPF_PISA_DROP_NAMES;
    for (unsigned r = NANOBPF_PISA_DROP_TOO_LONG; r < sizeof reasons / sizeof *reasons; r++)
        printf(" %s=%llu", reasons[r], (unsigned long long)pisa_count(NANOBPF_PISA_COUNTER_DROP_TOO_LONG + r - NANOBPF_PISA_DROP_TOO_LONG));
    printf("\n");
    printf("DPU pkt rx=%llu drop_full=%llu dispatched=%llu completions=%llu bad_completions=%llu released=%llu "
           "released_drop=%llu egress=%llu egress_bad=%llu free_slots=%llu\n",
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_RX_FRAMES),
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_RX_DROP_FULL),
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_DISPATCHED),
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_COMPLETIONS),
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_BAD_COMPLETIONS),
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_RELEASED),
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_RELEASED_DROP),
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_EGRESS_FRAMES),
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_EGRESS_BAD),
           (unsigned long long)PKT(NANOBPF_PKT_FREE_SLOTS_OFFSET));
    printf("DPU ports host_rx=%llu host_tx=%llu net_rx=%llu net_tx=%llu\n",
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_RX_PORT0 + NANOBPF_DATAPATH_HOST_PORT),
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_TX_PORT0 + NANOBPF_DATAPATH_HOST_PORT),
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_RX_PORT0 + NANOBPF_DATAPATH_NET_PORT),
           (unsigned long long)pkt_count(NANOBPF_PKT_COUNTER_TX_PORT0 + NANOBPF_DATAPATH_NET_PORT));
    for (unsigned c = 0; c < cores; c++) {
        struct core_stats snap;
        stats_snapshot(c, &snap);
        const struct core_stats *s = &snap;
        printf("DPU core%u packets=%llu cycles=%llu busy=%llu aborted=%llu drop=%llu pass=%llu tx=%llu redirect=%llu ctrl=%llu", c,
               (unsigned long long)(s->port_packets[0] + s->port_packets[1]),
               (unsigned long long)(s->port_cycles[0] + s->port_cycles[1]), (unsigned long long)s->busy,
               (unsigned long long)s->actions[0],
               (unsigned long long)s->actions[1], (unsigned long long)s->actions[2], (unsigned long long)s->actions[3],
               (unsigned long long)s->actions[4], (unsigned long long)s->ctrl);
        static const char *const drop_names[] = DPU_DROP_NAMES;
        for (unsigned r = 0; r < DPU_DROPS; r++) printf(" %s=%llu", drop_names[r], (unsigned long long)s->drops[r]);
        printf(" sealed=%llu opened=%llu engine=%llu", (unsigned long long)s->sealed, (unsigned long long)s->opened,
               (unsigned long long)(s->port_engine[0] + s->port_engine[1]));
        static const char *const from[2] = {"host", "net"};
        for (unsigned p = 0; p < 2; p++)
            printf(" %s_packets=%llu %s_cycles=%llu %s_engine=%llu", from[p], (unsigned long long)s->port_packets[p], from[p],
                   (unsigned long long)s->port_cycles[p], from[p], (unsigned long long)s->port_engine[p]);
        printf("\n");
    }
    static const char *const stat_names[] = NANOBPF_QUIC_STAT_NAMES, *const drop_names[] = NANOBPF_QUIC_DROP_NAMES;
    prog_counters(dpu_prog_current(), "quic_stats", stat_names, NANOBPF_QUIC_STAT_COUNT);
    prog_counters(dpu_prog_current(), "quic_drops", drop_names, NANOBPF_QUIC_DROP_COUNT);
    return 0;
}

/* Hand a frame to the egress: every byte this core wrote into it reaches packet memory before the
 * completion tells the egress to read it (uncached stores to two slaves are not ordered otherwise:
 * without the fence, a shim's last bytes were seen missing under load). */
static void complete(unsigned hart, uint64_t comp) {
    __asm__ volatile("fence iorw, iorw" ::: "memory");
    PKT(NANOBPF_PKT_CORE_COMP_OFFSET(hart)) = comp;
}

/* The held frame's engine request is done (ebpf_aead_finish waits if need be): out it goes, or it is
 * dropped. A frame to seal that the engine refused would have left unsealed: counted encrypt_unsealed
 * (fail closed). An open whose tag the engine found forged: unauthenticated data never reaches the
 * host; counted as the program's XDP_DROP for a forged tag (and in the program's counters:
 * dpu_guard_forged). Otherwise (the program dropped the frame anyway) nothing more is counted. */
static __attribute__((noinline, cold)) void refused(struct held *h) {
    struct core_stats *s = &tally;
    unsigned slot = (unsigned)NANOBPF_GET(h->comp, NANOBPF_PKT_COMP_SLOT);
    unsigned action = (unsigned)NANOBPF_GET(h->comp, NANOBPF_PKT_COMP_ACTION);
    s->actions[action]--;
    s->actions[NANOBPF_XDP_DROP]++;
    if (h->tx >= 0) s->tx[h->tx]--;
    if (h->opened) {
        s->opened--;
        dpu_guard_forged(h->prog);
    } else if (h->sealed) { /* leaving sealed: the guard lets a frame to seal leave only so */
        s->sealed--;
        s->drops[DPU_DROP_ENCRYPT_UNSEALED]++;
    }
    h->comp = NANOBPF_PUT(NANOBPF_PKT_COMP_SLOT, slot) | NANOBPF_PUT(NANOBPF_PKT_COMP_ACTION, NANOBPF_XDP_DROP);
}
static void release(unsigned hart, struct held *h) {
    if (ebpf_aead_finish(h->pending)) refused(h);
    complete(hart, h->comp);
    h->pending = 0;
}

static void data_loop(unsigned hart, int also_control) {
    const struct ebpf_prog *prog = NULL;
    uint64_t seen = 0; /* the gate's epoch this core took last */
    /* A frame the engine is still sealing or opening waits here while the core runs the next one: the
     * engine's time overlaps the next program instead of the core polling for it. */
    struct held held = {.pending = 0};
    unsigned unpublished = 0;
    for (;;) {
        uint64_t t0 = nb_cycles();
        uint64_t g = nb_mailbox_read(0);
        if (GATE_EPOCH(g) != seen) { /* rare: core 0 waits for this core (the gate, above) */
            if (held.pending) release(hart, &held), tally.busy += nb_cycles() - t0;
            publish(hart), unpublished = 0;
            if (GATE_PROG(g) != prog) {
                /* another program: its code and data may sit where an old one's were cached here */
                __asm__ volatile("fence rw, rw\n\tfence.i" ::: "memory");
                dpu_guard_reset();
                prog = GATE_PROG(g);
            }
            seen = GATE_EPOCH(g);
            __asm__ volatile("fence rw, rw" ::: "memory"); /* every access of the frames before, first */
            if (hart) nb_mailbox_write(hart, seen);
            continue;
        }
        uint64_t d = PKT(NANOBPF_PKT_CORE_DESC_OFFSET(hart));
        if (NANOBPF_GET(d, NANOBPF_PKT_DESC_VALID)) {
            if (NANOBPF_GET(d, NANOBPF_PKT_DESC_CTRL)) {
                /* a control frame may change keys: no seal of this core is left in the engine then;
                 * and it may ask for STATS, which this core's counts are part of */
                if (held.pending) release(hart, &held);
                publish(hart);
            }
            struct held now = {.prog = prog, .pending = 0, .tx = -1, .sealed = 0, .opened = 0};
            now.comp = one_packet(hart, d, prog, &now);
            if (held.pending) release(hart, &held);
            if (now.pending) held = now;
            else complete(hart, now.comp);
            tally.busy += nb_cycles() - t0; /* descriptor read to completion written */
            if (++unpublished == PUBLISH_EVERY) publish(hart), unpublished = 0;
            continue;
        }
        if (held.pending) { /* nothing to overlap with: wait for the engine now */
            release(hart, &held);
            tally.busy += nb_cycles() - t0;
            unpublished++;
            continue;
        }
        if (unpublished) publish(hart), unpublished = 0;
        if (also_control) {
            if (drained()) return;
            dpu_status_tick();
        }
        idle(hart, also_control && nb_num_cores() > 1 ? CTRL_IDLE_CYCLES : IDLE_CYCLES);
    }
}

/* The data path's STATS counters (the others are the control plane's): the cores' tallies and, for
 * control frames from the network, the CID table's refused inserts and shims the egress kept off the
 * wire, PISA's. Reported since power-on
 * or the last RESET (stats_base). */
static const unsigned stat_ids[] = {NANOBPF_CTRL_STAT_HOST_RX, NANOBPF_CTRL_STAT_HOST_TX, NANOBPF_CTRL_STAT_NET_RX,
                                    NANOBPF_CTRL_STAT_NET_TX, NANOBPF_CTRL_STAT_DECRYPTED, NANOBPF_CTRL_STAT_ENCRYPT_REQ,
                                    NANOBPF_CTRL_STAT_XDP_DROP, NANOBPF_CTRL_STAT_XDP_PASS, NANOBPF_CTRL_STAT_XDP_TX,
                                    NANOBPF_CTRL_STAT_ENCRYPT_NO_PROG, NANOBPF_CTRL_STAT_ENCRYPT_UNSEALED,
                                    NANOBPF_CTRL_STAT_BAD_SHIM, NANOBPF_CTRL_STAT_CTRL_FOREIGN, NANOBPF_CTRL_STAT_CTRL_SHED,
                                    NANOBPF_CTRL_STAT_CID_FULL, NANOBPF_CTRL_STAT_SHIM_TO_NET, NANOBPF_CTRL_STAT_NO_LPORT};
static uint64_t stats_base[NANOBPF_STAT_COUNT];

static void stats_raw(uint64_t *v) {
    for (unsigned i = 0; i < sizeof stat_ids / sizeof *stat_ids; i++) v[stat_ids[i]] = 0;
    for (unsigned c = 0; c < nb_num_cores(); c++) {
        struct core_stats snap;
        stats_snapshot(c, &snap);
        const struct core_stats *s = &snap;
        v[NANOBPF_CTRL_STAT_HOST_RX] += s->rx[0];
        v[NANOBPF_CTRL_STAT_NET_RX] += s->rx[1];
        v[NANOBPF_CTRL_STAT_HOST_TX] += s->tx[0];
        v[NANOBPF_CTRL_STAT_NET_TX] += s->tx[1];
        v[NANOBPF_CTRL_STAT_DECRYPTED] += s->opened;
        v[NANOBPF_CTRL_STAT_ENCRYPT_REQ] += s->encrypt_req;
        v[NANOBPF_CTRL_STAT_XDP_DROP] += s->actions[NANOBPF_XDP_ABORTED] + s->actions[NANOBPF_XDP_DROP] + s->bad_port;
        v[NANOBPF_CTRL_STAT_XDP_PASS] += s->actions[NANOBPF_XDP_PASS];
        v[NANOBPF_CTRL_STAT_XDP_TX] += s->actions[NANOBPF_XDP_TX] + s->actions[NANOBPF_XDP_REDIRECT] - s->bad_port;
        v[NANOBPF_CTRL_STAT_ENCRYPT_NO_PROG] += s->drops[DPU_DROP_ENCRYPT_NO_PROG];
        v[NANOBPF_CTRL_STAT_ENCRYPT_UNSEALED] += s->drops[DPU_DROP_ENCRYPT_UNSEALED];
        v[NANOBPF_CTRL_STAT_BAD_SHIM] += s->drops[DPU_DROP_BAD_SHIM];
        v[NANOBPF_CTRL_STAT_CTRL_SHED] += s->drops[DPU_DROP_CTRL_SHED];
    }
    v[NANOBPF_CTRL_STAT_CTRL_FOREIGN] = pisa_count(NANOBPF_PISA_COUNTER_DROP_CTRL_FOREIGN);
    v[NANOBPF_CTRL_STAT_CID_FULL] = pisa_count(NANOBPF_PISA_COUNTER_CID_FULL);
    v[NANOBPF_CTRL_STAT_NO_LPORT] = pisa_count(NANOBPF_PISA_COUNTER_DROP_NO_LPORT);
    /* the cores counted these out; the egress's deparser dropped them */
    v[NANOBPF_CTRL_STAT_SHIM_TO_NET] = pisa_count(NANOBPF_PISA_COUNTER_TX_SHIM);
    v[NANOBPF_CTRL_STAT_NET_TX] -= v[NANOBPF_CTRL_STAT_SHIM_TO_NET];
}

void dpu_stats_read(uint64_t *v) {
    uint64_t raw[NANOBPF_STAT_COUNT];
    stats_raw(raw);
    for (unsigned i = 0; i < sizeof stat_ids / sizeof *stat_ids; i++) v[stat_ids[i]] = raw[stat_ids[i]] - stats_base[stat_ids[i]];
}

void dpu_stats_zero(void) { stats_raw(stats_base); }

/* The firmware's built-in program, if it has one: loaded, verified (or its record applied), compiled,
 * its boot configuration applied and attached. 0, or -1 after printing why. */
static int boot_program(void) {
    size_t image_size = (size_t)(dpu_prog_image_end - dpu_prog_image), record_size = (size_t)(dpu_prog_record_end - dpu_prog_record);
    unsigned entries;
    if (!image_size) {
        printf("dpu: no built-in program: waiting for the host's (PROG_COMMIT)\n");
        return 0;
    }
    struct ebpf_error err = {-1, ""};
    struct ebpf_prog *prog = ebpf_alloc(sizeof *prog);
    uint64_t t0 = nb_cycles();
    /* verified here, or at build time by the same verifier (the record binds its result to this image) */
    if (!prog || ebpf_image_load(dpu_prog_image, image_size, prog, &err) ||
        (record_size ? ebpf_record_apply(prog, dpu_prog_image, image_size, dpu_prog_record, record_size, &err)
                     : ebpf_verify(prog, NULL, &err))) {
        printf("FAIL loading the built-in program: insn %d: %s\n", err.insn, err.msg);
        return -1;
    }
    uint64_t t1 = nb_cycles();
    if (ebpf_prog_resolve(prog, &err) || ebpf_jit_compile(prog, 0, &err)) {
        printf("FAIL compiling the built-in program: insn %d: %s\n", err.insn, err.msg);
        return -1;
    }
    uint64_t t2 = nb_cycles();
    if (dpu_boot_config_apply(prog, &entries)) return -1;
    /* the image's CRC-32 as PROG_INFO reports it: the record's, once applied (it was checked against the image) */
    uint32_t crc = record_size ? ebpf_record_crc(dpu_prog_record) : ebpf_crc32(dpu_prog_image, image_size);
    ctrl_prog_boot(prog, prog->name, (uint32_t)image_size, crc);
    printf("dpu: %u core(s), program %s: %u instructions, %s in %llu cycles, JIT %u bytes in %llu cycles, "
           "%u boot config entries, installed in %llu cycles\n",
           nb_num_cores(), prog->name, prog->n_insns, record_size ? "loaded, verification record applied" : "loaded, verified",
           (unsigned long long)(t1 - t0), prog->jit_size, (unsigned long long)(t2 - t1), entries,
           (unsigned long long)(nb_cycles() - t0));
    return 0;
}

int hart_main(unsigned hart) {
    unsigned cores = nb_num_cores();
    if (hart != 0) {
        while (!nb_mailbox_read(0)) idle(hart, IDLE_CYCLES); /* the control core has installed the program */
        data_loop(hart, 0);
        return 0;
    }
    nb_leds(0x1); /* on a board, LED 4 alone: booting (dpu_status_tick moves a light once ready) */
    if (ctrl_keys_init()) {
        printf("FAIL binding the key table: no shared memory\n");
        return 1;
    }
    ctrl_power_on();
    ctrl_auth_init();
    printf("dpu: control key id %08lx\n", (unsigned long)ctrl_auth_id()); /* nanobpf-ctrl-key id: the host's must match */
    dpu_tables_default(); /* first: the boot configuration may add table words (@table) */
    if (boot_program()) return 1;
    dpu_tables_save(); /* what RESET restores */
    gate_write(); /* the first epoch: the data cores start */
    for (unsigned h = 1; h < cores; h++) nb_wake(h);
    /* Ready once every data core is in its loop: each acknowledges the first epoch there. Frames that
     * came before would wait for cores still booting (copying their data, clearing their own RAM). The
     * line is printed before the flag is set: its UART polls then share no bus with the first frames. */
    uint64_t woken = nb_cycles();
    for (unsigned h = 1; h < cores; h++)
        while (nb_mailbox_read(h) != epoch) {
            if (nb_cycles() - woken > DATA_CORE_START_CYCLES) {
                printf("FAIL: data core %u did not reach its packet loop in %u cycles\n", h, DATA_CORE_START_CYCLES);
                return 1;
            }
            idle(0, IDLE_CYCLES);
        }
    printf("dpu: ready at cycle %llu\n", (unsigned long long)nb_cycles());
    NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_DATAPATH_READY_OFFSET) = 1;
    data_loop(0, 1); /* with other cores, core 0's queue holds only control frames */
    ctrl_cost_print();
    return summary(cores);
}
