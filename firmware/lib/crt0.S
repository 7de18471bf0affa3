/* NanoBPF firmware entry, for every hart (see bootrom.S for how harts arrive here).
 * Sets the trap vector, the hart's stack (the top of its own RAM, region core_local, downwards),
 * clears .bss on hart 0 only (the others are still asleep then), and calls nb_start(hartid).
 * No linker relaxation here: it would turn `la` into gp-relative addressing before gp is set. */
    .option norelax
    .section .text.start
    .globl _start
_start:
    la      gp, __global_pointer$
    csrr    a0, mhartid
    la      t0, nb_trap_entry
    csrw    mtvec, t0
    la      sp, __stack_top     /* each hart's own RAM (core_local): the same address for all */
    bnez    a0, 2f
    la      t0, __bss_start
    la      t1, __bss_end
1:  bgeu    t0, t1, 2f
    sd      zero, 0(t0)
    addi    t0, t0, 8
    j       1b
2:  call    nb_start
3:  wfi
    j       3b

    /* Any trap is a firmware bug in the skeleton: report it from C and end the simulation. */
    .balign 4
    .globl nb_trap_entry
nb_trap_entry:
    csrr    a0, mcause
    csrr    a1, mepc
    csrr    a2, mtval
    call    nb_trap
4:  j       4b
