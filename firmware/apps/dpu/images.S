/* The built-in XDP program of the dpu firmware (nanobpf-load output named by DPU_PROG, found through
 * the assembler's include path, -Wa,-I<dir>; none without DPU_PROG), and its boot configuration. */
    .section .rodata.dpu_prog, "a"
    .balign 8
    .global dpu_prog_image, dpu_prog_image_end
dpu_prog_image:
#ifdef DPU_PROG
    .incbin DPU_PROG
#endif
dpu_prog_image_end:

/* Its verification record (DPU_RECORD, made on the build host by nanobpf-run --write-record), or none:
 * then core 0 verifies the program itself. */
    .balign 8
    .global dpu_prog_record, dpu_prog_record_end
dpu_prog_record:
#ifdef DPU_RECORD
    .incbin DPU_RECORD
#endif
dpu_prog_record_end:

/* Its boot configuration (DPU_BOOTCFG, nanobpf.bootcfg format), or none. */
    .balign 8
    .global dpu_boot_config, dpu_boot_config_end
dpu_boot_config:
#ifdef DPU_BOOTCFG
    .incbin DPU_BOOTCFG
#else
    .ascii "NBCF"
    .word 0
#endif
dpu_boot_config_end:

/* The control channel's device key (docs/control.md "The device key"): the 16 bytes of the build's key
 * file (DPU_CTRL_KEY, made by `nanobpf-ctrl-key bin`). Every dpu image carries one. */
    .balign 8
    .global dpu_ctrl_key
dpu_ctrl_key:
    .incbin DPU_CTRL_KEY
    .size dpu_ctrl_key, 16
