/* The board's Ethernet counters (the MAC's, dpu.eth_counter) as one console line. */
#include <stdio.h>
#include "nanobpf.h"

static uint32_t eth(unsigned i) { return NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_ETH_COUNTER_OFFSET(i)); }

int nb_eth_report(uint32_t *last) {
    uint32_t now[NANOBPF_DPU_ETH_COUNTER_COUNT];
    int changed = 0;
    for (unsigned i = 0; i < NANOBPF_DPU_ETH_COUNTER_COUNT; i++) {
        now[i] = eth(i);
        changed |= now[i] != last[i];
        last[i] = now[i];
    }
    if (!changed) return 0;
    printf("eth: rx %lu frames %lu bytes, tx %lu frames %lu bytes; dropped: phy %lu runt %lu oversize %lu fcs %lu "
           "overflow %lu tx_bad %lu; echo %s\n",
           (unsigned long)now[NANOBPF_ETH_COUNTER_RX_FRAMES], (unsigned long)now[NANOBPF_ETH_COUNTER_RX_BYTES],
           (unsigned long)now[NANOBPF_ETH_COUNTER_TX_FRAMES], (unsigned long)now[NANOBPF_ETH_COUNTER_TX_BYTES],
           (unsigned long)now[NANOBPF_ETH_COUNTER_RX_PHY_ERR], (unsigned long)now[NANOBPF_ETH_COUNTER_RX_RUNT],
           (unsigned long)now[NANOBPF_ETH_COUNTER_RX_OVERSIZE], (unsigned long)now[NANOBPF_ETH_COUNTER_RX_FCS_ERR],
           (unsigned long)now[NANOBPF_ETH_COUNTER_RX_OVERFLOW], (unsigned long)now[NANOBPF_ETH_COUNTER_TX_BAD],
           (nb_switches() & 1) ? "on (SW0)" : "off");
    return 1;
}
