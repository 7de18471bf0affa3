/* Platform hooks for the x86-64 (or any POSIX) host build: tests and nanobpf-run. The host cannot
 * execute RV64 code, so ebpf_jit_alloc returns NULL there (the JIT still sizes and counts code). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "aead.h"
#include "ebpf.h"

void *ebpf_alloc(size_t size) { return calloc(1, size ? size : 1); }
void *ebpf_alloc_shared(size_t size) { return ebpf_alloc(size); } /* one process: all memory is shared */
void ebpf_free_shared(void *p) { free(p); }
void ebpf_free(void *p) { free(p); }
#if defined(__riscv)
#error "use platform/rv64linux.c for RV64 Linux user mode"
#endif
void *ebpf_jit_alloc(size_t size) {
    (void)size;
    return NULL;
}
void ebpf_jit_free(void *p, size_t size) {
    (void)p;
    (void)size;
}
void ebpf_jit_flush(void *code, size_t size) {
    (void)code;
    (void)size;
}
uint64_t ebpf_ktime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
uint64_t ebpf_cycles(void) { return ebpf_ktime_ns(); }
/* One CPU, unless a test pretends to be several cores (per-CPU map copies: tests/test_maps.c). */
uint32_t ebpf_host_cpus = 1, ebpf_host_cpu;
uint32_t ebpf_cpu_id(void) { return ebpf_host_cpu; }
uint32_t ebpf_num_cpus(void) { return ebpf_host_cpus; }
int ebpf_jit_cpu_is_hartid(void) { return 0; }
void ebpf_console_write(const char *s, size_t n) {
    fwrite(s, 1, n, stdout);
    fflush(stdout);
}
#include "no_engine.h"
