/* Test program: three stores the bus must refuse. The firmware itself "passes" (returns 0); the
 * simulation must still fail with exit code 125 and print one [bus] error line per refused store. */
#include <stdio.h>
#include "nanobpf.h"

int hart_main(unsigned hart) {
    (void)hart;
    NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_ID_OFFSET) = 0;  /* read-only register: SLVERR */
    /* just past the mailbox array, the last registers of the block: no register there, SLVERR */
    NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_MAILBOX_OFFSET(NANOBPF_DPU_MAILBOX_COUNT)) = 0;
    NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_SIZE) = 0;       /* just past the region, in no region: DECERR */
    __asm__ volatile("fence" ::: "memory");
    printf("made three stores the bus must refuse\n");
    return 0;
}
