/* NanoBPF bare-metal runtime: the few calls every firmware program uses.
 * Console output goes through stdio (printf, puts): each hart writes to its own console register (the
 * simulation prints it) and, a whole line at a time, to the UART (the board's USB-UART console). */
#ifndef NANOBPF_H
#define NANOBPF_H

#include <stdint.h>
#include "nanobpf_soc.h"

#define NB_REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))
#define NB_REG64(addr) (*(volatile uint64_t *)(uintptr_t)(addr))

/* Entry point of a firmware program, called on every hart that is started (hart 0 at reset, the
 * others after nb_wake). When hart 0 returns, its value ends the simulation (0 = pass); when
 * another hart returns, it sleeps. */
int hart_main(unsigned hart);

static inline unsigned nb_hart_id(void) {
    unsigned long h;
    __asm__ volatile("csrr %0, mhartid" : "=r"(h));
    return (unsigned)h;
}

/* Cycles since this hart left reset (mcycle). */
static inline uint64_t nb_cycles(void) {
    uint64_t c;
    __asm__ volatile("csrr %0, mcycle" : "=r"(c));
    return c;
}

/* Number of cores in this build. */
static inline unsigned nb_num_cores(void) {
    return NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_NUM_CORES_OFFSET);
}

/* Start a sleeping hart (raises its CLINT software interrupt). */
static inline void nb_wake(unsigned hart) {
    NB_REG32(NANOBPF_CLINT_BASE + NANOBPF_CLINT_MSIP_OFFSET(hart)) = 1;
}

/* Per-core uncached mailbox words: the way harts share state (L1 caches are not coherent). */
static inline void nb_mailbox_write(unsigned hart, uint64_t value) {
    NB_REG64(NANOBPF_DPU_BASE + NANOBPF_DPU_MAILBOX_OFFSET(hart)) = value;
}
static inline uint64_t nb_mailbox_read(unsigned hart) {
    return NB_REG64(NANOBPF_DPU_BASE + NANOBPF_DPU_MAILBOX_OFFSET(hart));
}

/* One character to this hart's console (and, line by line, the UART). */
void nb_putc(char c);

/* Send this hart's unfinished line to the UART and wait until the UART has sent everything. */
void nb_console_flush(void);

/* The board's LEDs 7..4 (bit 0 = LED4) and slide switches (bit 0 = SW0); 0 in simulation. */
static inline void nb_leds(unsigned v) { NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_LEDS_OFFSET) = v & 0xf; }
static inline unsigned nb_switches(void) { return NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_SWITCHES_OFFSET) & 0xff; }

/* The board's Ethernet counters (dpu.eth_counter, the MAC's; 0 in simulation) as an `eth:` console
 * line when they differ from `last` (NANOBPF_DPU_ETH_COUNTER_COUNT words, updated): 1 if printed. */
int nb_eth_report(uint32_t *last);

/* End the simulation with `code` (0 = pass), after flushing the console. Does not return. */
__attribute__((noreturn)) void nb_sim_end(unsigned code);

#endif
