/* Helpers callable from eBPF programs. Ids and argument types come from hw/defs/ebpf.toml through the
 * NANOBPF_HELPERS X-macro; this file only supplies the functions. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "aead.h"
#include "ebpf.h"

#define U64 uint64_t
#define PTR(x) ((void *)(uintptr_t)(x))

static U64 h_map_lookup_elem(U64 map, U64 key, U64 a3, U64 a4, U64 a5) {
    (void)a3; (void)a4; (void)a5;
    const struct ebpf_xdp_buff *x = ebpf_current_xdp;
    if (x && x->conn && ebpf_map_is_keytable(PTR(map))) /* PISA found the packet's entry: its slot first */
        return (U64)(uintptr_t)ebpf_keytable_lookup_at(PTR(key), x->conn - 1);
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
    ((struct ebpf_xdp_buff *)PTR(ctx))->csum_offload = 1;
    return 0;
}

/* ---- QUIC packet protection (RFC 9001 section 5) with the crypto backend of aead.h ---- */

/* A header-protection mask's bytes 0..4 (a word, byte 0 the lowest) as the helpers return them: byte
 * 0 in bits 39..32 down to byte 4 in bits 7..0 (a memcpy to bytes was a call to memmove). */
static U64 mask_be40(uint64_t w) {
    return (w & 0xff) << 32 | (w >> 8 & 0xff) << 24 | (w >> 16 & 0xff) << 16 | (w >> 24 & 0xff) << 8 | (w >> 32 & 0xff);
}

/* The key of the phase (next: the value's second slot) and the nonce: IV XOR the packet number,
 * big-endian and left-padded to 12 bytes (RFC 9001 5.3). */
static const uint8_t *quic_key_nonce(const struct nanobpf_quic_keys *k, int next, uint64_t pn, uint8_t nonce[EBPF_AEAD_NONCE_LEN]) {
    const uint8_t *iv = k->iv + (next ? 12 : 0);
    for (int i = 0; i < EBPF_AEAD_NONCE_LEN; i++) nonce[i] = iv[i] ^ (i < 4 ? 0 : (uint8_t)(pn >> (8 * (11 - i))));
    return k->key + (next ? 16 : 0);
}

void ebpf_quic_pn_commit(const void *keys, uint64_t pn, int phase) { ebpf_quic_pn_record(ebpf_keytable_pn(keys), pn, phase); }
void ebpf_quic_pn_record(void *state, uint64_t pn, int phase) {
    volatile struct nanobpf_quic_pn_state *st = state;
    if (!st) return; /* no state kept for the entry (the program could not have decoded pn) */
    if (pn + 1 > st->rx_next) st->rx_next = pn + 1;
    if (phase >= 0) { /* where the current keys' phase began (quic_open_slot in quic_protect.h) */
        uint32_t cur = 2 | (uint32_t)phase;
        if (st->phase != cur) st->phase = cur, st->phase_pn = pn;
        else if (pn < st->phase_pn) st->phase_pn = pn;
    }
}

/* Seal with header protection applied (NANOBPF_AEAD_HP_APPLY), the request checked: the header's last
 * pn_len bytes are the packet number, the sample 4 bytes after it lies before the tag's end. One engine
 * request; where the caller lets it (aead_defer), it finishes after the program. Returns 0. */
static int64_t seal_hp_apply(struct ebpf_xdp_buff *x, const struct nanobpf_quic_keys *k, int next, uint64_t pn, uint8_t *hdr,
                             uint32_t hdr_len, uint32_t payload_len, uint32_t pn_len) {
    uint8_t *payload = hdr + hdr_len;
    if (ebpf_aead_engine_seal_hp(k, next, pn, hdr, hdr_len, payload, payload_len, x->aead_defer ? &x->aead_pending : NULL) == 0)
        return 0;
    uint8_t nonce[EBPF_AEAD_NONCE_LEN];
    ebpf_aead_seal(quic_key_nonce(k, next, pn, nonce), nonce, hdr, hdr_len, payload, payload_len, payload + payload_len);
    uint64_t m = ebpf_hp_mask_soft(k->hp, hdr + hdr_len - pn_len + 4); /* byte 0 the lowest */
    hdr[0] ^= (uint8_t)m & (hdr[0] & 0x80 ? 0x0f : 0x1f);
    for (uint32_t i = 0; i < pn_len; i++) hdr[hdr_len - pn_len + i] ^= (uint8_t)(m >> (8 * (i + 1)));
    return 0;
}

/* The verifier proved the key table value (keytable_value: a whole struct nanobpf_quic_keys) and the
 * request or block (mem: size bytes). The request's packet ranges are checked here against
 * [data, data_end) with 64-bit sums of 32-bit fields, which cannot overflow. Checks come in this order:
 * the request (-EINVAL), then the next keys (-ENOKEY); nothing is written on an error. state: the
 * entry's packet-number state an open with NANOBPF_AEAD_COMMIT records in, when the caller has it
 * (NULL: found from k). */
static int64_t quic_aead_req(struct ebpf_xdp_buff *x, const struct nanobpf_quic_keys *k, struct nanobpf_aead_req r, int seal,
                             void *state) {
    uint32_t known = NANOBPF_AEAD_NEXT_PHASE | (seal ? NANOBPF_AEAD_HP_MASK | NANOBPF_AEAD_HP_APPLY : NANOBPF_AEAD_COMMIT);
    uint32_t hp = r.flags & (NANOBPF_AEAD_HP_MASK | NANOBPF_AEAD_HP_APPLY);
    if ((r.flags & ~known) || hp == (NANOBPF_AEAD_HP_MASK | NANOBPF_AEAD_HP_APPLY) || r.hdr_len == 0 || r.hdr_len > NANOBPF_AEAD_HDR_MAX ||
        r.payload_len > NANOBPF_AEAD_PAYLOAD_MAX || (r.pn >> NANOBPF_AEAD_PN_BITS))
        return -NANOBPF_EINVAL;
    uint64_t len = x->data_end - x->data;
    if ((uint64_t)r.hdr_off + r.hdr_len + r.payload_len + NANOBPF_AEAD_TAG_LEN > len)
        return -NANOBPF_EINVAL;
    uint8_t *hdr = PTR(x->data + r.hdr_off), *payload = hdr + r.hdr_len, *tag = payload + r.payload_len;
    /* the mask's sample: 4 bytes after the packet number, the header's last (first byte & 3) + 1 bytes */
    const uint8_t *sample = NULL;
    uint32_t pn_len = 0;
    if (hp) {
        pn_len = (hdr[0] & 3) + 1;
        uint64_t at = (uint64_t)r.hdr_off + r.hdr_len - pn_len + 4;
        if (pn_len > r.hdr_len || at + NANOBPF_AEAD_HP_BLOCK_LEN > len) return -NANOBPF_EINVAL;
        /* applied: the first byte and the packet number are both in the header, the sample in the
         * packet (it ends at the tag's end at the latest), as the engine's seal_hp requires */
        if (hp == NANOBPF_AEAD_HP_APPLY &&
            (pn_len + 1 > r.hdr_len || at + NANOBPF_AEAD_HP_BLOCK_LEN > (uint64_t)r.hdr_off + r.hdr_len + r.payload_len + NANOBPF_AEAD_TAG_LEN))
            return -NANOBPF_EINVAL;
        sample = PTR(x->data + at);
    }
    int next = (r.flags & NANOBPF_AEAD_NEXT_PHASE) != 0;
    if (next && !(k->flags & (NANOBPF_QUIC_KEY_NEXT | NANOBPF_QUIC_KEY_PREV))) return -NANOBPF_ENOKEY; /* second slot empty */
    if (hp == NANOBPF_AEAD_HP_APPLY) return seal_hp_apply(x, k, next, r.pn, hdr, r.hdr_len, r.payload_len, pn_len);
    /* the phase the open records: the current keys' (as they are now: a key update may come before a
     * deferred verdict) for a short header opened with them, else none */
    int commit = (r.flags & NANOBPF_AEAD_COMMIT) != 0, phase = !next && !(hdr[0] & 0x80) ? k->key_phase & 1 : -1;
    /* the engine's verdict after the program, where the caller lets it (aead_defer): the firmware holds
     * the frame until then and records the packet number when it is authentic */
    if (commit && x->aead_defer &&
        ebpf_aead_engine_open_commit(k, state ? state : ebpf_keytable_pn(k), next, r.pn, hdr, r.hdr_len, payload, r.payload_len,
                                     phase, &x->aead_pending) == 0)
        return 0;
    uint64_t mask = 0;
    int hw = ebpf_aead_engine(seal, k, next, r.pn, hdr, r.hdr_len, payload, r.payload_len, sample, &mask);
    if (hw < 0) {
        uint8_t nonce[EBPF_AEAD_NONCE_LEN];
        const uint8_t *key = quic_key_nonce(k, next, r.pn, nonce);
        if (!seal) hw = ebpf_aead_open(key, nonce, hdr, r.hdr_len, payload, r.payload_len, tag) ? 1 : 0;
        else ebpf_aead_seal(key, nonce, hdr, r.hdr_len, payload, r.payload_len, tag);
        if (seal && sample) mask = ebpf_hp_mask_soft(k->hp, sample);
    }
    if (!seal) {
        if (hw) return -NANOBPF_EBADMSG;
        if (commit) ebpf_quic_pn_record(state ? state : ebpf_keytable_pn(k), r.pn, phase);
        return 0;
    }
    return sample ? (int64_t)mask_be40(mask) : 0;
}
static int64_t quic_aead(U64 ctx, U64 keys, U64 req_addr, U64 req_size, int seal) {
    struct nanobpf_aead_req r;
    if (req_size != sizeof r) return -NANOBPF_EINVAL;
    /* anywhere the verifier allows: on the program's stack (aligned: one copy of words, where a memcpy
     * of unknown alignment was a call to memmove), or in the packet (no alignment) */
    if (req_addr & 7) memcpy(&r, PTR(req_addr), sizeof r);
    else r = *(const struct nanobpf_aead_req *)PTR(req_addr);
    return quic_aead_req(PTR(ctx), PTR(keys), r, seal, NULL);
}
static U64 h_quic_aead_seal(U64 ctx, U64 keys, U64 req, U64 req_size, U64 a5) {
    (void)a5;
    return (U64)quic_aead(ctx, keys, req, req_size, 1);
}
static U64 h_quic_aead_open(U64 ctx, U64 keys, U64 req, U64 req_size, U64 a5) {
    (void)a5;
    return (U64)quic_aead(ctx, keys, req, req_size, 0);
}
/* The header-protection mask (RFC 9001 5.4.3): the block (the sample) encrypted in place with hp. */
static U64 h_quic_hp_mask(U64 keys, U64 block, U64 size, U64 a4, U64 a5) {
    (void)a4; (void)a5;
    if (size != NANOBPF_AEAD_HP_BLOCK_LEN) return (U64)(int64_t)-NANOBPF_EINVAL;
    const struct nanobpf_quic_keys *k = PTR(keys);
    if (ebpf_hp_engine(k, PTR(block)) == 0) return 0;
    ebpf_aes128_encrypt_block(k->hp, PTR(block), PTR(block));
    return 0;
}

/* The same mask, of the sample where it lies in the packet (off from data), as a number: bytes 0..4
 * big-endian in bits 39..0. */
static U64 h_quic_hp_mask_at(U64 ctx, U64 keys, U64 off, U64 a4, U64 a5) {
    (void)a4; (void)a5;
    const struct ebpf_xdp_buff *x = PTR(ctx);
    if (off > x->data_end - x->data || x->data_end - x->data - off < NANOBPF_AEAD_HP_BLOCK_LEN)
        return (U64)(int64_t)-NANOBPF_EINVAL;
    const struct nanobpf_quic_keys *k = PTR(keys);
    const uint8_t *sample = PTR(x->data + off);
    uint64_t w;
    if (ebpf_hp_engine_at(k, sample, &w) != 0) w = ebpf_hp_mask_soft(k->hp, sample);
    return mask_be40(w);
}

/* The key table entry's packet-number state, by the slot its value names (maps.c); the verifier checked
 * that map is the packet-number map and keys a key table value. */
static U64 h_quic_pn_of(U64 map, U64 keys, U64 a3, U64 a4, U64 a5) {
    (void)a3; (void)a4; (void)a5;
    if (!ebpf_map_is_keytable_pn(PTR(map))) return 0;
    return (U64)(uintptr_t)ebpf_keytable_pn(PTR(keys));
}

/* n (1..8) bytes at address a, byte 0 lowest, by one or two aligned word loads (packet memory is
 * uncached: every load is a bus transaction). The caller checked that the words lie in the frame's
 * buffer [data_hard_start, frame_end); the bytes may lie past the frame there. */
static inline __attribute__((always_inline)) uint64_t buf_bytes(uint64_t a, unsigned n) {
    const uint64_t *w = PTR(a & ~7ull);
    unsigned sh = (unsigned)(a & 7) * 8;
    uint64_t v = w[0] >> sh;
    if (sh && sh + 8 * n > 64) v |= w[1] << (64 - sh);
    return n >= 8 ? v : v & ((1ull << 8 * n) - 1);
}
/* n bytes v (byte 0 lowest) at byte pos of a key's three little-endian words. */
static inline __attribute__((always_inline)) void key_put(uint64_t k[3], unsigned pos, uint64_t v, unsigned n) {
    unsigned w = pos / 8, sh = (pos % 8) * 8;
    k[w] |= v << sh;
    if (sh && sh + 8 * n > 64) k[w + 1] |= v >> (64 - sh);
}

/* The key table key the frame names for PISA's connection (bpf_quic_keys_of), as struct
 * nanobpf_quic_cid's words: len and the CID PISA read (cid_len bytes after the short header's first
 * byte), or for cid_len 0 the peer's address id (NANOBPF_QUIC_ADDR_*: its IPv6 address, IPv4 as
 * ::ffff:a.b.c.d, its UDP port, the local one; the peer is the source of a frame to open, the
 * destination of one to seal), then dir. The bytes are read where PISA parsed them and must still be
 * inside the frame, and the words holding them inside its buffer: -1 otherwise. */
#define KEY_ID 1 /* struct nanobpf_quic_cid: len, id[20], dir */
#define KEY_DIR (KEY_ID + NANOBPF_KEYTABLE_CID_MAX)
_Static_assert(offsetof(struct nanobpf_quic_cid, id) == KEY_ID && offsetof(struct nanobpf_quic_cid, dir) == KEY_DIR,
               "the key's bytes");
static int quic_frame_key(const struct ebpf_xdp_buff *x, uint32_t dir, uint64_t k[3]) {
    uint64_t base = x->parse_data;
    uint32_t len = x->cid_len;
#define IN_FRAME(off, n) (base + (off) >= x->data && base + (off) + (n) <= x->data_end && \
                          ((base + (off)) & ~7ull) >= x->data_hard_start && ((base + (off) + (n) + 7) & ~7ull) <= x->frame_end)
    k[0] = len, k[1] = 0, k[2] = (uint64_t)dir << 8 * (KEY_DIR - 16);
    if (len) {
        /* the first byte and the CID are the key's bytes 0..len, byte 0 replaced by len: word by word */
        uint64_t at = base + x->quic_off;
        unsigned n = len + 1;
        _Static_assert(KEY_ID == 1 && KEY_DIR == 21, "the key's bytes 0..len in its first words, dir after them");
        if (len > NANOBPF_KEYTABLE_CID_MAX || !IN_FRAME(x->quic_off, n)) return -1;
        k[0] = (buf_bytes(at, n < 8 ? n : 8) & ~0xffull) | len;
        if (n > 8) k[1] = buf_bytes(at + 8, n < 16 ? n - 8 : 8);
        if (n > 16) k[2] |= buf_bytes(at + 16, n - 16);
        return 0;
    }
    /* the IP header and the UDP header's ports, PISA's: [l3, l4 + 4) holds both */
    uint32_t l3 = x->l3_off, l4 = x->l4_off;
    if (!l3 || l4 < l3 + 20 || !IN_FRAME(l3, l4 + 4 - l3)) return -1;
    int v6 = *(const uint8_t *)PTR(base + l3) >> 4 == 6, peer_is_src = dir == NANOBPF_QUIC_DIR_OPEN;
    if (v6) {
        if (l4 < l3 + 40) return -1;
        uint64_t a = base + l3 + (peer_is_src ? 8 : 24);
        key_put(k, KEY_ID + NANOBPF_QUIC_ADDR_IP_OFF, buf_bytes(a, 8), 8);
        key_put(k, KEY_ID + NANOBPF_QUIC_ADDR_IP_OFF + 8, buf_bytes(a + 8, 8), 8);
    } else { /* ::ffff:a.b.c.d */
        key_put(k, KEY_ID + NANOBPF_QUIC_ADDR_IP_OFF + 10, 0xffff, 2);
        key_put(k, KEY_ID + NANOBPF_QUIC_ADDR_IP_OFF + 12, buf_bytes(base + l3 + (peer_is_src ? 12 : 16), 4), 4);
    }
    uint64_t ports = buf_bytes(base + l4, 4); /* source, destination: as on the wire */
    key_put(k, KEY_ID + NANOBPF_QUIC_ADDR_PEER_PORT_OFF, peer_is_src ? ports & 0xffff : ports >> 16, 2);
    key_put(k, KEY_ID + NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF, peer_is_src ? ports >> 16 : ports & 0xffff, 2);
    return 0;
#undef IN_FRAME
}

/* The key table value of the frame's connection as PISA found it, checked against the key the frame
 * names (the slot may hold another entry since: the control plane replaced it while the frame waited,
 * or it is the other direction's); the verifier checked that ctx is the context. */
static U64 h_quic_keys_of(U64 ctx, U64 map, U64 dir, U64 a4, U64 a5) {
    (void)a4; (void)a5;
    const struct ebpf_xdp_buff *x = PTR(ctx);
    uint64_t k[3];
    _Static_assert(sizeof k == NANOBPF_QUIC_CID_SIZE, "the key's words");
    if (!x->conn || !x->pn_off || (dir != NANOBPF_QUIC_DIR_OPEN && dir != NANOBPF_QUIC_DIR_SEAL) ||
        !ebpf_map_is_keytable(PTR(map)) || quic_frame_key(x, (uint32_t)dir, k))
        return 0;
    return (U64)(uintptr_t)ebpf_keytable_at(k, x->conn - 1);
}

/* ---- bpf_quic_seal_conn: a frame to seal that PISA classified, sealed in one call (quic_seal of
 * sw/ebpf/quic/quic_protect.h, step for step and drop for drop) ---- */

/* 16 bits big-endian at a, and stored there: one access when aligned (packet memory is uncached). */
static inline __attribute__((always_inline)) uint32_t ld_be16(uint64_t a) {
    if (a & 1) return (uint32_t)*(const uint8_t *)PTR(a) << 8 | *(const uint8_t *)PTR(a + 1);
    uint32_t v = *(const volatile uint16_t *)PTR(a); /* volatile: one load, not one per byte swapped */
    return (v >> 8 | v << 8) & 0xffff;
}
static inline __attribute__((always_inline)) void st_be16(uint64_t a, uint32_t v) {
    if (a & 1) *(uint8_t *)PTR(a) = (uint8_t)(v >> 8), *(uint8_t *)PTR(a + 1) = (uint8_t)v;
    else *(uint16_t *)PTR(a) = __builtin_bswap16((uint16_t)v);
}

/* Bytes 0..3 (byte 0 the lowest) as a big-endian number: shifts, not libgcc's __bswapsi2 (no Zbb). */
static inline __attribute__((always_inline)) uint32_t be32_of_bytes(uint32_t v) {
    return v << 24 | (v & 0xff00) << 8 | (v >> 8 & 0xff00) | v >> 24;
}

/* RFC 9000 appendix A.3 (quic_decode_pn in quic_protect.h). */
static uint64_t quic_decode_pn(uint64_t expected, uint64_t truncated, uint32_t pn_len) {
    uint64_t win = 1ull << (8 * pn_len), hwin = win / 2, mask = win - 1, cand = (expected & ~mask) | truncated;
    if (cand + hwin <= expected && cand < (1ull << 62) - win) return cand + win;
    if (cand > expected + hwin && cand >= win) return cand - win;
    return cand;
}

/* The claim of a SEAL entry's packet number (quic_claim_pn): the largest claim word is one past the
 * largest number sealed, the reference for decoding; pn is claimed by one compare-and-swap on its
 * class's word, which only grows. 0, or -1 when pn may have been sealed (the nonce could repeat). */
static uint64_t seal_next(volatile uint64_t *w) {
    uint64_t m = 0;
    for (unsigned i = 0; i < NANOBPF_QUIC_PN_CLAIMS; i++) {
        uint64_t v = w[i];
        m = v > m ? v : m;
    }
    return m;
}
static int seal_claim(volatile uint64_t *w, uint64_t pn) {
    uint64_t *word = (uint64_t *)(uintptr_t)&w[pn & (NANOBPF_QUIC_PN_CLAIMS - 1)];
    for (int i = 0; i < 2; i++) { /* a failed swap: another core claimed in this class meanwhile */
        uint64_t old = __atomic_load_n(word, __ATOMIC_RELAXED);
        if (pn < old) return -1;
        if (__atomic_compare_exchange_n(word, &old, pn + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return 0;
    }
    return -1;
}
_Static_assert(sizeof(struct nanobpf_quic_seal_pn) == NANOBPF_QUIC_PN_CLAIMS * 8, "the claim words, in order");

#define SEAL_DROP(reason) ((U64) - (int64_t)(1 + (reason)))
#define SEAL_DROP_KEYED(reason) SEAL_DROP(NANOBPF_QUIC_SEAL_KEYED | (reason))
/* The checks come in quic_xdp's order for such a frame (quic_pisa_classify, quic_short_cid_at,
 * quic_pisa_keys, quic_seal, quic_fix_lengths): a frame the general path would treat otherwise before
 * its keys are known gets SLOW with nothing changed, and every later failure is the general path's drop
 * with the frame as it leaves it. Offsets count from where PISA parsed the frame (parse_data): the shim
 * the program removed was before the IP header, whose bytes stay where they were. */
static U64 h_quic_seal_conn(U64 ctx, U64 map, U64 cid_len, U64 max_payload, U64 max_hdr) {
    struct ebpf_xdp_buff *x = PTR(ctx);
    const uint64_t base = x->parse_data;
    const uint32_t l3 = x->l3_off, l4 = x->l4_off, q = x->quic_off, pn_off = x->pn_off;
    if (!x->conn || !pn_off || cid_len != x->cid_len || l4 < l3 + 20 || q != l4 + 8 || pn_off != q + 1 + cid_len ||
        base + l3 < x->data + 14 || base + q + 1 > x->data_end || !ebpf_map_is_keytable(PTR(map)))
        return NANOBPF_QUIC_SEAL_SLOW;
    /* quic_pisa_classify: a short header inside the UDP datagram, the fixed bit set */
    const uint32_t ulen = ld_be16(base + l4 + 4), pkt_end = l4 + ulen, b0 = *(const uint8_t *)PTR(base + q);
    const int v6 = *(const uint8_t *)PTR(base + l3) >> 4 == 6;
    if (q >= pkt_end || (b0 & 0x80) || (v6 && l4 < l3 + 40)) return NANOBPF_QUIC_SEAL_SLOW;
    if (!(b0 & 0x40)) return SEAL_DROP(NANOBPF_QUIC_DROP_NO_FIXED_BIT);
    /* quic_short_cid_at: the CID inside the frame and the datagram */
    if (base + pn_off > x->data_end || pn_off > pkt_end) return SEAL_DROP(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    /* quic_pisa_keys: the entry at PISA's slot, if it holds the key the frame names */
    uint64_t k[3];
    if (quic_frame_key(x, NANOBPF_QUIC_DIR_SEAL, k)) return NANOBPF_QUIC_SEAL_SLOW;
    const struct nanobpf_quic_keys *keys = ebpf_keytable_at(k, x->conn - 1);
    if (!keys) return NANOBPF_QUIC_SEAL_SLOW;
    /* quic_seal: room for the tag, the header's bytes inside the frame, the sample inside the packet */
    const uint64_t end = base + pkt_end + NANOBPF_AEAD_TAG_LEN;
    if (end > x->frame_end || end < x->data + 14) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_OVERSIZE);
    x->data_end = end;
    const uint64_t pnp = base + pn_off;
    if (pnp + 4 > end || pn_off + 4 + 16 > pkt_end + NANOBPF_AEAD_TAG_LEN)
        return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    const uint32_t pn_len = (b0 & 3) + 1;
    /* the 4 bytes from the packet number on: by aligned word loads where those words lie in the frame's
     * buffer (the device's slots are whole words), else two by two */
    const uint32_t pnw = (pnp & ~7ull) >= x->data_hard_start && ((pnp + 4 + 7) & ~7ull) <= x->frame_end
                             ? be32_of_bytes((uint32_t)buf_bytes(pnp, 4))
                             : ld_be16(pnp) << 16 | ld_be16(pnp + 2);
    const uint64_t trunc = pnw >> (8 * (4 - pn_len));
    /* quic_seal_slot: the current keys for their key phase bit, the next ones when installed */
    const uint32_t kw = *(const volatile uint32_t *)&keys->key_phase; /* key_phase, flags: one load */
    _Static_assert(offsetof(struct nanobpf_quic_keys, flags) == 1, "key_phase and flags in one word");
    int next = ((b0 >> 2) & 1) != (kw & 1);
    if (next && !((kw >> 8) & NANOBPF_QUIC_KEY_NEXT)) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_NO_KEYS);
    volatile uint64_t *claims = ebpf_keytable_pn_at(x->conn - 1); /* the slot that holds the key */
    if (!claims) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_NO_PN_STATE);
    const uint64_t pn = quic_decode_pn(seal_next(claims), trunc, pn_len);
    if (seal_claim(claims, pn)) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_PN_REUSED);
    const uint32_t ct_off = pn_off + pn_len, hdr_len = ct_off - q;
    if (ct_off > pkt_end) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    if (pkt_end - ct_off > max_payload) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_OVERSIZE);
    if (hdr_len > max_hdr) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    /* quic_seal_payload of xdp_quic_hw.c: what bpf_quic_aead_seal would refuse (-EINVAL, which the
     * program drops as QUIC_TRUNCATED), then the one request, header protection applied; the frame's
     * ranges are the ones checked above */
    if (hdr_len > NANOBPF_AEAD_HDR_MAX || pkt_end - ct_off > NANOBPF_AEAD_PAYLOAD_MAX || (pn >> NANOBPF_AEAD_PN_BITS))
        return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    seal_hp_apply(x, keys, next, pn, PTR(base + q), hdr_len, pkt_end - ct_off, pn_len);
    /* quic_fix_lengths (QUIC_CSUM_BY_EGRESS): the lengths grow by the tag, the egress sums */
    st_be16(base + l4 + 4, ulen + NANOBPF_AEAD_TAG_LEN);
    const uint64_t iplen = base + l3 + (v6 ? 4 : 2);
    st_be16(iplen, ld_be16(iplen) + NANOBPF_AEAD_TAG_LEN);
    x->csum_offload = 1;
    return 0;
}

/* bpf_quic_open_conn: a frame from the network that PISA classified with its connection, opened in one
 * call (quic_open of quic_protect.h, step for step and drop for drop, with xdp_quic_hw's backend: the
 * mask by the engine, the open committed by the device). The same rules as h_quic_seal_conn's. */
static U64 h_quic_open_conn(U64 ctx, U64 map, U64 lens, U64 max_payload, U64 max_hdr) {
    struct ebpf_xdp_buff *x = PTR(ctx);
    const uint64_t base = x->parse_data;
    const uint32_t l3 = x->l3_off, l4 = x->l4_off, q = x->quic_off, pn_off = x->pn_off, l = x->cid_len;
    if (!x->conn || !pn_off || l4 < l3 + 20 || q != l4 + 8 || pn_off != q + 1 + l || base + l3 < x->data + 14 ||
        base + q + 1 > x->data_end || !((lens >> l) & 1) || !ebpf_map_is_keytable(PTR(map)))
        return NANOBPF_QUIC_SEAL_SLOW;
    /* quic_pisa_classify */
    const uint32_t ulen = ld_be16(base + l4 + 4), pkt_end = l4 + ulen;
    uint8_t *const first = PTR(base + q);
    const uint32_t b0m = *first;
    if (q >= pkt_end || (b0m & 0x80)) return NANOBPF_QUIC_SEAL_SLOW;
    if (!(b0m & 0x40)) return SEAL_DROP(NANOBPF_QUIC_DROP_NO_FIXED_BIT);
    /* quic_pisa_keys: PISA's CID length inside the datagram, the entry at its slot */
    uint64_t k[3];
    if (pn_off > pkt_end || quic_frame_key(x, NANOBPF_QUIC_DIR_OPEN, k)) return NANOBPF_QUIC_SEAL_SLOW;
    const struct nanobpf_quic_keys *keys = ebpf_keytable_at(k, x->conn - 1);
    if (!keys) return NANOBPF_QUIC_SEAL_SLOW;
    /* quic_open */
    volatile struct nanobpf_quic_pn_state *st = ebpf_keytable_pn_at(x->conn - 1); /* the slot that holds the key */
    if (!st) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_NO_PN_STATE);
    if (pn_off + 4 + 16 > pkt_end) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    const uint8_t *sample = PTR(base + pn_off + 4);
    if (base + pn_off + 4 + NANOBPF_AEAD_HP_BLOCK_LEN > x->data_end) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    uint64_t m;
    if (ebpf_hp_engine_at(keys, sample, &m) != 0) m = ebpf_hp_mask_soft(keys->hp, sample); /* byte 0 the lowest */
    /* the header unmasked in place (the AAD is the unprotected header; a dropped frame never leaves) */
    const uint32_t b0 = b0m ^ ((uint32_t)m & 0x1f), pn_len = (b0 & 3) + 1;
    *first = (uint8_t)b0;
    uint8_t *const pnp = PTR(base + pn_off);
    uint64_t trunc = 0;
    for (uint32_t i = 0; i < pn_len; i++) {
        uint8_t v = pnp[i] ^ (uint8_t)(m >> (8 * (i + 1)));
        pnp[i] = v;
        trunc = trunc << 8 | v;
    }
    /* RFC 9000 A.3 against the largest number opened; quic_open_slot (RFC 9001 section 6) */
    const uint64_t pn = quic_decode_pn(st->rx_next, trunc, pn_len);
    const uint32_t kw = *(const volatile uint32_t *)&keys->key_phase, kp = kw & 1, kf = kw >> 8;
    int next = ((b0 >> 2) & 1) != kp;
    if (next && !(kf & NANOBPF_QUIC_KEY_NEXT) && !((kf & NANOBPF_QUIC_KEY_PREV) && (st->phase != (2 | kp) || pn < st->phase_pn)))
        return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_NO_KEYS);
    const uint32_t ct_off = pn_off + pn_len, hdr_len = ct_off - q;
    if (ct_off + NANOBPF_AEAD_TAG_LEN > pkt_end) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    const uint32_t ct_len = pkt_end - NANOBPF_AEAD_TAG_LEN - ct_off;
    if (ct_len > max_payload) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_OVERSIZE);
    if (hdr_len > max_hdr) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    /* quic_open_payload of xdp_quic_hw.c: the open, committed by the device; then the frame ends where
     * the ciphertext ends, whatever the tag said */
    struct nanobpf_aead_req r = {.hdr_off = (uint32_t)(base + q - x->data), .hdr_len = hdr_len, .payload_len = ct_len,
                                 .flags = (next ? NANOBPF_AEAD_NEXT_PHASE : 0) | NANOBPF_AEAD_COMMIT, .pn = pn};
    const int64_t rc = quic_aead_req(x, keys, r, 0, (void *)(uintptr_t)st);
    const uint64_t end = base + pkt_end - NANOBPF_AEAD_TAG_LEN;
    if (end > x->frame_end || end < x->data + 14) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_TRUNCATED);
    x->data_end = end;
    if (rc < 0)
        return SEAL_DROP_KEYED(rc == -NANOBPF_EBADMSG  ? NANOBPF_QUIC_DROP_TAG_MISMATCH
                               : rc == -NANOBPF_ENOKEY ? NANOBPF_QUIC_DROP_NO_KEYS
                                                       : NANOBPF_QUIC_DROP_QUIC_TRUNCATED);
    /* quic_fix_lengths (QUIC_CSUM_BY_EGRESS): the lengths shrink by the tag, the egress sums */
    const int v6 = *(const uint8_t *)PTR(base + l3) >> 4 == 6;
    if (base + l4 + 8 > end || base + l3 + (v6 ? 40 : 20) > end) return SEAL_DROP_KEYED(NANOBPF_QUIC_DROP_TRUNCATED);
    st_be16(base + l4 + 4, ulen - NANOBPF_AEAD_TAG_LEN);
    const uint64_t iplen = base + l3 + (v6 ? 4 : 2);
    st_be16(iplen, ld_be16(iplen) - NANOBPF_AEAD_TAG_LEN);
    x->csum_offload = 1;
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
