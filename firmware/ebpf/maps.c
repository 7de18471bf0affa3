/* Maps: arrays (array, per-CPU array, DEVMAP), hash tables (hash, per-CPU hash, LRU hash, LRU per-CPU
 * hash, DEVMAP_HASH: preallocated, open addressing with linear probing and tombstones, so an entry
 * never moves while it exists: its slot index is stable, which the key table relies on to name
 * connection slots) and event rings (RINGBUF, PERF_EVENT_ARRAY: records for the host, at the end). Two hash maps are the device's, not a program's (the device maps): the key table,
 * whose values live in the device key table storage (ebpf_keytable_values) instead of its own
 * allocation, and the packet-number map beside it (one state per key table slot). Each is one object shared by every program that
 * declares it (ebpf_device_map_bind), so it survives program loads and swaps; pinned maps
 * (ebpf_pinned_map_bind) are shared the same way, by name.
 * One file on purpose (about 850 lines): the slot layout and the key search are static here so that
 * the compiler inlines them into a lookup, which every packet makes several times (the firmware is
 * built without link-time optimisation); the event rings (the last section) share none of that and
 * could live apart. */
#include <errno.h>
#include <string.h>
#include "ebpf.h"

/* Hash slot layout: state byte, then key, then value (one copy per CPU for per-CPU maps), each 8-byte
 * aligned; the key table keeps its values apart, in the platform's key table storage (m->values), where
 * the AEAD engine reads them, and names its value in the slot header (bytes 4..7: the storage index).
 * An LRU map keeps there when the entry was last used instead (lru_now()). */
enum { SLOT_FREE = 0, SLOT_USED = 1, SLOT_DELETED = 2 };

static uint32_t round8(uint32_t v) { return (v + 7u) & ~7u; }
static int is_hash(const struct ebpf_map *m) {
    return m->type == NANOBPF_MAP_TYPE_HASH || m->type == NANOBPF_MAP_TYPE_PERCPU_HASH || m->type == NANOBPF_MAP_TYPE_LRU_HASH ||
           m->type == NANOBPF_MAP_TYPE_LRU_PERCPU_HASH || m->type == NANOBPF_MAP_TYPE_DEVMAP_HASH;
}
static int is_lru(const struct ebpf_map *m) {
    return m->type == NANOBPF_MAP_TYPE_LRU_HASH || m->type == NANOBPF_MAP_TYPE_LRU_PERCPU_HASH;
}
static int is_devmap(const struct ebpf_map *m) {
    return m->type == NANOBPF_MAP_TYPE_DEVMAP || m->type == NANOBPF_MAP_TYPE_DEVMAP_HASH;
}
int ebpf_map_is_event(const struct ebpf_map *m) {
    return m->type == NANOBPF_MAP_TYPE_RINGBUF || m->type == NANOBPF_MAP_TYPE_PERF_EVENT_ARRAY;
}
int ebpf_map_is_percpu(const struct ebpf_map *m) {
    return m->type == NANOBPF_MAP_TYPE_PERCPU_ARRAY || m->type == NANOBPF_MAP_TYPE_PERCPU_HASH ||
           m->type == NANOBPF_MAP_TYPE_LRU_PERCPU_HASH;
}
static uint32_t key_stride(const struct ebpf_map *m) { return round8(m->key_size); }
static uint32_t slot_size(const struct ebpf_map *m) {
    return 8 + key_stride(m) + (m->values ? 0 : m->value_stride * m->n_cpus);
}
static uint8_t *slot(const struct ebpf_map *m, uint32_t i) { return m->storage + (size_t)i * slot_size(m); }
static uint32_t *value_index(const struct ebpf_map *m, uint32_t i) { return (uint32_t *)(void *)(slot(m, i) + 4); }
static uint8_t *hash_value(const struct ebpf_map *m, uint32_t i) {
    return m->values ? m->values + (size_t)__atomic_load_n(value_index(m, i), __ATOMIC_ACQUIRE) * m->value_stride
                     : slot(m, i) + 8 + key_stride(m);
}
/* The calling core's copy of a per-CPU value. The copies are as many as the cores, so the remainder is
 * only for a core beyond them; CVA6's divider takes tens of cycles, and per-CPU lookups (counters, the
 * QUIC program's scratch) come several times a packet. */
static uint32_t this_cpu(const struct ebpf_map *m) {
    uint32_t cpu = ebpf_cpu_id();
    return m->n_cpus <= 1 ? 0 : cpu < m->n_cpus ? cpu : cpu % m->n_cpus;
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
/* The hash slot each value place belongs to (shared memory: every core reads it, ebpf_keytable_pn),
 * written before the place is published in its slot. */
static uint16_t *keytable_slot_of;
_Static_assert(KEYTABLE_SLOTS <= 65536, "a slot index fits keytable_slot_of");

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
/* A key table slot's header word: the state (byte 0), the slot's generation (TAG_GEN) and its entry's
 * direction (TAG_DIR), the value's place (bytes 4..7). The generation is 1 .. GEN_MAX, the next one
 * each time the slot takes a new entry (an update keeps it): with the slot, the connection tag PISA's
 * CID table gives the entry's frames. A frame classified before its entry left, waiting while the slot
 * took another, carries the old generation, and ebpf_keytable_by_conn finds nothing for it; the tag
 * repeats only after GEN_MAX new entries in that one slot, each inserted and deleted by the control
 * plane (a host request each, and every data core finished its packet at each delete: ebpf_quiesce). */
enum { TAG_GEN = 1, TAG_DIR = 2 };
#define GEN_MAX ((1u << (NANOBPF_KEYTABLE_CONN_BITS - NANOBPF_KEYTABLE_SLOT_BITS)) - 1)
static void keytable_new_tag(uint8_t *s, const void *key) {
    s[TAG_GEN] = (uint8_t)(s[TAG_GEN] % GEN_MAX + 1);
    s[TAG_DIR] = ((const struct nanobpf_quic_cid *)key)->dir;
}

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
        keytable_slot_of = ebpf_alloc_shared((size_t)KEYTABLE_SLOTS * sizeof *keytable_slot_of);
        if (!m->storage || !keytable_slot_of) {
            ebpf_free_shared(m->storage);
            ebpf_free_shared(keytable_slot_of);
            m->storage = NULL;
            keytable_slot_of = NULL;
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

/* The packet-number map: the key table's companion, one state (struct nanobpf_quic_pn_state) per key
 * table hash slot. An entry never moves while it exists, so a program holding a key table value finds
 * its state with a load (ebpf_keytable_pn: value place -> slot -> state) instead of hashing and probing
 * the connection ID a second time. Keyed like the key table for every other user (the host's map
 * messages, xdp_quic's lookups): a key has a state exactly while it has a key table entry, all zero
 * from the insert that gave it its slot (a fresh entry's packet numbers start anew), kept when its keys
 * change (KEY_UPDATE), unreachable once it is deleted. Each core's program claims packet numbers in it
 * with atomics. Owned by the device, so that a program swap does not hand out a sealed packet number
 * again. It holds the key table bound while it is. */
static struct ebpf_map pn_map;
static uint32_t pn_refs;
static int map_create(struct ebpf_map *m, struct ebpf_error *err);

static struct ebpf_map *pn_bind(struct ebpf_error *err) {
    if (pn_refs == 0) {
        if (!keytable_bind(err)) return NULL;
        struct ebpf_map *m = &pn_map;
        memset(m, 0, sizeof *m);
        m->type = NANOBPF_MAP_TYPE_HASH;
        m->key_size = NANOBPF_QUIC_CID_SIZE;
        m->value_size = m->value_stride = NANOBPF_QUIC_PN_STATE_SIZE;
        m->max_entries = NANOBPF_KEYTABLE_ENTRIES;
        memcpy(m->name, NANOBPF_KEYTABLE_PN_MAP_NAME, sizeof NANOBPF_KEYTABLE_PN_MAP_NAME);
        m->n_cpus = 1;
        m->n_slots = KEYTABLE_SLOTS;
        m->storage = ebpf_alloc_shared((size_t)KEYTABLE_SLOTS * NANOBPF_QUIC_PN_STATE_SIZE);
        if (!m->storage) {
            ebpf_device_map_unbind(&keytable);
            ebpf_fail(err, -1, "map %s: out of shared memory for its states", m->name);
            return NULL;
        }
        /* the states of the entries the key table already has start at zero, as a fresh entry's */
        memset(m->storage, 0, (size_t)KEYTABLE_SLOTS * NANOBPF_QUIC_PN_STATE_SIZE);
    }
    pn_refs++;
    return &pn_map;
}
_Static_assert(NANOBPF_QUIC_PN_STATE_SIZE % 8 == 0, "packet-number states are packed at their size");

static uint8_t *pn_state(uint32_t slot) { return pn_map.storage + (size_t)slot * NANOBPF_QUIC_PN_STATE_SIZE; }

/* The packet-number state of hash slot slot_i (one whose entry the caller found there:
 * ebpf_keytable_at), or NULL without the map: no load at all. */
void *ebpf_keytable_pn_at(uint32_t slot_i) {
    return pn_map.storage && slot_i < KEYTABLE_SLOTS ? pn_state(slot_i) : NULL;
}

/* A key table value (as a lookup returned it) -> its entry's packet-number state; NULL without the map
 * or for a pointer that is not the start of a value place. A multiply for the place (ebpf_keytable_place)
 * and one load of shared memory: the path of every packet of xdp_quic_hw. */
void *ebpf_keytable_pn(const void *keys) {
    int32_t place = ebpf_keytable_place((uintptr_t)keys - (uintptr_t)keytable.values);
    if (!pn_map.storage || !keytable.values || place < 0) return NULL;
    /* a plain load: the lookup that returned keys read the place with an acquire, and the place's slot
     * was written before the place was published */
    return pn_state(((volatile const uint16_t *)keytable_slot_of)[place]);
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
        ebpf_free_shared(keytable_slot_of);
        keytable_slot_of = NULL;
        memset(m, 0, sizeof *m);
    } else if (m == &pn_map && pn_refs && --pn_refs == 0) {
        ebpf_free_shared(m->storage);
        memset(m, 0, sizeof *m);
        ebpf_device_map_unbind(&keytable);
    }
}

int ebpf_map_is_device(const struct ebpf_map *m) { return m == &keytable || m == &pn_map; }
int ebpf_map_is_keytable(const struct ebpf_map *m) { return m == &keytable; }
int ebpf_map_is_keytable_pn(const struct ebpf_map *m) { return m == &pn_map; }

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

/* Word i of an n-byte key, little-endian, zero past its end. Keys come from anywhere the program
 * points (its stack, a map value: no alignment promised); the last word is read byte by byte so that
 * nothing past the key is touched. */
static uint64_t key_word(const uint8_t *k, uint32_t i, uint32_t n) {
    const uint8_t *p = k + 8 * i;
    uint32_t left = n - 8 * i;
    if (left >= 8 && !((uintptr_t)p & 7)) return *(const uint64_t *)(const void *)p;
    uint64_t w = 0;
    for (uint32_t b = 0; b < 8 && b < left; b++) w |= (uint64_t)p[b] << (8 * b);
    return w;
}

/* A word at a time (a byte-wise FNV-1a of a 24-byte QUIC key was 150 cycles a lookup); the shift folds
 * each product's high bits down, where the slot mask takes them. */
static inline uint64_t hash_seed(uint32_t n) { return 0x6a09e667f3bcc909ull ^ n; }
static inline uint64_t hash_step(uint64_t h, uint64_t word) {
    h = (h ^ word) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}
static uint32_t hash_key(const uint8_t *k, uint32_t n) {
    uint64_t h = hash_seed(n);
    for (uint32_t i = 0; 8 * i < n; i++) h = hash_step(h, key_word(k, i, n));
    return (uint32_t)h;
}

/* A 4-byte array index from a key anywhere: inline (a memcpy of 4 bytes of unknown alignment is a call
 * to picolibc's memmove on this target, 40 cycles of a per-CPU counter's lookup). */
static uint32_t key_index(const void *key) {
    const uint8_t *p = key;
    if (!((uintptr_t)p & 3)) return *(const uint32_t *)(const void *)p;
    return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int ebpf_map_create(struct ebpf_map *m, struct ebpf_error *err) {
    if (ebpf_device_map_named(m->name))
        return ebpf_fail(err, -1, "map %s: a device map is bound (ebpf_device_map_bind), not created", m->name);
    return map_create(m, err);
}

static int event_map_create(struct ebpf_map *m, struct ebpf_error *err);

static int map_create(struct ebpf_map *m, struct ebpf_error *err) {
    m->count = 0;
    m->lock = 0;
    m->hand = 0;
    m->pinned_refs = 0;
    m->n_cpus = ebpf_map_is_percpu(m) ? ebpf_num_cpus() : 1;
    m->external = 0;
    m->values = NULL;
    if (m->flags) return ebpf_fail(err, -1, "map %s: flags 0x%x not supported", m->name, m->flags);
    if (ebpf_map_is_event(m)) return event_map_create(m, err);
    if (m->value_size == 0 || m->value_size > 65536 || m->max_entries == 0 || m->max_entries > (1u << 20))
        return ebpf_fail(err, -1, "map %s: value size %u / entries %u out of range", m->name, m->value_size, m->max_entries);
    if (m->spin_lock_off && ((m->type != NANOBPF_MAP_TYPE_HASH && m->type != NANOBPF_MAP_TYPE_ARRAY) ||
                             (m->spin_lock_off - 1) % 4 || m->spin_lock_off - 1 + NANOBPF_SPIN_LOCK_SIZE > m->value_size))
        return ebpf_fail(err, -1, "map %s: a bpf_spin_lock at offset %u of a %u-byte value of type %u (HASH or ARRAY, "
                         "4-aligned, inside the value)", m->name, m->spin_lock_off - 1, m->value_size, m->type);
    if (m->type == NANOBPF_MAP_TYPE_PROG_ARRAY && (m->key_size != 4 || m->value_size != 4))
        return ebpf_fail(err, -1, "map %s: a prog array has a 4-byte key and a 4-byte value (a program index), not %u "
                         "and %u", m->name, m->key_size, m->value_size);
    if (is_devmap(m) && (m->key_size != 4 || (m->value_size != 4 && m->value_size != 8)))
        return ebpf_fail(err, -1, "map %s: a devmap has a 4-byte key and a 4-byte (ifindex) or 8-byte (struct "
                         "bpf_devmap_val) value, not %u and %u", m->name, m->key_size, m->value_size);
    m->value_stride = round8(m->value_size);
    size_t bytes;
    if (is_hash(m)) {
        if (m->key_size == 0 || m->key_size > 512) return ebpf_fail(err, -1, "map %s: key size %u out of range", m->name, m->key_size);
        m->n_slots = 1;
        while (m->n_slots < 2 * m->max_entries) m->n_slots <<= 1;
        bytes = (size_t)m->n_slots * slot_size(m);
    } else if (m->type == NANOBPF_MAP_TYPE_ARRAY || m->type == NANOBPF_MAP_TYPE_PERCPU_ARRAY || m->type == NANOBPF_MAP_TYPE_DEVMAP ||
               m->type == NANOBPF_MAP_TYPE_PROG_ARRAY) {
        if (m->key_size != 4) return ebpf_fail(err, -1, "map %s: array key size must be 4, not %u", m->name, m->key_size);
        m->n_slots = m->max_entries;
        bytes = (size_t)m->n_slots * m->value_stride * m->n_cpus;
    } else {
        return ebpf_fail(err, -1, "map %s: type %u not supported (hash, array, per-CPU and LRU hash, per-CPU array, "
                         "devmap, devmap_hash, ringbuf, perf_event_array)", m->name, m->type);
    }
    /* Per-CPU arrays: each core its own values, in cached memory (no other core writes them). Everything
     * else is shared between cores, per-CPU hash values too: a new entry zeroes every core's copy. */
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

/* ---- Pinned maps: one per name, shared by the programs that declare it (control core only) ---- */
static struct ebpf_map *pinned[NANOBPF_IMAGE_MAX_MAPS];

struct ebpf_map *ebpf_pinned_map_bind(const struct ebpf_map *decl, struct ebpf_error *err) {
    struct ebpf_map **free_place = NULL;
    for (uint32_t k = 0; k < NANOBPF_IMAGE_MAX_MAPS; k++) {
        struct ebpf_map *m = pinned[k];
        if (!m) {
            if (!free_place) free_place = &pinned[k];
            continue;
        }
        if (strcmp(m->name, decl->name)) continue;
        /* libbpf reuses a pinned map only if the declaration matches it */
        if (m->type != decl->type || m->key_size != decl->key_size || m->value_size != decl->value_size ||
            m->max_entries != decl->max_entries || m->flags != decl->flags || m->spin_lock_off != decl->spin_lock_off) {
            ebpf_fail(err, -1, "map %s: pinned with type %u, key %u, value %u, %u entries; this program declares "
                      "type %u, key %u, value %u, %u entries", m->name, m->type, m->key_size, m->value_size,
                      m->max_entries, decl->type, decl->key_size, decl->value_size, decl->max_entries);
            return NULL;
        }
        m->pinned_refs++;
        return m;
    }
    if (!free_place) {
        ebpf_fail(err, -1, "map %s: %u maps are pinned already", decl->name, NANOBPF_IMAGE_MAX_MAPS);
        return NULL;
    }
    struct ebpf_map *m = ebpf_alloc(sizeof *m);
    if (!m) {
        ebpf_fail(err, -1, "map %s: out of memory", decl->name);
        return NULL;
    }
    *m = *decl;
    if (ebpf_map_create(m, err)) {
        ebpf_free(m);
        return NULL;
    }
    m->pinned_refs = 1;
    *free_place = m;
    return m;
}

void ebpf_map_release(struct ebpf_map *m) {
    if (ebpf_map_is_device(m)) {
        ebpf_device_map_unbind(m);
        return;
    }
    if (m->pinned_refs && --m->pinned_refs) return; /* another program still holds it */
    for (uint32_t k = 0; k < NANOBPF_IMAGE_MAX_MAPS; k++)
        if (pinned[k] == m) pinned[k] = NULL;
    ebpf_map_destroy(m);
    ebpf_free(m);
}

int ebpf_map_is_prog_readonly(const struct ebpf_map *m) {
    return ebpf_map_is_keytable(m) || is_devmap(m) || m->type == NANOBPF_MAP_TYPE_PROG_ARRAY;
}

static int64_t hash_find(const struct ebpf_map *m, const void *key, int *found);

/* ---- LRU: when the map is full, an insert evicts the least recently used of a sample of entries ----
 * Each entry keeps when it was last looked up or written (the slot header's bytes 4..7, in units of
 * 16 cycles; cores' cycle counters run from the same reset). Eviction compares ages, now - stamp, so
 * the wrap of the 32-bit stamp (about 23 minutes at 50 MHz) only makes an entry idle longer than that
 * look young. Maps of up to LRU_SAMPLE entries are exact LRU. */
#define LRU_SAMPLE 32
static uint32_t lru_now(void) { return (uint32_t)(ebpf_cycles() >> 4); }
static void lru_touch(const struct ebpf_map *m, uint32_t i) {
    uint32_t now = lru_now();
    if (*value_index(m, i) != now) __atomic_store_n(value_index(m, i), now, __ATOMIC_RELAXED);
}
static int lru_evict(struct ebpf_map *m) { /* under the map's lock */
    uint32_t now = lru_now(), mask = m->n_slots - 1, seen = 0, oldest_age = 0;
    int64_t victim = -1;
    for (uint32_t step = 0; step < m->n_slots && seen < LRU_SAMPLE; step++) {
        uint32_t i = (m->hand + step) & mask;
        if (slot(m, i)[0] != SLOT_USED) continue;
        uint32_t age = now - __atomic_load_n(value_index(m, i), __ATOMIC_RELAXED);
        if (victim < 0 || age > oldest_age) victim = i, oldest_age = age;
        seen++;
    }
    if (victim < 0) return -1;
    m->hand = ((uint32_t)victim + 1) & mask;
    __atomic_store_n(&slot(m, (uint32_t)victim)[0], SLOT_DELETED, __ATOMIC_RELEASE);
    __atomic_fetch_sub(&m->count, 1, __ATOMIC_RELAXED);
    return 0;
}

/* Full: an LRU map evicts an entry and finds the key's place again (under the lock); others cannot. */
static int lru_make_room(struct ebpf_map *m, const void *key, int64_t *i) {
    int found;
    if (!is_lru(m) || lru_evict(m)) return 0;
    *i = hash_find(m, key, &found);
    return *i >= 0;
}

/* A PROG_ARRAY element: the program index (the value the host sees), then in the stride's padding a word
 * that says it is set (published after the index, cleared to empty it). */
static uint32_t *prog_array_set(const uint8_t *v) { return (uint32_t *)(void *)(v + 4); }

/* A DEVMAP entry names one of the device's ports (struct bpf_devmap_val: ifindex, then a program to run
 * on redirect, which the device does not have: fd 0 or below), or none. */
static int devmap_value_ok(const struct ebpf_map *m, const void *value) {
    uint32_t ifindex;
    int32_t fd = 0;
    memcpy(&ifindex, value, 4);
    if (m->value_size == 8) memcpy(&fd, (const uint8_t *)value + 4, 4);
    /* Linux: ifindex 0 empties a DEVMAP element; a DEVMAP_HASH entry must name a device */
    int empty = ifindex == 0 && m->type == NANOBPF_MAP_TYPE_DEVMAP;
    return (empty || ifindex == NANOBPF_IFINDEX_HOST || ifindex == NANOBPF_IFINDEX_NET) && fd <= 0;
}

/* A value written over an element: everything but its bpf_spin_lock, which whoever holds it owns (Linux
 * copy_map_value); a new element's lock starts free. */
static void copy_value(const struct ebpf_map *m, uint8_t *dst, const void *src, int fresh) {
    if (!m->spin_lock_off) {
        memcpy(dst, src, m->value_size);
        return;
    }
    uint32_t o = m->spin_lock_off - 1, end = o + NANOBPF_SPIN_LOCK_SIZE;
    memcpy(dst, src, o);
    memcpy(dst + end, (const uint8_t *)src + end, m->value_size - end);
    if (fresh) memset(dst + o, 0, NANOBPF_SPIN_LOCK_SIZE);
}

/* ---- Finding a key: hashed and compared a word at a time ----
 * A slot's key is 8-byte aligned and padded to 8 bytes; the slots are in uncached shared memory, where
 * every load is a bus transaction: a 24-byte QUIC key table key is 3 loads, not 24. hash_search picks
 * the way: a key of up to 8 bytes as one word (hash_probe_short), an 8-byte aligned key of whole words
 * read in place (hash_probe_words: the QUIC programs align theirs), an unaligned one copied first
 * (hash_probe_copy, up to KEY_COPY bytes), the rest with its last word read byte by byte. The common
 * ways need no stack frame:
 * every store is a bus write (the D-cache writes through), and a frame of saved registers was 13 of
 * them a lookup. */
#define PROBE_FREE (1ll << 40) /* hash_probe: not found, the low 32 bits name the first free slot */

/* The slot holding key k (n bytes); PROBE_FREE | the slot where it would go when absent; -1 when absent
 * and the table is full. */
static int64_t hash_probe(const struct ebpf_map *m, const uint8_t *k, uint32_t n) {
    uint32_t words = (n + 7) / 8;
    uint32_t mask = m->n_slots - 1, i = hash_key(k, n) & mask, size = slot_size(m);
    int64_t first_free = -1;
    for (uint32_t probe = 0; probe < m->n_slots; probe++, i = (i + 1) & mask) {
        const uint8_t *s = m->storage + (size_t)i * size;
        uint8_t state = s[0];
        if (state == SLOT_USED) {
            const uint64_t *a = (const uint64_t *)(const void *)(s + 8);
            uint32_t w = 0;
            for (; w < words; w++) {
                uint64_t x = a[w];
                if (8 * w + 8 > n) x &= (1ull << (8 * (n & 7))) - 1; /* little-endian: the key's bytes are the low ones */
                if (x != key_word(k, w, n)) break;
            }
            if (w == words) return i;
            continue;
        }
        if (first_free < 0) first_free = PROBE_FREE | i;
        if (state == SLOT_FREE) break;
    }
    return first_free;
}

/* hash_probe for an 8-byte aligned key of whole words (the QUIC key table's and packet-number map's
 * 24 bytes): no partial word, few live values, so no callee-saved register is spilled (10 stores a
 * lookup with the general loop). */
static int64_t hash_probe_words(const struct ebpf_map *m, const uint64_t *k, uint32_t n) {
    uint32_t words = n / 8;
    uint64_t h = hash_seed(n); /* hash_key, the words read in place */
    for (uint32_t w = 0; w < words; w++) h = hash_step(h, k[w]);
    uint32_t mask = m->n_slots - 1, i = (uint32_t)h & mask, size = slot_size(m);
    int64_t first_free = -1;
    for (uint32_t probe = 0; probe <= mask; probe++, i = (i + 1) & mask) {
        const uint8_t *s = m->storage + (size_t)i * size;
        uint8_t state = s[0];
        if (state == SLOT_USED) {
            const uint64_t *a = (const uint64_t *)(const void *)(s + 8);
            uint32_t w = 0;
            while (w < words && a[w] == k[w]) w++;
            if (w == words) return i;
            continue;
        }
        if (first_free < 0) first_free = PROBE_FREE | i;
        if (state == SLOT_FREE) break;
    }
    return first_free;
}

/* hash_probe for a key of at most 8 bytes, given as one word (zero above its n bytes): a port, an
 * address, an index. */
static int64_t hash_probe_short(const struct ebpf_map *m, uint64_t k, uint32_t n) {
    uint64_t h = hash_step(hash_seed(n), k); /* hash_key of one word */
    uint64_t keep = n >= 8 ? ~0ull : (1ull << (8 * n)) - 1;
    uint32_t mask = m->n_slots - 1, i = (uint32_t)h & mask, size = slot_size(m);
    int64_t first_free = -1;
    for (uint32_t probe = 0; probe <= mask; probe++, i = (i + 1) & mask) {
        const uint8_t *s = m->storage + (size_t)i * size;
        uint8_t state = s[0];
        if (state == SLOT_USED) {
            if ((*(const uint64_t *)(const void *)(s + 8) & keep) == k) return i;
            continue;
        }
        if (first_free < 0) first_free = PROBE_FREE | i;
        if (state == SLOT_FREE) break;
    }
    return first_free;
}

#define KEY_COPY 64 /* an unaligned key of 9 to this many bytes is copied once to be read by words */
static __attribute__((noinline)) int64_t hash_probe_copy(const struct ebpf_map *m, const void *key) {
    uint64_t copy[KEY_COPY / 8];
    memcpy(copy, key, m->key_size);
    return hash_probe(m, (const uint8_t *)copy, m->key_size);
}

static int64_t hash_search(const struct ebpf_map *m, const void *key) {
    uint32_t n = m->key_size;
    if (n <= 8) return hash_probe_short(m, key_word(key, 0, n), n);
    if (!((uintptr_t)key & 7) && !(n & 7)) return hash_probe_words(m, key, n);
    if (((uintptr_t)key & 7) && n <= KEY_COPY) return hash_probe_copy(m, key);
    return hash_probe(m, key, n);
}

/* Index of the slot holding key, or of the slot where it would go (-1: table full). */
static int64_t hash_find(const struct ebpf_map *m, const void *key, int *found) {
    int64_t r = hash_search(m, key);
    *found = r >= 0 && !(r & PROBE_FREE);
    return r < 0 ? r : (int64_t)(uint32_t)r;
}

/* The value of key on core cpu: an array element, or a hash entry's (NULL when absent; event maps have none). */
static void *pn_lookup(const void *key);
static uint8_t *value_of(struct ebpf_map *m, const void *key, uint32_t cpu, int touch) {
    if (ebpf_map_is_event(m)) return NULL;
    if (m == &pn_map) return pn_lookup(key);
    if (is_hash(m)) {
        int found;
        int64_t i = hash_find(m, key, &found);
        if (!found) return NULL;
        if (touch && is_lru(m)) lru_touch(m, (uint32_t)i);
        return hash_value(m, (uint32_t)i) + (size_t)cpu * m->value_stride;
    }
    uint32_t idx = key_index(key);
    if (idx >= m->max_entries) return NULL;
    uint8_t *v = m->storage + ((size_t)cpu * m->n_slots + idx) * m->value_stride;
    if (m->type == NANOBPF_MAP_TYPE_DEVMAP && !__atomic_load_n((uint32_t *)(void *)v, __ATOMIC_ACQUIRE))
        return NULL; /* ifindex 0: no entry */
    if (m->type == NANOBPF_MAP_TYPE_PROG_ARRAY && !__atomic_load_n(prog_array_set(v), __ATOMIC_ACQUIRE))
        return NULL; /* empty */
    return v;
}

int ebpf_prog_array_get(struct ebpf_map *m, uint64_t index, uint32_t *prog_index) {
    if (index >= m->max_entries) return -1;
    const uint8_t *v = m->storage + (size_t)index * m->value_stride;
    if (!__atomic_load_n(prog_array_set(v), __ATOMIC_ACQUIRE)) return -1;
    memcpy(prog_index, v, 4);
    return 0;
}

/* The common hash (the key table among them): one search, no copy per CPU, no LRU stamp. */
static __attribute__((noinline)) void *hash_lookup(const struct ebpf_map *m, const void *key) {
    int64_t r = hash_search(m, key);
    return r < 0 || (r & PROBE_FREE) ? NULL : hash_value(m, (uint32_t)r);
}
static __attribute__((noinline)) void *lookup_this_cpu(struct ebpf_map *m, const void *key) {
    return value_of(m, key, this_cpu(m), 1);
}
/* The packet-number map by key: its key table entry's slot (pn_bind). */
static __attribute__((noinline)) void *pn_lookup(const void *key) {
    int64_t r = hash_search(&keytable, key);
    return r < 0 || (r & PROBE_FREE) ? NULL : pn_state((uint32_t)r);
}
static int pn_update(const void *key, const void *value, uint64_t flags) {
    if (flags > NANOBPF_BPF_EXIST) return -EINVAL;
    uint8_t *v = pn_lookup(key);
    if (!v) return -ENOENT; /* no key table entry: no state to hold */
    if (flags == NANOBPF_BPF_NOEXIST) return -EEXIST;
    memcpy(v, value, NANOBPF_QUIC_PN_STATE_SIZE);
    return 0;
}
static int pn_delete(const void *key) { /* back to a fresh entry's state */
    uint8_t *v = pn_lookup(key);
    if (!v) return -ENOENT;
    memset(v, 0, NANOBPF_QUIC_PN_STATE_SIZE);
    return 0;
}

/* The key table entry of key when PISA's CID table named its slot (the packet's context field conn):
 * that slot alone is read, no hash worked out. The slot is only a hint - the entry may have been
 * replaced while the packet waited, or conn may name another direction's entry - so its key is
 * compared whole, and anything else takes the hash search: the result is always the lookup's. */
void *ebpf_keytable_lookup_at(const void *key, uint32_t slot_hint) {
    void *v = ebpf_keytable_at(key, slot_hint);
    return v ? v : hash_lookup(&keytable, key);
}
/* That slot's value when the slot holds key (8-byte aligned), else NULL: no search. The slot is in
 * uncached shared memory, every load a bus transaction: the key's three words, then the state and the
 * value's place in one word (the acquire load hash_value makes of the place). */
void *ebpf_keytable_at(const void *key, uint32_t slot_i) {
    if (slot_i >= KEYTABLE_SLOTS || ((uintptr_t)key & 7) || !keytable.values) return NULL;
    const uint8_t *s = keytable.storage + (size_t)slot_i * KEYTABLE_SLOT_SIZE;
    const uint64_t *a = (const uint64_t *)(const void *)(s + 8), *k = key;
    _Static_assert(NANOBPF_QUIC_CID_SIZE == 24, "three key words");
    if (a[0] != k[0] || a[1] != k[1] || a[2] != k[2]) return NULL;
    _Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the state in the header word's low byte, the place in its high half");
    uint64_t h = __atomic_load_n((const uint64_t *)(const void *)s, __ATOMIC_ACQUIRE);
    if ((uint8_t)h != SLOT_USED) return NULL;
    return keytable.values + (size_t)(uint32_t)(h >> 32) * NANOBPF_QUIC_KEYS_SIZE;
}

uint32_t ebpf_keytable_conn_of(const void *key) {
    int64_t r = keytable.values ? hash_search(&keytable, key) : -1;
    if (r < 0 || (r & PROBE_FREE)) return 0;
    return 1 + ((uint32_t)r | (uint32_t)slot(&keytable, (uint32_t)r)[TAG_GEN] << NANOBPF_KEYTABLE_SLOT_BITS);
}
/* The header word holds the state, the generation and the direction in its low bytes (TAG_*). */
void *ebpf_keytable_by_conn(uint32_t conn, uint32_t dir) {
    uint32_t tag = conn - 1, i = tag & (KEYTABLE_SLOTS - 1);
    if (!conn || tag >> NANOBPF_KEYTABLE_CONN_BITS || !keytable.values) return NULL;
    const uint8_t *s = keytable.storage + (size_t)i * KEYTABLE_SLOT_SIZE;
    /* Relaxed, not acquire (whose fence cost about 9 cycles a packet on the device): every read of
     * the value goes through the place this load returned, an address dependency, which keeps the
     * value's loads after it (RISC-V's memory model, preserved program order: an address dependency
     * orders the loads; TSO orders all loads on the host). The control plane writes a value before
     * the header that names its place. The packet-number state is not read through it, but a claim is
     * decided by the atomic operation on the claim word itself, never by an earlier load. */
    uint64_t h = __atomic_load_n((const uint64_t *)(const void *)s, __ATOMIC_RELAXED);
    uint64_t want = SLOT_USED | (uint64_t)(tag >> NANOBPF_KEYTABLE_SLOT_BITS) << 8 * TAG_GEN | (uint64_t)(dir & 0xff) << 8 * TAG_DIR;
    if ((h & 0xffffff) != want) return NULL;
    return keytable.values + (size_t)(uint32_t)(h >> 32) * NANOBPF_QUIC_KEYS_SIZE;
}

/* Tail calls only: a lookup saves no register of the caller's here (every store is a bus write). */
void *ebpf_map_lookup(struct ebpf_map *m, const void *key) {
    if (m->type != NANOBPF_MAP_TYPE_HASH) return lookup_this_cpu(m, key);
    return m == &pn_map ? pn_lookup(key) : hash_lookup(m, key);
}

void *ebpf_map_value(struct ebpf_map *m, const void *key, uint32_t cpu) {
    return cpu < m->n_cpus ? value_of(m, key, cpu, 0) : NULL;
}

int ebpf_map_update(struct ebpf_map *m, const void *key, const void *value, uint64_t flags) {
    if (m == &pn_map) return pn_update(key, value, flags);
    if (flags > NANOBPF_BPF_EXIST || ebpf_map_is_event(m)) return -EINVAL;
    if (is_devmap(m) && !devmap_value_ok(m, value)) return -EINVAL;
    if (!is_hash(m)) {
        if (flags == NANOBPF_BPF_NOEXIST) return -EEXIST; /* array elements always exist (Linux: devmaps too) */
        uint32_t idx = key_index(key);
        if (idx >= m->max_entries) return -E2BIG;
        uint8_t *v = m->storage + ((size_t)this_cpu(m) * m->n_slots + idx) * m->value_stride;
        if (m->type == NANOBPF_MAP_TYPE_PROG_ARRAY) { /* a program of the image that holds the map */
            uint32_t prog;
            memcpy(&prog, value, 4);
            if (prog >= m->n_progs) return -EINVAL;
            __atomic_store_n(prog_array_set(v), 0u, __ATOMIC_RELAXED);
            memcpy(v, &prog, 4);
            __atomic_store_n(prog_array_set(v), 1u, __ATOMIC_RELEASE);
            return 0;
        }
        if (m->type == NANOBPF_MAP_TYPE_DEVMAP) { /* published by its ifindex, which is never 0 */
            uint32_t ifindex;
            memset(v + 4, 0, m->value_size - 4); /* the program id: none */
            memcpy(&ifindex, value, 4);
            __atomic_store_n((uint32_t *)(void *)v, ifindex, __ATOMIC_RELEASE);
            return 0;
        }
        copy_value(m, v, value, 0);
        return 0;
    }
    int found, rc = 0;
    hash_lock(m);
    int64_t i = hash_find(m, key, &found);
    if (found && flags == NANOBPF_BPF_NOEXIST) rc = -EEXIST;
    else if (!found && flags == NANOBPF_BPF_EXIST) rc = -ENOENT;
    else if (!found && (hash_count(m) >= m->max_entries || i < 0) && !lru_make_room(m, key, &i))
        rc = -E2BIG;
    else {
        uint8_t *s = slot(m, (uint32_t)i);
        uint32_t old = found && m->values ? *value_index(m, (uint32_t)i) : UINT32_MAX;
        if (m->values) { /* the key table: the new value in a place of its own, then its index */
            uint32_t place = keytable_place();
            memcpy(m->values + (size_t)place * m->value_stride, value, m->value_size);
            keytable_slot_of[place] = (uint16_t)i;
            /* a new entry's packet numbers start anew (its slot may have held another's) */
            if (!found && pn_map.storage) memset(pn_state((uint32_t)i), 0, NANOBPF_QUIC_PN_STATE_SIZE);
            __atomic_store_n(value_index(m, (uint32_t)i), place, __ATOMIC_RELEASE);
        } else {
            uint8_t *v = hash_value(m, (uint32_t)i);
            if (!found && m->n_cpus > 1) memset(v, 0, (size_t)m->value_stride * m->n_cpus); /* the other cores' copies */
            copy_value(m, v + (size_t)this_cpu(m) * m->value_stride, value, !found);
            if (m->type == NANOBPF_MAP_TYPE_DEVMAP_HASH) memset(v + 4, 0, m->value_size - 4);
        }
        if (is_lru(m)) lru_touch(m, (uint32_t)i);
        if (!found) {
            memcpy(s + 8, key, m->key_size);
            if (m->values) keytable_new_tag(s, key);
            __atomic_store_n(&s[0], SLOT_USED, __ATOMIC_RELEASE); /* key, value and tag before the state */
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
    if (m == &pn_map) return pn_delete(key);
    if (m->type == NANOBPF_MAP_TYPE_DEVMAP) { /* Linux: the element becomes empty, whether it was or not */
        uint32_t idx = key_index(key);
        if (idx >= m->max_entries) return -EINVAL;
        __atomic_store_n((uint32_t *)(void *)(m->storage + (size_t)idx * m->value_stride), 0u, __ATOMIC_RELEASE);
        return 0;
    }
    if (m->type == NANOBPF_MAP_TYPE_PROG_ARRAY) { /* Linux: -ENOENT when it was empty */
        uint32_t idx = key_index(key);
        if (idx >= m->max_entries) return -EINVAL;
        return __atomic_exchange_n(prog_array_set(m->storage + (size_t)idx * m->value_stride), 0u, __ATOMIC_RELEASE)
                   ? 0 : -ENOENT;
    }
    if (!is_hash(m)) return -EINVAL;
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
    if (m == &pn_map) m = &keytable; /* its states are the key table's slots */
    if (!is_hash(m)) return -1;
    int64_t r = hash_search(m, key);
    return r < 0 || (r & PROBE_FREE) ? -1 : r;
}

/* Linux BPF_MAP_GET_NEXT_KEY: the key after key (NULL or absent: the first), in slot order; -ENOENT after the last. */
int ebpf_map_get_next_key(struct ebpf_map *m, const void *key, void *next) {
    if (ebpf_map_is_event(m)) return -ENOENT;
    if (m == &pn_map) m = &keytable; /* a state per key table entry */
    if (!is_hash(m)) {
        uint32_t idx = 0;
        if (key) {
            idx = key_index(key);
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

/* ---- Event maps: RINGBUF and PERF_EVENT_ARRAY ----
 * The storage (shared memory) is a header, then the ring. A record is NANOBPF_EVENT_REC_HDR bytes
 * (length, index) and its data padded to 8, at head modulo the ring's size (a power of two, so the
 * 32-bit byte counts wrap with it); a header never straddles the end, data may. Cores append under the
 * ring's lock (a record claims its bytes and publishes them whole: the reader sees a record only once
 * head moved past it). One core reads (the control core) and moves tail without the lock: a writer that
 * reads tail while the reader is busy sees the ring fuller than it is, never emptier. Every field of
 * the header is touched by atomic operations only (the storage is uncached on the device; a core must
 * never keep a stale copy). A record that does not fit is dropped and counted (lost).
 * bpf_ringbuf_reserve claims a record whose data must be contiguous (the program writes it through a
 * pointer): where it would wrap, a discarded filler takes the ring's end first. Its header's length
 * carries REC_BUSY until bpf_ringbuf_submit clears it (REC_DISCARD with bpf_ringbuf_discard): the reader
 * stops at a busy record, and skips discarded ones and fillers. */
#define REC_BUSY 0x80000000u
#define REC_DISCARD 0x40000000u
#define REC_LEN 0x0000ffffu
struct event_ring {
    uint32_t head;    /* bytes ever appended */
    uint32_t tail;    /* bytes ever consumed */
    uint32_t lock;    /* held by a writer (atomic swap) */
    uint32_t lost;    /* records dropped since the reader last took the count */
    uint32_t records; /* records waiting */
};
#define EVENT_RING_HDR 64 /* the header's place, so that the ring starts 8-byte aligned */
_Static_assert(sizeof(struct event_ring) <= EVENT_RING_HDR, "the ring header fits its place");
_Static_assert(NANOBPF_EVENT_REC_HDR == 8 && NANOBPF_EVENT_MAX <= REC_LEN && NANOBPF_EVENT_RINGBUF_MAX <= REC_LEN + 1,
               "a record header is a u32 length (and flags) and a u32 index");

static struct event_ring *ring_of(const struct ebpf_map *m) { return (struct event_ring *)(void *)m->storage; }
static uint8_t *ring_bytes(const struct ebpf_map *m) { return m->storage + EVENT_RING_HDR; }

/* RINGBUF: key and value 0, max_entries the ring's bytes (Linux: a power of two, a page at least; the
 * device's shared memory caps it). PERF_EVENT_ARRAY: key and value 4 (Linux's perf event fd), max_entries
 * the indexes a program may name, 0 meaning one per core (libbpf sets the number of CPUs); its ring has
 * NANOBPF_EVENT_PERF_RING bytes, one ring for the whole map (the host drains it with one message). */
static int event_map_create(struct ebpf_map *m, struct ebpf_error *err) {
    if (m->type == NANOBPF_MAP_TYPE_RINGBUF) {
        uint32_t n = m->max_entries;
        if (m->key_size || m->value_size)
            return ebpf_fail(err, -1, "map %s: a ringbuf has key and value size 0, not %u and %u", m->name, m->key_size,
                             m->value_size);
        if (n < NANOBPF_EVENT_RINGBUF_MIN || n > NANOBPF_EVENT_RINGBUF_MAX || (n & (n - 1)))
            return ebpf_fail(err, -1, "map %s: a ringbuf of %u bytes: a power of two, %u..%u", m->name, n,
                             NANOBPF_EVENT_RINGBUF_MIN, NANOBPF_EVENT_RINGBUF_MAX);
        m->n_slots = n;
    } else {
        if (m->key_size != 4 || m->value_size != 4)
            return ebpf_fail(err, -1, "map %s: a perf event array has a 4-byte key and value, not %u and %u", m->name,
                             m->key_size, m->value_size);
        if (m->max_entries > (1u << 20))
            return ebpf_fail(err, -1, "map %s: %u entries out of range", m->name, m->max_entries);
        m->n_slots = NANOBPF_EVENT_PERF_RING;
    }
    _Static_assert((NANOBPF_EVENT_PERF_RING & (NANOBPF_EVENT_PERF_RING - 1)) == 0, "rings are powers of two");
    m->value_stride = 0;
    size_t bytes = EVENT_RING_HDR + (size_t)m->n_slots;
    m->storage = ebpf_alloc_shared(bytes); /* zeroed: empty */
    if (!m->storage) return ebpf_fail(err, -1, "map %s: out of shared memory for %lu bytes", m->name, (unsigned long)bytes);
    return 0;
}

/* n bytes between src and the ring at byte count pos (wrapping at the end). */
/* (src may be NULL for 0 bytes: bpf_ringbuf_output(&rb, NULL, 0, 0) is allowed) */
static void ring_write(const struct ebpf_map *m, uint32_t pos, const void *src, uint32_t n) {
    uint32_t at = pos & (m->n_slots - 1), first = n < m->n_slots - at ? n : m->n_slots - at;
    if (first) memcpy(ring_bytes(m) + at, src, first);
    if (n - first) memcpy(ring_bytes(m), (const uint8_t *)src + first, n - first);
}
static void ring_read(const struct ebpf_map *m, uint32_t pos, void *dst, uint32_t n) {
    uint32_t at = pos & (m->n_slots - 1), first = n < m->n_slots - at ? n : m->n_slots - at;
    if (first) memcpy(dst, ring_bytes(m) + at, first);
    if (n - first) memcpy((uint8_t *)dst + first, ring_bytes(m), n - first);
}

int ebpf_event_output(struct ebpf_map *m, uint32_t index, const void *a, uint32_t a_len, const void *b, uint32_t b_len) {
    struct event_ring *r = ring_of(m);
    uint64_t len = (uint64_t)a_len + b_len;
    uint32_t need = NANOBPF_EVENT_REC_HDR + (uint32_t)round8(len > NANOBPF_EVENT_MAX ? 0 : (uint32_t)len);
    if (len > NANOBPF_EVENT_MAX) goto drop;
    while (__atomic_exchange_n(&r->lock, 1, __ATOMIC_ACQUIRE)) {
    }
    uint32_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED), tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    if (need > m->n_slots - (head - tail)) {
        (void)__atomic_exchange_n(&r->lock, 0, __ATOMIC_RELEASE);
        goto drop;
    }
    uint32_t hdr[2] = {(uint32_t)len, index};
    uint64_t pad = 0;
    ring_write(m, head, hdr, sizeof hdr);
    ring_write(m, head + NANOBPF_EVENT_REC_HDR, a, a_len);
    ring_write(m, head + NANOBPF_EVENT_REC_HDR + a_len, b, b_len);
    ring_write(m, head + NANOBPF_EVENT_REC_HDR + (uint32_t)len, &pad, (uint32_t)(round8((uint32_t)len) - len)); /* no stale bytes */
    __atomic_fetch_add(&r->records, 1, __ATOMIC_RELAXED);     /* counted before the reader can pop it */
    __atomic_store_n(&r->head, head + need, __ATOMIC_RELEASE); /* the record whole, then its publication */
    (void)__atomic_exchange_n(&r->lock, 0, __ATOMIC_RELEASE);
    return 0;
drop:
    __atomic_fetch_add(&r->lost, 1, __ATOMIC_RELAXED);
    return -1;
}

void *ebpf_event_reserve(struct ebpf_map *m, uint32_t size) {
    struct event_ring *r = ring_of(m);
    uint32_t need = NANOBPF_EVENT_REC_HDR + round8(size);
    if (size > NANOBPF_EVENT_MAX) goto drop;
    while (__atomic_exchange_n(&r->lock, 1, __ATOMIC_ACQUIRE)) {
    }
    uint32_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED), tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    uint32_t at = head & (m->n_slots - 1), fill = at + need > m->n_slots ? m->n_slots - at : 0;
    if (fill + need > m->n_slots - (head - tail)) {
        (void)__atomic_exchange_n(&r->lock, 0, __ATOMIC_RELEASE);
        goto drop;
    }
    if (fill) { /* the ring's end, given up (a header always fits there: records are 8-byte multiples) */
        uint32_t hdr[2] = {REC_DISCARD | (fill - NANOBPF_EVENT_REC_HDR), 0};
        ring_write(m, head, hdr, sizeof hdr);
        __atomic_fetch_add(&r->records, 1, __ATOMIC_RELAXED);
        head += fill;
    }
    uint32_t hdr[2] = {REC_BUSY | size, 0};
    /* right after its header, never wrapped (with the filler, header and data fit before the end; a
     * 0-byte record's data may be the end itself) */
    uint8_t *data = ring_bytes(m) + (head & (m->n_slots - 1)) + NANOBPF_EVENT_REC_HDR;
    ring_write(m, head, hdr, sizeof hdr);
    memset(data, 0, round8(size)); /* none of an earlier record's bytes reach the host */
    __atomic_fetch_add(&r->records, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&r->head, head + need, __ATOMIC_RELEASE);
    (void)__atomic_exchange_n(&r->lock, 0, __ATOMIC_RELEASE);
    return data;
drop:
    __atomic_fetch_add(&r->lost, 1, __ATOMIC_RELAXED);
    return NULL;
}

void ebpf_event_commit(void *data, int discard) {
    uint32_t *len = (uint32_t *)(void *)((uint8_t *)data - NANOBPF_EVENT_REC_HDR);
    uint32_t v = __atomic_load_n(len, __ATOMIC_RELAXED) & REC_LEN;
    __atomic_store_n(len, v | (discard ? REC_DISCARD : 0), __ATOMIC_RELEASE); /* the data written, then this */
}

/* The record at tail: its header, after the discarded ones (fillers, bpf_ringbuf_discard) are freed; -1
 * when there is none, or the oldest is still reserved. Only the reader calls it. */
static int ring_front(struct ebpf_map *m, uint32_t *tail, uint32_t hdr[2]) {
    struct event_ring *r = ring_of(m);
    for (;;) {
        uint32_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
        *tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
        if (head == *tail) return -1;
        hdr[0] = __atomic_load_n((uint32_t *)(void *)(ring_bytes(m) + (*tail & (m->n_slots - 1))), __ATOMIC_ACQUIRE);
        ring_read(m, *tail + 4, &hdr[1], 4);
        if (hdr[0] & REC_BUSY) return -1;
        if (!(hdr[0] & REC_DISCARD)) return 0;
        __atomic_fetch_sub(&r->records, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&r->tail, *tail + NANOBPF_EVENT_REC_HDR + round8(hdr[0] & REC_LEN), __ATOMIC_RELEASE);
    }
}

int ebpf_event_peek(struct ebpf_map *m, void *buf, uint32_t *index) {
    uint32_t tail, hdr[2];
    if (ring_front(m, &tail, hdr)) return -1;
    uint32_t len = hdr[0] & REC_LEN;
    if (len > NANOBPF_EVENT_MAX) len = NANOBPF_EVENT_MAX; /* cannot happen: writers check it */
    ring_read(m, tail + NANOBPF_EVENT_REC_HDR, buf, len);
    *index = hdr[1];
    return (int)len;
}

void ebpf_event_pop(struct ebpf_map *m) {
    struct event_ring *r = ring_of(m);
    uint32_t tail, hdr[2];
    if (ring_front(m, &tail, hdr)) return;
    uint32_t len = hdr[0] & REC_LEN;
    if (len > NANOBPF_EVENT_MAX) len = NANOBPF_EVENT_MAX;
    __atomic_fetch_sub(&r->records, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&r->tail, tail + NANOBPF_EVENT_REC_HDR + round8(len), __ATOMIC_RELEASE); /* read, then freed */
}

uint32_t ebpf_event_take_lost(struct ebpf_map *m) { return __atomic_exchange_n(&ring_of(m)->lost, 0, __ATOMIC_RELAXED); }
uint32_t ebpf_event_pending(struct ebpf_map *m) { return __atomic_fetch_add(&ring_of(m)->records, 0, __ATOMIC_RELAXED); }
