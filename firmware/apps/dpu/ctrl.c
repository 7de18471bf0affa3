/* The control protocol on core 0 (docs/control.md, hw/defs/ctrl.toml): sessions and epochs, the
 * at-most-once sequence window with its replay cache, acknowledgement after commit. The reference device
 * model (sw/python/nanobpf/devmodel.py) is the executable specification; this follows it step by step
 * (_control, _hello). The requests themselves are in ctrl_keys.c, ctrl_prog.c, ctrl_events.c and below
 * (STATS, TABLE_*, RESET).
 *
 * Control frames reach core 0's queue only from the host port (PISA drops them elsewhere and counts
 * ctrl_foreign). Each is authenticated before anything in it is looked at (ctrl_auth.c: a frame whose
 * tag does not verify is dropped unanswered, ctrl_auth_fail) and answered in its own packet-memory
 * slot: the response, its request's nonce and its tag are written over the request and sent back to
 * the host port. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ctrl.h"
#include "nanobpf.h"

#define ETH 14
#define HDR NANOBPF_CTRL_HDR_SIZE
#define NONCE NANOBPF_CTRL_NONCE_LEN
#define TAG NANOBPF_CTRL_TAG_LEN
#define MIN_FRAME 60 /* responses are padded to Ethernet's minimum (without FCS) */

/* The replay cache: the last NANOBPF_CTRL_REPLAY_CACHE requests applied in this session with their
 * responses. A request is named by type, length and a 64-bit FNV-1a digest of its body (the model keeps
 * the whole body: a different request with the same sequence number and an equal digest, a 2^-64
 * chance, would be answered from the cache instead of refused as STALE_SEQ). */
struct cached {
    int used;
    uint32_t seq;
    uint8_t req_type, resp_type, status;
    uint16_t req_len, resp_len;
    uint64_t digest;
    uint8_t body[NANOBPF_CTRL_MAX_BODY];
};
static struct cached cache[NANOBPF_CTRL_REPLAY_CACHE];
static unsigned cache_next; /* the oldest entry, replaced next */

static struct {
    uint32_t epoch;
    int session;
    uint8_t version;
    uint32_t last_seq;
    uint64_t resets;
} st;
uint64_t ctrl_counts[NANOBPF_STAT_COUNT];

static uint8_t frame[ETH + HDR + NONCE + NANOBPF_CTRL_MAX_BODY + TAG]; /* the request, then the response */
static uint8_t req_body[NANOBPF_CTRL_MAX_BODY];

uint16_t ctrl_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
uint32_t ctrl_be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
void ctrl_put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v; }
void ctrl_put32(uint8_t *p, uint32_t v) { ctrl_put16(p, v >> 16), ctrl_put16(p + 2, v); }
void ctrl_put64(uint8_t *p, uint64_t v) { ctrl_put32(p, (uint32_t)(v >> 32)), ctrl_put32(p + 4, (uint32_t)v); }

int ctrl_refuse(struct ctrl_reply *r, uint8_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf((char *)r->body, NANOBPF_CTRL_MAX_ERRMSG + 1, fmt, ap);
    va_end(ap);
    r->len = n < 0 ? 0 : n > NANOBPF_CTRL_MAX_ERRMSG ? NANOBPF_CTRL_MAX_ERRMSG : (uint16_t)n;
    r->status = status;
    return -1;
}

static int serial_newer(uint32_t a, uint32_t b) { return a != b && (uint32_t)(a - b) < 0x80000000u; }

static uint64_t digest(const uint8_t *p, unsigned n) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* A fresh nonzero epoch, unlike the last: the cycle counter at this moment (when the first control frame
 * or the RESET arrived, which the host's timing decides) and the random nonce the host chose for that
 * request, through a 64-bit mixer. The board has no entropy source of its own; the host's nonce makes
 * an epoch that an old session's recorded requests name unlikely to come back after a power cycle. */
static uint32_t new_epoch(const uint8_t nonce[NONCE]) {
    static uint64_t x;
    static uint32_t old;
    for (unsigned i = 0; i < NONCE; i++) x = (x ^ nonce[i]) * 0x100000001b3ull;
    for (;;) {
        x += nb_cycles() + 0x9e3779b97f4a7c15ull;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        uint32_t e = (uint32_t)(z ^ (z >> 31));
        if (e && e != old) return old = e;
    }
}

static void cache_clear(void) {
    for (unsigned i = 0; i < NANOBPF_CTRL_REPLAY_CACHE; i++) cache[i].used = 0;
    cache_next = 0;
}

static const struct cached *cache_find(uint32_t seq, uint8_t type, const uint8_t *body, unsigned len) {
    uint64_t d = digest(body, len);
    for (unsigned i = 0; i < NANOBPF_CTRL_REPLAY_CACHE; i++)
        if (cache[i].used && cache[i].seq == seq)
            return cache[i].req_type == type && cache[i].req_len == len && cache[i].digest == d ? &cache[i] : NULL;
    return NULL;
}

static void cache_put(uint32_t seq, uint8_t type, const uint8_t *body, unsigned len, const struct ctrl_reply *r) {
    struct cached *c = &cache[cache_next];
    cache_next = (cache_next + 1) % NANOBPF_CTRL_REPLAY_CACHE;
    c->used = 1, c->seq = seq, c->req_type = type, c->resp_type = type, c->status = r->status;
    c->req_len = (uint16_t)len, c->digest = digest(body, len), c->resp_len = r->len;
    memcpy(c->body, r->body, r->len);
}

/* The epoch is chosen when the first control frame after power-on or RESET arrives (0: not yet):
 * the boot itself takes the same cycles every time, the host's timing does not. */
void ctrl_power_on(void) {
    st.epoch = 0;
    st.session = 0;
    st.version = 0;
    st.last_seq = 0;
    cache_clear();
    memset(ctrl_counts, 0, sizeof ctrl_counts);
}

/* ---- requests answered here: RESET, STATS, TABLE_SET/DEL ---- */
static int do_reset(const uint8_t *b, unsigned len, struct ctrl_reply *r) {
    (void)b;
    if (len) return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "RESET has no body");
    ctrl_prog_reset();
    ctrl_keys_flush();
    dpu_tables_restore();
    dpu_stats_zero();
    st.resets++;
    ctrl_power_on();
    st.epoch = new_epoch(frame + ETH + HDR); /* the response carries it */
    return 0;
}

static int do_stats(const uint8_t *b, unsigned len, struct ctrl_reply *r) {
    (void)b;
    if (len) return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "STATS has no body");
    uint64_t v[NANOBPF_STAT_COUNT];
    memcpy(v, ctrl_counts, sizeof v);
    dpu_stats_read(v); /* the data path's counters, from the cores and the hardware */
    v[NANOBPF_CTRL_STAT_KEYS] = ctrl_keys_count();
    v[NANOBPF_CTRL_STAT_RESETS] = st.resets;
    v[NANOBPF_CTRL_STAT_EPOCH] = st.epoch;
    for (unsigned id = 0; id < NANOBPF_STAT_COUNT; id++) {
        uint8_t *e = r->body + id * NANOBPF_STAT_ENTRY_SIZE;
        ctrl_put32(e, id), ctrl_put32(e + 4, 0), ctrl_put64(e + 8, v[id]);
    }
    r->len = (NANOBPF_STAT_COUNT) * NANOBPF_STAT_ENTRY_SIZE;
    return 0;
}

int ctrl_table_msg(const uint8_t *b, unsigned len, struct ctrl_reply *r, int set) {
    if (len != NANOBPF_TABLE_MSG_SIZE)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "table_msg: %u bytes, expected %u", len, NANOBPF_TABLE_MSG_SIZE);
    unsigned table = b[0], index = ctrl_be16(b + 2);
    uint32_t value = ctrl_be32(b + 4);
    static const char *const names[] = {"port_entry", "profile_entry", "lport_cfg"};
    static const unsigned counts[] = {NANOBPF_PISA_PORT_ENTRY_COUNT, NANOBPF_PISA_PROFILE_ENTRY_COUNT, NANOBPF_PISA_LPORT_CFG_COUNT};
    static const uint64_t masks[] = {NANOBPF_PISA_PORT_ENTRY_FIELDS_MASK, NANOBPF_PISA_PROFILE_ENTRY_FIELDS_MASK,
                                     NANOBPF_PISA_LPORT_CFG_FIELDS_MASK};
    if (table > NANOBPF_CTRL_TABLE_LPORT_CFG || b[1])
        return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "table %u: 0..%u, reserved zero", table, NANOBPF_CTRL_TABLE_LPORT_CFG);
    if (index >= counts[table]) return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "%s[%u]: %u entries", names[table], index, counts[table]);
    if (set && (value & ~masks[table]))
        return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "%s: bits 0x%llx are not fields", names[table],
                           (unsigned long long)(value & ~masks[table]));
    return dpu_table_write(table, index, set ? value : 0, r);
}

static int do_hello_body(const uint8_t *b, unsigned len, struct ctrl_reply *r, uint8_t *version) {
    if (len != NANOBPF_HELLO_REQ_SIZE)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "hello_req: %u bytes, expected %u", len, NANOBPF_HELLO_REQ_SIZE);
    unsigned vmin = ctrl_be16(b), vmax = ctrl_be16(b + 2);
    unsigned ver = vmax < NANOBPF_CTRL_VERSION ? vmax : NANOBPF_CTRL_VERSION;
    if (ver < (vmin > NANOBPF_CTRL_MIN_VERSION ? vmin : NANOBPF_CTRL_MIN_VERSION))
        return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_VERSION, "device speaks %u..%u", NANOBPF_CTRL_MIN_VERSION, NANOBPF_CTRL_VERSION);
    *version = (uint8_t)ver;
    ctrl_put16(r->body, ver);
    ctrl_put16(r->body + 2, dpu_data_cores());
    ctrl_put32(r->body + 4, NANOBPF_KEYTABLE_ENTRIES);
    ctrl_put32(r->body + 8, NANOBPF_CTRL_MAX_IMAGE);
    ctrl_put16(r->body + 12, NANOBPF_CTRL_MAX_BODY);
    ctrl_put16(r->body + 14, 0);
    r->len = NANOBPF_HELLO_RESP_SIZE;
    r->status = NANOBPF_CTRL_ST_OK;
    return 0;
}

static int apply(uint8_t type, const uint8_t *b, unsigned len, struct ctrl_reply *r) {
    switch (type) {
    case NANOBPF_CTRL_MSG_RESET: return do_reset(b, len, r);
    case NANOBPF_CTRL_MSG_STATS: return do_stats(b, len, r);
    case NANOBPF_CTRL_MSG_KEY_ADD: return ctrl_key_set(b, len, r, 0);
    case NANOBPF_CTRL_MSG_KEY_UPDATE: return ctrl_key_set(b, len, r, 1);
    case NANOBPF_CTRL_MSG_KEY_DEL: return ctrl_key_del(b, len, r);
    case NANOBPF_CTRL_MSG_KEY_FLUSH:
        if (len) return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "KEY_FLUSH has no body");
        ctrl_keys_flush();
        return 0;
    case NANOBPF_CTRL_MSG_PROG_BEGIN: return ctrl_prog_begin(b, len, r);
    case NANOBPF_CTRL_MSG_PROG_CHUNK: return ctrl_prog_chunk(b, len, r);
    case NANOBPF_CTRL_MSG_PROG_COMMIT: return ctrl_prog_commit(b, len, r);
    case NANOBPF_CTRL_MSG_PROG_UNLOAD: return ctrl_prog_unload(b, len, r);
    case NANOBPF_CTRL_MSG_PROG_INFO: return ctrl_prog_info(b, len, r);
    case NANOBPF_CTRL_MSG_MAP_LOOKUP:
    case NANOBPF_CTRL_MSG_MAP_UPDATE:
    case NANOBPF_CTRL_MSG_MAP_DELETE:
    case NANOBPF_CTRL_MSG_MAP_NEXT: return ctrl_map(type, b, len, r);
    case NANOBPF_CTRL_MSG_EVENTS: return ctrl_events(b, len, r);
    case NANOBPF_CTRL_MSG_TABLE_SET: return ctrl_table_msg(b, len, r, 1);
    case NANOBPF_CTRL_MSG_TABLE_DEL: return ctrl_table_msg(b, len, r, 0);
    }
    return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_TYPE, "unknown message type 0x%x", type);
}

/* ---- one control frame ---- */
static struct ctrl_reply reply;

/* The response to the request in `frame` (its header at ETH), into `frame`; returns its length. */
static unsigned respond(uint8_t type, uint8_t status, const uint8_t *body, unsigned len, int replay) {
    static const uint8_t device_mac[6] = NANOBPF_CTRL_DEVICE_MAC;
    uint8_t *h = frame + ETH;
    memcpy(frame, frame + 6, 6); /* to the requester */
    memcpy(frame + 6, device_mac, 6);
    uint32_t seq = ctrl_be32(h + 4);
    h[0] = st.version ? st.version : NANOBPF_CTRL_VERSION;
    h[1] = type;
    h[2] = NANOBPF_CTRL_F_RESPONSE | (replay ? NANOBPF_CTRL_F_REPLAY : 0);
    h[3] = status;
    ctrl_put32(h + 4, seq);
    ctrl_put32(h + 8, st.epoch);
    ctrl_put16(h + 12, len);
    ctrl_put16(h + 14, 0);
    /* the request's nonce stays where it is: the response repeats it */
    if (body != h + HDR + NONCE) memmove(h + HDR + NONCE, body, len);
    ctrl_auth_tag(h, HDR + NONCE + len, h + HDR + NONCE + len);
    unsigned n = ETH + HDR + NONCE + len + TAG;
    for (; n < MIN_FRAME; n++) frame[n] = 0;
    return n;
}

static unsigned replayed(const struct cached *c) {
    ctrl_counts[NANOBPF_CTRL_STAT_CTRL_REPLAYED]++;
    return respond(c->resp_type, c->status, c->body, c->resp_len, 1);
}

static unsigned stale_seq(uint8_t type) {
    ctrl_counts[NANOBPF_CTRL_STAT_CTRL_STALE]++;
    uint8_t b[4];
    ctrl_put32(b, st.last_seq);
    return respond(type, NANOBPF_CTRL_ST_STALE_SEQ, b, 4, 0);
}

/* The request in frame[0..len): the response's length, or 0 when it gets none (malformed). */
static unsigned control(unsigned len, uint64_t *cycles, uint8_t *applied_type) {
    *applied_type = 0;
    if (len < ETH + HDR + NONCE + TAG) return ctrl_counts[NANOBPF_CTRL_STAT_CTRL_MALFORMED]++, 0;
    uint8_t *h = frame + ETH;
    unsigned body_len = ctrl_be16(h + 12);
    if (body_len > NANOBPF_CTRL_MAX_BODY || ETH + HDR + NONCE + body_len + TAG > len || ctrl_be16(h + 14) || h[0] == 0 ||
        (h[2] & NANOBPF_CTRL_F_RESPONSE))
        return ctrl_counts[NANOBPF_CTRL_STAT_CTRL_MALFORMED]++, 0;
    /* nothing past the header's sanity is believed before the tag verifies */
    if (ctrl_auth_open(h, h + HDR, body_len)) return ctrl_counts[NANOBPF_CTRL_STAT_CTRL_AUTH_FAIL]++, 0;
    if (!st.epoch) st.epoch = new_epoch(h + HDR);
    uint8_t type = h[1], version = h[0];
    uint32_t seq = ctrl_be32(h + 4), epoch = ctrl_be32(h + 8);
    memcpy(req_body, h + HDR + NONCE, body_len);
    ctrl_counts[NANOBPF_CTRL_STAT_CTRL_RX]++;
    const struct cached *c;
    if (type == NANOBPF_CTRL_MSG_HELLO) {
        if (st.session && (c = cache_find(seq, type, req_body, body_len))) return replayed(c);
        if (st.session && !serial_newer(seq, st.last_seq)) return stale_seq(type); /* a late duplicate */
        uint8_t ver;
        reply.len = 0;
        if (do_hello_body(req_body, body_len, &reply, &ver)) {
            ctrl_counts[NANOBPF_CTRL_STAT_CTRL_ERRORS]++;
            return respond(type, reply.status, reply.body, reply.len, 0);
        }
        st.session = 1, st.version = ver, st.last_seq = seq;
        cache_clear();
        ctrl_counts[NANOBPF_CTRL_STAT_CTRL_APPLIED]++;
        cache_put(seq, type, req_body, body_len, &reply);
        *applied_type = type;
        return respond(type, NANOBPF_CTRL_ST_OK, reply.body, reply.len, 0);
    }
    if (!st.session || epoch != st.epoch) {
        ctrl_counts[NANOBPF_CTRL_STAT_CTRL_STALE]++;
        return respond(type, st.session ? NANOBPF_CTRL_ST_STALE_EPOCH : NANOBPF_CTRL_ST_NEED_HELLO, NULL, 0, 0);
    }
    if ((c = cache_find(seq, type, req_body, body_len))) return replayed(c);
    if (!serial_newer(seq, st.last_seq)) return stale_seq(type);
    if (version != st.version) {
        ctrl_counts[NANOBPF_CTRL_STAT_CTRL_ERRORS]++;
        reply.len = 0;
        ctrl_refuse(&reply, NANOBPF_CTRL_ST_BAD_VERSION, "session version %u, request version %u", st.version, version);
        return respond(type, reply.status, reply.body, reply.len, 0);
    }
    reply.status = NANOBPF_CTRL_ST_OK;
    reply.len = 0;
    uint64_t c0 = nb_cycles();
    if (apply(type, req_body, body_len, &reply)) ctrl_counts[NANOBPF_CTRL_STAT_CTRL_ERRORS]++;
    *cycles = nb_cycles() - c0;
    *applied_type = type;
    ctrl_counts[NANOBPF_CTRL_STAT_CTRL_APPLIED]++;
    if (type == NANOBPF_CTRL_MSG_RESET && reply.status == NANOBPF_CTRL_ST_OK)
        return respond(type, reply.status, reply.body, reply.len, 0); /* the new epoch, no session */
    st.last_seq = seq;
    cache_put(seq, type, req_body, body_len, &reply);
    return respond(type, reply.status, reply.body, reply.len, 0);
}

/* Packet memory is uncached: each access is a bus transaction, so frames move eight bytes at a time
 * (a frame starts 8-byte aligned in its slot; the words past its end are the slot's own). */
_Static_assert(NANOBPF_DATAPATH_HEADROOM % 8 == 0 && NANOBPF_DATAPATH_SLOT_BYTES % 8 == 0, "frames start 8-byte aligned");
_Static_assert(ETH + HDR + NONCE + NANOBPF_CTRL_MAX_BODY + TAG + 8 <= NANOBPF_DATAPATH_SLOT_BYTES - NANOBPF_DATAPATH_HEADROOM - 32,
               "a response, rounded up to a word, fits its slot before the header-protection scratch");
static void copy_in(uint8_t *dst, uintptr_t src, unsigned len) {
    for (unsigned i = 0; i < len; i += 8) {
        uint64_t w = *(const volatile uint64_t *)(src + i);
        memcpy(dst + i, &w, len - i < 8 ? len - i : 8);
    }
}
static void copy_out(uintptr_t dst, const uint8_t *src, unsigned len) {
    for (unsigned i = 0; i < len; i += 8) {
        uint64_t w = 0;
        memcpy(&w, src + i, len - i < 8 ? len - i : 8);
        *(volatile uint64_t *)(dst + i) = w;
    }
}

uint64_t ctrl_frame(uintptr_t data, unsigned len, unsigned *out_len) {
    if (len > sizeof frame) len = sizeof frame; /* the header's length decides; more is padding */
    copy_in(frame, data, len);
    uint64_t c0 = nb_cycles(), apply_cycles = 0;
    uint8_t type;
    unsigned n = control(len, &apply_cycles, &type);
    uint64_t total = nb_cycles() - c0;
    if (type) ctrl_cost_note(type, total, apply_cycles);
    copy_out(data, frame, n);
    *out_len = n;
    return total;
}

uint32_t ctrl_epoch(void) { return st.epoch; }
