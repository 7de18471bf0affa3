/* Lets one XDP C source build both as eBPF (clang -O2 -g -target bpf) and natively (riscv64 gcc -O2,
 * for the benchmark's native baseline). As eBPF it is the ordinary libbpf environment; natively it
 * supplies the few definitions the benchmark programs use (they use no maps or helpers). */
#ifndef NANOBPF_XDP_H
#define NANOBPF_XDP_H

#ifdef __bpf__
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#else
#include <stdint.h>
typedef uint8_t __u8;
typedef uint16_t __u16;
typedef uint32_t __u32;
typedef uint64_t __u64;
typedef uint16_t __be16;
typedef uint32_t __be32;
/* Linux struct xdp_md: 32-bit data pointers, valid as addresses on the device (memory < 4 GiB). */
struct xdp_md {
    __u32 data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex;
};
enum xdp_action { XDP_ABORTED = 0, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT };
#define SEC(name)
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#ifndef __noinline
#define __noinline __attribute__((noinline))
#endif
#define bpf_htons(x) __builtin_bswap16(x)
#define bpf_ntohs(x) __builtin_bswap16(x)
#define bpf_htonl(x) __builtin_bswap32(x)
#define bpf_ntohl(x) __builtin_bswap32(x)
#define bpf_be64_to_cpu(x) __builtin_bswap64(x)
#define barrier_var(var) __asm__ volatile("" : "+r"(var))
#endif

/* Fully unroll the next loop, with either compiler (keeps the native baseline comparable). */
#ifdef __clang__
#define NB_UNROLL _Pragma("unroll")
#else
#define NB_UNROLL _Pragma("GCC unroll 64")
#endif

#endif
