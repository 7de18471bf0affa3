/* NanoBPF boot ROM: every hart starts here (hw/defs/soc.toml reset_vector).
 * Hart 0 jumps straight to main memory. The other harts sleep until core 0 raises their CLINT
 * software interrupt (msip), then jump to the same entry point; firmware crt0 clears msip.
 * Built with -DNANOBPF_BOOT_COPY_IMAGE (bootrom-board.bin, boards whose main memory is DRAM): hart 0
 * first copies the whole fw_image region (the firmware in on-chip ROM) to the base of main memory.
 * LiteDRAM holds its port until the DDR3 is initialised, so the first store simply waits for it. */
#include "nanobpf_soc.h"

#define MIP_MSIP 8

    .section .text
    .globl _start
_start:
    csrr    a0, mhartid
    li      t0, NANOBPF_MAIN_MEM_BASE
#ifdef NANOBPF_BOOT_COPY_IMAGE
    beqz    a0, copy_image
#else
    beqz    a0, enter
#endif
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
#ifdef NANOBPF_BOOT_COPY_IMAGE
copy_image:
    li      t1, NANOBPF_FW_IMAGE_BASE
    li      t2, NANOBPF_FW_IMAGE_BASE + NANOBPF_FW_IMAGE_SIZE
    mv      t3, t0
copy:
    ld      t4, 0(t1)
    sd      t4, 0(t3)
    addi    t1, t1, 8
    addi    t3, t3, 8
    bltu    t1, t2, copy
    fence                      /* the stores reach memory before instructions are fetched from it */
    fence.i
    j       enter
#endif
