/* dpu: the DPU's data-plane firmware (docs/dataplane.md).
 *
 * Core 0 is the control core: at boot it loads, verifies (or applies the build host's verification
 * record, when the image carries one) and JIT-compiles the built-in XDP program (linked into the image, images.S), sets up the PISA pipeline (host and network logical ports, every
 * frame to the cores) and the core select, then wakes the data cores; its own queue then holds only
 * the control frames from the host (dropped and counted until the control protocol runs here). Every data core loops: pop a
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
#include "dpu.h"
#include "nanobpf.h"
#include "nanobpf_aead.h"

extern const uint8_t dpu_prog_image[], dpu_prog_image_end[], dpu_prog_record[], dpu_prog_record_end[];

#define PISA(off) NB_REG64(NANOBPF_PISA_BASE + (off))
#define PKT(off) NB_REG64(NANOBPF_PKT_BASE + (off))
#define HOST_LPORT NANOBPF_DATAPATH_HOST_LPORT /* the default tables (hw/defs/soc.toml [datapath]) */
#define NET_LPORT NANOBPF_DATAPATH_NET_LPORT
#define IDLE_CYCLES 128 /* a data core with an empty queue sleeps this long before it looks again */

static struct ebpf_prog prog;

/* Per-core tallies, each written only by its core (write-through caches: they reach memory), read by
 * core 0 at the end. One cache line each. */
struct core_stats {
    uint64_t packets, cycles, busy, engine, actions[5], aborted_by_runtime, ctrl, drops[DPU_DROPS], sealed, opened;
    /* the same by ingress port (0 host, 1 network): with xdp_quic_hw, seal and open */
    uint64_t port_packets[2], port_cycles[2], port_engine[2];
} __attribute__((aligned(64)));
static struct core_stats stats[NANOBPF_MAX_CORES];

static int setup_pisa(void) {
    /* physical port -> logical port, untagged frames */
    PISA(NANOBPF_PISA_PORT_ENTRY_OFFSET(0)) = NANOBPF_PUT(NANOBPF_PISA_PORT_ENTRY_VALID, 1) |
                                             NANOBPF_PUT(NANOBPF_PISA_PORT_ENTRY_PORT, NANOBPF_DATAPATH_HOST_PORT) |
                                             NANOBPF_PUT(NANOBPF_PISA_PORT_ENTRY_LPORT, HOST_LPORT);
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
    return 0;
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
 * from its PISA model (nanobpf.pisa.xdp_parse); the wire tests compare the two. */
static void parse_result(struct ebpf_xdp_buff *xdp, uint64_t d, uint64_t meta) {
    unsigned ipver = (unsigned)NANOBPF_GET(meta, NANOBPF_PKT_META_IPVER);
    unsigned quic = (unsigned)NANOBPF_GET(d, NANOBPF_PKT_DESC_QUIC);
    if (ipver != 4 && ipver != 6) return;
    xdp->l3_off = (uint32_t)NANOBPF_GET(meta, NANOBPF_PKT_META_L3_OFF);
    if (!NANOBPF_GET(meta, NANOBPF_PKT_META_UDP)) return;
    xdp->l4_off = (uint32_t)NANOBPF_GET(meta, NANOBPF_PKT_META_L4_OFF);
    if (quic == NANOBPF_PISA_QUIC_NONE) return;
    xdp->quic_off = xdp->l4_off + 8;
    xdp->cid_len = (uint32_t)NANOBPF_GET(meta, NANOBPF_PKT_META_CID_LEN);
    if (quic == NANOBPF_PISA_QUIC_SHORT) xdp->pn_off = xdp->quic_off + 1 + xdp->cid_len;
    if (NANOBPF_GET(d, NANOBPF_PKT_DESC_CONN_VALID)) xdp->conn = 1 + (uint32_t)NANOBPF_GET(d, NANOBPF_PKT_DESC_CONN_SLOT);
}

/* One packet: the frame at its slot in packet memory, run in place; returns the completion word. */
static uint64_t one_packet(unsigned hart, uint64_t d) {
    unsigned slot = (unsigned)NANOBPF_GET(d, NANOBPF_PKT_DESC_SLOT);
    unsigned len = (unsigned)NANOBPF_GET(d, NANOBPF_PKT_DESC_LEN);
    unsigned lport = (unsigned)NANOBPF_GET(d, NANOBPF_PKT_DESC_LPORT);
    struct core_stats *s = &stats[hart];
    uint64_t drop = NANOBPF_PUT(NANOBPF_PKT_COMP_SLOT, slot) | NANOBPF_PUT(NANOBPF_PKT_COMP_ACTION, NANOBPF_XDP_DROP);
    if (NANOBPF_GET(d, NANOBPF_PKT_DESC_CTRL)) { /* the control protocol is not spoken here yet (issue 23) */
        s->ctrl++;
        s->drops[DPU_DROP_CTRL]++;
        return drop;
    }
    uintptr_t base = NANOBPF_PACKET_MEM_BASE + (uintptr_t)slot * NANOBPF_DATAPATH_SLOT_BYTES;
    uintptr_t data = base + NANOBPF_DATAPATH_HEADROOM;
    /* the last 32 bytes of the slot are this packet's header-protection scratch, out of the program's reach */
    uintptr_t end_of_room = base + NANOBPF_DATAPATH_SLOT_BYTES - 32;
    ebpf_set_hp_scratch((void *)end_of_room);
    struct ebpf_xdp_buff xdp = {.data = data, .data_end = data + len, .data_meta = data, .data_hard_start = base,
                                .frame_end = end_of_room,
                                .ingress_ifindex = lport == HOST_LPORT ? NANOBPF_IFINDEX_HOST : NANOBPF_IFINDEX_NET};
    parse_result(&xdp, d, PKT(NANOBPF_PKT_SLOT_META_OFFSET(slot)));
    struct dpu_guard g;
    int why = dpu_guard_before(&prog, &xdp, &g);
    if (why >= 0) {
        s->drops[why]++;
        return drop;
    }
    struct ebpf_error err = {-1, ""};
    uint64_t e0 = nb_aead_wait_cycles(), c0 = nb_cycles();
    uint64_t action = ebpf_xdp_run(&prog, &xdp, 1, &err);
    uint64_t cycles = nb_cycles() - c0, engine = nb_aead_wait_cycles() - e0;
    unsigned from = lport == HOST_LPORT ? 0 : 1;
    s->cycles += cycles;
    s->engine += engine;
    s->packets++;
    s->port_packets[from]++;
    s->port_cycles[from] += cycles;
    s->port_engine[from] += engine;
    if (action > NANOBPF_XDP_REDIRECT) action = NANOBPF_XDP_ABORTED, s->aborted_by_runtime++;
    s->actions[action]++;
    uint32_t out = action == NANOBPF_XDP_PASS ? (lport == HOST_LPORT ? NANOBPF_IFINDEX_NET : NANOBPF_IFINDEX_HOST)
                 : action == NANOBPF_XDP_TX ? xdp.ingress_ifindex
                 : action == NANOBPF_XDP_REDIRECT ? xdp.redirect_ifindex : 0;
    if (action == NANOBPF_XDP_REDIRECT && out != NANOBPF_IFINDEX_HOST && out != NANOBPF_IFINDEX_NET)
        return drop; /* no such port */
    if (out) {
        why = dpu_guard_after(&prog, &xdp, &g, out);
        if (why >= 0) {
            s->drops[why]++;
            return drop;
        }
        s->sealed += g.done == DPU_GUARD_SEALED;
        s->opened += g.done == DPU_GUARD_OPENED;
    }
    unsigned port = out == NANOBPF_IFINDEX_HOST ? HOST_LPORT : NET_LPORT;
    return NANOBPF_PUT(NANOBPF_PKT_COMP_SLOT, slot) | NANOBPF_PUT(NANOBPF_PKT_COMP_ACTION, action) |
           NANOBPF_PUT(NANOBPF_PKT_COMP_LEN, xdp.data_end - xdp.data) |
           NANOBPF_PUT(NANOBPF_PKT_COMP_OFFSET, xdp.data - base) | NANOBPF_PUT(NANOBPF_PKT_COMP_PORT, port);
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

/* The summary the tests parse: one `DPU key=value ...` line per subject. */
static int summary(unsigned cores) {
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
    __asm__ volatile("fence" ::: "memory"); /* the data cores' tallies: not from a stale line */
    for (unsigned c = 0; c < cores; c++) {
        volatile struct core_stats *s = &stats[c];
        printf("DPU core%u packets=%llu cycles=%llu busy=%llu aborted=%llu drop=%llu pass=%llu tx=%llu redirect=%llu ctrl=%llu", c,
               (unsigned long long)s->packets, (unsigned long long)s->cycles, (unsigned long long)s->busy,
               (unsigned long long)s->actions[0],
               (unsigned long long)s->actions[1], (unsigned long long)s->actions[2], (unsigned long long)s->actions[3],
               (unsigned long long)s->actions[4], (unsigned long long)s->ctrl);
        static const char *const drop_names[] = DPU_DROP_NAMES;
        for (unsigned r = 0; r < DPU_DROPS; r++) printf(" %s=%llu", drop_names[r], (unsigned long long)s->drops[r]);
        printf(" sealed=%llu opened=%llu engine=%llu", (unsigned long long)s->sealed, (unsigned long long)s->opened,
               (unsigned long long)s->engine);
        static const char *const from[2] = {"host", "net"};
        for (unsigned p = 0; p < 2; p++)
            printf(" %s_packets=%llu %s_cycles=%llu %s_engine=%llu", from[p], (unsigned long long)s->port_packets[p], from[p],
                   (unsigned long long)s->port_cycles[p], from[p], (unsigned long long)s->port_engine[p]);
        printf("\n");
    }
    return 0;
}

static void data_loop(unsigned hart, int also_control) {
    for (;;) {
        uint64_t t0 = nb_cycles();
        uint64_t d = PKT(NANOBPF_PKT_CORE_DESC_OFFSET(hart));
        if (NANOBPF_GET(d, NANOBPF_PKT_DESC_VALID)) {
            uint64_t comp = one_packet(hart, d);
            /* every byte this core wrote into the frame reaches packet memory before the completion
             * tells the egress to read it (uncached stores to two slaves are not ordered otherwise:
             * without this, a shim's last bytes were seen missing under load) */
            __asm__ volatile("fence iorw, iorw" ::: "memory");
            PKT(NANOBPF_PKT_CORE_COMP_OFFSET(hart)) = comp;
            stats[hart].busy += nb_cycles() - t0; /* descriptor read to completion written */
            continue;
        }
        if (also_control && drained()) return;
        idle(hart, IDLE_CYCLES);
    }
}

int hart_main(unsigned hart) {
    unsigned cores = nb_num_cores();
    if (hart != 0) {
        while (!nb_mailbox_read(0)) idle(hart, IDLE_CYCLES); /* the control core has installed the program */
        data_loop(hart, 0);
        return 0;
    }
    struct ebpf_error err = {-1, ""};
    uint64_t t0 = nb_cycles();
    size_t image_size = (size_t)(dpu_prog_image_end - dpu_prog_image), record_size = (size_t)(dpu_prog_record_end - dpu_prog_record);
    /* verified here, or at build time by the same verifier (the record binds its result to this image) */
    if (ebpf_image_load(dpu_prog_image, image_size, &prog, &err) ||
        (record_size ? ebpf_record_apply(&prog, dpu_prog_image, image_size, dpu_prog_record, record_size, &err)
                     : ebpf_verify(&prog, NULL, &err))) {
        printf("FAIL loading the built-in program: insn %d: %s\n", err.insn, err.msg);
        return 1;
    }
    uint64_t t1 = nb_cycles();
    if (ebpf_prog_resolve(&prog, &err) || ebpf_jit_compile(&prog, 0, &err)) {
        printf("FAIL compiling the built-in program: insn %d: %s\n", err.insn, err.msg);
        return 1;
    }
    uint64_t t2 = nb_cycles();
    unsigned entries;
    if (dpu_boot_config_apply(&prog, &entries)) return 1;
    printf("dpu: %u core(s), program %s: %u instructions, %s in %llu cycles, JIT %u bytes in %llu cycles, "
           "%u boot config entries, installed in %llu cycles\n",
           cores, prog.name, prog.n_insns, record_size ? "loaded, verification record applied" : "loaded, verified",
           (unsigned long long)(t1 - t0), prog.jit_size, (unsigned long long)(t2 - t1), entries,
           (unsigned long long)(nb_cycles() - t0));
    setup_pisa();
    __asm__ volatile("fence" ::: "memory");
    nb_mailbox_write(0, 1);
    for (unsigned h = 1; h < cores; h++) nb_wake(h);
    NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_DATAPATH_READY_OFFSET) = 1;
    printf("dpu: ready at cycle %llu\n", (unsigned long long)nb_cycles());
    data_loop(0, 1); /* with other cores, core 0's queue holds only control frames */
    return summary(cores);
}
