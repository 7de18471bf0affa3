/* memset, memcpy and memmove for the cores, eight bytes at a time where the addresses allow it.
 * picolibc's (built for size) move one byte per iteration: several instructions per byte, which made
 * them the largest single cost of verifying a program on the core (calloc's zeroing above all). These
 * definitions come first at link time, so picolibc's are not pulled in. The loops must not be turned
 * back into calls to themselves by the compiler. */
#include <stddef.h>
#include <stdint.h>

#define NO_LIBCALL __attribute__((optimize("no-tree-loop-distribute-patterns")))

NO_LIBCALL void *memset(void *dst, int c, size_t n) {
    uint8_t *d = dst;
    uint8_t b = (uint8_t)c;
    for (; n && ((uintptr_t)d & 7); n--) *d++ = b;
    uint64_t w = 0x0101010101010101ull * b;
    for (; n >= 32; n -= 32, d += 32) {
        ((uint64_t *)(void *)d)[0] = w;
        ((uint64_t *)(void *)d)[1] = w;
        ((uint64_t *)(void *)d)[2] = w;
        ((uint64_t *)(void *)d)[3] = w;
    }
    for (; n >= 8; n -= 8, d += 8) *(uint64_t *)(void *)d = w;
    for (; n; n--) *d++ = b;
    return dst;
}

/* Forwards: also right for memmove when dst is below src (each block is read before it is written). */
NO_LIBCALL static void *copy_forwards(void *dst, const void *src, size_t n) {
    uint8_t *d = dst;
    const uint8_t *s = src;
    if ((((uintptr_t)d ^ (uintptr_t)s) & 7) == 0) { /* the same alignment: whole words after the head */
        for (; n && ((uintptr_t)d & 7); n--) *d++ = *s++;
        for (; n >= 32; n -= 32, d += 32, s += 32) {
            uint64_t a = ((const uint64_t *)(const void *)s)[0], b = ((const uint64_t *)(const void *)s)[1];
            uint64_t c = ((const uint64_t *)(const void *)s)[2], e = ((const uint64_t *)(const void *)s)[3];
            ((uint64_t *)(void *)d)[0] = a;
            ((uint64_t *)(void *)d)[1] = b;
            ((uint64_t *)(void *)d)[2] = c;
            ((uint64_t *)(void *)d)[3] = e;
        }
        for (; n >= 8; n -= 8, d += 8, s += 8) *(uint64_t *)(void *)d = *(const uint64_t *)(const void *)s;
    }
    for (; n; n--) *d++ = *s++;
    return dst;
}

NO_LIBCALL void *memcpy(void *restrict dst, const void *restrict src, size_t n) { return copy_forwards(dst, src, n); }

NO_LIBCALL void *memmove(void *dst, const void *src, size_t n) {
    uint8_t *d = dst;
    const uint8_t *s = src;
    if (d <= s || d >= s + n) return copy_forwards(dst, src, n);
    d += n, s += n;
    if ((((uintptr_t)d ^ (uintptr_t)s) & 7) == 0) {
        for (; n && ((uintptr_t)d & 7); n--) *--d = *--s;
        for (; n >= 8; n -= 8) {
            d -= 8, s -= 8;
            *(uint64_t *)(void *)d = *(const uint64_t *)(const void *)s;
        }
    }
    for (; n; n--) *--d = *--s;
    return dst;
}
