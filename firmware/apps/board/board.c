/* Board firmware (baked into main memory by `make bitstream`): says hello on the UART console from
 * every core, shows it is alive on LEDs 7..4, and reports the Ethernet link self-test's counters once
 * a second when they change (boards/genesys2/README.md shows the expected output).
 *
 * Test variant board-sim (-DNB_BOARD_ROUNDS=N): a 10,000-cycle "second" and N reports, then ends the
 * simulation with 0, so the same code runs in tests (sim/soc/test_boot.py checks its UART output). */
#include <stdio.h>
#include "nanobpf.h"

#ifndef NB_BOARD_ROUNDS
#define NB_BOARD_ROUNDS 0 /* 0: forever (the board) */
#define NB_SECOND NANOBPF_CORE_CLOCK_HZ
#else
#define NB_SECOND 10000u
#endif
#define READY(h) (0x5245414459000000ull | (h)) /* "READY" + hart */

int hart_main(unsigned hart) {
    unsigned n = nb_num_cores();
    if (hart != 0) {
        printf("core %u ready\n", hart);
        nb_mailbox_write(hart, READY(hart));
        return 0;
    }
    nb_leds(0x1);
    printf("NanoBPF %u core(s), console on the UART\n", n);
    for (unsigned h = 1; h < n; h++) nb_wake(h);
    for (unsigned h = 1; h < n; h++)
        while (nb_mailbox_read(h) != READY(h)) {
        }
    printf("all %u core(s) up; SW0 turns the Ethernet echo on\n", n);
    uint32_t last[NANOBPF_DPU_ETH_COUNTER_COUNT] = {0};
    last[0] = ~0u; /* report once at start */
    for (unsigned round = 0;; round++) {
#if NB_BOARD_ROUNDS
        if (round == NB_BOARD_ROUNDS) break;
#endif
        uint64_t until = nb_cycles() + NB_SECOND;
        while (nb_cycles() < until) {
        }
        nb_leds(1u << (round % 4)); /* a light running over LEDs 4..7: the firmware is alive */
        nb_eth_report(last);
    }
    printf("board firmware done\n");
    return 0;
}
