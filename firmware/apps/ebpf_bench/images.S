/* The benchmark's eBPF images (nanobpf-load output), linked in as data. IMAGES is the directory. */
#define IMAGE(name) \
    .section .rodata.name, "a"; .balign 8; .global name##_image, name##_image_end; \
    name##_image: .incbin IMAGES "/" #name ".nbpf"; name##_image_end:
IMAGE(bench_parse)
IMAGE(bench_hash)
