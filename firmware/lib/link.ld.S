/* Linker script for NanoBPF firmware in main memory. Preprocessed with the generated
 * nanobpf_soc.h so that the memory map has one source (hw/defs/soc.toml). */
#include "nanobpf_soc.h"

OUTPUT_ARCH(riscv)
ENTRY(_start)

__stack_size = 0x4000;      /* per hart; also holds that hart's TLS block at its low end */

MEMORY { ram (rwx) : ORIGIN = NANOBPF_MAIN_MEM_BASE, LENGTH = NANOBPF_MAIN_MEM_SIZE }

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
  __stack_top = ORIGIN(ram) + LENGTH(ram);
  __stacks_bottom = __stack_top - NANOBPF_MAX_CORES * __stack_size;
  /* picolibc's malloc heap: everything between .bss and the stacks (eBPF maps, programs, JIT code). */
  __heap_start = __bss_end;
  __heap_end = __stacks_bottom;
  ASSERT(__bss_end <= __stacks_bottom, "firmware does not fit below the per-hart stacks")
  /DISCARD/ : { *(.note .note.* .comment .riscv.attributes) }
}
