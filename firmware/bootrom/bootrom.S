/* NanoBPF boot ROM: every hart starts here (hw/defs/soc.toml reset_vector).
 * Hart 0 jumps straight to main memory. The other harts sleep until core 0 raises their CLINT
 * software interrupt (msip), then jump to the same entry point; firmware crt0 clears msip. */
#include "nanobpf_soc.h"

#define MIP_MSIP 8

    .section .text
    .globl _start
_start:
    csrr    a0, mhartid
    li      t0, NANOBPF_MAIN_MEM_BASE
    beqz    a0, enter
    li      t1, MIP_MSIP
    csrw    mie, t1            /* wfi wakes on a pending enabled interrupt, even with mstatus.MIE=0 */
sleep:
    wfi
    csrr    t1, mip
    andi    t1, t1, MIP_MSIP
    beqz    t1, sleep
enter:
    csrw    mie, zero
    jr      t0
