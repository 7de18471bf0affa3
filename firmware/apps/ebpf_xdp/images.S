/* The eBPF image run by ebpf_xdp (nanobpf-load output), linked in as data. IMAGES is the directory. */
    .section .rodata.xdp_device_test, "a"
    .balign 8
    .global xdp_device_test_image, xdp_device_test_image_end
xdp_device_test_image:
    .incbin IMAGES "/xdp_device_test.nbpf"
xdp_device_test_image_end:
