/* NanoBPF C runtime: per-hart TLS, stdio on the per-core console, start-up and trap reporting. */
#include <stdio.h>
#include <string.h>
#include "nanobpf.h"

extern char __tdata_start[], __tdata_end[], __tbss_start[], __tbss_size[], __stack_top[], __stack_size[];

/* UART: each hart collects a line and sends it whole under a lock, so lines of different harts do
 * not mix. The lock is taken and released with AMOs, which go to memory (the caches are not coherent). */
#define UART_LINE 120
static char uart_line[NANOBPF_MAX_CORES][UART_LINE];
static unsigned uart_len[NANOBPF_MAX_CORES];
static int uart_lock;

static void uart_send_line(unsigned hart) {
    if (!uart_len[hart]) return;
    while (__atomic_exchange_n(&uart_lock, 1, __ATOMIC_ACQUIRE)) {
    }
    for (unsigned i = 0; i < uart_len[hart]; i++) {
        while (NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_UART_STATUS_OFFSET) & (1u << NANOBPF_DPU_UART_STATUS_FULL_SHIFT)) {
        }
        NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_UART_TX_OFFSET) = (uint8_t)uart_line[hart][i];
    }
    (void)__atomic_exchange_n(&uart_lock, 0, __ATOMIC_RELEASE);
    uart_len[hart] = 0;
}

void nb_putc(char c) {
    unsigned hart = nb_hart_id();
    NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_CONSOLE_OFFSET(hart)) = (uint8_t)c;
    if (uart_len[hart] >= UART_LINE - 1) uart_send_line(hart); /* room for CR LF */
    if (c == '\n') uart_line[hart][uart_len[hart]++] = '\r';  /* terminals want CR LF */
    uart_line[hart][uart_len[hart]++] = c;
    if (c == '\n') uart_send_line(hart);
}

void nb_console_flush(void) {
    uart_send_line(nb_hart_id());
    while (!(NB_REG32(NANOBPF_DPU_BASE + NANOBPF_DPU_UART_STATUS_OFFSET) & (1u << NANOBPF_DPU_UART_STATUS_IDLE_SHIFT))) {
    }
}

void nb_sim_end(unsigned code) {
    nb_console_flush();
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
 * area (its own RAM, core_local), initialised from .tdata/.tbss. RISC-V TLS variant I: tp points at
 * the block itself. */
static void init_tls(unsigned hart) {
    (void)hart;
    char *block = __stack_top - (size_t)__stack_size;
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
