/* The control core's signs of life on a board, between control frames: once a second of the core clock
 * the light on LEDs 4..7 moves one step and, when they changed, the MAC's counters are printed (an
 * `eth:` line, nb_eth_report; the link self-test behind SW0 counts there too). In simulation the
 * counters stay 0 and a second is longer than a run, so nothing is printed. */
#include "dpu.h"
#include "nanobpf.h"

static uint64_t next_second;
static unsigned step;
static uint32_t last_eth[NANOBPF_DPU_ETH_COUNTER_COUNT];

void dpu_status_tick(void) {
    uint64_t now = nb_cycles();
    if (now < next_second) return;
    next_second = now + NANOBPF_CORE_CLOCK_HZ;
    nb_leds(1u << (step++ % 4));
    nb_eth_report(last_eth);
}
