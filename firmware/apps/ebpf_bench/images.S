/* The benchmark's eBPF images (nanobpf-load output), linked in as data (found through the
 * assembler's include path, -Wa,-I<dir>). */
    .section .rodata.bench_images, "a"
    .balign 8
    .global bench_parse_image, bench_parse_image_end, bench_hash_image, bench_hash_image_end
bench_parse_image:
    .incbin "bench_parse.nbpf"
bench_parse_image_end:
    .balign 8
bench_hash_image:
    .incbin "bench_hash.nbpf"
bench_hash_image_end:
