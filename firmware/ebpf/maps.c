/* Maps: array, per-CPU array and hash (preallocated, open addressing with linear probing and
 * tombstones, so an entry never moves while it exists: its slot index is stable, which the key table
 * relies on to name connection slots). Two hash maps are the device's, not a program's (the device
 * maps): the key table, whose values live in the device key table storage (ebpf_keytable_values)
 * instead of its own allocation, and the packet-number map beside it. Each is one map object shared by
 * every program that declares it (ebpf_device_map_bind), so it survives program loads and swaps. */
#include <errno.h>
#include <string.h>
#include "ebpf.h"

/* Hash slot layout: state byte, then key, then value, each 8-byte aligned; the key table keeps its
 * values apart, in the platform's key table storage (m->values), where the AEAD engine reads them, and
 * names its value in the slot header (bytes 4..7: the storage index). */
enum { SLOT_FREE = 0, SLOT_USED = 1, SLOT_DELETED = 2 };

static uint32_t round8(uint32_t v) { return (v + 7u) & ~7u; }
static uint32_t key_stride(const struct ebpf_map *m) { return round8(m->key_size); }
static uint32_t slot_size(const struct ebpf_map *m) { return 8 + key_stride(m) + (m->values ? 0 : m->value_stride); }
static uint8_t *slot(const struct ebpf_map *m, uint32_t i) { return m->storage + (size_t)i * slot_size(m); }
static uint32_t *value_index(const struct ebpf_map *m, uint32_t i) { return (uint32_t *)(void *)(slot(m, i) + 4); }
static uint8_t *hash_value(const struct ebpf_map *m, uint32_t i) {
    return m->values ? m->values + (size_t)__atomic_load_n(value_index(m, i), __ATOMIC_ACQUIRE) * m->value_stride
                     : slot(m, i) + 8 + key_stride(m);
}

/* Device key table: KEYTABLE_SLOTS hash slots (state, connection ID, storage index) in shared memory
 * and as many value places in the platform's key table storage, where the AEAD engine reads them by
 * index. Twice the entries, so that a changed entry's new value is written beside the old one and
 * published with one store of its index: a packet in flight sees the whole old value or the whole new
 * one, never a mix. The old place is reused only after ebpf_quiesce() (every core that may have
 * looked the entry up has finished that packet). */
#define KEYTABLE_SLOTS NANOBPF_KEYTABLE_SLOTS
#define KEYTABLE_SLOT_SIZE (8 + ((NANOBPF_QUIC_CID_SIZE + 7) & ~7))
_Static_assert(NANOBPF_QUIC_KEYS_SIZE % 8 == 0, "key table values are packed at their size");
_Static_assert(KEYTABLE_SLOTS >= 2 * NANOBPF_KEYTABLE_ENTRIES, "a new value beside every old one");
static struct ebpf_map keytable;
static uint32_t keytable_refs;
static uint64_t keytable_used[(KEYTABLE_SLOTS + 63) / 64]; /* value places in use (control core only) */

static uint32_t keytable_place(void) {
    for (uint32_t w = 0; w < sizeof keytable_used / sizeof *keytable_used; w++)
        if (~keytable_used[w])
            for (uint32_t b = 0; b < 64; b++)
                if (!(keytable_used[w] >> b & 1) && 64 * w + b < KEYTABLE_SLOTS) {
                    keytable_used[w] |= 1ull << b;
                    return 64 * w + b;
                }
    return UINT32_MAX; /* cannot happen: at most ENTRIES live values and ENTRIES places spare */
}
static void keytable_unplace(uint32_t i) { keytable_used[i / 64] &= ~(1ull << (i % 64)); }

/* A program's declaration of a device map (key struct nanobpf_quic_cid, the given value size) against
 * the device's shape. */
static int device_map_fits(const struct ebpf_map *decl, uint32_t value_size, const char *what, struct ebpf_error *err) {
    if (decl->type != NANOBPF_MAP_TYPE_HASH || decl->key_size != NANOBPF_QUIC_CID_SIZE || decl->value_size != value_size ||
        decl->max_entries == 0 || decl->max_entries > NANOBPF_KEYTABLE_ENTRIES || decl->flags)
        return ebpf_fail(err, -1, "map %s: %s is a hash map with key %u, value %u bytes, 1..%u entries", decl->name, what,
                         NANOBPF_QUIC_CID_SIZE, value_size, NANOBPF_KEYTABLE_ENTRIES);
    return 0;
}

static struct ebpf_map *keytable_bind(struct ebpf_error *err) {
    if (keytable_refs == 0) {
        struct ebpf_map *m = &keytable;
        memset(m, 0, sizeof *m);
        m->type = NANOBPF_MAP_TYPE_HASH;
        m->key_size = NANOBPF_QUIC_CID_SIZE;
        m->value_size = m->value_stride = NANOBPF_QUIC_KEYS_SIZE;
        m->max_entries = NANOBPF_KEYTABLE_ENTRIES; /* the device's table, whatever size a program declares */
        memcpy(m->name, NANOBPF_KEYTABLE_MAP_NAME, sizeof NANOBPF_KEYTABLE_MAP_NAME);
        m->n_cpus = 1;
        m->n_slots = KEYTABLE_SLOTS;
        m->storage = ebpf_alloc_shared((size_t)KEYTABLE_SLOTS * KEYTABLE_SLOT_SIZE);
        if (!m->storage) {
            ebpf_fail(err, -1, "map %s: out of shared memory for its slots", m->name);
            return NULL;
        }
        m->values = ebpf_keytable_values();
        m->external = 1;
        memset(keytable_used, 0, sizeof keytable_used);
        memset(m->values, 0, (size_t)KEYTABLE_SLOTS * NANOBPF_QUIC_KEYS_SIZE);
    }
    keytable_refs++;
    return &keytable;
}

/* The packet-number map: an ordinary hash map of the key table's keys (each core's program claims
 * packet numbers in it with atomics), owned by the device so that a program swap does not hand out a
 * sealed packet number again, and so that it takes its shared memory once, not twice while two
 * programs are loaded. */
static struct ebpf_map pn_map;
static uint32_t pn_refs;
static int map_create(struct ebpf_map *m, struct ebpf_error *err);

static struct ebpf_map *pn_bind(struct ebpf_error *err) {
    if (pn_refs == 0) {
        struct ebpf_map *m = &pn_map;
        memset(m, 0, sizeof *m);
        m->type = NANOBPF_MAP_TYPE_HASH;
        m->key_size = NANOBPF_QUIC_CID_SIZE;
        m->value_size = NANOBPF_QUIC_PN_STATE_SIZE;
        m->max_entries = NANOBPF_KEYTABLE_ENTRIES;
        memcpy(m->name, NANOBPF_KEYTABLE_PN_MAP_NAME, sizeof NANOBPF_KEYTABLE_PN_MAP_NAME);
        if (map_create(m, err)) return NULL;
    }
    pn_refs++;
    return &pn_map;
}

int ebpf_device_map_named(const char *name) {
    return !strcmp(name, NANOBPF_KEYTABLE_MAP_NAME) || !strcmp(name, NANOBPF_KEYTABLE_PN_MAP_NAME);
}

struct ebpf_map *ebpf_device_map_bind(const struct ebpf_map *decl, struct ebpf_error *err) {
    if (!strcmp(decl->name, NANOBPF_KEYTABLE_MAP_NAME))
        return device_map_fits(decl, NANOBPF_QUIC_KEYS_SIZE, "the key table", err) ? NULL : keytable_bind(err);
    if (!strcmp(decl->name, NANOBPF_KEYTABLE_PN_MAP_NAME))
        return device_map_fits(decl, NANOBPF_QUIC_PN_STATE_SIZE, "the device's packet-number map", err) ? NULL : pn_bind(err);
    ebpf_fail(err, -1, "map %s: not a device map", decl->name);
    return NULL;
}

void ebpf_device_map_unbind(struct ebpf_map *m) {
    if (m == &keytable && keytable_refs && --keytable_refs == 0) {
        ebpf_free_shared(m->storage);
        memset(m, 0, sizeof *m);
    } else if (m == &pn_map && pn_refs && --pn_refs == 0) {
        ebpf_free_shared(m->storage);
        memset(m, 0, sizeof *m);
    }
}

int ebpf_map_is_device(const struct ebpf_map *m) { return m == &keytable || m == &pn_map; }
int ebpf_map_is_keytable(const struct ebpf_map *m) { return m == &keytable; }

/* Several cores run programs that update one hash map (the DPU's data cores: a connection's first
 * packets may reach two cores at once). Inserts and deletes hold the map's lock, so two cores never
 * claim one free slot or insert one key twice (a late insert of a fresh value would wipe what the
 * first core's program already wrote there: a packet-number claim, for one). The lock and the count
 * are only touched by atomic operations (AMOs reach memory on CVA6; a plain load could see a core's
 * stale cached line). Lookups take no lock: an insert writes key and value before it publishes the
 * slot's state with a release store. */
static void hash_lock(struct ebpf_map *m) {
    while (__atomic_exchange_n(&m->lock, 1, __ATOMIC_ACQUIRE)) {
    }
}
static void hash_unlock(struct ebpf_map *m) { (void)__atomic_exchange_n(&m->lock, 0, __ATOMIC_RELEASE); }
static uint32_t hash_count(struct ebpf_map *m) { return __atomic_fetch_add(&m->count, 0, __ATOMIC_ACQUIRE); }

static uint32_t hash_bytes(const uint8_t *p, uint32_t n) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (uint32_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

int ebpf_map_create(struct ebpf_map *m, struct ebpf_error *err) {
    if (ebpf_device_map_named(m->name))
        return ebpf_fail(err, -1, "map %s: a device map is bound (ebpf_device_map_bind), not created", m->name);
    return map_create(m, err);
}

static int map_create(struct ebpf_map *m, struct ebpf_error *err) {
    m->value_stride = round8(m->value_size);
    m->count = 0;
    m->lock = 0;
    m->n_cpus = 1;
    m->external = 0;
    m->values = NULL;
    if (m->flags) return ebpf_fail(err, -1, "map %s: flags 0x%x not supported", m->name, m->flags);
    if (m->value_size == 0 || m->value_size > 65536 || m->max_entries == 0 || m->max_entries > (1u << 20))
        return ebpf_fail(err, -1, "map %s: value size %u / entries %u out of range", m->name, m->value_size, m->max_entries);
    size_t bytes;
    switch (m->type) {
    case NANOBPF_MAP_TYPE_ARRAY:
    case NANOBPF_MAP_TYPE_PERCPU_ARRAY:
        if (m->key_size != 4) return ebpf_fail(err, -1, "map %s: array key size must be 4, not %u", m->name, m->key_size);
        if (m->type == NANOBPF_MAP_TYPE_PERCPU_ARRAY) m->n_cpus = ebpf_num_cpus();
        m->n_slots = m->max_entries;
        bytes = (size_t)m->n_slots * m->value_stride * m->n_cpus;
        break;
    case NANOBPF_MAP_TYPE_HASH:
        if (m->key_size == 0 || m->key_size > 512) return ebpf_fail(err, -1, "map %s: key size %u out of range", m->name, m->key_size);
        m->n_slots = 1;
        while (m->n_slots < 2 * m->max_entries) m->n_slots <<= 1;
        bytes = (size_t)m->n_slots * slot_size(m);
        break;
    default:
        return ebpf_fail(err, -1, "map %s: type %u not supported (hash, array, percpu_array)", m->name, m->type);
    }
    /* per-CPU maps: each core its own values, in cached memory; the others are shared between cores */
    m->storage = m->type == NANOBPF_MAP_TYPE_PERCPU_ARRAY ? ebpf_alloc(bytes) : ebpf_alloc_shared(bytes);
    if (!m->storage) return ebpf_fail(err, -1, "map %s: out of memory for %lu bytes", m->name, (unsigned long)bytes);
    return 0;
}

void ebpf_map_destroy(struct ebpf_map *m) {
    if (ebpf_map_is_device(m)) {
        ebpf_device_map_unbind(m);
        return;
    }
    if (m->type == NANOBPF_MAP_TYPE_PERCPU_ARRAY) ebpf_free(m->storage);
    else ebpf_free_shared(m->storage);
    m->storage = NULL;
}

/* Index of the slot holding key, or of the slot where it would go (-1: table full). */
static int64_t hash_find(const struct ebpf_map *m, const void *key, int *found) {
    uint32_t mask = m->n_slots - 1, i = hash_bytes(key, m->key_size) & mask;
    int64_t first_free = -1;
    *found = 0;
    for (uint32_t probe = 0; probe < m->n_slots; probe++, i = (i + 1) & mask) {
        uint8_t *s = slot(m, i);
        if (s[0] == SLOT_USED && memcmp(s + 8, key, m->key_size) == 0) {
            *found = 1;
            return i;
        }
        if (s[0] != SLOT_USED && first_free < 0) first_free = i;
        if (s[0] == SLOT_FREE) break;
    }
    return first_free;
}

void *ebpf_map_lookup(struct ebpf_map *m, const void *key) {
    if (m->type == NANOBPF_MAP_TYPE_HASH) {
        int found;
        int64_t i = hash_find(m, key, &found);
        return found ? hash_value(m, (uint32_t)i) : NULL;
    }
    uint32_t idx;
    memcpy(&idx, key, 4);
    if (idx >= m->max_entries) return NULL;
    uint32_t cpu = m->type == NANOBPF_MAP_TYPE_PERCPU_ARRAY ? ebpf_cpu_id() % m->n_cpus : 0;
    return m->storage + ((size_t)cpu * m->n_slots + idx) * m->value_stride;
}

int ebpf_map_update(struct ebpf_map *m, const void *key, const void *value, uint64_t flags) {
    if (flags > NANOBPF_BPF_EXIST) return -EINVAL;
    if (m->type != NANOBPF_MAP_TYPE_HASH) {
        if (flags == NANOBPF_BPF_NOEXIST) return -EEXIST; /* array elements always exist */
        void *v = ebpf_map_lookup(m, key);
        if (!v) return -E2BIG;
        memcpy(v, value, m->value_size);
        return 0;
    }
    int found, rc = 0;
    hash_lock(m);
    int64_t i = hash_find(m, key, &found);
    if (found && flags == NANOBPF_BPF_NOEXIST) rc = -EEXIST;
    else if (!found && flags == NANOBPF_BPF_EXIST) rc = -ENOENT;
    else if (!found && (hash_count(m) >= m->max_entries || i < 0)) rc = -E2BIG;
    else {
        uint8_t *s = slot(m, (uint32_t)i);
        uint32_t old = found && m->values ? *value_index(m, (uint32_t)i) : UINT32_MAX;
        if (m->values) { /* the key table: the new value in a place of its own, then its index */
            uint32_t place = keytable_place();
            memcpy(m->values + (size_t)place * m->value_stride, value, m->value_size);
            __atomic_store_n(value_index(m, (uint32_t)i), place, __ATOMIC_RELEASE);
        } else {
            memcpy(hash_value(m, (uint32_t)i), value, m->value_size);
        }
        if (!found) {
            memcpy(s + 8, key, m->key_size);
            __atomic_store_n(&s[0], SLOT_USED, __ATOMIC_RELEASE); /* key and value before the state */
            __atomic_fetch_add(&m->count, 1, __ATOMIC_RELAXED);
        }
        if (old != UINT32_MAX) {
            ebpf_quiesce(); /* no core still reads the old value */
            keytable_unplace(old);
        }
    }
    hash_unlock(m);
    return rc;
}

int ebpf_map_delete(struct ebpf_map *m, const void *key) {
    if (m->type != NANOBPF_MAP_TYPE_HASH) return -EINVAL;
    int found, rc = 0;
    hash_lock(m);
    int64_t i = hash_find(m, key, &found);
    if (!found) rc = -ENOENT;
    else {
        __atomic_store_n(&slot(m, (uint32_t)i)[0], SLOT_DELETED, __ATOMIC_RELEASE);
        __atomic_fetch_sub(&m->count, 1, __ATOMIC_RELAXED);
        if (m->values) {
            /* the slot and its value place stay untouched until no core can still be reading them */
            ebpf_quiesce();
            keytable_unplace(*value_index(m, (uint32_t)i));
        }
    }
    hash_unlock(m);
    return rc;
}

int64_t ebpf_map_slot_of(struct ebpf_map *m, const void *key) {
    int found;
    int64_t i = m->type == NANOBPF_MAP_TYPE_HASH ? hash_find(m, key, &found) : -1;
    return m->type == NANOBPF_MAP_TYPE_HASH && found ? i : -1;
}

/* Linux BPF_MAP_GET_NEXT_KEY: the key after key (NULL or absent: the first), in slot order; -ENOENT after the last. */
int ebpf_map_get_next_key(struct ebpf_map *m, const void *key, void *next) {
    if (m->type != NANOBPF_MAP_TYPE_HASH) {
        uint32_t idx = 0;
        if (key) {
            memcpy(&idx, key, 4);
            idx = idx >= m->max_entries ? 0 : idx + 1;
        }
        if (idx >= m->max_entries) return -ENOENT;
        memcpy(next, &idx, 4);
        return 0;
    }
    int found = 0;
    int64_t at = key ? hash_find(m, key, &found) : -1;
    for (uint32_t i = found ? (uint32_t)at + 1 : 0; i < m->n_slots; i++) {
        const uint8_t *s = slot(m, i);
        if (s[0] == SLOT_USED) {
            memcpy(next, s + 8, m->key_size);
            return 0;
        }
    }
    return -ENOENT;
}
