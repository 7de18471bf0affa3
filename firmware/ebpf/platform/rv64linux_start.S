/* Entry of RV64 Linux user-mode binaries (qemu-riscv64): the kernel (or qemu) leaves argc at sp and
 * argv right above it; rv64linux_main sets up TLS, runs main and exits with its status. */
    .section .text.start, "ax", @progbits
    .globl _start
    .type _start, @function
_start:
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    ld a0, 0(sp)
    addi a1, sp, 8
    andi sp, sp, -16
    call rv64linux_main
1:  j 1b
    .size _start, . - _start
