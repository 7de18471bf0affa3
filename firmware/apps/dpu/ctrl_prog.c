/* Programs and maps over the control protocol (PROG_*, MAP_*; the model's _do_prog_* and _do_map).
 *
 * A chunked image is collected in main memory; PROG_COMMIT checks its CRC-32, loads it (its own maps,
 * the device's key table bound), verifies and JIT-compiles it here on core 0 while the data cores keep
 * running the attached program, then publishes it: each data core takes the new program at its next
 * packet (dpu_prog_publish), and the old program's code and maps are freed only once every data core
 * has finished the packet it had (ebpf_quiesce). No packet runs half-installed code, none is lost. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "aead.h"
#include "ctrl.h"
#include "nanobpf.h"

static struct {
    uint8_t *data;  /* NANOBPF_CTRL_MAX_IMAGE bytes while a load is open (NULL: none) */
    uint32_t total, have, crc32;
    char name[NANOBPF_CTRL_NAME_LEN];
} load;

static struct {
    char name[NANOBPF_CTRL_NAME_LEN];
    uint32_t image_len, crc32;
} info; /* of the attached program */

struct ebpf_map *ctrl_prog_map(const struct ebpf_prog *prog, const char *name) {
    for (uint32_t i = 0; i < prog->n_maps; i++)
        if (!strncmp(prog->maps[i]->name, name, NANOBPF_CTRL_NAME_LEN)) return prog->maps[i];
    return NULL;
}

int ctrl_no_map(const struct ebpf_prog *prog, const char *name, struct ctrl_reply *r) {
    char list[200];
    unsigned n = 0;
    list[0] = 0;
    for (uint32_t i = 0; i < prog->n_maps && n < sizeof list; i++)
        n += (unsigned)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", prog->maps[i]->name);
    return ctrl_refuse(r, NANOBPF_CTRL_ST_NO_MAP, "no map '%s' (maps: %s)", name, list);
}

static void load_drop(void) {
    ebpf_free(load.data);
    load.data = NULL;
}

int ctrl_prog_begin(const uint8_t *b, unsigned len, struct ctrl_reply *r) {
    if (len != NANOBPF_PROG_BEGIN_SIZE)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "prog_begin: %u bytes, expected %u", len, NANOBPF_PROG_BEGIN_SIZE);
    uint32_t total = ctrl_be32(b);
    if (total < 1 || total > NANOBPF_CTRL_MAX_IMAGE)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "image of %u bytes: 1..%u", total, NANOBPF_CTRL_MAX_IMAGE);
    load_drop(); /* an unfinished load is replaced */
    if (!(load.data = ebpf_alloc(total))) return ctrl_refuse(r, NANOBPF_CTRL_ST_FULL, "no memory for a %u-byte image", total);
    load.total = total, load.have = 0, load.crc32 = ctrl_be32(b + 4);
    memcpy(load.name, b + 8, sizeof load.name);
    return 0;
}

int ctrl_prog_chunk(const uint8_t *b, unsigned len, struct ctrl_reply *r) {
    if (len < NANOBPF_PROG_CHUNK_SIZE)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "prog_chunk: %u bytes, expected %u", len, NANOBPF_PROG_CHUNK_SIZE);
    uint32_t off = ctrl_be32(b), n = len - NANOBPF_PROG_CHUNK_SIZE;
    if (!load.data) return ctrl_refuse(r, NANOBPF_CTRL_ST_SEQUENCE, "PROG_CHUNK without PROG_BEGIN");
    if (off != load.have || load.have + n > load.total)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_SEQUENCE, "chunk at %u+%u: have %u of %u bytes", off, n, load.have, load.total);
    memcpy(load.data + load.have, b + NANOBPF_PROG_CHUNK_SIZE, n);
    load.have += n;
    return 0;
}

static void put_info(const struct ebpf_prog *prog, struct ctrl_reply *r) {
    memset(r->body, 0, NANOBPF_PROG_INFO_SIZE);
    memcpy(r->body, info.name, sizeof info.name);
    ctrl_put32(r->body + 32, info.image_len);
    ctrl_put32(r->body + 36, info.crc32);
    ctrl_put32(r->body + 40, prog->n_insns);
    ctrl_put16(r->body + 44, prog->n_maps);
    r->len = NANOBPF_PROG_INFO_SIZE;
}

static void attach(struct ebpf_prog *prog) {
    const struct ebpf_prog *old = dpu_prog_current();
    ctrl_keys_sync_config(prog); /* before any packet sees it */
    dpu_prog_publish(prog);      /* returns when no data core still runs the old one */
    if (old) {
        ebpf_prog_free((struct ebpf_prog *)old);
        ebpf_free((void *)old);
    }
}

void ctrl_prog_boot(struct ebpf_prog *prog, const char *name, uint32_t image_len, uint32_t crc32) {
    memset(info.name, 0, sizeof info.name);
    strncpy(info.name, name, sizeof info.name - 1);
    info.image_len = image_len, info.crc32 = crc32;
    attach(prog);
}

int ctrl_prog_commit(const uint8_t *b, unsigned len, struct ctrl_reply *r) {
    if (len != NANOBPF_PROG_BEGIN_SIZE)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "prog_begin: %u bytes, expected %u", len, NANOBPF_PROG_BEGIN_SIZE);
    if (!load.data || ctrl_be32(b) != load.total || ctrl_be32(b + 4) != load.crc32 || memcmp(b + 8, load.name, sizeof load.name))
        return ctrl_refuse(r, NANOBPF_CTRL_ST_SEQUENCE, "PROG_COMMIT does not match PROG_BEGIN");
    if (load.have != load.total) return ctrl_refuse(r, NANOBPF_CTRL_ST_SEQUENCE, "have %u of %u bytes", load.have, load.total);
    uint64_t t0 = nb_cycles();
    if (ebpf_crc32(load.data, load.total) != load.crc32) {
        load_drop();
        return ctrl_refuse(r, NANOBPF_CTRL_ST_SEQUENCE, "image CRC-32 mismatch");
    }
    struct ebpf_prog *prog = ebpf_alloc(sizeof *prog);
    struct ebpf_error err = {-1, ""};
    if (!prog) {
        load_drop();
        return ctrl_refuse(r, NANOBPF_CTRL_ST_FULL, "no memory for a program");
    }
    uint64_t t1 = nb_cycles(), t2 = t1, t3 = t1;
    int rc = ebpf_image_load(load.data, load.total, prog, &err);
    if (!rc) {
        t2 = nb_cycles();
        rc = ebpf_verify(prog, NULL, &err);
        t3 = nb_cycles();
        if (rc) ebpf_prog_free(prog);
    }
    if (rc) {
        ebpf_free(prog);
        load_drop();
        return err.insn >= 0 ? ctrl_refuse(r, NANOBPF_CTRL_ST_VERIFIER, "verifier: insn %d: %s", err.insn, err.msg)
                             : ctrl_refuse(r, NANOBPF_CTRL_ST_VERIFIER, "%s", err.msg);
    }
    if (ebpf_prog_resolve(prog, &err) || ebpf_jit_compile(prog, 0, &err)) {
        ebpf_prog_free(prog);
        ebpf_free(prog);
        load_drop();
        return ctrl_refuse(r, NANOBPF_CTRL_ST_VERIFIER, "compile: insn %d: %s", err.insn, err.msg);
    }
    uint64_t t4 = nb_cycles();
    memcpy(info.name, load.name, sizeof info.name);
    info.name[sizeof info.name - 1] = 0;
    info.image_len = load.total, info.crc32 = load.crc32;
    load_drop();
    attach(prog);
    uint64_t t5 = nb_cycles();
    const struct ebpf_verify_stats *vs = &ebpf_verify_last_stats;
    printf("dpu: PROG_COMMIT %s: %u instructions (%u explored), CRC %llu cycles, load %llu, verify %llu "
           "(static %llu, explore %llu; %u states, %u bytes at peak), JIT %llu (%u bytes), attach %llu; "
           "shared memory %u bytes in use\n",
           info.name, prog->n_insns, vs->processed, (unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1),
           (unsigned long long)(t3 - t2), (unsigned long long)vs->static_cycles, (unsigned long long)vs->explore_cycles,
           vs->states, vs->peak_bytes, (unsigned long long)(t4 - t3), prog->jit_size, (unsigned long long)(t5 - t4),
           (unsigned)ebpf_shared_in_use());
    put_info(prog, r);
    return 0;
}

int ctrl_prog_unload(const uint8_t *b, unsigned len, struct ctrl_reply *r) {
    (void)b;
    if (len) return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "PROG_UNLOAD has no body");
    const struct ebpf_prog *old = dpu_prog_current();
    if (!old) return ctrl_refuse(r, NANOBPF_CTRL_ST_NO_PROG, "no program attached");
    dpu_prog_publish(NULL);
    ebpf_prog_free((struct ebpf_prog *)old);
    ebpf_free((void *)old);
    return 0;
}

void ctrl_prog_reset(void) {
    struct ctrl_reply r;
    load_drop();
    if (dpu_prog_current()) ctrl_prog_unload(NULL, 0, &r);
}

int ctrl_prog_info(const uint8_t *b, unsigned len, struct ctrl_reply *r) {
    (void)b;
    if (len) return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "PROG_INFO has no body");
    const struct ebpf_prog *prog = dpu_prog_current();
    if (!prog) return ctrl_refuse(r, NANOBPF_CTRL_ST_NO_PROG, "no program attached");
    put_info(prog, r);
    return 0;
}

/* A per-CPU map's value as the control plane shows it: the sum over the cores, 64-bit word by word
 * (bpftool's totals; the model has one CPU, whose value this is). Each core writes only its own copy
 * through its write-through cache; the other cores' words are read as memory holds them (dpu_read_fresh:
 * this core's cache may hold stale lines of them). */
static int percpu_sum(struct ebpf_map *m, const void *key, uint8_t *out) {
    memset(out, 0, m->value_size);
    for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++) {
        uint8_t *v = ebpf_map_value(m, key, cpu);
        if (!v) return -1;
        if (m->value_size % 8) {
            if (cpu == 0)
                for (uint32_t i = 0; i < m->value_size; i++) out[i] = v[i];
            continue;
        }
        for (uint32_t w = 0; w < m->value_size / 8; w++) {
            uint64_t a, x = dpu_read_fresh((uint64_t *)(void *)(v + 8 * w));
            memcpy(&a, out + 8 * w, 8);
            a += x;
            memcpy(out + 8 * w, &a, 8);
        }
    }
    return 0;
}

int ctrl_map(uint8_t type, const uint8_t *b, unsigned len, struct ctrl_reply *r) {
    if (len < NANOBPF_MAP_REQ_SIZE)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "map_req: %u bytes, expected %u", len, NANOBPF_MAP_REQ_SIZE);
    char name[NANOBPF_CTRL_NAME_LEN + 1];
    memcpy(name, b, NANOBPF_CTRL_NAME_LEN);
    name[NANOBPF_CTRL_NAME_LEN] = 0;
    uint64_t flags = (uint64_t)ctrl_be32(b + 32) << 32 | ctrl_be32(b + 36);
    unsigned kl = ctrl_be16(b + 40), vl = ctrl_be16(b + 42);
    if (len != NANOBPF_MAP_REQ_SIZE + kl + vl)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "map_req: %u bytes, header + key %u + value %u", len, kl, vl);
    if (ctrl_be32(b + 44) || flags > 2 || (flags && type != NANOBPF_CTRL_MSG_MAP_UPDATE))
        return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "flags: 0..2 on MAP_UPDATE only; reserved zero");
    if (vl && type != NANOBPF_CTRL_MSG_MAP_UPDATE) return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "only MAP_UPDATE carries a value");
    const struct ebpf_prog *prog = dpu_prog_current();
    if (!prog) return ctrl_refuse(r, NANOBPF_CTRL_ST_NO_PROG, "no program attached");
    struct ebpf_map *m = ctrl_prog_map(prog, name);
    if (!m) return ctrl_no_map(prog, name, r);
    if (ebpf_map_is_event(m))
        return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "map %s is an event map (records, no keys): read it with EVENTS", name);
    const uint8_t *key = b + NANOBPF_MAP_REQ_SIZE, *value = key + kl;
    if (!(kl == m->key_size || (type == NANOBPF_CTRL_MSG_MAP_NEXT && kl == 0)))
        return ctrl_refuse(r, NANOBPF_CTRL_ST_NO_MAP, "map %s: key of %u bytes, the map's is %u", name, kl, m->key_size);
    if (type == NANOBPF_CTRL_MSG_MAP_UPDATE && vl != m->value_size)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_NO_MAP, "map %s: value of %u bytes, the map's is %u", name, vl, m->value_size);
    if (ebpf_map_is_keytable(m) && (type == NANOBPF_CTRL_MSG_MAP_UPDATE || type == NANOBPF_CTRL_MSG_MAP_DELETE))
        return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "the key table is changed with KEY_* messages");
    int percpu = ebpf_map_is_percpu(m);
    if (percpu && type != NANOBPF_CTRL_MSG_MAP_LOOKUP && type != NANOBPF_CTRL_MSG_MAP_NEXT)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "map %s is per-CPU: each core's copy is its own, read-only here", name);
    int rc;
    switch (type) {
    case NANOBPF_CTRL_MSG_MAP_LOOKUP: {
        if (m->value_size > NANOBPF_CTRL_MAX_BODY) return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "value too long for a response");
        if (percpu) {
            if (percpu_sum(m, key, r->body)) return ctrl_refuse(r, NANOBPF_CTRL_ST_NOENT, "no such entry");
        } else {
            const volatile uint8_t *v = ebpf_map_value(m, key, 0);
            if (!v) return ctrl_refuse(r, NANOBPF_CTRL_ST_NOENT, "no such entry");
            for (uint32_t i = 0; i < m->value_size; i++) r->body[i] = v[i];
        }
        /* responses are authenticated, not encrypted: a key table entry is answered without its keys,
         * IVs and header-protection key (docs/control.md "The device key") */
        if (ebpf_map_is_keytable(m)) {
            _Static_assert(offsetof(struct nanobpf_quic_keys, iv) == offsetof(struct nanobpf_quic_keys, key) + 32 &&
                               offsetof(struct nanobpf_quic_keys, hp) == offsetof(struct nanobpf_quic_keys, iv) + 24,
                           "key, iv and hp follow each other");
            memset(r->body + offsetof(struct nanobpf_quic_keys, key), 0,
                   offsetof(struct nanobpf_quic_keys, pad) - offsetof(struct nanobpf_quic_keys, key));
        }
        r->len = (uint16_t)m->value_size;
        return 0;
    }
    case NANOBPF_CTRL_MSG_MAP_UPDATE:
        rc = ebpf_map_update(m, key, value, flags);
        if (!rc && !strcmp(name, "quic_config")) ctrl_keys_sync_config(prog); /* open_cid_lens is the device's */
        break;
    case NANOBPF_CTRL_MSG_MAP_DELETE:
        rc = ebpf_map_delete(m, key);
        break;
    default:
        rc = ebpf_map_get_next_key(m, kl ? key : NULL, r->body);
        if (!rc) r->len = (uint16_t)m->key_size;
        else if (rc == -ENOENT) return ctrl_refuse(r, NANOBPF_CTRL_ST_NOENT, "no more keys");
    }
    switch (rc) {
    case 0: return 0;
    case -ENOENT: return ctrl_refuse(r, NANOBPF_CTRL_ST_NOENT, "no such entry");
    case -EEXIST: return ctrl_refuse(r, NANOBPF_CTRL_ST_EXIST, "entry exists");
    case -E2BIG: return ctrl_refuse(r, NANOBPF_CTRL_ST_FULL, "map %s full", name);
    }
    return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "map %s: error %d", name, rc);
}

/* ---- what each message costs here ---- */
static struct {
    uint64_t n, total, max;
} cost[256];

void ctrl_cost_note(uint8_t type, uint64_t total, uint64_t applied) {
    (void)applied;
    cost[type].n++;
    cost[type].total += total;
    if (total > cost[type].max) cost[type].max = total;
}

void ctrl_cost_print(void) {
    static const char *const names[NANOBPF_MSG_COUNT] = NANOBPF_MSG_NAMES;
    for (unsigned t = 0; t < NANOBPF_MSG_COUNT; t++)
        if (cost[t].n && names[t])
            printf("DPU ctrl_%s n=%llu cycles=%llu max=%llu\n", names[t], (unsigned long long)cost[t].n,
                   (unsigned long long)(cost[t].total / cost[t].n), (unsigned long long)cost[t].max);
}
