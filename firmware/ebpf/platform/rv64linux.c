/* Platform for RV64 Linux user mode (static binaries run by qemu-riscv64, e.g. nanobpf-run --jit and
 * the JIT self-test): start-up, picolibc stdio and files on Linux system calls, eBPF platform hooks
 * (JIT code in mmap'ed executable memory). */
#include <picolibc.h> /* defines PICOLIBC_TLS, which picotls.h needs */
#include <errno.h>
#include <fcntl.h>
#include <picotls.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "aead.h"
#include "ebpf.h"

enum { SYS_OPENAT = 56, SYS_CLOSE = 57, SYS_LSEEK = 62, SYS_READ = 63, SYS_WRITE = 64, SYS_EXIT_GROUP = 94,
       SYS_CLOCK_GETTIME = 113, SYS_MUNMAP = 215, SYS_MMAP = 222 };

static long sys6(long n, long a, long b, long c, long d, long e, long f) {
    register long a0 __asm__("a0") = a;
    register long a1 __asm__("a1") = b;
    register long a2 __asm__("a2") = c;
    register long a3 __asm__("a3") = d;
    register long a4 __asm__("a4") = e;
    register long a5 __asm__("a5") = f;
    register long a7 __asm__("a7") = n;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a3), "r"(a4), "r"(a5), "r"(a7) : "memory");
    return a0;
}
static long sys3(long n, long a, long b, long c) { return sys6(n, a, b, c, 0, 0, 0); }

/* ---- POSIX file calls behind picolibc's fopen/fread/fwrite ---- */
static long posix_ret(long r) {
    if (r < 0 && r > -4096) {
        errno = (int)-r;
        return -1;
    }
    return r;
}
int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int mode = flags & O_CREAT ? va_arg(ap, int) : 0;
    va_end(ap);
    /* picolibc's O_ flags as Linux's (asm-generic) */
    long lf = (flags & O_ACCMODE) | (flags & O_CREAT ? 0100 : 0) | (flags & O_EXCL ? 0200 : 0) |
              (flags & O_TRUNC ? 01000 : 0) | (flags & O_APPEND ? 02000 : 0);
    return (int)posix_ret(sys6(SYS_OPENAT, -100 /* AT_FDCWD */, (long)path, lf, mode, 0, 0));
}
int close(int fd) { return (int)posix_ret(sys3(SYS_CLOSE, fd, 0, 0)); }
off_t lseek(int fd, off_t off, int whence) { return posix_ret(sys3(SYS_LSEEK, fd, off, whence)); }
ssize_t read(int fd, void *buf, size_t n) { return posix_ret(sys3(SYS_READ, fd, (long)buf, (long)n)); }
ssize_t write(int fd, const void *buf, size_t n) { return posix_ret(sys3(SYS_WRITE, fd, (long)buf, (long)n)); }

/* ---- stdio: line-buffered output streams, a buffered stdin ---- */
struct stream {
    FILE file; /* first: picolibc passes &file back to the hooks */
    int fd;
    unsigned n, at;
    char buf[512];
};

static int out_flush(FILE *f) {
    struct stream *s = (struct stream *)f;
    for (unsigned done = 0; done < s->n;) {
        long r = sys3(SYS_WRITE, s->fd, (long)(s->buf + done), s->n - done);
        if (r <= 0) {
            s->n = 0;
            return -1;
        }
        done += (unsigned)r;
    }
    s->n = 0;
    return 0;
}
static int out_put(char c, FILE *f) {
    struct stream *s = (struct stream *)f;
    s->buf[s->n++] = c;
    if ((c == '\n' || s->n == sizeof s->buf) && out_flush(f)) return _FDEV_ERR;
    return (unsigned char)c;
}
static int in_get(FILE *f) {
    struct stream *s = (struct stream *)f;
    if (s->at == s->n) {
        long r = sys3(SYS_READ, s->fd, (long)s->buf, sizeof s->buf);
        if (r <= 0) return r == 0 ? _FDEV_EOF : _FDEV_ERR;
        s->n = (unsigned)r;
        s->at = 0;
    }
    return (unsigned char)s->buf[s->at++];
}

static struct stream in = {FDEV_SETUP_STREAM(NULL, in_get, NULL, _FDEV_SETUP_READ), 0, 0, 0, {0}};
static struct stream out = {FDEV_SETUP_STREAM(out_put, NULL, out_flush, _FDEV_SETUP_WRITE), 1, 0, 0, {0}};
static struct stream err = {FDEV_SETUP_STREAM(out_put, NULL, out_flush, _FDEV_SETUP_WRITE), 2, 0, 0, {0}};
FILE *const stdin = &in.file;
FILE *const stdout = &out.file;
FILE *const stderr = &err.file;

/* ---- start-up and exit ---- */
extern char __tls_block[];
int main(int argc, char **argv);
void rv64linux_main(int argc, char **argv) __attribute__((noreturn));

void rv64linux_main(int argc, char **argv) {
    _init_tls(__tls_block);
    _set_tls(__tls_block);
    exit(main(argc, argv));
}

void _exit(int status) {
    out_flush(stdout);
    out_flush(stderr);
    for (;;) sys3(SYS_EXIT_GROUP, status, 0, 0);
}

/* ---- eBPF platform hooks ---- */
void *ebpf_alloc(size_t size) { return calloc(1, size ? size : 1); }
void *ebpf_alloc_shared(size_t size) { return ebpf_alloc(size); } /* one process: all memory is shared */
void ebpf_free_shared(void *p) { free(p); }
void ebpf_free(void *p) { free(p); }
/* Every other buffer is asked for near the program's code and heap (a hint at 256 MiB, which the
 * kernel takes when it is free): there the JIT reaches helpers and maps pc-relatively, as on the
 * device; the others land where mmap puts them (far above), where it uses absolute constants. So the
 * tests that run JIT code here run both forms. */
void *ebpf_jit_alloc(size_t size) {
    enum { PROT_RWX = 7, MAP_PRIVATE_ANON = 0x22 };
    static unsigned n;
    long hint = n++ & 1 ? 0 : 0x10000000;
    long p = sys6(SYS_MMAP, hint, (long)size, PROT_RWX, MAP_PRIVATE_ANON, -1, 0);
    return p < 0 && p > -4096 ? NULL : (void *)p;
}
void ebpf_jit_free(void *p, size_t size) {
    if (p) sys3(SYS_MUNMAP, (long)p, (long)size, 0);
}
void ebpf_jit_flush(void *code, size_t size) {
    (void)code;
    (void)size;
    /* One hart: fence.i orders the stores before later fetches (qemu also tracks written code). */
    __asm__ volatile("fence rw, rw\n\tfence.i" ::: "memory");
}
uint64_t ebpf_ktime_ns(void) {
    struct {
        long sec, nsec;
    } ts = {0, 0};
    sys3(SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, (long)&ts, 0);
    return (uint64_t)ts.sec * 1000000000u + (uint64_t)ts.nsec;
}
uint64_t ebpf_cycles(void) { return ebpf_ktime_ns(); }
uint32_t ebpf_cpu_id(void) { return 0; }
uint32_t ebpf_num_cpus(void) { return 1; }
int ebpf_jit_cpu_is_hartid(void) { return 0; } /* user mode: no mhartid */
void ebpf_console_write(const char *s, size_t n) {
    out_flush(stdout); /* keep program output and trace lines in order */
    for (size_t done = 0; done < n;) {
        long r = sys3(SYS_WRITE, 1, (long)(s + done), (long)(n - done));
        if (r <= 0) break;
        done += (size_t)r;
    }
}
#include "no_engine.h"
