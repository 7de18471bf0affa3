/* Event maps of the device runtime (firmware/ebpf/maps.c, helpers.c, the verifier's map/helper pairs):
 * RINGBUF and PERF_EVENT_ARRAY rings in order across many wraps, a full ring dropping and counting,
 * records above NANOBPF_EVENT_MAX, the helpers' flags and errors as Linux's, the verifier refusing a map
 * with the wrong helper, and cores appending at once while one drains. Built with ASan + UBSan by
 * run_verifier_tests.sh --events; prints one line per test, exits 1 on a failure. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ebpf.h"

extern uint32_t ebpf_host_cpus, ebpf_host_cpu; /* platform/host.c */

static int failed, total, passed;
static void check(const char *test, int ok, const char *what) {
    if (!ok) {
        printf("FAIL %-24s %s\n", test, what);
        failed++;
    }
}
static void done(const char *test, int before) {
    total++;
    if (failed == before) printf("ok   %s\n", test), passed++;
}

static struct ebpf_map map(uint32_t type, uint32_t key_size, uint32_t value_size, uint32_t entries, const char *name) {
    struct ebpf_map m;
    memset(&m, 0, sizeof m);
    m.type = type, m.key_size = key_size, m.value_size = value_size, m.max_entries = entries;
    snprintf(m.name, sizeof m.name, "%s", name);
    return m;
}
static struct ebpf_map ringbuf(uint32_t bytes) { return map(NANOBPF_MAP_TYPE_RINGBUF, 0, 0, bytes, "rb"); }

/* record number n: its length and its bytes (distinct per n) */
static uint32_t rec_len(uint32_t n) { return (n * 37) % 200; }
static void rec_fill(uint8_t *b, uint32_t n) {
    for (uint32_t i = 0; i < rec_len(n); i++) b[i] = (uint8_t)(n * 13 + i);
}
static int rec_is(const uint8_t *b, int len, uint32_t n) {
    uint8_t want[NANOBPF_EVENT_MAX];
    rec_fill(want, n);
    return len == (int)rec_len(n) && !memcmp(b, want, (size_t)len);
}

static void creation_checks_the_shape(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    struct ebpf_map m = map(NANOBPF_MAP_TYPE_RINGBUF, 4, 0, 4096, "rb");
    check("create", ebpf_map_create(&m, &err) && strstr(err.msg, "key and value size 0"), err.msg);
    uint32_t bad[] = {0, 2048, 6144, 2 * NANOBPF_EVENT_RINGBUF_MAX};
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        m = ringbuf(bad[i]);
        check("create", ebpf_map_create(&m, &err) && strstr(err.msg, "a power of two"), err.msg);
    }
    m = map(NANOBPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 8, 0, "perf");
    check("create", ebpf_map_create(&m, &err) && strstr(err.msg, "4-byte key and value"), err.msg);
    m = map(NANOBPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, 0, "perf"); /* 0: one index per core */
    check("create", ebpf_map_create(&m, &err) == 0 && m.n_slots == NANOBPF_EVENT_PERF_RING, err.msg);
    ebpf_map_destroy(&m);
    m = ringbuf(NANOBPF_EVENT_RINGBUF_MAX);
    check("create", ebpf_map_create(&m, &err) == 0 && m.n_slots == NANOBPF_EVENT_RINGBUF_MAX, err.msg);
    /* no keys: the map calls refuse it (the verifier keeps programs off them; the control plane too) */
    uint32_t k = 0, v = 0, next;
    check("create", ebpf_map_lookup(&m, &k) == NULL && ebpf_map_value(&m, &k, 0) == NULL, "lookup gives nothing");
    check("create", ebpf_map_update(&m, &k, &v, 0) == -EINVAL && ebpf_map_delete(&m, &k) == -EINVAL, "update/delete refused");
    check("create", ebpf_map_get_next_key(&m, NULL, &next) == -ENOENT, "no first key");
    ebpf_map_destroy(&m);
    done("creation_checks_the_shape", f);
}

/* 4096 bytes, records of 0..199 bytes: the reader drains a few at a time, so head and tail go round the
 * ring dozens of times with headers and data straddling its end; every record comes back whole, in order,
 * with its index. */
static void records_come_back_in_order_across_wraps(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    struct ebpf_map m = ringbuf(4096);
    check("wrap", ebpf_map_create(&m, &err) == 0, err.msg);
    uint8_t b[NANOBPF_EVENT_MAX], got[NANOBPF_EVENT_MAX];
    uint32_t written = 0, read = 0, idx, wraps = 0, last_tail = 0;
    while (written < 3000) {
        for (int k = 0; k < 7; k++, written++) {
            rec_fill(b, written);
            uint32_t half = rec_len(written) / 2; /* the data in two parts, as perf_event_output's */
            check("wrap", ebpf_event_output(&m, 1000 + written, b, half, b + half, rec_len(written) - half) == 0,
                  "a record that fits is taken");
        }
        check("wrap", ebpf_event_pending(&m) == written - read, "pending = written - read");
        for (int k = 0; k < 7; k++, read++) {
            int len = ebpf_event_peek(&m, got, &idx);
            check("wrap", rec_is(got, len, read) && idx == 1000 + read, "the oldest record, whole, with its index");
            check("wrap", ebpf_event_peek(&m, got, &idx) == len, "peek does not consume");
            ebpf_event_pop(&m);
        }
        uint32_t tail = *(uint32_t *)(void *)(m.storage + 4); /* struct event_ring.tail */
        if ((tail & ~4095u) != (last_tail & ~4095u)) wraps++;
        last_tail = tail;
    }
    check("wrap", ebpf_event_peek(&m, got, &idx) == -1 && ebpf_event_pending(&m) == 0, "empty at the end");
    check("wrap", wraps >= 20, "the ring wrapped many times");
    check("wrap", ebpf_event_take_lost(&m) == 0, "nothing lost");
    ebpf_map_destroy(&m);
    done("records_come_back_in_order_across_wraps", f);
}

/* A full ring drops the record and counts it; what was in it stays; reading makes room again. A record
 * above NANOBPF_EVENT_MAX is dropped and counted too, whatever the room. */
static void a_full_ring_drops_and_counts(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    struct ebpf_map m = ringbuf(4096);
    check("full", ebpf_map_create(&m, &err) == 0, err.msg);
    uint8_t b[NANOBPF_EVENT_MAX + 1], got[NANOBPF_EVENT_MAX];
    memset(b, 0x5a, sizeof b);
    uint32_t n = 0, idx;
    while (ebpf_event_output(&m, n, b, 56, NULL, 0) == 0) n++; /* 64 bytes a record */
    check("full", n == 4096 / 64, "64 records of 56 bytes fill 4096 bytes");
    check("full", ebpf_event_output(&m, 99, b, 0, NULL, 0) == -1, "not even an empty record fits");
    check("full", ebpf_event_take_lost(&m) == 2 && ebpf_event_take_lost(&m) == 0, "two lost, counted once");
    check("full", ebpf_event_pending(&m) == n, "the records kept");
    check("full", ebpf_event_peek(&m, got, &idx) == 56 && idx == 0, "the first one is still first");
    ebpf_event_pop(&m);
    check("full", ebpf_event_output(&m, 64, b, 56, NULL, 0) == 0, "room again after a read");
    check("full", ebpf_event_output(&m, 65, b, 0, NULL, 0) == -1, "and full again");
    for (uint32_t k = 1; k <= 64; k++) {
        check("full", ebpf_event_peek(&m, got, &idx) == 56 && idx == k, "in order after the drop");
        ebpf_event_pop(&m);
    }
    check("full", ebpf_event_output(&m, 1, b, NANOBPF_EVENT_MAX + 1, NULL, 0) == -1, "above EVENT_MAX: dropped");
    check("full", ebpf_event_output(&m, 1, b, NANOBPF_EVENT_MAX, b, 1) == -1, "above EVENT_MAX in two parts");
    check("full", ebpf_event_output(&m, 7, b, NANOBPF_EVENT_MAX, NULL, 0) == 0, "EVENT_MAX fits");
    check("full", ebpf_event_take_lost(&m) == 3, "counted (one full, two too large)");
    check("full", ebpf_event_peek(&m, got, &idx) == NANOBPF_EVENT_MAX && idx == 7, "the largest record whole");
    ebpf_map_destroy(&m);
    done("a_full_ring_drops_and_counts", f);
}

/* The helpers through their table entries, as the program calls them. */
static uint64_t call(uint32_t id, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
    return ebpf_helper_find(id)->fn(a1, a2, a3, a4, a5);
}
#define P(x) ((uint64_t)(uintptr_t)(x))

static void helpers_follow_linux(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    struct ebpf_map perf = map(NANOBPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, 0, "events");
    struct ebpf_map rb = ringbuf(4096);
    check("helpers", ebpf_map_create(&perf, &err) == 0 && ebpf_map_create(&rb, &err) == 0, err.msg);
    uint8_t frame[64], meta[12] = "metadata-12", got[NANOBPF_EVENT_MAX];
    for (unsigned i = 0; i < sizeof frame; i++) frame[i] = (uint8_t)(0x80 + i);
    struct ebpf_xdp_buff x = {.data = P(frame), .data_end = P(frame + 60), .data_meta = P(frame),
                              .data_hard_start = P(frame), .frame_end = P(frame + 64)};
    uint32_t idx;
    ebpf_host_cpus = 4, ebpf_host_cpu = 2;
    /* BPF_F_CURRENT_CPU tags the record with the core; flags' bits 32..51 append that many packet bytes */
    uint64_t flags = NANOBPF_BPF_F_CURRENT_CPU | (uint64_t)20 << 32;
    check("helpers", call(NANOBPF_HELPER_PERF_EVENT_OUTPUT, P(&x), P(&perf), flags, P(meta), sizeof meta) == 0, "perf output");
    int len = ebpf_event_peek(&perf, got, &idx);
    check("helpers", len == 32 && idx == 2 && !memcmp(got, meta, 12) && !memcmp(got + 12, frame, 20),
          "the data, then 20 packet bytes, index = the core");
    ebpf_event_pop(&perf);
    check("helpers", call(NANOBPF_HELPER_PERF_EVENT_OUTPUT, P(&x), P(&perf), 3, P(meta), 4) == 0, "index 3 of 4 cores");
    check("helpers", ebpf_event_peek(&perf, got, &idx) == 4 && idx == 3, "tagged 3");
    ebpf_event_pop(&perf);
    check("helpers", call(NANOBPF_HELPER_PERF_EVENT_OUTPUT, P(&x), P(&perf), 4, P(meta), 4) == (uint64_t)-NANOBPF_E2BIG,
          "index 4 of 4 cores: -E2BIG");
    check("helpers", call(NANOBPF_HELPER_PERF_EVENT_OUTPUT, P(&x), P(&perf), (uint64_t)61 << 32 | 0xffffffffu, P(meta), 4) ==
                         (uint64_t)-NANOBPF_EFAULT, "61 packet bytes of 60: -EFAULT");
    check("helpers", call(NANOBPF_HELPER_PERF_EVENT_OUTPUT, P(&x), P(&perf), 1ull << 52, P(meta), 4) == (uint64_t)-NANOBPF_EINVAL,
          "a flag bit above BPF_F_CTXLEN_MASK: -EINVAL");
    check("helpers", call(NANOBPF_HELPER_PERF_EVENT_OUTPUT, P(&x), P(&perf), 0, 0, 0) == 0, "NULL with 0 bytes");
    check("helpers", ebpf_event_peek(&perf, got, &idx) == 0 && idx == 0, "an empty record");
    ebpf_event_pop(&perf);
    check("helpers", call(NANOBPF_HELPER_PERF_EVENT_OUTPUT, P(&x), P(&perf), 0, P(got), NANOBPF_EVENT_MAX - 19) ==
                         0 && call(NANOBPF_HELPER_PERF_EVENT_OUTPUT, P(&x), P(&perf), (uint64_t)20 << 32, P(got),
                                   NANOBPF_EVENT_MAX - 19) == (uint64_t)-NANOBPF_ENOSPC,
          "data and packet bytes above EVENT_MAX together: -ENOSPC");
    check("helpers", ebpf_event_take_lost(&perf) == 1, "and counted");
    ebpf_event_pop(&perf);
    /* an explicit max_entries bounds the index whatever the cores */
    struct ebpf_map two = map(NANOBPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, 2, "two");
    check("helpers", ebpf_map_create(&two, &err) == 0, err.msg);
    check("helpers", call(NANOBPF_HELPER_PERF_EVENT_OUTPUT, P(&x), P(&two), NANOBPF_BPF_F_CURRENT_CPU, P(meta), 4) ==
                         (uint64_t)-NANOBPF_E2BIG, "core 2 in a 2-entry map: -E2BIG");
    /* ringbuf_output: the wake-up flags are fine, others -EINVAL; a full ring -EAGAIN, counted */
    check("helpers", call(NANOBPF_HELPER_RINGBUF_OUTPUT, P(&rb), P(meta), 12, NANOBPF_BPF_RB_NO_WAKEUP, 0) == 0 &&
                         call(NANOBPF_HELPER_RINGBUF_OUTPUT, P(&rb), P(meta), 12, NANOBPF_BPF_RB_FORCE_WAKEUP, 0) == 0,
          "ringbuf output with wake-up flags");
    check("helpers", call(NANOBPF_HELPER_RINGBUF_OUTPUT, P(&rb), P(meta), 12, 4, 0) == (uint64_t)-NANOBPF_EINVAL, "flags 4: -EINVAL");
    check("helpers", ebpf_event_peek(&rb, got, &idx) == 12 && idx == 2 && !memcmp(got, meta, 12), "tagged with the core");
    int n = 0; /* two 12-byte records in the ring (24 bytes each): 64-byte ones (72) fill the rest */
    while (call(NANOBPF_HELPER_RINGBUF_OUTPUT, P(&rb), P(frame), 64, 0, 0) == 0) n++;
    check("helpers", call(NANOBPF_HELPER_RINGBUF_OUTPUT, P(&rb), P(frame), 64, 0, 0) == (uint64_t)-NANOBPF_EAGAIN,
          "full: -EAGAIN");
    check("helpers", ebpf_event_take_lost(&rb) == 2 && n == (4096 - 2 * 24) / 72, "full ring counted");
    ebpf_host_cpus = 1, ebpf_host_cpu = 0;
    ebpf_map_destroy(&perf);
    ebpf_map_destroy(&two);
    ebpf_map_destroy(&rb);
    done("helpers_follow_linux", f);
}

/* ---- The verifier: a ringbuf only with ringbuf_output, a perf array only with perf_event_output ---- */
#define I(c, d, s, o, i) {.code = (uint8_t)(c), .dst = (d), .src = (s), .off = (int16_t)(o), .imm = (int32_t)(i)}
#define MOV_IMM(d, i) I(EBPF_CLS_ALU64 | EBPF_SRC_K | EBPF_ALU_MOV, d, 0, 0, i)
#define MOV_REG(d, s) I(EBPF_CLS_ALU64 | EBPF_SRC_X | EBPF_ALU_MOV, d, s, 0, 0)
#define ADD_IMM(d, i) I(EBPF_CLS_ALU64 | EBPF_SRC_K | EBPF_ALU_ADD, d, 0, 0, i)
#define ST_DW(d, o, i) I(EBPF_CLS_ST | EBPF_MODE_MEM | EBPF_SIZE_DW, d, 0, o, i)
#define LD_MAP(d, m) I(0x18, d, EBPF_PSEUDO_MAP_IDX, 0, m), I(0, 0, 0, 0, 0)
#define LD_IMM64(d, v) I(0x18, d, 0, 0, (uint32_t)(v)), I(0, 0, 0, 0, (uint64_t)(v) >> 32)
#define CALL(id) I(EBPF_CLS_JMP | EBPF_JMP_CALL, 0, 0, 0, id)
#define EXIT() I(EBPF_CLS_JMP | EBPF_JMP_EXIT, 0, 0, 0, 0)

/* Verify (and, accepted, run over a frame) a program whose map 0 is m; NULL if accepted, else the reason. */
static const char *verify(struct ebpf_map *m, const struct ebpf_insn *insns, uint32_t n, uint64_t *r0) {
    static struct ebpf_error err;
    struct ebpf_prog prog;
    memset(&prog, 0, sizeof prog);
    prog.insns = malloc(n * sizeof *insns);
    memcpy(prog.insns, insns, n * sizeof *insns);
    prog.n_insns = n;
    prog.maps = &m;
    prog.n_maps = 1;
    err.insn = -1, err.msg[0] = 0;
    const char *why = NULL;
    if (ebpf_verify(&prog, NULL, &err)) why = err.msg;
    else if (ebpf_prog_resolve(&prog, &err)) why = err.msg;
    else if (r0) {
        uint8_t frame[80] = {0};
        struct ebpf_xdp_buff x = {.data = P(frame), .data_end = P(frame + 64), .data_meta = P(frame),
                                  .data_hard_start = P(frame), .frame_end = P(frame + 80)};
        *r0 = ebpf_xdp_run(&prog, &x, 0, &err);
        if (err.msg[0]) why = err.msg;
    }
    free(prog.insns); /* not ebpf_prog_free: the map is the caller's */
    free(prog.insn_flags);
    return why;
}

static void verifier_pairs_maps_with_their_helpers(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    struct ebpf_map rb = ringbuf(4096), perf = map(NANOBPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, 0, "events");
    check("verifier", ebpf_map_create(&rb, &err) == 0 && ebpf_map_create(&perf, &err) == 0, err.msg);
    /* r0 = bpf_ringbuf_output(&map, fp-8 (8 bytes), 8, 0); return r0 */
    const struct ebpf_insn ring_out[] = {ST_DW(10, -8, 0x1234), LD_MAP(1, 0), MOV_REG(2, 10), ADD_IMM(2, -8),
                                         MOV_IMM(3, 8), MOV_IMM(4, 0), CALL(NANOBPF_HELPER_RINGBUF_OUTPUT), EXIT()};
    /* r0 = bpf_perf_event_output(ctx, &map, BPF_F_CURRENT_CPU, fp-8, 8); return r0 */
    const struct ebpf_insn perf_out[] = {ST_DW(10, -8, 0x1234), LD_MAP(2, 0), LD_IMM64(3, 0xffffffffu), MOV_REG(4, 10),
                                         ADD_IMM(4, -8), MOV_IMM(5, 8), CALL(NANOBPF_HELPER_PERF_EVENT_OUTPUT), EXIT()};
    /* bpf_map_lookup_elem(&map, fp-8): no event map has keys */
    const struct ebpf_insn lookup[] = {ST_DW(10, -8, 0), LD_MAP(1, 0), MOV_REG(2, 10), ADD_IMM(2, -8),
                                       CALL(NANOBPF_HELPER_MAP_LOOKUP_ELEM), MOV_IMM(0, 2), EXIT()};
    uint64_t r0 = 99;
    uint32_t idx;
    uint8_t got[NANOBPF_EVENT_MAX];
    const char *why = verify(&rb, ring_out, sizeof ring_out / sizeof *ring_out, &r0);
    check("verifier", !why && r0 == 0, why ? why : "ringbuf_output on a ringbuf runs");
    check("verifier", ebpf_event_peek(&rb, got, &idx) == 8 && got[0] == 0x34 && got[1] == 0x12, "its record");
    why = verify(&perf, perf_out, sizeof perf_out / sizeof *perf_out, &r0);
    check("verifier", !why && r0 == 0, why ? why : "perf_event_output on a perf array runs");
    check("verifier", ebpf_event_peek(&perf, got, &idx) == 8 && idx == 0, "its record, index 0 (the core)");
    why = verify(&perf, ring_out, sizeof ring_out / sizeof *ring_out, NULL);
    check("verifier", why && strstr(why, "ringbuf_output") && strstr(why, "not a RINGBUF"), why ? why : "accepted");
    why = verify(&rb, perf_out, sizeof perf_out / sizeof *perf_out, NULL);
    check("verifier", why && strstr(why, "perf_event_output") && strstr(why, "is a ringbuf"), why ? why : "accepted");
    why = verify(&rb, lookup, sizeof lookup / sizeof *lookup, NULL);
    check("verifier", why && strstr(why, "map_lookup_elem") && strstr(why, "ringbuf"), why ? why : "accepted");
    why = verify(&perf, lookup, sizeof lookup / sizeof *lookup, NULL);
    check("verifier", why && strstr(why, "map_lookup_elem") && strstr(why, "perf event array"), why ? why : "accepted");
    ebpf_map_destroy(&rb);
    ebpf_map_destroy(&perf);
    done("verifier_pairs_maps_with_their_helpers", f);
}

/* ---- Cores appending at once: every record whole, each core's in its own order, none lost to a race.
 * Rounds of writers that together fill most of a ring nobody reads meanwhile (so nothing is dropped
 * for room and a missing lock shows as lost or torn records), then writers racing a reader that drains
 * while they write (taken + lost = written, and the run ends even when that fails). ---- */
#define WRITERS 3
#define QUIET_PER_WRITER 200   /* 3 x 200 records of 8..24 bytes (16..32 in the ring) < 16 KiB */
#define BUSY_PER_WRITER 20000
static struct ebpf_map shared_ring;
static int start_flag, writers_done;

struct writer_arg {
    uint32_t w, n;
};
static uint32_t rec_bytes(uint32_t n) { return 8 + (n % 3) * 8; }
static void *writer(void *arg) {
    const struct writer_arg *a = arg;
    uint8_t b[64];
    while (!__atomic_load_n(&start_flag, __ATOMIC_ACQUIRE)) {
    }
    for (uint32_t n = 0; n < a->n; n++) {
        uint32_t len = rec_bytes(n);
        for (uint32_t i = 0; i < len; i++) b[i] = (uint8_t)(a->w * 31 + n + i);
        memcpy(b, &n, 4);
        ebpf_event_output(&shared_ring, a->w, b, len, NULL, 0);
    }
    return NULL;
}

static void *join_all(void *threads) {
    for (int w = 0; w < WRITERS; w++) pthread_join(((pthread_t *)threads)[w], NULL);
    __atomic_store_n(&writers_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* one record taken by the reader: 0 when whole and next in its writer's order */
static int take(int64_t *last, uint64_t *bad, uint64_t *disorder) {
    uint8_t got[NANOBPF_EVENT_MAX];
    uint32_t w, n;
    int len = ebpf_event_peek(&shared_ring, got, &w);
    if (len < 0) return -1;
    ebpf_event_pop(&shared_ring);
    memcpy(&n, got, 4);
    if (w >= WRITERS || len != (int)rec_bytes(n)) {
        (*bad)++;
        return 0;
    }
    for (int i = 4; i < len; i++) *bad += got[i] != (uint8_t)(w * 31 + n + (uint32_t)i);
    *disorder += (int64_t)n <= last[w];
    last[w] = n;
    return 0;
}

static void round_of_writers(uint32_t per_writer, int concurrent_reader, uint64_t *taken, uint64_t *lost,
                             uint64_t *bad, uint64_t *disorder) {
    struct ebpf_error err = {-1, ""};
    shared_ring = ringbuf(NANOBPF_EVENT_RINGBUF_MAX);
    if (ebpf_map_create(&shared_ring, &err)) {
        check("concurrent", 0, err.msg);
        return;
    }
    pthread_t t[WRITERS];
    struct writer_arg args[WRITERS];
    int64_t last[WRITERS];
    start_flag = writers_done = 0;
    for (uint32_t w = 0; w < WRITERS; w++) {
        args[w] = (struct writer_arg){w, per_writer};
        last[w] = -1;
        pthread_create(&t[w], NULL, writer, &args[w]);
    }
    __atomic_store_n(&start_flag, 1, __ATOMIC_RELEASE);
    if (concurrent_reader) {
        /* drain while they write; the writers' end is known by a flag, not by counting, so that a ring
         * that loses records cannot keep this loop going */
        pthread_t joiner;
        pthread_create(&joiner, NULL, join_all, t);
        for (;;) {
            int done = __atomic_load_n(&writers_done, __ATOMIC_ACQUIRE);
            int got = take(last, bad, disorder) == 0;
            *taken += got;
            *lost += ebpf_event_take_lost(&shared_ring);
            if (done && !got) break;
        }
        pthread_join(joiner, NULL);
    } else {
        for (int w = 0; w < WRITERS; w++) pthread_join(t[w], NULL);
        while (take(last, bad, disorder) == 0) (*taken)++;
    }
    *lost += ebpf_event_take_lost(&shared_ring);
    check("concurrent", ebpf_event_pending(&shared_ring) == 0, "nothing waiting at the end");
    ebpf_map_destroy(&shared_ring);
}

/* The ring's lock, as another core holds it in the middle of an append: a writer waits for it, and the
 * ring does not change meanwhile (the rounds above need two idle host cores to race; this does not). */
static int lock_waiter_done;
static void *one_output(void *arg) {
    (void)arg;
    uint64_t v = 0x5eed;
    ebpf_event_output(&shared_ring, 9, &v, sizeof v, NULL, 0);
    __atomic_store_n(&lock_waiter_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void a_writer_waits_for_the_lock(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    shared_ring = ringbuf(4096);
    check("lock", ebpf_map_create(&shared_ring, &err) == 0, err.msg);
    uint32_t *lock = (uint32_t *)(void *)(shared_ring.storage + 8); /* struct event_ring.lock (maps.c) */
    __atomic_store_n(lock, 1, __ATOMIC_RELEASE);
    lock_waiter_done = 0;
    pthread_t t;
    pthread_create(&t, NULL, one_output, NULL);
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    uint8_t got[NANOBPF_EVENT_MAX];
    uint32_t idx;
    check("lock", !__atomic_load_n(&lock_waiter_done, __ATOMIC_ACQUIRE), "the writer waits while the lock is held");
    check("lock", ebpf_event_peek(&shared_ring, got, &idx) == -1, "and has written nothing");
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    check("lock", ebpf_event_peek(&shared_ring, got, &idx) == 8 && idx == 9, "its record once the lock is free");
    check("lock", __atomic_load_n(lock, __ATOMIC_ACQUIRE) == 0, "the writer released it");
    ebpf_map_destroy(&shared_ring);
    done("a_writer_waits_for_the_lock", f);
}

static void cores_append_at_once(void) {
    int f = failed;
    uint64_t taken = 0, lost = 0, bad = 0, disorder = 0;
    for (int r = 0; r < 300; r++) round_of_writers(QUIET_PER_WRITER, 0, &taken, &lost, &bad, &disorder);
    check("concurrent", bad == 0, "every record whole (writers alone)");
    check("concurrent", disorder == 0, "each core's records in its order (writers alone)");
    check("concurrent", lost == 0 && taken == 300ull * WRITERS * QUIET_PER_WRITER, "none lost: they all had room");
    printf("     writers alone: %llu taken, %llu lost\n", (unsigned long long)taken, (unsigned long long)lost);
    taken = lost = bad = disorder = 0;
    round_of_writers(BUSY_PER_WRITER, 1, &taken, &lost, &bad, &disorder);
    check("concurrent", bad == 0, "every record whole (with a reader)");
    check("concurrent", disorder == 0, "each core's records in its order (with a reader)");
    check("concurrent", taken + lost == (uint64_t)WRITERS * BUSY_PER_WRITER, "taken + lost = written");
    printf("     with a reader: %llu taken, %llu lost\n", (unsigned long long)taken, (unsigned long long)lost);
    done("cores_append_at_once", f);
}

/* bpf_ringbuf_reserve's records: in the ring, read in reservation order (a reserved one holds back those
 * after it), discarded ones never read, and contiguous: where one would wrap, the ring's end is given up
 * (a filler the reader skips). Every record's data checked after many wraps. */
static void reserved_records_in_order(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    struct ebpf_map m = ringbuf(4096);
    check("reserve", ebpf_map_create(&m, &err) == 0, err.msg);
    uint8_t got[NANOBPF_EVENT_MAX];
    uint32_t idx;
    uint8_t *a = ebpf_event_reserve(&m, 16), *b = ebpf_event_reserve(&m, 24), *c = ebpf_event_reserve(&m, 8);
    check("reserve", a && b && c && a[0] == 0 && b[23] == 0, "three records reserved, zeroed");
    memset(a, 0xaa, 16), memset(b, 0xbb, 24), memset(c, 0xcc, 8);
    ebpf_event_commit(b, 0);
    check("reserve", ebpf_event_peek(&m, got, &idx) == -1, "the first still reserved: nothing to read");
    ebpf_event_commit(a, 0);
    ebpf_event_commit(c, 1);
    check("reserve", ebpf_event_peek(&m, got, &idx) == 16 && got[15] == 0xaa, "the first");
    ebpf_event_pop(&m);
    check("reserve", ebpf_event_peek(&m, got, &idx) == 24 && got[0] == 0xbb, "then the second");
    ebpf_event_pop(&m);
    check("reserve", ebpf_event_peek(&m, got, &idx) == -1 && ebpf_event_pending(&m) == 0, "the discarded one never");
    uint32_t n = 0, sizes[5] = {40, 1000, 8, 200, 0};
    int ok = 1;
    for (; n < 600 && ok; n++) { /* 600 records of varied sizes: the ring wraps about 50 times */
        uint32_t sz = sizes[n % 5];
        uint8_t *r = ebpf_event_reserve(&m, sz);
        if (!r) {
            ok = 0;
            break;
        }
        ok &= ((uintptr_t)(r + sz) <= (uintptr_t)(m.storage + 64 + 4096)); /* contiguous, inside the ring */
        memset(r, (int)(n & 0xff), sz);
        ebpf_event_commit(r, n % 7 == 3);
        if (n % 7 == 3) continue;
        int len = ebpf_event_peek(&m, got, &idx);
        ok &= len == (int)sz && (!sz || (got[0] == (n & 0xff) && got[sz - 1] == (n & 0xff)));
        ebpf_event_pop(&m);
    }
    check("reserve", ok && n == 600, "records whole and contiguous across wraps");
    check("reserve", ebpf_event_peek(&m, got, &idx) == -1 && ebpf_event_pending(&m) == 0 && ebpf_event_take_lost(&m) == 0,
          "empty at the end, nothing lost");
    check("reserve", ebpf_event_reserve(&m, NANOBPF_EVENT_MAX + 1) == NULL && ebpf_event_take_lost(&m) == 1,
          "above NANOBPF_EVENT_MAX: NULL, counted");
    /* 0-byte records up to the ring's last 8 bytes: the one there has its data at the end itself */
    uint32_t head = *(uint32_t *)(void *)m.storage; /* struct event_ring.head */
    ok = 1;
    for (uint32_t k = 0; k < 512 && ok; k++) {
        uint8_t *r = ebpf_event_reserve(&m, 0);
        ok &= r == m.storage + 64 + ((head + 8 * k) & 4095) + 8;
        ebpf_event_commit(r, 0);
        ok &= ebpf_event_peek(&m, got, &idx) == 0;
        ebpf_event_pop(&m);
    }
    check("reserve", ok && ebpf_event_pending(&m) == 0, "0-byte records, the ring's last 8 bytes included");
    ebpf_map_destroy(&m);
    done("reserved_records_in_order", f);
}

int main(void) {
    creation_checks_the_shape();
    reserved_records_in_order();
    records_come_back_in_order_across_wraps();
    a_full_ring_drops_and_counts();
    helpers_follow_linux();
    verifier_pairs_maps_with_their_helpers();
    a_writer_waits_for_the_lock();
    cores_append_at_once();
    printf("%d/%d tests passed\n", passed, total);
    return failed ? 1 : 0;
}
