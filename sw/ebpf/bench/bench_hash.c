/* Benchmark workload "hash": compute-heavy. A keyed 64-bit mixing hash (SipHash-like ARX rounds) over
 * the first 64 bytes after the Ethernet header, 8 bytes at a time; the action depends on the hash so
 * nothing is optimised away. Pure 64-bit ALU work: shows the JIT's code quality without memory or
 * helper effects. */
#include "nanobpf_xdp.h"

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define ROUND(v0, v1, v2, v3) \
    do { \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2; \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0; \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
    } while (0)

SEC("xdp")
int bench_hash(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    unsigned char *p = data + 14;
    if (p + 64 > end) return XDP_DROP;
    __u64 v0 = 0x736f6d6570736575ULL, v1 = 0x646f72616e646f6dULL;
    __u64 v2 = 0x6c7967656e657261ULL, v3 = 0x7465646279746573ULL;
NB_UNROLL
    for (int i = 0; i < 8; i++) {
        __u64 m = 0;
NB_UNROLL
        for (int b = 0; b < 8; b++) m |= (__u64)p[i * 8 + b] << (8 * b);
        v3 ^= m;
        ROUND(v0, v1, v2, v3);
        ROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    v2 ^= 0xff;
NB_UNROLL
    for (int i = 0; i < 4; i++) ROUND(v0, v1, v2, v3);
    __u64 h = v0 ^ v1 ^ v2 ^ v3;
    return (int)(h % 3) + 1; /* DROP, PASS or TX */
}

char _license[] SEC("license") = "GPL";
