/* The built-in XDP program of the dpu firmware (nanobpf-load output named by DPU_PROG, found through
 * the assembler's include path, -Wa,-I<dir>). */
    .section .rodata.dpu_prog, "a"
    .balign 8
    .global dpu_prog_image, dpu_prog_image_end
dpu_prog_image:
    .incbin DPU_PROG
dpu_prog_image_end:
