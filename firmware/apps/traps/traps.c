/* Test program: an access the core must refuse with a trap, chosen at build time (NB_TRAP_KIND):
 *   1 (traps-load)  an 8-byte load from an address that is not 8-byte aligned: load address misaligned
 *   2 (traps-store) an 8-byte store to such an address: store address misaligned
 *   3 (traps-fetch) a jump into packet memory, which is not an execute region: instruction access fault
 * The runtime's trap handler prints mcause, mepc and mtval and ends the run with the trap exit code; a
 * core that carried on would print "no trap" and pass, which the test refuses. These are the checks CVA6's
 * MMU made and that [cva6] mmu = false keeps (nanobpf-rtl-files). */
#include <stdint.h>
#include <stdio.h>
#include "nanobpf.h"

#ifndef NB_TRAP_KIND
#error "build with -DNB_TRAP_KIND=1, 2 or 3"
#endif

static uint64_t words[2];

int hart_main(unsigned hart) {
    (void)hart;
    uintptr_t odd = (uintptr_t)words + 4;
    printf("trap test %d at 0x%lx\n", NB_TRAP_KIND,
           (unsigned long)(NB_TRAP_KIND == 3 ? NANOBPF_PACKET_MEM_BASE : odd));
#if NB_TRAP_KIND == 1
    uint64_t v;
    __asm__ volatile("ld %0, 0(%1)" : "=r"(v) : "r"(odd) : "memory");
    printf("loaded 0x%llx\n", (unsigned long long)v);
#elif NB_TRAP_KIND == 2
    __asm__ volatile("sd %0, 0(%1)" ::"r"(0x1122334455667788ull), "r"(odd) : "memory");
#else
    __asm__ volatile("jalr ra, 0(%0)" ::"r"((uintptr_t)NANOBPF_PACKET_MEM_BASE) : "ra", "memory");
#endif
    printf("no trap\n");
    return 0;
}
