/* The key table's control messages (KEY_ADD/UPDATE/DEL/FLUSH; docs/control.md "Key table entries"),
 * as the model's _do_key, _do_key_del, _do_key_flush. The table is the device's: the key table map and
 * its packet-number map (ebpf_device_map_bind) are held here from boot, so entries and their packet
 * numbers survive program loads, and every program that declares nanobpf_quic_keys or quic_pn sees the
 * same one. Its values live in the AEAD engine's key storage; a
 * changed entry's value is written beside the old one and published with one store (maps.c), so a
 * packet in flight on a data core uses the whole old entry or the whole new one. Open entries of 1..20-byte
 * CIDs also go into PISA's CID table, (CID, length) -> the entry's connection tag (its slot and the slot's generation), which programs get as conn
 * (the model's _cid_command). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "ctrl.h"
#include "nanobpf_soc.h"

static struct ebpf_map *table, *pn;

int ctrl_keys_init(void) {
    struct ebpf_map decl = {.name = NANOBPF_KEYTABLE_MAP_NAME, .type = NANOBPF_MAP_TYPE_HASH, .key_size = NANOBPF_QUIC_CID_SIZE,
                            .value_size = NANOBPF_QUIC_KEYS_SIZE, .max_entries = NANOBPF_KEYTABLE_ENTRIES};
    struct ebpf_map pn_decl = {.name = NANOBPF_KEYTABLE_PN_MAP_NAME, .type = NANOBPF_MAP_TYPE_HASH,
                               .key_size = NANOBPF_QUIC_CID_SIZE, .value_size = NANOBPF_QUIC_PN_STATE_SIZE,
                               .max_entries = NANOBPF_KEYTABLE_ENTRIES};
    struct ebpf_error err;
    table = ebpf_device_map_bind(&decl, &err);
    pn = ebpf_device_map_bind(&pn_decl, &err);
    return table && pn ? 0 : -1;
}

uint32_t ctrl_keys_count(void) { return __atomic_fetch_add(&table->count, 0, __ATOMIC_ACQUIRE); }

/* The entry a key_msg/key_del names, as the program's map key (struct nanobpf_quic_cid), or INVALID with
 * the field at fault (the model's _key_id). */
static int entry_key(const uint8_t *m, struct nanobpf_quic_cid *k, struct ctrl_reply *r) {
    unsigned n = m[0], dir = m[1];
    const uint8_t *cid = m + 4;
    if (dir != NANOBPF_QUIC_DIR_OPEN && dir != NANOBPF_QUIC_DIR_SEAL)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "dir %u: %u (open) or %u (seal)", dir, NANOBPF_QUIC_DIR_OPEN, NANOBPF_QUIC_DIR_SEAL);
    if (n > NANOBPF_CTRL_MAX_CID) return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "cid_len %u: 0..%u", n, NANOBPF_CTRL_MAX_CID);
    if (m[2] || m[3]) return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "reserved bytes not zero");
    int any = 0, after = 0;
    for (unsigned i = 0; i < NANOBPF_CTRL_MAX_CID; i++) any |= cid[i], after |= i >= n ? cid[i] : 0;
    if (n && after) return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "cid: bytes after the %u-byte CID not zero", n);
    if (!n && !any) return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "cid_len 0: cid holds the peer's address id, not all zero");
    memset(k, 0, sizeof *k);
    k->len = (uint8_t)n;
    memcpy(k->id, cid, NANOBPF_CTRL_MAX_CID);
    k->dir = (uint8_t)dir;
    return 0;
}

/* The 80-byte value (the model's _check_keys): every problem named. */
static int check_keys(const struct nanobpf_quic_cid *k, const uint8_t *keys, struct ctrl_reply *r) {
    char text[200];
    unsigned n = 0, phase = keys[0], flags = keys[1], cid_len = keys[2];
    const unsigned both = NANOBPF_QUIC_KEY_NEXT | NANOBPF_QUIC_KEY_PREV;
#define PROBLEM(...) (n += (unsigned)snprintf(text + n, sizeof text - n, "%s", n ? "; " : ""), \
                      n += (unsigned)snprintf(text + n, sizeof text - n, __VA_ARGS__), n = n < sizeof text ? n : sizeof text - 1)
    if (phase > 1) PROBLEM("key_phase %u: 0 or 1", phase);
    if ((flags & ~both) || flags == both)
        PROBLEM("flags 0x%x: NEXT (%u) or PREV (%u), not both", flags, NANOBPF_QUIC_KEY_NEXT, NANOBPF_QUIC_KEY_PREV);
    else if ((flags & NANOBPF_QUIC_KEY_PREV) && k->dir != NANOBPF_QUIC_DIR_OPEN)
        PROBLEM("flags: PREV (previous keys) only in open entries");
    if (cid_len != k->len) PROBLEM("cid_len %u: the entry's CID length is %u", cid_len, k->len);
    if (keys[3] || keys[76] || keys[77] || keys[78] || keys[79]) PROBLEM("reserved and pad not zero");
#undef PROBLEM
    return n ? ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "keys: %s", text) : 0;
}

/* PISA's CID table follows the key table: an open entry's CID (packets from the network carry the
 * device's own CIDs) and a seal entry's, marked as such (frames to seal carry the peer's CID behind the
 * host link's shim); a zero-length CID's entry by its peer's address id (length 0, the 20 bytes of
 * id). Inserted once the entry is in the key table, removed before it leaves it, so a packet's conn
 * never names a slot without its entry. A full table refuses the insert (PISA counts it, STATS
 * CID_FULL): the entry works all the same, its packets get conn 0. */
static void cid_table(unsigned op, const struct nanobpf_quic_cid *k, unsigned tag) {
    _Static_assert(NANOBPF_PISA_CID_ARG_SLOT_WIDTH == NANOBPF_KEYTABLE_CONN_BITS && NANOBPF_PKT_DESC_CONN_SLOT_WIDTH == NANOBPF_KEYTABLE_CONN_BITS,
                   "PISA's CID table and the descriptor carry a whole connection tag");
    dpu_cid_command(op, k->id, k->len, k->dir == NANOBPF_QUIC_DIR_SEAL, tag);
}

static uint32_t open_cid_lens(void) {
    uint32_t bits = 0;
    struct nanobpf_quic_cid cur, next;
    const void *at = NULL;
    while (!ebpf_map_get_next_key(table, at, &next)) {
        if (next.dir == NANOBPF_QUIC_DIR_OPEN) bits |= 1u << next.len;
        cur = next;
        at = &cur;
    }
    return bits;
}

void ctrl_keys_sync_config(const struct ebpf_prog *prog) {
    struct ebpf_map *m = prog ? ctrl_prog_map(prog, "quic_config") : NULL;
    if (!m || m->type != NANOBPF_MAP_TYPE_ARRAY || m->key_size != 4 || m->value_size != NANOBPF_QUIC_CONFIG_SIZE) return;
    uint32_t zero = 0;
    uint8_t *v = ebpf_map_lookup(m, &zero);
    if (!v) return;
    /* one aligned 32-bit store: the other fields are the user's, and the program reads this one live */
    __atomic_store_n((uint32_t *)(void *)(v + offsetof(struct nanobpf_quic_config, open_cid_lens)), open_cid_lens(),
                     __ATOMIC_RELEASE);
}

void ctrl_keys_booted(const void *key) {
    struct nanobpf_quic_cid k;
    memcpy(&k, key, sizeof k);
    uint32_t conn = ebpf_keytable_conn_of(&k);
    if (conn) cid_table(NANOBPF_PISA_CID_OP_INSERT, &k, conn - 1);
}

int ctrl_key_set(const uint8_t *b, unsigned len, struct ctrl_reply *r, int update) {
    if (len != NANOBPF_KEY_MSG_SIZE)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "key_msg: %u bytes, expected %u", len, NANOBPF_KEY_MSG_SIZE);
    struct nanobpf_quic_cid k;
    const uint8_t *keys = b + offsetof(struct nanobpf_key_msg, keys);
    if (entry_key(b, &k, r) || check_keys(&k, keys, r)) return -1;
    int rc = ebpf_map_update(table, &k, keys, update ? NANOBPF_BPF_EXIST : NANOBPF_BPF_NOEXIST);
    if (rc == -ENOENT) return ctrl_refuse(r, NANOBPF_CTRL_ST_NOENT, "no such entry");
    if (rc == -EEXIST) return ctrl_refuse(r, NANOBPF_CTRL_ST_EXIST, "entry already present (KEY_UPDATE replaces keys)");
    if (rc) return ctrl_refuse(r, NANOBPF_CTRL_ST_FULL, "key table full (%u entries)", NANOBPF_KEYTABLE_ENTRIES);
    uint32_t tag = ebpf_keytable_conn_of(&k) - 1; /* its slot and the slot's generation */
    if (!update) { /* fresh keys: the insert started its packet-number state at zero (an update keeps it) */
        ctrl_keys_sync_config(dpu_prog_current());
        cid_table(NANOBPF_PISA_CID_OP_INSERT, &k, tag);
    }
    ctrl_put32(r->body, tag);
    r->len = NANOBPF_KEY_RESP_SIZE;
    return 0;
}

int ctrl_key_del(const uint8_t *b, unsigned len, struct ctrl_reply *r) {
    if (len != NANOBPF_KEY_DEL_SIZE)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "key_del: %u bytes, expected %u", len, NANOBPF_KEY_DEL_SIZE);
    struct nanobpf_quic_cid k;
    if (entry_key(b, &k, r)) return -1;
    if (ebpf_map_slot_of(table, &k) < 0) return ctrl_refuse(r, NANOBPF_CTRL_ST_NOENT, "no such entry");
    cid_table(NANOBPF_PISA_CID_OP_DELETE, &k, 0);
    ebpf_map_delete(table, &k); /* its packet-number state goes with it (maps.c); returns once no core
                                   can still hold the entry */
    ctrl_keys_sync_config(dpu_prog_current());
    return 0;
}

void ctrl_keys_flush(void) {
    struct nanobpf_quic_cid k;
    while (!ebpf_map_get_next_key(table, NULL, &k)) {
        cid_table(NANOBPF_PISA_CID_OP_DELETE, &k, 0);
        ebpf_map_delete(table, &k);
    }
    /* every entry's packet-number state went with it (maps.c): quic_pn has a state per key table entry */
    ctrl_keys_sync_config(dpu_prog_current());
}
