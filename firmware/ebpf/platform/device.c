/* Platform hooks for the device (bare-metal firmware on the CVA6 cores): picolibc's heap in main
 * memory (which is executable, so JIT code lives there too), the core's cycle counter and console. */
#include <stdlib.h>
#include <stdio.h>
#include "ebpf.h"
#include "nanobpf.h"

void *ebpf_alloc(size_t size) { return calloc(1, size ? size : 1); }
void ebpf_free(void *p) { free(p); }
void *ebpf_jit_alloc(size_t size) { return calloc(1, size); }
void ebpf_jit_free(void *p, size_t size) {
    (void)size;
    free(p);
}
void ebpf_jit_flush(void *code, size_t size) {
    (void)code;
    (void)size;
    /* CVA6's D$ is write-through; fence.i empties the I$ so fetches see the new code. */
    __asm__ volatile("fence rw, rw\n\tfence.i" ::: "memory");
}
uint64_t ebpf_cycles(void) { return nb_cycles(); }
uint64_t ebpf_ktime_ns(void) { return nb_cycles() * (1000000000u / NANOBPF_CORE_CLOCK_HZ); }
uint32_t ebpf_cpu_id(void) { return nb_hart_id(); }
uint32_t ebpf_num_cpus(void) { return nb_num_cores(); }
void ebpf_console_write(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) nb_putc(s[i]);
}
/* The AEAD engine's key table storage (uncached, so every core sees the control core's updates). */
uint8_t *ebpf_keytable_values(void) {
    _Static_assert(2 * NANOBPF_KEYTABLE_ENTRIES * NANOBPF_QUIC_KEYS_SIZE <= NANOBPF_KEYTABLE_SIZE, "key table storage too small");
    return (uint8_t *)(uintptr_t)NANOBPF_KEYTABLE_BASE;
}
