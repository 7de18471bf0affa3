/* Linker script for NanoBPF firmware in main memory. Preprocessed with the generated
 * nanobpf_soc.h so that the memory map has one source (hw/defs/soc.toml). */
#include "nanobpf_soc.h"

OUTPUT_ARCH(riscv)
ENTRY(_start)

/* Every hart's stack is its own RAM (region core_local, at the same address for each): the top of it
 * downwards, with that hart's TLS block at its low end. */
MEMORY {
  ram (rwx) : ORIGIN = NANOBPF_MAIN_MEM_BASE, LENGTH = NANOBPF_MAIN_MEM_SIZE
  local (rw) : ORIGIN = NANOBPF_CORE_LOCAL_BASE, LENGTH = NANOBPF_CORE_LOCAL_SIZE
}
__stack_size = LENGTH(local);

SECTIONS {
  .text : { *(.text.start) *(.text .text.*) } > ram
  .rodata : ALIGN(8) { *(.rodata .rodata.* .srodata .srodata.*) } > ram
  .tdata : ALIGN(16) { __tdata_start = .; *(.tdata .tdata.*) __tdata_end = .; } > ram
  .tbss : ALIGN(16) { __tbss_start = .; *(.tbss .tbss.*) } > ram
  __tbss_size = SIZEOF(.tbss);
  .data : ALIGN(8) {
    *(.data .data.*)
    __global_pointer$ = . + 0x800;
    *(.sdata .sdata.*)
  } > ram
  .bss (NOLOAD) : ALIGN(8) { __bss_start = .; *(.sbss .sbss.* .bss .bss.* COMMON) . = ALIGN(8); __bss_end = .; } > ram
  __stack_top = ORIGIN(local) + LENGTH(local);
  /* picolibc's malloc heap: everything after .bss (eBPF maps, programs, JIT code). */
  __heap_start = __bss_end;
  __heap_end = ORIGIN(ram) + LENGTH(ram);
  ASSERT(__bss_end <= __heap_end, "firmware does not fit in main memory")
  /DISCARD/ : { *(.note .note.* .comment .riscv.attributes) }
}
