/* Atomics through the SoC interconnect, on real CVA6 cores (AMOs leave as AXI atomics, LR/SC as
 * AXI exclusive accesses, see hw/.../AxiInterconnect.scala):
 *  1. hart 0: every AMO (.w on both 32-bit lanes, .d) against a C reference, neighbour lane untouched;
 *  2. hart 0: SC without a reservation fails; a write between LR and SC makes SC fail;
 *  3. all harts: NB_ITERS increments each of two shared counters, one with amoadd.d, one with an
 *     LR/SC loop; the totals must be exact.
 * Ends with 0 when everything matched, 1 otherwise (each mismatch is printed). */
#include <stdarg.h>
#include <stdio.h>
#include "nanobpf.h"

#define NB_ITERS 200
#define DONE(h) (0x41544f4d00000000ull | (h)) /* "ATOM" + hart */
#define TIMEOUT_CYCLES 3000000u

#define AMO(op, sfx, addr, val)                                                              \
    ({                                                                                       \
        uint64_t r_;                                                                         \
        __asm__ volatile(#op "." #sfx " %0, %2, (%1)" : "=r"(r_) : "r"(addr), "r"(val) : "memory"); \
        r_;                                                                                  \
    })

static uint64_t cell[2] __attribute__((aligned(64)));
static uint64_t counter_amo __attribute__((aligned(64)));
static uint64_t counter_lrsc __attribute__((aligned(64)));
static unsigned failures;

/* Memory is read back with amoor.d x, 0: it goes to the bus, so no stale L1 line can answer. */
static uint64_t mem_read(uint64_t *p) { return AMO(amoor, d, p, 0); }
static void mem_write(uint64_t *p, uint64_t v) { (void)AMO(amoswap, d, p, v); }

/* Check got == want; the label (printf format) is only formatted on failure, to keep the
 * benchmark about the atomics. */
static void expect(uint64_t got, uint64_t want, const char *fmt, ...) {
    if (got == want) return;
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    va_end(ap);
    printf(": got 0x%016llx, want 0x%016llx\n", (unsigned long long)got, (unsigned long long)want);
    failures++;
}

enum op { ADD, AND, OR, XOR, SWAP, MIN, MAX, MINU, MAXU, NOPS };
static const char *const names[NOPS] = {"add", "and", "or", "xor", "swap", "min", "max", "minu", "maxu"};

static uint64_t ref64(enum op op, uint64_t a, uint64_t b) {
    switch (op) {
    case ADD: return a + b;
    case AND: return a & b;
    case OR: return a | b;
    case XOR: return a ^ b;
    case SWAP: return b;
    case MIN: return (int64_t)a < (int64_t)b ? a : b;
    case MAX: return (int64_t)a > (int64_t)b ? a : b;
    case MINU: return a < b ? a : b;
    default: return a > b ? a : b;
    }
}
static uint32_t ref32(enum op op, uint32_t a, uint32_t b) {
    switch (op) {
    case MIN: return (int32_t)a < (int32_t)b ? a : b;
    case MAX: return (int32_t)a > (int32_t)b ? a : b;
    default: return (uint32_t)ref64(op, a, b);
    }
}

static uint64_t amo_d(enum op op, uint64_t *p, uint64_t v) {
    switch (op) {
    case ADD: return AMO(amoadd, d, p, v);
    case AND: return AMO(amoand, d, p, v);
    case OR: return AMO(amoor, d, p, v);
    case XOR: return AMO(amoxor, d, p, v);
    case SWAP: return AMO(amoswap, d, p, v);
    case MIN: return AMO(amomin, d, p, v);
    case MAX: return AMO(amomax, d, p, v);
    case MINU: return AMO(amominu, d, p, v);
    default: return AMO(amomaxu, d, p, v);
    }
}
static uint64_t amo_w(enum op op, uint32_t *p, uint64_t v) {
    switch (op) {
    case ADD: return AMO(amoadd, w, p, v);
    case AND: return AMO(amoand, w, p, v);
    case OR: return AMO(amoor, w, p, v);
    case XOR: return AMO(amoxor, w, p, v);
    case SWAP: return AMO(amoswap, w, p, v);
    case MIN: return AMO(amomin, w, p, v);
    case MAX: return AMO(amomax, w, p, v);
    case MINU: return AMO(amominu, w, p, v);
    default: return AMO(amomaxu, w, p, v);
    }
}

static void check_amo_ops(void) {
    static const uint64_t vals[][2] = {
        {5, 3}, {0xfffffffffffffff9ull, 2}, {0x80000000ull, 0x7fffffffull},
        {0xffffffff00000001ull, 0x00000001ffffffffull}, {0x8000000000000000ull, 0x7fffffffffffffffull},
    };
    for (unsigned i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint64_t a = vals[i][0], b = vals[i][1];
        for (int op = 0; op < NOPS; op++) {
            mem_write(&cell[0], a);
            expect(amo_d(op, &cell[0], b), a, "amo%s.d old, case %u", names[op], i);
            expect(mem_read(&cell[0]), ref64(op, a, b), "amo%s.d new, case %u", names[op], i);
            for (int lane = 0; lane < 2; lane++) {
                uint32_t *p = (uint32_t *)&cell[0] + lane;
                uint32_t a32 = (uint32_t)a, b32 = (uint32_t)b, other = 0x5a5a0000u | i;
                mem_write(&cell[0], lane ? ((uint64_t)a32 << 32 | other) : ((uint64_t)other << 32 | a32));
                expect(amo_w(op, p, b32), (uint64_t)(int64_t)(int32_t)a32, /* sign-extended */
                       "amo%s.w old, lane %d case %u", names[op], lane, i);
                uint64_t r = ref32(op, a32, b32);
                expect(mem_read(&cell[0]), lane ? (r << 32 | other) : ((uint64_t)other << 32 | r),
                       "amo%s.w new, lane %d case %u", names[op], lane, i);
            }
        }
    }
}

static uint64_t sc_d(uint64_t *p, uint64_t v) {
    uint64_t r;
    __asm__ volatile("sc.d %0, %2, (%1)" : "=r"(r) : "r"(p), "r"(v) : "memory");
    return r;
}
static uint64_t lr_d(uint64_t *p) {
    uint64_t r;
    __asm__ volatile("lr.d %0, (%1)" : "=r"(r) : "r"(p) : "memory");
    return r;
}

static void check_reservations(void) {
    mem_write(&cell[1], 7);
    expect(sc_d(&cell[1], 8) != 0, 1, "sc.d without a reservation fails");
    expect(mem_read(&cell[1]), 7, "failed sc.d leaves memory");
    expect(lr_d(&cell[1]), 7, "lr.d value");
    expect(sc_d(&cell[1], 9), 0, "lr.d; sc.d succeeds");
    expect(mem_read(&cell[1]), 9, "successful sc.d wrote");
    (void)lr_d(&cell[1]);
    mem_write(&cell[1], 10); /* a write to the granule clears the reservation */
    expect(sc_d(&cell[1], 11) != 0, 1, "sc.d after an intervening write fails");
    expect(mem_read(&cell[1]), 10, "memory after the failed sc.d");
}

static unsigned count_up(void) {
    unsigned retries = 0;
    for (int i = 0; i < NB_ITERS; i++) {
        (void)AMO(amoadd, d, &counter_amo, 1);
        while (sc_d(&counter_lrsc, lr_d(&counter_lrsc) + 1)) retries++;
    }
    return retries;
}

int hart_main(unsigned hart) {
    unsigned n = nb_num_cores();
    if (hart == 0) {
        check_amo_ops();
        check_reservations();
        printf("single-hart AMO and LR/SC checks: %u failure(s)\n", failures);
        mem_write(&counter_amo, 0);
        mem_write(&counter_lrsc, 0);
        for (unsigned h = 1; h < n; h++) nb_wake(h);
    }
    unsigned retries = count_up();
    printf("hart %u: %d increments each, %u SC retries\n", hart, NB_ITERS, retries);
    nb_mailbox_write(hart, DONE(hart));
    if (hart != 0) return 0;

    uint64_t deadline = nb_cycles() + TIMEOUT_CYCLES;
    for (unsigned h = 1; h < n; h++)
        while (nb_mailbox_read(h) != DONE(h))
            if (nb_cycles() > deadline) {
                printf("FAIL: hart %u did not finish\n", h);
                return 1;
            }
    expect(mem_read(&counter_amo), (uint64_t)n * NB_ITERS, "amoadd.d counter");
    expect(mem_read(&counter_lrsc), (uint64_t)n * NB_ITERS, "LR/SC counter");
    printf("%s: %u failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
