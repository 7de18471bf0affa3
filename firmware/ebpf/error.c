/* Error reporting shared by the loader, verifier, JIT and interpreter. */
#include <stdarg.h>
#include <stdio.h>
#include "ebpf.h"

int ebpf_fail(struct ebpf_error *err, int insn, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->insn = insn;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}
