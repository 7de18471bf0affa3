/* Helpers callable from eBPF programs. Ids and argument types come from hw/defs/ebpf.toml through the
 * NANOBPF_HELPERS X-macro; this file supplies the functions (the QUIC ones are in quic_helpers.c) and
 * the table. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "aead.h"
#include "ebpf.h"
#include "helpers.h"

static U64 h_map_lookup_elem(U64 map, U64 key, U64 a3, U64 a4, U64 a5) {
    (void)a3; (void)a4; (void)a5;
    const struct ebpf_xdp_buff *x = ebpf_current_xdp;
    if (x && x->conn && ebpf_map_is_keytable(PTR(map))) /* PISA found the packet's entry: its slot first */
        return (U64)(uintptr_t)ebpf_keytable_lookup_at(PTR(key), ebpf_conn_slot(x->conn));
    return (U64)(uintptr_t)ebpf_map_lookup(PTR(map), PTR(key));
}
static U64 h_map_update_elem(U64 map, U64 key, U64 value, U64 flags, U64 a5) {
    (void)a5;
    return (U64)(int64_t)ebpf_map_update(PTR(map), PTR(key), PTR(value), flags);
}
static U64 h_map_delete_elem(U64 map, U64 key, U64 a3, U64 a4, U64 a5) {
    (void)a3; (void)a4; (void)a5;
    return (U64)(int64_t)ebpf_map_delete(PTR(map), PTR(key));
}
static U64 h_ktime_get_ns(U64 a1, U64 a2, U64 a3, U64 a4, U64 a5) {
    (void)a1; (void)a2; (void)a3; (void)a4; (void)a5;
    return ebpf_ktime_ns();
}

/* trace_printk and trace_vprintk: the Linux subset (%d %i %u %x %X %p %c %s %%, l/ll; at most nargs
 * values). The format is checked as it is printed; an unknown conversion prints as-is and ends
 * formatting. */
static U64 printk_line(const char *fmt, U64 fmt_size, const U64 *args, unsigned nargs) {
    char out[256];
    size_t o = 0;
    unsigned next = 0;
    for (size_t i = 0; i < fmt_size && fmt[i] && o < sizeof out - 1; i++) {
        if (fmt[i] != '%') {
            out[o++] = fmt[i];
            continue;
        }
        size_t j = i + 1;
        int longs = 0;
        while (j < fmt_size && fmt[j] == 'l') longs++, j++;
        char conv = j < fmt_size ? fmt[j] : 0;
        if (conv == '%') {
            out[o++] = '%';
            i = j;
            continue;
        }
        if (!conv || !strchr("diuxXpcs", conv) || next >= nargs) {
            int n = snprintf(out + o, sizeof out - o, "%.*s", (int)(fmt_size - i), fmt + i);
            o += n > 0 ? (size_t)n : 0;
            break;
        }
        U64 v = args[next++];
        if (longs == 0 && conv != 'p' && conv != 's') v = conv == 'd' || conv == 'i' ? (U64)(int64_t)(int32_t)v : (uint32_t)v;
        int n;
        switch (conv) {
        case 'd': case 'i': n = snprintf(out + o, sizeof out - o, "%lld", (long long)v); break;
        case 'u': n = snprintf(out + o, sizeof out - o, "%llu", (unsigned long long)v); break;
        case 'x': n = snprintf(out + o, sizeof out - o, "%llx", (unsigned long long)v); break;
        case 'X': n = snprintf(out + o, sizeof out - o, "%llX", (unsigned long long)v); break;
        case 'p': n = snprintf(out + o, sizeof out - o, "0x%llx", (unsigned long long)v); break;
        case 'c': n = snprintf(out + o, sizeof out - o, "%c", (int)(char)v); break;
        default: n = snprintf(out + o, sizeof out - o, "%s", "(string)"); break; /* %s: no unchecked reads */
        }
        if (n > 0) o += (size_t)n < sizeof out - o ? (size_t)n : sizeof out - o - 1;
        i = j;
    }
    if (o && out[o - 1] != '\n' && o < sizeof out - 1) out[o++] = '\n';
    ebpf_console_write(out, o);
    return o;
}
static U64 h_trace_printk(U64 fmt, U64 fmt_size, U64 a3, U64 a4, U64 a5) {
    U64 args[3] = {a3, a4, a5};
    return printk_line(PTR(fmt), fmt_size, args, 3);
}
/* bpf_printk with more than three values: data holds data_len / 8 of them (Linux: at most 12). */
static U64 h_trace_vprintk(U64 fmt, U64 fmt_size, U64 data, U64 data_len, U64 a5) {
    (void)a5;
    U64 args[NANOBPF_PRINTK_MAX_ARGS];
    if (data_len % 8 || data_len > sizeof args || (data_len && !data)) return (U64)(int64_t)-EINVAL;
    memcpy(args, PTR(data), data_len);
    return printk_line(PTR(fmt), fmt_size, args, (unsigned)(data_len / 8));
}

static __thread uint32_t prandom_state;
static U64 h_get_prandom_u32(U64 a1, U64 a2, U64 a3, U64 a4, U64 a5) {
    (void)a1; (void)a2; (void)a3; (void)a4; (void)a5;
    uint32_t x = prandom_state ? prandom_state : 0x9e3779b9u ^ (ebpf_cpu_id() * 0x85ebca6bu);
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    prandom_state = x;
    return x;
}
static U64 h_get_smp_processor_id(U64 a1, U64 a2, U64 a3, U64 a4, U64 a5) {
    (void)a1; (void)a2; (void)a3; (void)a4; (void)a5;
    return ebpf_cpu_id();
}

/* The run's context for bpf_redirect: set by ebpf_xdp_run through ebpf_current_xdp. */
__thread struct ebpf_xdp_buff *ebpf_current_xdp;
static U64 h_redirect(U64 ifindex, U64 flags, U64 a3, U64 a4, U64 a5) {
    (void)a3; (void)a4; (void)a5;
    if (flags || !ebpf_current_xdp) return NANOBPF_XDP_ABORTED;
    ebpf_current_xdp->redirect_ifindex = (uint32_t)ifindex;
    return NANOBPF_XDP_REDIRECT;
}
/* bpf_redirect_map over a DEVMAP/DEVMAP_HASH, whose entries are the device's ports (maps.c checks each
 * value the host writes). No entry: the action in the flags' low bits, as Linux. Broadcast would need a
 * copy of the frame per port, which the packet path does not make: aborted (counted) instead. */
static U64 h_redirect_map(U64 map, U64 key, U64 flags, U64 a4, U64 a5) {
    (void)a4; (void)a5;
    uint32_t k = (uint32_t)key;
    if ((flags & ~(U64)(NANOBPF_BPF_F_REDIRECT_ACTION_MASK | NANOBPF_BPF_F_REDIRECT_BROADCAST |
                        NANOBPF_BPF_F_REDIRECT_EXCLUDE_INGRESS)) ||
        (flags & NANOBPF_BPF_F_REDIRECT_BROADCAST) || !ebpf_current_xdp)
        return NANOBPF_XDP_ABORTED;
    const uint32_t *port = ebpf_map_lookup(PTR(map), &k);
    if (!port) return flags & NANOBPF_BPF_F_REDIRECT_ACTION_MASK;
    ebpf_current_xdp->redirect_ifindex = *port;
    return NANOBPF_XDP_REDIRECT;
}

/* bpf_csum_diff as Linux has it since 6.13: one's complement sums (csum_partial: 32-bit little-endian
 * words, a last partial word zero-padded, the carries added back) of `to` plus the seed, minus that of
 * `from`, folded to 16 bits (with neither, the seed folded). The same value whatever the machine's
 * word order, since both the device and x86-64 are little-endian. */
static uint32_t csum_fold32(uint64_t sum) {
    while (sum >> 32) sum = (sum & 0xffffffffu) + (sum >> 32);
    return (uint32_t)sum;
}
static uint32_t csum_partial(const uint8_t *p, U64 len, uint32_t seed) {
    uint64_t sum = seed; /* at most 2^16 words of 2^32: no overflow */
    uint32_t w;
    for (U64 i = 0; i + 4 <= len; i += 4) {
        memcpy(&w, p + i, 4);
        sum += w;
    }
    if (len & 3) {
        w = 0;
        memcpy(&w, p + (len & ~(U64)3), len & 3);
        sum += w;
    }
    return csum_fold32(sum);
}
static uint32_t csum_sub(uint32_t a, uint32_t b) { return csum_fold32((uint64_t)a + (uint32_t)~b); }
static uint16_t csum_fold16(uint32_t x) { return (uint16_t)((x + (x >> 16 | x << 16)) >> 16); }
static U64 h_csum_diff(U64 from, U64 from_size, U64 to, U64 to_size, U64 seed) {
    uint32_t s = (uint32_t)seed;
    if (from_size && to_size) return csum_fold16(csum_sub(csum_partial(PTR(to), to_size, s), csum_partial(PTR(from), from_size, 0)));
    if (to_size) return csum_fold16(csum_partial(PTR(to), to_size, s));
    if (from_size) return csum_fold16(~csum_partial(PTR(from), from_size, ~s));
    return csum_fold16(s);
}

/* bpf_xdp_load_bytes / bpf_xdp_store_bytes: len bytes at offset from data, all inside the packet; the
 * errors Linux gives (bpf_xdp_pointer): -EFAULT beyond 64 KiB, -EINVAL past the packet's end. */
static int64_t xdp_bytes(U64 ctx, U64 offset, U64 len, uint8_t **p) {
    const struct ebpf_xdp_buff *x = PTR(ctx);
    uint32_t off = (uint32_t)offset;
    if (off > 0xffff || len > 0xffff) return -EFAULT;
    if (off + len > x->data_end - x->data) return -EINVAL;
    *p = (uint8_t *)PTR(x->data + off);
    return 0;
}
static U64 h_xdp_load_bytes(U64 ctx, U64 offset, U64 buf, U64 len, U64 a5) {
    (void)a5;
    uint8_t *p;
    int64_t rc = xdp_bytes(ctx, offset, len, &p);
    if (rc) return (U64)rc;
    memcpy(PTR(buf), p, len);
    return 0;
}
static U64 h_xdp_store_bytes(U64 ctx, U64 offset, U64 buf, U64 len, U64 a5) {
    (void)a5;
    uint8_t *p;
    int64_t rc = xdp_bytes(ctx, offset, len, &p);
    if (rc) return (U64)rc;
    memmove(p, PTR(buf), len); /* buf may be the packet itself */
    return 0;
}

/* bpf_spin_lock: a map value's lock word, shared by the cores (map values are in uncached shared memory;
 * AMOs reach it). The verifier lets a program hold one lock at a time and make no call meanwhile. */
static U64 h_spin_lock(U64 lock, U64 a2, U64 a3, U64 a4, U64 a5) {
    (void)a2; (void)a3; (void)a4; (void)a5;
    while (__atomic_exchange_n((uint32_t *)PTR(lock), 1u, __ATOMIC_ACQUIRE)) {
    }
    return 0;
}
static U64 h_spin_unlock(U64 lock, U64 a2, U64 a3, U64 a4, U64 a5) {
    (void)a2; (void)a3; (void)a4; (void)a5;
    __atomic_store_n((uint32_t *)PTR(lock), 0u, __ATOMIC_RELEASE);
    return 0;
}

/* Data and metadata move within the frame's buffer, as Linux's helpers move them, except that the device
 * keeps no struct xdp_frame at data_hard_start (Linux reserves its 40 bytes): the whole headroom is the
 * program's. ebpf_xdp_exec checked data_hard_start <= data_meta <= data <= data_end <= frame_end. */
static U64 h_xdp_adjust_head(U64 ctx, U64 delta, U64 a3, U64 a4, U64 a5) {
    (void)a3; (void)a4; (void)a5;
    struct ebpf_xdp_buff *x = PTR(ctx);
    uint64_t metalen = x->data - x->data_meta, off = (uint64_t)(int64_t)(int32_t)delta, data = x->data + off;
    /* keeps room for the metadata before data and an Ethernet header after it */
    if (data < x->data_hard_start + metalen || data + 14 > x->data_end) return (U64)(int64_t)-NANOBPF_EINVAL;
    if (metalen) memmove(PTR(x->data_meta + off), PTR(x->data_meta), metalen);
    x->data_meta += off;
    x->data = data;
    return 0;
}
/* bpf_tail_call: which program, in Linux's order (kernel/bpf/core.c): the index, then the count (counted
 * even when the element is empty), then the element. */
__thread const struct ebpf_prog *ebpf_current_prog;
__thread uint32_t ebpf_tail_calls;
int ebpf_tail_call_target(const struct ebpf_prog *prog, struct ebpf_map *m, uint64_t index, uint32_t *prog_index) {
    uint32_t k;
    if ((uint32_t)index >= m->max_entries) return -1; /* Linux's argument is a u32 */
    if (ebpf_tail_calls >= NANOBPF_MAX_TAIL_CALLS) return -1;
    ebpf_tail_calls++;
    if (ebpf_prog_array_get(m, (uint32_t)index, &k) || k >= prog->n_progs) return -1;
    *prog_index = k;
    return 0;
}
/* For the JIT: the entry of the program to jump to, 0 to go on (the JIT's code tears its frame down and
 * jumps there with the context; the interpreter does the same itself, interp.c). */
static U64 h_tail_call(U64 ctx, U64 map, U64 index, U64 a4, U64 a5) {
    (void)ctx; (void)a4; (void)a5;
    const struct ebpf_prog *prog = ebpf_current_prog;
    uint32_t k;
    if (!prog || !prog->verified || !prog->jit_code || ebpf_tail_call_target(prog, PTR(map), index, &k)) return 0;
    return (U64)(uintptr_t)((uint8_t *)prog->jit_code + prog->jit_prog_off[k]);
}

/* bpf_loop (Linux kernel/bpf/bpf_iter.c): flags, then the count, then the calls. The callback is the
 * address of the JIT's C-callable entry of a program function (the interpreter runs bpf_loop itself,
 * interp.c, and never calls this). */
typedef U64 (*ebpf_callback_fn)(U64, U64, U64, U64, U64);
static U64 h_loop(U64 nr_loops, U64 fn, U64 ctx, U64 flags, U64 a5) {
    (void)a5;
    uint32_t nr = (uint32_t)nr_loops; /* Linux's argument is a u32 */
    if (flags) return (U64)(int64_t)-NANOBPF_EINVAL;
    if (nr > NANOBPF_BPF_MAX_LOOPS) return (U64)(int64_t)-NANOBPF_E2BIG;
    ebpf_callback_fn cb = (ebpf_callback_fn)(uintptr_t)fn;
    for (U64 i = 0; i < nr; i++)
        if (cb(i, ctx, 0, 0, 0)) return i + 1;
    return nr;
}

/* bpf_xdp_adjust_meta (Linux net/core/filter.c): the metadata's start, within [data_hard_start, data],
 * its length a multiple of 4 and at most NANOBPF_XDP_META_MAX. */
static U64 h_xdp_adjust_meta(U64 ctx, U64 delta, U64 a3, U64 a4, U64 a5) {
    (void)a3; (void)a4; (void)a5;
    struct ebpf_xdp_buff *x = PTR(ctx);
    uint64_t meta = x->data_meta + (uint64_t)(int64_t)(int32_t)delta;
    if (meta < x->data_hard_start || meta > x->data) return (U64)(int64_t)-NANOBPF_EINVAL;
    uint64_t metalen = x->data - meta;
    if ((metalen & 3) || metalen > NANOBPF_XDP_META_MAX) return (U64)(int64_t)-NANOBPF_EACCES;
    x->data_meta = meta;
    return 0;
}
static U64 h_xdp_adjust_tail(U64 ctx, U64 delta, U64 a3, U64 a4, U64 a5) {
    (void)a3; (void)a4; (void)a5;
    struct ebpf_xdp_buff *x = PTR(ctx);
    uint64_t end = x->data_end + (uint64_t)(int64_t)(int32_t)delta;
    if (end > x->frame_end || end < x->data + 14) return (U64)(int64_t)-NANOBPF_EINVAL;
    x->data_end = end;
    return 0;
}
/* ---- Events to the host: records appended to an event map's ring (maps.c), which the control core
 * drains for the host (control message EVENTS). The verifier passed only a map of the helper's type
 * (map_helper_compatible) and data/size it proved readable. A record that does not fit is dropped and
 * counted by the ring; the program gets Linux's error for it. */

/* bpf_perf_event_output, as Linux's XDP version (bpf_xdp_event_output): flags' low 32 bits are the index
 * the record is tagged with (BPF_F_CURRENT_CPU: this core), bits 32..51 how many packet bytes follow the
 * data. Checked in Linux's order: flag bits, packet bytes, index. Linux refuses an index other than the
 * current CPU's (its perf buffers are per CPU); the device has one ring and takes any index below
 * max_entries (0: the cores). */
static U64 h_perf_event_output(U64 ctx, U64 map, U64 flags, U64 data, U64 size) {
    const struct ebpf_xdp_buff *x = PTR(ctx);
    struct ebpf_map *m = PTR(map);
    U64 pkt = (flags & NANOBPF_BPF_F_CTXLEN_MASK) >> 32, index = flags & NANOBPF_BPF_F_INDEX_MASK;
    if (flags & ~(U64)(NANOBPF_BPF_F_CTXLEN_MASK | NANOBPF_BPF_F_INDEX_MASK)) return (U64)(int64_t)-NANOBPF_EINVAL;
    if (pkt > x->data_end - x->data) return (U64)(int64_t)-NANOBPF_EFAULT;
    if (index == NANOBPF_BPF_F_CURRENT_CPU) index = ebpf_cpu_id();
    if (index >= (m->max_entries ? m->max_entries : ebpf_num_cpus())) return (U64)(int64_t)-NANOBPF_E2BIG;
    if (ebpf_event_output(m, (uint32_t)index, PTR(data), (uint32_t)size, PTR(x->data), (uint32_t)pkt))
        return (U64)(int64_t)-NANOBPF_ENOSPC;
    return 0;
}
/* bpf_ringbuf_output: the wake-up flags mean nothing here (the host polls with EVENTS); the record is
 * tagged with the core. */
/* bpf_ringbuf_reserve/submit/discard: the record in the ring itself (maps.c); Linux's reserve takes no
 * flags (NULL otherwise), submit and discard the wake-up ones, which change nothing here. The verifier
 * passes submit/discard only a record reserve returned, once. */
static U64 h_ringbuf_reserve(U64 map, U64 size, U64 flags, U64 a4, U64 a5) {
    (void)a4; (void)a5;
    if (flags) return 0;
    return (U64)(uintptr_t)ebpf_event_reserve(PTR(map), (uint32_t)size);
}
static U64 h_ringbuf_submit(U64 data, U64 flags, U64 a3, U64 a4, U64 a5) {
    (void)flags; (void)a3; (void)a4; (void)a5;
    ebpf_event_commit(PTR(data), 0);
    return 0;
}
static U64 h_ringbuf_discard(U64 data, U64 flags, U64 a3, U64 a4, U64 a5) {
    (void)flags; (void)a3; (void)a4; (void)a5;
    ebpf_event_commit(PTR(data), 1);
    return 0;
}
static U64 h_ringbuf_output(U64 map, U64 data, U64 size, U64 flags, U64 a5) {
    (void)a5;
    if (flags & ~(U64)(NANOBPF_BPF_RB_NO_WAKEUP | NANOBPF_BPF_RB_FORCE_WAKEUP)) return (U64)(int64_t)-NANOBPF_EINVAL;
    if (ebpf_event_output(PTR(map), ebpf_cpu_id(), PTR(data), (uint32_t)size, NULL, 0)) return (U64)(int64_t)-NANOBPF_EAGAIN;
    return 0;
}

static U64 h_nanobpf_cycles(U64 a1, U64 a2, U64 a3, U64 a4, U64 a5) {
    (void)a1; (void)a2; (void)a3; (void)a4; (void)a5;
    return ebpf_cycles();
}

/* The checksums are the egress's (pkt_comp.fix_csum; on a host, nanobpf-run reports the flag and the
 * Python side applies the deparser model's fix): the program need not sum what it changed. */
static U64 h_xdp_csum_offload(U64 ctx, U64 a2, U64 a3, U64 a4, U64 a5) {
    (void)a2; (void)a3; (void)a4; (void)a5;
    ((struct ebpf_xdp_buff *)PTR(ctx))->csum_offload |= EBPF_XDP_OFFLOAD_CSUM;
    return 0;
}

#define HELPER_ENTRY(id_, name_, ret_, a1, a2, a3, a4, a5, pkt_) \
    {id_, #name_, h_##name_, ret_, {a1, a2, a3, a4, a5}, (pkt_) ? EBPF_HELPER_CHANGES_PKT : 0},
static const struct ebpf_helper helpers[] = {NANOBPF_HELPERS(HELPER_ENTRY)};

const struct ebpf_helper *ebpf_helper_find(uint32_t id) {
    for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++)
        if (helpers[i].id == id) return &helpers[i];
    return NULL;
}
