/* A real XDP program (tests/ebpf/device/xdp_device_test.c, compiled by clang, loaded by
 * nanobpf-load) on the CVA6 model: load, verify, JIT, then run every test frame through the
 * interpreter and through the JIT, checking actions, packet rewrites and the maps. Also checks that the
 * device verifier refuses an unsafe program, naming the instruction. Hart 0 only; exit 0 = pass. */
#include <stdio.h>
#include <string.h>
#include "ebpf.h"
#include "nanobpf.h"
#include "../common/packets.h"

extern const uint8_t xdp_device_test_image[], xdp_device_test_image_end[];

static uint8_t frames[NB_FRAME_KINDS][256 + 200] __attribute__((aligned(8)));
static const int expect[NB_FRAME_KINDS] = {
    [NB_QUIC_SHORT_OURS] = NANOBPF_XDP_TX,     [NB_QUIC_SHORT_OTHER] = NANOBPF_XDP_PASS,
    [NB_QUIC_LONG_V6] = NANOBPF_XDP_PASS,      [NB_VLAN_UDP_DNS] = NANOBPF_XDP_DROP,
    [NB_IPV4_TCP] = NANOBPF_XDP_PASS,          [NB_IPV4_TRUNCATED] = NANOBPF_XDP_DROP,
    [NB_QUIC_NO_FIXED_BIT] = NANOBPF_XDP_DROP, [NB_ARP] = NANOBPF_XDP_PASS,
};

static struct ebpf_map *find_map(const struct ebpf_prog *p, const char *name) {
    for (uint32_t i = 0; i < p->n_maps; i++)
        if (!strcmp(p->maps[i]->name, name)) return p->maps[i];
    return NULL;
}

static int check(int ok, const char *what) {
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    return !ok;
}

/* An unsafe program: reads packet byte 14 with no bounds check. Rejected at instruction 2. */
static int verifier_refuses_unsafe(void) {
    struct ebpf_insn insns[] = {
        {EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_W, 2, 1, 0, 0},  /* r2 = ctx->data */
        {EBPF_CLS_ALU64 | EBPF_ALU_MOV | EBPF_SRC_K, 0, 0, 0, 0}, /* r0 = 0 */
        {EBPF_CLS_LDX | EBPF_MODE_MEM | EBPF_SIZE_B, 0, 2, 14, 0}, /* r0 = *(u8 *)(r2 + 14) */
        {EBPF_CLS_JMP | EBPF_JMP_EXIT, 0, 0, 0, 0},
    };
    struct ebpf_prog p;
    memset(&p, 0, sizeof p);
    p.insns = insns;
    p.n_insns = 4;
    struct ebpf_error err = {-1, ""};
    int rc = ebpf_verify(&p, NULL, &err);
    printf("     device verifier on an unchecked packet read: insn %d: %s\n", err.insn, err.msg);
    return check(rc != 0 && err.insn == 2, "verifier refuses the unchecked packet read at insn 2");
}

int hart_main(unsigned hart) {
    if (hart != 0) return 0;
    struct ebpf_prog prog;
    struct ebpf_error err = {-1, ""};
    int bad = 0;
    uint64_t t0 = nb_cycles();
    if (ebpf_image_load(xdp_device_test_image, (size_t)(xdp_device_test_image_end - xdp_device_test_image), &prog, &err) ||
        ebpf_verify(&prog, NULL, &err) || ebpf_prog_resolve(&prog, &err) || ebpf_jit_compile(&prog, 0, &err)) {
        printf("FAIL loading xdp_device_test: insn %d: %s\n", err.insn, err.msg);
        return 1;
    }
    printf("loaded %s: %u insns, %u maps, %u subprograms, JIT %u bytes, %llu cycles\n", prog.name, prog.n_insns,
           prog.n_maps, prog.n_subprogs, prog.jit_size, (unsigned long long)(nb_cycles() - t0));
    struct ebpf_map *keys = find_map(&prog, NANOBPF_KEYTABLE_MAP_NAME), *blocked = find_map(&prog, "blocked_ports"),
                    *counts = find_map(&prog, "action_count");
    bad |= check(keys && blocked && counts, "maps action_count, blocked_ports and the key table are present");
    if (bad) return 1;
    /* The control plane's part: one connection in the key table, port 53 blocked. */
    struct nanobpf_quic_cid cid;
    struct nanobpf_quic_keys k;
    memset(&cid, 0, sizeof cid);
    memset(&k, 0, sizeof k);
    cid.len = 8;
    nb_ours_cid(cid.id);
    uint16_t port = 53;
    uint32_t one = 1;
    bad |= check(ebpf_map_update(keys, &cid, &k, NANOBPF_BPF_NOEXIST) == 0, "key table insert");
    bad |= check(ebpf_map_slot_of(keys, &cid) >= 0, "key table gives the connection a slot");
    bad |= check(ebpf_map_update(blocked, &port, &one, NANOBPF_BPF_ANY) == 0, "blocked port insert");

    for (int jit = 0; jit <= 1; jit++) {
        for (int f = 0; f < NB_FRAME_KINDS; f++) {
            uint8_t *data = frames[f] + 256;
            size_t len = nb_build_frame(data, (enum nb_frame_kind)f, 40, NULL);
            uint8_t before[12];
            memcpy(before, data, 12);
            struct ebpf_xdp_buff xdp = {.data = (uintptr_t)data, .data_end = (uintptr_t)(data + len),
                                        .data_meta = (uintptr_t)data, .data_hard_start = (uintptr_t)frames[f],
                                        .frame_end = (uintptr_t)(frames[f] + sizeof frames[f]), .ingress_ifindex = 1};
            uint64_t c0 = nb_cycles();
            uint64_t action = ebpf_xdp_run(&prog, &xdp, jit, &err);
            uint64_t cycles = nb_cycles() - c0;
            int swapped = !memcmp(data, before + 6, 6) && !memcmp(data + 6, before, 6);
            char what[96];
            snprintf(what, sizeof what, "%s %-18s action %llu (expected %d), %llu cycles", jit ? "jit   " : "interp",
                     nb_frame_name((enum nb_frame_kind)f), (unsigned long long)action, expect[f], (unsigned long long)cycles);
            bad |= check(action == (uint64_t)expect[f] && swapped == (expect[f] == NANOBPF_XDP_TX), what);
        }
    }
    /* Both runs counted: per action, twice the number of frames expecting it (hart 0's copy). */
    for (uint32_t a = NANOBPF_XDP_DROP; a <= NANOBPF_XDP_TX; a++) {
        uint64_t want = 0, *got = ebpf_map_lookup(counts, &a);
        for (int f = 0; f < NB_FRAME_KINDS; f++) want += 2 * (expect[f] == (int)a);
        char what[64];
        snprintf(what, sizeof what, "action_count[%u] = %llu (expected %llu)", a, got ? (unsigned long long)*got : 0ULL,
                 (unsigned long long)want);
        bad |= check(got && *got == want, what);
    }
    bad |= verifier_refuses_unsafe();
    ebpf_prog_free(&prog);
    puts(bad ? "ebpf_xdp: FAIL" : "ebpf_xdp: PASS");
    return bad;
}
