/* NanoBPF C runtime: per-hart TLS, stdio on the per-core console, start-up and trap reporting. */
#include <stdio.h>
#include <string.h>
#include "nanobpf.h"

extern char __tdata_start[], __tdata_end[], __tbss_start[], __tbss_size[], __stack_top[], __stack_size[];

void nb_putc(char c) {
    NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_CONSOLE_OFFSET(nb_hart_id())) = (uint8_t)c;
}

void nb_sim_end(unsigned code) {
    __asm__ volatile("fence" ::: "memory");
    NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_SIM_END_OFFSET) = code & 0xff;
    for (;;) __asm__ volatile("wfi");
}

static int console_put(char c, FILE *f) {
    (void)f;
    nb_putc(c);
    return (unsigned char)c;
}
static FILE console = FDEV_SETUP_STREAM(console_put, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdout = &console;
FILE *const stderr = &console;

/* Thread-local storage (picolibc keeps errno there): a block at the low end of this hart's stack
 * area, initialised from .tdata/.tbss. RISC-V TLS variant I: tp points at the block itself. */
static void init_tls(unsigned hart) {
    char *block = __stack_top - (hart + 1) * (size_t)__stack_size;
    memcpy(block, __tdata_start, (size_t)(__tdata_end - __tdata_start));
    /* TLS offsets count from the start of .tdata, so .tbss sits after its alignment padding. */
    memset(block + (__tbss_start - __tdata_start), 0, (size_t)__tbss_size);
    __asm__ volatile("mv tp, %0" ::"r"(block));
}

void nb_start(unsigned hart) {
    init_tls(hart);
    /* Acknowledge the wake-up so a later software interrupt can be seen. */
    NB_REG32(NANOBPF_CLINT_BASE + NANOBPF_CLINT_MSIP_OFFSET(hart)) = 0;
    int rc = hart_main(hart);
    if (hart == 0) nb_sim_end((unsigned)rc);
}

void nb_trap(uint64_t mcause, uint64_t mepc, uint64_t mtval) {
    printf("TRAP on hart %u: mcause=0x%llx mepc=0x%llx mtval=0x%llx\n", nb_hart_id(),
           (unsigned long long)mcause, (unsigned long long)mepc, (unsigned long long)mtval);
    nb_sim_end(NANOBPF_SIM_EXIT_TRAP);
}
