/* The eBPF image run by ebpf_xdp (nanobpf-load output), linked in as data (found through
 * the assembler's include path, -Wa,-I<dir>). */
    .section .rodata.xdp_device_test, "a"
    .balign 8
    .global xdp_device_test_image, xdp_device_test_image_end
xdp_device_test_image:
    .incbin "xdp_device_test.nbpf"
xdp_device_test_image_end:
