/* The QUIC benchmark's eBPF image (nanobpf-load output), linked in as data (found through the
 * assembler's include path, -Wa,-I<dir>). */
    .section .rodata.bench_images, "a"
    .balign 8
    .global bench_quic_image, bench_quic_image_end
bench_quic_image:
    .incbin "bench_quic.nbpf"
bench_quic_image_end:
    .balign 8
    .global bench_quic_hw_image, bench_quic_hw_image_end
bench_quic_hw_image:
    .incbin "bench_quic_hw.nbpf"
bench_quic_hw_image_end:
#ifdef QUIC_BENCH_RFC
    .balign 8
    .global xdp_quic_image, xdp_quic_image_end
xdp_quic_image:
    .incbin "xdp_quic.nbpf"
xdp_quic_image_end:
#endif
