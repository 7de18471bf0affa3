/* First NanoBPF program: core 0 wakes the other cores, every core prints its hart id, all of them
 * meet at a rendezvous, and core 0 ends the simulation with 0 (pass) or 1 (a core did not report in).
 *
 * Test-only knob: -DNB_TEST_SKIP_WAKE=<hart> builds a variant where core 0 "forgets" to wake that
 * hart, which must make the run fail (tests/firmware use it to prove the check can fail). */
#include <stdio.h>
#include "nanobpf.h"

#define CHECKIN(h) (0x48454c4c4f000000ull | (h)) /* "HELLO" + hart */
#define DONE(h) (0x444f4e4500000000ull | (h))    /* "DONE" + hart */
#define RENDEZVOUS_TIMEOUT_CYCLES 400000u

#ifndef NB_TEST_SKIP_WAKE
#define NB_TEST_SKIP_WAKE (-1)
#endif

/* Wait until `reached(h, mailbox[h])` holds for every core; returns the number of cores that did not. */
static unsigned wait_all(unsigned n, int (*reached)(unsigned, uint64_t), uint64_t deadline) {
    unsigned missing;
    do {
        missing = 0;
        for (unsigned h = 0; h < n; h++) missing += !reached(h, nb_mailbox_read(h));
    } while (missing && nb_cycles() < deadline);
    return missing;
}
/* A hart that passed the rendezvous may already say DONE: that also means it checked in. */
static int checked_in(unsigned h, uint64_t v) { return v == CHECKIN(h) || v == DONE(h); }
static int done(unsigned h, uint64_t v) { return v == DONE(h); }

int hart_main(unsigned hart) {
    unsigned n = nb_num_cores();
    if (hart == 0) {
        printf("NanoBPF skeleton: %u core(s), core 0 waking the others\n", n);
        for (unsigned h = 1; h < n; h++)
            if ((int)h != NB_TEST_SKIP_WAKE) nb_wake(h);
    }
    printf("hello from hart %u (cycle %llu)\n", hart, (unsigned long long)nb_cycles());
    nb_mailbox_write(hart, CHECKIN(hart));

    uint64_t deadline = nb_cycles() + RENDEZVOUS_TIMEOUT_CYCLES;
    if (wait_all(n, checked_in, deadline)) {
        for (unsigned h = 0; h < n; h++)
            if (!checked_in(h, nb_mailbox_read(h))) printf("FAIL: hart %u did not report in\n", h);
        return 1;
    }
    printf("hart %u passed the rendezvous\n", hart);
    if (hart != 0) {
        nb_mailbox_write(hart, DONE(hart));
        return 0;
    }
    nb_mailbox_write(0, DONE(0));
    if (wait_all(n, done, nb_cycles() + RENDEZVOUS_TIMEOUT_CYCLES)) {
        printf("FAIL: not every hart finished after the rendezvous\n");
        return 1;
    }
    printf("PASS: all %u cores reported in\n", n);
    return 0;
}
