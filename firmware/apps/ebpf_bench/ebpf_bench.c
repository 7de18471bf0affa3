/* eBPF benchmark on the CVA6 model: the same workloads as native code (riscv64 gcc -O2), through the
 * interpreter and through the JIT, on the same frames. Prints one BENCH line per measurement (parsed by
 * nanobpf-bench) and fails if the three disagree on any frame's action. Hart 0 only. */
#include <stdio.h>
#include <string.h>
#include "ebpf.h"
#include "nanobpf.h"
#include "../common/packets.h"
#include "nanobpf_xdp.h" /* struct xdp_md as the native builds of the workloads see it */

int bench_parse(struct xdp_md *ctx);
int bench_hash(struct xdp_md *ctx);
extern const uint8_t bench_parse_image[], bench_parse_image_end[], bench_hash_image[], bench_hash_image_end[];

struct workload {
    const char *name;
    const uint8_t *image, *image_end;
    int (*native)(struct xdp_md *);
};
static const struct workload workloads[] = {
    {"parse", bench_parse_image, bench_parse_image_end, bench_parse},
    {"hash", bench_hash_image, bench_hash_image_end, bench_hash},
};

#define PAYLOAD 100
#define ROUNDS 2 /* the last round is measured (warm caches) */
static uint8_t frames[NB_FRAME_KINDS][256 + 14 + 4 + 40 + 20 + PAYLOAD] __attribute__((aligned(8)));
static size_t lens[NB_FRAME_KINDS];

enum { NATIVE, INTERP, JIT, JIT_RVC, MODES };
static const char *const mode_names[MODES] = {"native", "interp", "jit", "jit_rvc"};

static int run_workload(const struct workload *w) {
    struct ebpf_prog prog;
    struct ebpf_error err = {-1, ""};
    uint64_t t0 = nb_cycles();
    if (ebpf_image_load(w->image, (size_t)(w->image_end - w->image), &prog, &err)) goto fail;
    uint64_t t1 = nb_cycles();
    if (ebpf_verify(&prog, NULL, &err)) goto fail;
    uint64_t t2 = nb_cycles();
    if (ebpf_prog_resolve(&prog, &err) || ebpf_jit_compile(&prog, 0, &err)) goto fail;
    uint64_t t3 = nb_cycles();
    printf("BENCH workload=%s insns=%u load_cycles=%llu verify_cycles=%llu jit_cycles=%llu jit_bytes=%u\n", w->name,
           prog.n_insns, (unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1), (unsigned long long)(t3 - t2),
           prog.jit_size);
    int actions[MODES][NB_FRAME_KINDS];
    for (int mode = 0; mode < MODES; mode++) {
        uint64_t total = 0;
        if (mode == JIT_RVC) { /* the same program compiled again with compressed instructions */
            ebpf_jit_free(prog.jit_code, prog.jit_size);
            prog.jit_code = NULL;
            if (ebpf_jit_compile(&prog, EBPF_JIT_RVC, &err)) goto fail;
            printf("BENCH workload=%s rvc_jit_bytes=%u\n", w->name, prog.jit_size);
        }
        for (int round = 0; round < ROUNDS; round++) {
            total = 0;
            for (int k = 0; k < NB_FRAME_KINDS; k++) {
                uint8_t *data = frames[k] + 256;
                struct xdp_md md = {(uint32_t)(uintptr_t)data, (uint32_t)(uintptr_t)(data + lens[k]), (uint32_t)(uintptr_t)data, 1, 0, 0};
                struct ebpf_xdp_buff xdp = {.data = (uintptr_t)data, .data_end = (uintptr_t)(data + lens[k]),
                                            .data_meta = (uintptr_t)data, .data_hard_start = (uintptr_t)frames[k],
                                            .frame_end = (uintptr_t)(frames[k] + sizeof frames[k]), .ingress_ifindex = 1};
                uint64_t c0 = nb_cycles(), a;
                if (mode == NATIVE) a = (uint64_t)w->native(&md);
                else a = ebpf_xdp_run(&prog, &xdp, mode >= JIT, &err);
                total += nb_cycles() - c0;
                actions[mode][k] = (int)a;
            }
        }
        printf("BENCH workload=%s mode=%s frames=%d cycles=%llu\n", w->name, mode_names[mode], NB_FRAME_KINDS,
               (unsigned long long)total);
    }
    int bad = 0;
    for (int k = 0; k < NB_FRAME_KINDS; k++) {
        printf("  %-18s native=%d interp=%d jit=%d jit_rvc=%d\n", nb_frame_name((enum nb_frame_kind)k), actions[NATIVE][k],
               actions[INTERP][k], actions[JIT][k], actions[JIT_RVC][k]);
        for (int mode = INTERP; mode < MODES; mode++) bad |= actions[mode][k] != actions[NATIVE][k];
    }
    ebpf_prog_free(&prog);
    if (bad) printf("FAIL %s: interpreter, JIT and native disagree\n", w->name);
    return bad;
fail:
    printf("FAIL %s: insn %d: %s\n", w->name, err.insn, err.msg);
    return 1;
}

int hart_main(unsigned hart) {
    if (hart != 0) return 0;
    for (int k = 0; k < NB_FRAME_KINDS; k++) lens[k] = nb_build_frame(frames[k] + 256, (enum nb_frame_kind)k, PAYLOAD, NULL);
    int bad = 0;
    for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++) bad |= run_workload(&workloads[i]);
    /* bench_parse's decisions are known: check them, not only agreement. */
    static const int expect[NB_FRAME_KINDS] = {3, 2, 2, 2, 2, 1, 1, 2};
    for (int k = 0; k < NB_FRAME_KINDS; k++) {
        uint8_t *data = frames[k] + 256;
        struct xdp_md md = {(uint32_t)(uintptr_t)data, (uint32_t)(uintptr_t)(data + lens[k]), 0, 1, 0, 0};
        if (bench_parse(&md) != expect[k]) {
            printf("FAIL parse: frame %s gives %d, expected %d\n", nb_frame_name((enum nb_frame_kind)k), bench_parse(&md), expect[k]);
            bad = 1;
        }
    }
    puts(bad ? "ebpf_bench: FAIL" : "ebpf_bench: PASS");
    return bad;
}
