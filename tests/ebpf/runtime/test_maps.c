/* Map semantics of the device runtime (firmware/ebpf/maps.c) that Linux programs rely on: LRU eviction,
 * per-CPU hash copies, devmap entries, pinned maps shared by name; and helpers' edge cases: bpf_csum_diff's
 * folding, bpf_xdp_adjust_meta's limits and the metadata moving with bpf_xdp_adjust_head. Built with
 * ASan + UBSan by run_verifier_tests.sh --maps; prints one line per test, exits 1 on a failure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ebpf.h"

extern uint32_t ebpf_host_cpus, ebpf_host_cpu; /* platform/host.c */

static int failed, total;
static void check(const char *test, int ok, const char *what) {
    if (!ok) {
        printf("FAIL %-28s %s\n", test, what);
        failed++;
    }
}
static void done(const char *test, int before) {
    total++;
    if (failed == before) printf("ok   %s\n", test);
}

static struct ebpf_map map(uint32_t type, uint32_t key_size, uint32_t value_size, uint32_t entries, const char *name) {
    struct ebpf_map m;
    memset(&m, 0, sizeof m);
    m.type = type, m.key_size = key_size, m.value_size = value_size, m.max_entries = entries;
    snprintf(m.name, sizeof m.name, "%s", name);
    return m;
}

/* LRU stamps have a 16-cycle grain (host: 16 ns): let time pass between uses so their order is known. */
static void tick(void) {
    uint64_t t = ebpf_cycles() >> 4;
    while ((ebpf_cycles() >> 4) == t) {
    }
}

static void lru_evicts_the_least_recently_used(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    struct ebpf_map m = map(NANOBPF_MAP_TYPE_LRU_HASH, 4, 8, 4, "flows");
    check("lru", ebpf_map_create(&m, &err) == 0, err.msg);
    uint64_t v = 7;
    for (uint32_t k = 1; k <= 4; k++, tick()) check("lru", ebpf_map_update(&m, &k, &v, NANOBPF_BPF_ANY) == 0, "insert 1..4");
    uint32_t k = 1;
    check("lru", ebpf_map_lookup(&m, &k) != NULL, "key 1 present");  /* 1 is now the newest */
    tick();
    k = 5;
    check("lru", ebpf_map_update(&m, &k, &v, NANOBPF_BPF_NOEXIST) == 0, "insert 5 into a full LRU map");
    check("lru", m.count == 4, "still 4 entries");
    for (uint32_t j = 1; j <= 5; j++) {
        int present = ebpf_map_value(&m, &j, 0) != NULL, want = j != 2;
        char what[64];
        snprintf(what, sizeof what, "key %u %s after evicting the oldest (2)", j, want ? "kept" : "gone");
        check("lru", present == want, what);
    }
    /* the host's read (ebpf_map_value) does not make an entry recent: 3 is the next to go */
    tick();
    k = 6;
    check("lru", ebpf_map_update(&m, &k, &v, NANOBPF_BPF_ANY) == 0, "insert 6");
    k = 3;
    check("lru", ebpf_map_value(&m, &k, 0) == NULL, "key 3 evicted next");
    /* a plain hash map of the same size refuses instead */
    struct ebpf_map h = map(NANOBPF_MAP_TYPE_HASH, 4, 8, 1, "plain");
    check("lru", ebpf_map_create(&h, &err) == 0, err.msg);
    k = 1;
    ebpf_map_update(&h, &k, &v, NANOBPF_BPF_ANY);
    k = 2;
    check("lru", ebpf_map_update(&h, &k, &v, NANOBPF_BPF_ANY) == -E2BIG, "a full HASH refuses with -E2BIG");
    ebpf_map_destroy(&h);
    ebpf_map_destroy(&m);
    done("lru_evicts_the_least_recently_used", f);
}

static void percpu_hash_keeps_a_copy_per_core(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    ebpf_host_cpus = 4;
    struct ebpf_map m = map(NANOBPF_MAP_TYPE_PERCPU_HASH, 4, 8, 8, "bytes");
    check("percpu", ebpf_map_create(&m, &err) == 0 && m.n_cpus == 4, "created with 4 copies");
    uint32_t k = 9;
    uint64_t v;
    for (uint32_t cpu = 0; cpu < 4; cpu++) {
        ebpf_host_cpu = cpu;
        v = 100 + cpu;
        check("percpu", ebpf_map_update(&m, &k, &v, NANOBPF_BPF_ANY) == 0, "update on each core");
    }
    ebpf_host_cpu = 2;
    uint64_t *mine = ebpf_map_lookup(&m, &k);
    check("percpu", mine && *mine == 102, "a core's lookup gives its own copy");
    for (uint32_t cpu = 0; cpu < 4; cpu++) {
        uint64_t *c = ebpf_map_value(&m, &k, cpu);
        check("percpu", c && *c == 100 + cpu, "each core's copy kept");
    }
    /* delete and insert again from one core: the other cores' copies start at zero */
    check("percpu", ebpf_map_delete(&m, &k) == 0, "delete");
    ebpf_host_cpu = 1;
    v = 5;
    check("percpu", ebpf_map_update(&m, &k, &v, NANOBPF_BPF_NOEXIST) == 0, "insert again");
    for (uint32_t cpu = 0; cpu < 4; cpu++) {
        uint64_t *c = ebpf_map_value(&m, &k, cpu);
        check("percpu", c && *c == (cpu == 1 ? 5u : 0u), "a new entry zeroes the other cores' copies");
    }
    check("percpu", ebpf_map_value(&m, &k, 4) == NULL, "no fifth core");
    ebpf_map_destroy(&m);
    ebpf_host_cpus = 1, ebpf_host_cpu = 0;
    done("percpu_hash_keeps_a_copy_per_core", f);
}

static void devmap_entries_are_ports(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    struct ebpf_map d = map(NANOBPF_MAP_TYPE_DEVMAP, 4, 8, 4, "tx_port");
    check("devmap", ebpf_map_create(&d, &err) == 0, err.msg);
    uint32_t k = 1, val[2] = {NANOBPF_IFINDEX_NET, 0};
    check("devmap", ebpf_map_lookup(&d, &k) == NULL, "an empty entry is no entry");
    check("devmap", ebpf_map_update(&d, &k, val, NANOBPF_BPF_ANY) == 0, "the network port");
    uint32_t *got = ebpf_map_lookup(&d, &k);
    check("devmap", got && got[0] == NANOBPF_IFINDEX_NET && got[1] == 0, "looked up");
    val[0] = 3;
    check("devmap", ebpf_map_update(&d, &k, val, NANOBPF_BPF_ANY) == -EINVAL, "ifindex 3 is no port of the device");
    val[0] = NANOBPF_IFINDEX_HOST, val[1] = 5;
    check("devmap", ebpf_map_update(&d, &k, val, NANOBPF_BPF_ANY) == -EINVAL, "a program fd on redirect is refused");
    val[1] = (uint32_t)-1;
    check("devmap", ebpf_map_update(&d, &k, val, NANOBPF_BPF_ANY) == 0, "fd -1: no program");
    got = ebpf_map_lookup(&d, &k);
    check("devmap", got && got[0] == NANOBPF_IFINDEX_HOST && got[1] == 0, "no program id reads as 0");
    check("devmap", ebpf_map_update(&d, &k, val, NANOBPF_BPF_NOEXIST) == -EEXIST, "NOEXIST: -EEXIST (Linux)");
    check("devmap", ebpf_map_delete(&d, &k) == 0 && ebpf_map_lookup(&d, &k) == NULL, "delete empties it");
    check("devmap", ebpf_map_update(&d, &k, val, NANOBPF_BPF_ANY) == 0, "set again");
    val[0] = 0;
    check("devmap", ebpf_map_update(&d, &k, val, NANOBPF_BPF_ANY) == 0 && ebpf_map_lookup(&d, &k) == NULL,
          "ifindex 0 empties a DEVMAP entry (Linux)");
    val[0] = NANOBPF_IFINDEX_HOST;
    k = 4;
    check("devmap", ebpf_map_update(&d, &k, val, NANOBPF_BPF_ANY) == -E2BIG, "index 4 of 4");
    struct ebpf_map bad = map(NANOBPF_MAP_TYPE_DEVMAP_HASH, 4, 16, 4, "wide");
    check("devmap", ebpf_map_create(&bad, &err) != 0 && strstr(err.msg, "a devmap has a 4-byte key"), err.msg);
    struct ebpf_map h = map(NANOBPF_MAP_TYPE_DEVMAP_HASH, 4, 4, 4, "by_vlan");
    check("devmap", ebpf_map_create(&h, &err) == 0, err.msg);
    k = 1000, val[0] = NANOBPF_IFINDEX_HOST;
    check("devmap", ebpf_map_update(&h, &k, val, NANOBPF_BPF_ANY) == 0, "devmap_hash: any 32-bit key");
    val[0] = 0;
    check("devmap", ebpf_map_update(&h, &k, val, NANOBPF_BPF_ANY) == -EINVAL, "devmap_hash: ifindex 0 refused");
    got = ebpf_map_lookup(&h, &k);
    check("devmap", got && *got == NANOBPF_IFINDEX_HOST, "the refused update left the entry");
    ebpf_map_destroy(&h);
    ebpf_map_destroy(&d);
    done("devmap_entries_are_ports", f);
}

static void pinned_maps_are_shared_by_name(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    struct ebpf_map decl = map(NANOBPF_MAP_TYPE_ARRAY, 4, 8, 2, "stats");
    struct ebpf_map *a = ebpf_pinned_map_bind(&decl, &err), *b = ebpf_pinned_map_bind(&decl, &err);
    check("pinned", a && a == b && a->pinned_refs == 2, "one map for two declarations");
    uint32_t k = 1;
    uint64_t v = 42;
    ebpf_map_update(a, &k, &v, NANOBPF_BPF_ANY);
    struct ebpf_map other = map(NANOBPF_MAP_TYPE_ARRAY, 4, 16, 2, "stats");
    check("pinned", ebpf_pinned_map_bind(&other, &err) == NULL && strstr(err.msg, "map stats: pinned with type 2, key 4, value 8"),
          err.msg);
    ebpf_map_release(a);
    uint64_t *kept = ebpf_map_value(b, &k, 0);
    check("pinned", kept && *kept == 42, "the entries outlive the first holder");
    ebpf_map_release(b);
    struct ebpf_map *c = ebpf_pinned_map_bind(&other, &err);
    check("pinned", c && c->value_size == 16, "after the last holder another shape may pin the name");
    kept = c ? ebpf_map_value(c, &k, 0) : NULL;
    check("pinned", kept && kept[0] == 0 && kept[1] == 0, "a new map starts empty");
    if (c) ebpf_map_release(c);
    done("pinned_maps_are_shared_by_name", f);
}

/* A value's bpf_spin_lock belongs to whoever holds it: updates (a program's or the host's) copy the rest
 * of the value around it, and a new hash element's lock starts free. */
static void updates_keep_the_spin_lock(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    const struct ebpf_helper *lock = ebpf_helper_find(NANOBPF_HELPER_SPIN_LOCK), *unlock = ebpf_helper_find(NANOBPF_HELPER_SPIN_UNLOCK);
    struct ebpf_map m = map(NANOBPF_MAP_TYPE_HASH, 4, 16, 4, "locked");
    m.spin_lock_off = 1 + 8; /* struct { __u64 packets; struct bpf_spin_lock lock; __u32 len; } */
    check("spinlock", ebpf_map_create(&m, &err) == 0, err.msg);
    uint32_t k = 3, v[4] = {7, 0, 0xffffffffu, 9};
    check("spinlock", ebpf_map_update(&m, &k, v, NANOBPF_BPF_ANY) == 0, "insert");
    uint32_t *got = ebpf_map_lookup(&m, &k);
    check("spinlock", got && got[0] == 7 && got[2] == 0 && got[3] == 9, "a new element's lock starts free");
    lock->fn((uintptr_t)(got + 2), 0, 0, 0, 0);
    check("spinlock", got[2] == 1, "bpf_spin_lock takes it");
    v[0] = 8, v[2] = 0;
    check("spinlock", ebpf_map_update(&m, &k, v, NANOBPF_BPF_EXIST) == 0 && got[0] == 8 && got[2] == 1,
          "an update keeps the held lock");
    unlock->fn((uintptr_t)(got + 2), 0, 0, 0, 0);
    check("spinlock", got[2] == 0, "bpf_spin_unlock frees it");
    struct ebpf_map bad = map(NANOBPF_MAP_TYPE_PERCPU_ARRAY, 4, 16, 4, "bad");
    bad.spin_lock_off = 1;
    check("spinlock", ebpf_map_create(&bad, &err) != 0 && strstr(err.msg, "HASH or ARRAY"), err.msg);
    ebpf_map_destroy(&m);
    done("updates_keep_the_spin_lock", f);
}

static uint64_t csum_diff(const void *from, uint32_t fs, const void *to, uint32_t ts, uint32_t seed) {
    const struct ebpf_helper *h = ebpf_helper_find(NANOBPF_HELPER_CSUM_DIFF);
    return h->fn((uintptr_t)from, fs, (uintptr_t)to, ts, seed);
}

/* Values computed by hand from Linux 6.13's definition (net/core/filter.c): csum_partial sums 32-bit
 * little-endian words with end-around carry; the result is folded to 16 bits. */
static void csum_diff_folds_like_linux(void) {
    int f = failed;
    uint32_t ones = 0xffffffffu, one = 1, carry[2] = {0xffffffffu, 2}, mixed[2] = {0xf0ffffffu, 0x78563412u};
    check("csum", csum_diff(NULL, 0, NULL, 0, 0xabcdef12u) == 0x9ae0, "no words: the seed, folded (Linux 6.18: 0x9ae0)");
    check("csum", csum_diff(NULL, 0, &ones, 4, 0) == 0xffff, "0xffffffff folds to 0xffff (one's complement -0)");
    check("csum", csum_diff(NULL, 0, carry, 8, 0) == 2, "the carry out of 32 bits is added back (-0 + 2)");
    check("csum", csum_diff(&one, 4, NULL, 0, 0) == 0xfffe, "removing 1 from 0");
    check("csum", csum_diff(&ones, 4, NULL, 0, 0xa5a5a5a5u) == 0x4b4b, "removing -0 keeps the seed, folded");
    check("csum", csum_diff(carry, 8, mixed, 8, 0) == 0x9d66, "from and to (Linux 6.18 gave 0x9d66)");
    check("csum", csum_diff(&one, 4, &one, 4, 0x1234) == 0x1234, "removing and adding one word gives the seed back");
    uint8_t odd[3] = {0x01, 0x02, 0x03};
    check("csum", csum_diff(NULL, 0, odd, 3, 0) == 0x0203 + 0x0001, "a last partial word is zero-padded");
    done("csum_diff_folds_like_linux", f);
}

static uint64_t xdp_helper(uint32_t id, struct ebpf_xdp_buff *x, int32_t delta) {
    return ebpf_helper_find(id)->fn((uintptr_t)x, (uint64_t)(int64_t)delta, 0, 0, 0);
}

/* Linux 6.18's limits (net/core/filter.c, include/net/xdp.h): a metadata length that is a multiple of 4
 * up to 255, data_meta within [data_hard_start, data]; bpf_xdp_adjust_head keeps room for the metadata
 * and moves it. Linux's own test run cannot show the 255-byte limit (its headroom is 216 bytes after
 * struct xdp_frame); 512 bytes of headroom here can. */
static void adjust_meta_limits_like_linux(void) {
    int f = failed;
    static uint8_t buf[1024];
    struct ebpf_xdp_buff x = {0};
    x.data_hard_start = (uintptr_t)buf;
    x.data = x.data_meta = (uintptr_t)(buf + 512);
    x.data_end = x.data + 64, x.frame_end = (uintptr_t)(buf + sizeof buf);
    const int64_t inval = -NANOBPF_EINVAL, acces = -NANOBPF_EACCES;
    check("meta", (int64_t)xdp_helper(NANOBPF_HELPER_XDP_ADJUST_META, &x, -2) == acces && x.data_meta == x.data,
          "2 bytes: -EACCES, nothing moved");
    check("meta", (int64_t)xdp_helper(NANOBPF_HELPER_XDP_ADJUST_META, &x, -256) == acces && x.data_meta == x.data,
          "256 bytes (above 255): -EACCES");
    check("meta", (int64_t)xdp_helper(NANOBPF_HELPER_XDP_ADJUST_META, &x, 4) == inval, "past data: -EINVAL");
    check("meta", (int64_t)xdp_helper(NANOBPF_HELPER_XDP_ADJUST_META, &x, -516) == inval, "before the buffer: -EINVAL");
    check("meta", xdp_helper(NANOBPF_HELPER_XDP_ADJUST_META, &x, -252) == 0 && x.data - x.data_meta == 252,
          "252 bytes: accepted");
    check("meta", xdp_helper(NANOBPF_HELPER_XDP_ADJUST_META, &x, 244) == 0 && x.data - x.data_meta == 8,
          "shrunk to 8 bytes");
    memcpy((void *)(uintptr_t)x.data_meta, "metadata", 8);
    memcpy((void *)(uintptr_t)x.data, "\x01\x02\x03\x04", 4);
    uint64_t data = x.data;
    check("meta", xdp_helper(NANOBPF_HELPER_XDP_ADJUST_HEAD, &x, 4) == 0 && x.data == data + 4 &&
                      x.data - x.data_meta == 8 && !memcmp((void *)(uintptr_t)x.data_meta, "metadata", 8),
          "adjust_head +4: the metadata moves with data, its bytes kept");
    check("meta", xdp_helper(NANOBPF_HELPER_XDP_ADJUST_HEAD, &x, -8) == 0 && x.data == data - 4 &&
                      !memcmp((void *)(uintptr_t)x.data_meta, "metadata", 8),
          "adjust_head -8: moved back, bytes kept");
    check("meta", (int64_t)xdp_helper(NANOBPF_HELPER_XDP_ADJUST_HEAD, &x, -(int32_t)(x.data - x.data_hard_start)) == inval,
          "adjust_head to data_hard_start: no room left for the metadata, -EINVAL");
    check("meta", xdp_helper(NANOBPF_HELPER_XDP_ADJUST_HEAD, &x, -(int32_t)(x.data - x.data_hard_start - 8)) == 0 &&
                      x.data_meta == x.data_hard_start,
          "adjust_head to data_hard_start + 8: the metadata at the buffer's start");
    done("adjust_meta_limits_like_linux", f);
}

/* PROG_ARRAY: empty until the host sets an element to a program of the image; bpf_tail_call's target
 * counted against NANOBPF_MAX_TAIL_CALLS, in Linux's order (the index, then the count, then the element). */
static void prog_array_and_tail_call_limit(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    struct ebpf_map m = map(NANOBPF_MAP_TYPE_PROG_ARRAY, 4, 4, 4, "jmp");
    check("prog", ebpf_map_create(&m, &err) == 0, err.msg);
    m.n_progs = 3;
    struct ebpf_prog prog;
    memset(&prog, 0, sizeof prog);
    prog.n_progs = 3, prog.prog_start[1] = 10, prog.prog_start[2] = 20;
    uint32_t k = 1, v = 2, got = 99;
    check("prog", ebpf_map_lookup(&m, &k) == NULL, "a new element is empty");
    check("prog", ebpf_prog_array_get(&m, 1, &got) == -1, "a new element is no program");
    v = 3;
    check("prog", ebpf_map_update(&m, &k, &v, 0) == -EINVAL, "program 3 of 3: -EINVAL");
    v = 2;
    check("prog", ebpf_map_update(&m, &k, &v, 0) == 0 && ebpf_prog_array_get(&m, 1, &got) == 0 && got == 2,
          "element 1 := program 2");
    check("prog", ebpf_map_lookup(&m, &k) && *(uint32_t *)ebpf_map_lookup(&m, &k) == 2, "the host reads 2 back");
    ebpf_tail_calls = 0;
    check("prog", ebpf_tail_call_target(&prog, &m, 4, &got) == -1 && ebpf_tail_calls == 0,
          "index 4 of 4: fails, not counted");
    check("prog", ebpf_tail_call_target(&prog, &m, 0, &got) == -1 && ebpf_tail_calls == 1,
          "an empty element: fails, counted (as Linux)");
    int ok = 1;
    for (uint32_t n = 1; n < NANOBPF_MAX_TAIL_CALLS; n++) ok &= ebpf_tail_call_target(&prog, &m, 1, &got) == 0 && got == 2;
    check("prog", ok && ebpf_tail_calls == NANOBPF_MAX_TAIL_CALLS, "calls up to the limit go to program 2");
    check("prog", ebpf_tail_call_target(&prog, &m, 1, &got) == -1, "one more: fails");
    check("prog", ebpf_map_delete(&m, &k) == 0 && ebpf_map_delete(&m, &k) == -ENOENT && !ebpf_map_lookup(&m, &k),
          "delete empties it; again: -ENOENT");
    ebpf_map_destroy(&m);
    done("prog_array_and_tail_call_limit", f);
}

/* A hash key is searched three ways (maps.c hash_search): whole words in place (8-byte aligned, a
 * multiple of 8 bytes), copied first (unaligned, 9..64 bytes), or read byte by byte at the end (the rest).
 * Every way must hash and compare alike: each key inserted at one alignment is found, updated and deleted
 * at every other, and a key differing in its last byte is not found. */
static void hash_keys_found_at_any_alignment(void) {
    int f = failed;
    static const uint32_t sizes[] = {1, 2, 4, 7, 8, 9, 22, 24, 40, 64, 65, 72};
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
        uint32_t n = sizes[z];
        struct ebpf_error err = {-1, ""};
        struct ebpf_map m = map(NANOBPF_MAP_TYPE_HASH, n, 8, 16, "align");
        char what[96];
        snprintf(what, sizeof what, "create a map of %u-byte keys", n);
        check("align", ebpf_map_create(&m, &err) == 0, what);
        uint64_t store[16][(80 + 8) / 8]; /* a key at offset (k % 8) of its own buffer */
        for (uint32_t k = 0; k < 8; k++) {
            uint8_t *key = (uint8_t *)store[k] + k;
            for (uint32_t b = 0; b < n; b++) key[b] = (uint8_t)(k * 37 + b * 11 + n);
            uint64_t v = 1000 + k;
            snprintf(what, sizeof what, "%u-byte key %u at offset %u inserted", n, k, k);
            check("align", ebpf_map_update(&m, key, &v, NANOBPF_BPF_NOEXIST) == 0, what);
        }
        for (uint32_t k = 0; k < 8; k++)
            for (uint32_t at = 0; at < 8; at++) {
                uint8_t *key = (uint8_t *)store[8 + at] + at;
                memcpy(key, (uint8_t *)store[k] + k, n);
                const uint64_t *v = ebpf_map_lookup(&m, key);
                snprintf(what, sizeof what, "%u-byte key %u (inserted at offset %u) found at offset %u", n, k, k, at);
                check("align", v && *v == (at ? 2000u : 1000u) + k && ebpf_map_slot_of(&m, key) >= 0, what); /* updated below */
                uint64_t nv = 2000 + k;
                snprintf(what, sizeof what, "%u-byte key %u updated at offset %u, not added", n, k, at);
                check("align", ebpf_map_update(&m, key, &nv, NANOBPF_BPF_EXIST) == 0 && *(const uint64_t *)ebpf_map_lookup(&m, key) == nv &&
                                   ebpf_map_update(&m, key, &nv, NANOBPF_BPF_NOEXIST) == -EEXIST, what);
                key[n - 1] ^= 0x80;
                snprintf(what, sizeof what, "%u-byte key %u with its last byte changed: absent at offset %u", n, k, at);
                check("align", !ebpf_map_lookup(&m, key) && ebpf_map_slot_of(&m, key) == -1, what);
            }
        for (uint32_t k = 0; k < 8; k++) {
            uint8_t *key = (uint8_t *)store[8 + (k + 3) % 8] + (k + 3) % 8;
            memcpy(key, (uint8_t *)store[k] + k, n);
            snprintf(what, sizeof what, "%u-byte key %u deleted at offset %u", n, k, (k + 3) % 8);
            check("align", ebpf_map_delete(&m, key) == 0 && !ebpf_map_lookup(&m, (uint8_t *)store[k] + k), what);
        }
        ebpf_map_destroy(&m);
    }
    done("hash_keys_found_at_any_alignment", f);
}

/* The device maps as a program declaring them gets them: the packet-number map and the key table
 * (NULL where the binding failed). */
static void bind_device_maps(struct ebpf_map **pn, struct ebpf_map **kt) {
    struct ebpf_error err = {-1, ""};
    struct ebpf_map kdecl = map(NANOBPF_MAP_TYPE_HASH, NANOBPF_QUIC_CID_SIZE, NANOBPF_QUIC_KEYS_SIZE,
                                NANOBPF_KEYTABLE_ENTRIES, NANOBPF_KEYTABLE_MAP_NAME);
    struct ebpf_map pdecl = map(NANOBPF_MAP_TYPE_HASH, NANOBPF_QUIC_CID_SIZE, NANOBPF_QUIC_PN_STATE_SIZE,
                                NANOBPF_KEYTABLE_ENTRIES, NANOBPF_KEYTABLE_PN_MAP_NAME);
    *pn = ebpf_device_map_bind(&pdecl, &err);
    *kt = ebpf_device_map_bind(&kdecl, &err);
}

/* The packet-number map is the key table's companion (maps.c pn_bind): a state per key table slot. A key
 * has a state exactly while it has an entry, zero from the insert that gave it its slot; the state a
 * key table value leads to (ebpf_keytable_pn, bpf_quic_pn_of) is the one a lookup by key finds, and a
 * changed value (a new place) still leads to it; an update for a key without an entry is refused, a
 * delete sets the state back to zero, the keys it lists are the key table's. Fails when the helper's
 * place -> slot step is wrong: checked by returning the state of the place instead of its slot. */
static void pn_map_follows_the_key_table_slots(void) {
    int f = failed;
    struct ebpf_map *pn, *kt;
    bind_device_maps(&pn, &kt);
    check("pn", pn && kt && ebpf_map_is_keytable_pn(pn), "both device maps bound");
    if (!pn || !kt) return;
    enum { N = 40 };
    struct nanobpf_quic_cid k[N];
    uint8_t keys[NANOBPF_QUIC_KEYS_SIZE], st[NANOBPF_QUIC_PN_STATE_SIZE], zero[NANOBPF_QUIC_PN_STATE_SIZE] = {0};
    char what[96];
    for (int i = 0; i < N; i++) {
        memset(&k[i], 0, sizeof k[i]);
        k[i].len = (uint8_t)(1 + i % 20);
        for (int b = 0; b < k[i].len; b++) k[i].id[b] = (uint8_t)(i * 7 + b);
        k[i].dir = (uint8_t)(i & 1 ? NANOBPF_QUIC_DIR_SEAL : NANOBPF_QUIC_DIR_OPEN);
        check("pn", ebpf_map_update(pn, &k[i], zero, NANOBPF_BPF_ANY) == -ENOENT && !ebpf_map_lookup(pn, &k[i]),
              "no state before the entry");
        memset(keys, i, sizeof keys);
        check("pn", ebpf_map_update(kt, &k[i], keys, NANOBPF_BPF_NOEXIST) == 0, "entry added");
        uint8_t *s = ebpf_map_lookup(pn, &k[i]);
        snprintf(what, sizeof what, "entry %d: a zero state, the one its value leads to", i);
        check("pn", s && !memcmp(s, zero, sizeof zero) && ebpf_keytable_pn(ebpf_map_lookup(kt, &k[i])) == s, what);
        memset(st, 0x40 + i, sizeof st);
        check("pn", ebpf_map_update(pn, &k[i], st, NANOBPF_BPF_NOEXIST) == -EEXIST &&
                        ebpf_map_update(pn, &k[i], st, NANOBPF_BPF_EXIST) == 0, "state written by key");
    }
    for (int i = 0; i < N; i++) { /* new keys: a new value place; the state stays */
        memset(keys, 0x80 + i, sizeof keys);
        check("pn", ebpf_map_update(kt, &k[i], keys, NANOBPF_BPF_EXIST) == 0, "keys changed");
        const uint8_t *v = ebpf_map_lookup(kt, &k[i]), *s = ebpf_keytable_pn(v);
        memset(st, 0x40 + i, sizeof st);
        snprintf(what, sizeof what, "entry %d: its state kept and found from its new value", i);
        check("pn", v && v[0] == 0x80 + i && s == ebpf_map_lookup(pn, &k[i]) && s && !memcmp(s, st, sizeof st), what);
    }
    int listed = 0;
    struct nanobpf_quic_cid at, next;
    for (const void *p = NULL; !ebpf_map_get_next_key(pn, p, &next); p = &at) at = next, listed++;
    check("pn", listed == N, "the keys listed are the key table's");
    for (int i = 0; i < N; i += 2) check("pn", ebpf_map_delete(kt, &k[i]) == 0, "entry deleted");
    for (int i = 0; i < N; i++) { /* deleted entries: no state; others kept; re-added ones start at zero */
        uint8_t *s = ebpf_map_lookup(pn, &k[i]);
        snprintf(what, sizeof what, "entry %d: %s", i, i % 2 ? "state kept" : "no state once deleted");
        check("pn", i % 2 ? s && s[0] == 0x40 + i : !s && ebpf_map_delete(pn, &k[i]) == -ENOENT, what);
        if (i % 2) continue;
        memset(keys, i, sizeof keys);
        check("pn", ebpf_map_update(kt, &k[i], keys, NANOBPF_BPF_NOEXIST) == 0, "entry added again");
        s = ebpf_map_lookup(pn, &k[i]);
        snprintf(what, sizeof what, "entry %d added again: its state starts at zero", i);
        check("pn", s && !memcmp(s, zero, sizeof zero) && ebpf_keytable_pn(ebpf_map_lookup(kt, &k[i])) == s, what);
    }
    check("pn", ebpf_map_delete(pn, &k[1]) == 0 && !memcmp(ebpf_map_lookup(pn, &k[1]), zero, sizeof zero),
          "a delete by key sets the state back to zero");
    check("pn", !ebpf_keytable_pn(keys) && !ebpf_keytable_pn((const uint8_t *)ebpf_map_lookup(kt, &k[1]) + 8),
          "a pointer that is no value place has no state");
    for (int i = 0; i < N; i++) ebpf_map_delete(kt, &k[i]);
    ebpf_device_map_unbind(kt);
    ebpf_device_map_unbind(pn);
    check("pn", !ebpf_keytable_pn(keys), "no state once unbound");
    done("pn_map_follows_the_key_table_slots", f);
}

/* A key table lookup with PISA's slot as a hint (ebpf_keytable_lookup_at, the helper's path when the
 * packet's context names conn) finds what the lookup by key finds, whatever the hint: its own slot,
 * another entry's (replaced while the packet waited, or the other direction's), a free slot, one past
 * the table; and an absent key is not found at any hint. Fails when the hint is trusted without the
 * whole key compared (another entry's slot returns that entry). */
static void keytable_slot_hint_is_only_a_hint(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    struct ebpf_map kdecl = map(NANOBPF_MAP_TYPE_HASH, NANOBPF_QUIC_CID_SIZE, NANOBPF_QUIC_KEYS_SIZE,
                                NANOBPF_KEYTABLE_ENTRIES, NANOBPF_KEYTABLE_MAP_NAME);
    struct ebpf_map *kt = ebpf_device_map_bind(&kdecl, &err);
    check("hint", kt != NULL, "key table bound");
    if (!kt) return;
    enum { N = 12 };
    struct nanobpf_quic_cid k[N + 1];
    int64_t slot[N];
    uint8_t keys[NANOBPF_QUIC_KEYS_SIZE];
    char what[96];
    for (int i = 0; i <= N; i++) {
        memset(&k[i], 0, sizeof k[i]);
        /* the same first 8 bytes everywhere, and pairs that differ only in direction (the last word) */
        k[i].len = (uint8_t)(9 + (i / 2) % 12);
        for (int b = 0; b < k[i].len; b++) k[i].id[b] = (uint8_t)(b < 8 ? 0x30 + b : 0x30 + (i / 2) * 5 + b);
        k[i].dir = (uint8_t)(i & 1 ? NANOBPF_QUIC_DIR_SEAL : NANOBPF_QUIC_DIR_OPEN);
        if (i == N) break; /* k[N]: never added */
        memset(keys, 0x10 + i, sizeof keys);
        check("hint", ebpf_map_update(kt, &k[i], keys, NANOBPF_BPF_NOEXIST) == 0, "entry added");
        slot[i] = ebpf_map_slot_of(kt, &k[i]);
    }
    uint32_t hints[] = {0, 1, 7, NANOBPF_KEYTABLE_SLOTS - 1, NANOBPF_KEYTABLE_SLOTS, 0xffff};
    for (int i = 0; i <= N; i++) {
        const void *want = ebpf_map_lookup(kt, &k[i]);
        check("hint", (want != NULL) == (i < N), "the lookup by key");
        for (int h = 0; h < N + 6; h++) {
            uint32_t hint = h < N ? (uint32_t)slot[h] : hints[h - N];
            snprintf(what, sizeof what, "key %d with slot hint %u: the lookup's result", i, hint);
            check("hint", ebpf_keytable_lookup_at(&k[i], hint) == want, what);
        }
    }
    for (int i = 0; i < N; i++) ebpf_map_delete(kt, &k[i]);
    ebpf_device_map_unbind(kt);
    done("keytable_slot_hint_is_only_a_hint", f);
}

/* bpf_quic_keys_of (helpers.c): the key table value of PISA's connection (conn - 1: its slot) when the
 * key the frame names there - the CID of cid_len bytes after the short header's first byte, or for
 * cid_len 0 the peer's address id (the source of a frame to open, the destination of one to seal) with
 * the direction asked - is the slot's, which is then what the lookup by that key returns; NULL for
 * another slot, the other direction, conn 0, a long header (pn_off 0), one byte of the key changed, or
 * its bytes no longer inside the frame. Frames at every alignment (the helper reads words). The
 * expected keys are built here byte by byte from the frame, as docs/ebpf-abi.md lays them out. */
enum { KO_ETH = 14, KO_BUF = 256 };
struct ko_case {
    const char *name;
    int v6, seal_shim, cid_len, dir;
};
/* A frame of the case at buf + head: Ethernet (and the 4-byte shim of a frame to seal), IPv4 or IPv6,
 * UDP 4433 -> 443, a short header whose CID is 0xc0.. ; addresses 10.0.0.s / 2001:db8::s with s 1
 * (source) and 2 (destination). Fills x and the key the frame names. */
static void ko_frame(const struct ko_case *c, uint8_t *buf, unsigned head, struct ebpf_xdp_buff *x, struct nanobpf_quic_cid *k) {
    uint8_t *f = buf + head;
    memset(buf, 0, KO_BUF);
    unsigned l3 = KO_ETH + (c->seal_shim ? 4 : 0), l4 = l3 + (c->v6 ? 40 : 20), q = l4 + 8;
    f[l3] = c->v6 ? 0x60 : 0x45;
    const uint8_t *src, *dst;
    static const uint8_t s4[4] = {10, 0, 0, 1}, d4[4] = {10, 0, 0, 2};
    static const uint8_t s6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1}, d6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 2};
    src = c->v6 ? s6 : s4, dst = c->v6 ? d6 : d4;
    unsigned alen = c->v6 ? 16 : 4;
    memcpy(f + l3 + (c->v6 ? 8 : 12), src, alen);
    memcpy(f + l3 + (c->v6 ? 24 : 16), dst, alen);
    f[l4] = 4433 >> 8, f[l4 + 1] = 4433 & 0xff, f[l4 + 2] = 443 >> 8, f[l4 + 3] = 443 & 0xff;
    f[q] = 0x41;
    for (int i = 0; i < c->cid_len; i++) f[q + 1 + i] = (uint8_t)(0xc0 + i);
    unsigned end = q + 1 + (unsigned)c->cid_len + 4 + 16 + 16;
    memset(x, 0, sizeof *x);
    x->data_hard_start = (uintptr_t)buf, x->frame_end = (uintptr_t)(buf + KO_BUF);
    x->data = x->data_meta = x->parse_data = (uintptr_t)f, x->data_end = (uintptr_t)(f + end);
    x->l3_off = l3, x->l4_off = l4, x->quic_off = q, x->pn_off = q + 1 + (unsigned)c->cid_len, x->cid_len = (unsigned)c->cid_len;
    memset(k, 0, sizeof *k);
    k->len = (uint8_t)c->cid_len;
    k->dir = (uint8_t)c->dir;
    if (c->cid_len) {
        memcpy(k->id, f + q + 1, (size_t)c->cid_len);
        return;
    }
    int peer_is_src = c->dir == NANOBPF_QUIC_DIR_OPEN;
    const uint8_t *peer = peer_is_src ? src : dst;
    if (c->v6) memcpy(k->id + NANOBPF_QUIC_ADDR_IP_OFF, peer, 16);
    else {
        k->id[NANOBPF_QUIC_ADDR_IP_OFF + 10] = k->id[NANOBPF_QUIC_ADDR_IP_OFF + 11] = 0xff;
        memcpy(k->id + NANOBPF_QUIC_ADDR_IP_OFF + 12, peer, 4);
    }
    memcpy(k->id + NANOBPF_QUIC_ADDR_PEER_PORT_OFF, f + l4 + (peer_is_src ? 0 : 2), 2);
    memcpy(k->id + NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF, f + l4 + (peer_is_src ? 2 : 0), 2);
}
static void keys_of_reads_the_key_from_the_frame(void) {
    int f = failed;
    struct ebpf_error err = {-1, ""};
    struct ebpf_map kdecl = map(NANOBPF_MAP_TYPE_HASH, NANOBPF_QUIC_CID_SIZE, NANOBPF_QUIC_KEYS_SIZE,
                                NANOBPF_KEYTABLE_ENTRIES, NANOBPF_KEYTABLE_MAP_NAME);
    struct ebpf_map *kt = ebpf_device_map_bind(&kdecl, &err);
    struct ebpf_map other = map(NANOBPF_MAP_TYPE_HASH, NANOBPF_QUIC_CID_SIZE, NANOBPF_QUIC_KEYS_SIZE, 4, "other");
    const struct ebpf_helper *h = ebpf_helper_find(NANOBPF_HELPER_QUIC_KEYS_OF);
    check("keys_of", kt && h && ebpf_map_create(&other, &err) == 0, "key table bound, helper found");
    if (!kt || !h) return;
    static const struct ko_case cases[] = {
        {"open, 8-byte CID, IPv4", 0, 0, 8, NANOBPF_QUIC_DIR_OPEN},
        {"open, 20-byte CID, IPv6", 1, 0, 20, NANOBPF_QUIC_DIR_OPEN},
        {"seal, 1-byte CID behind the shim, IPv4", 0, 1, 1, NANOBPF_QUIC_DIR_SEAL},
        {"seal, 13-byte CID behind the shim, IPv6", 1, 1, 13, NANOBPF_QUIC_DIR_SEAL},
        {"open, zero-length CID by the source, IPv4", 0, 0, 0, NANOBPF_QUIC_DIR_OPEN},
        {"open, zero-length CID by the source, IPv6", 1, 0, 0, NANOBPF_QUIC_DIR_OPEN},
        {"seal, zero-length CID by the destination, IPv4", 0, 1, 0, NANOBPF_QUIC_DIR_SEAL},
        {"seal, zero-length CID by the destination, IPv6", 1, 1, 0, NANOBPF_QUIC_DIR_SEAL},
    };
    enum { N = sizeof cases / sizeof *cases };
    static uint64_t store[KO_BUF / 8];
    uint8_t *buf = (uint8_t *)store, keys[NANOBPF_QUIC_KEYS_SIZE];
    struct ebpf_xdp_buff x;
    struct nanobpf_quic_cid k[N], flip;
    int64_t slot[N];
    char what[160];
    for (int i = 0; i < N; i++) { /* every case's key in the table, and one in the other direction too */
        ko_frame(&cases[i], buf, 32, &x, &k[i]);
        memset(keys, 0x20 + i, sizeof keys);
        check("keys_of", ebpf_map_update(kt, &k[i], keys, NANOBPF_BPF_NOEXIST) == 0, "entry added");
        slot[i] = ebpf_map_slot_of(kt, &k[i]);
        flip = k[i];
        flip.dir ^= 1;
        memset(keys, 0x60 + i, sizeof keys);
        check("keys_of", ebpf_map_update(kt, &flip, keys, NANOBPF_BPF_ANY) == 0, "the other direction's entry added");
    }
#define KEYS_OF(dir, m) ((const void *)(uintptr_t)h->fn((uintptr_t)&x, (uintptr_t)(m), (dir), 0, 0))
    for (int i = 0; i < N; i++) {
        const struct ko_case *c = &cases[i];
        const void *want = ebpf_map_lookup(kt, &k[i]);
        for (unsigned head = 32; head < 40; head++) {
            struct nanobpf_quic_cid kk;
            ko_frame(c, buf, head, &x, &kk);
            snprintf(what, sizeof what, "%s, frame at +%u: the lookup's value at its slot", c->name, head);
            x.conn = (uint32_t)slot[i] + 1;
            check("keys_of", want && KEYS_OF((uint64_t)c->dir, kt) == want, what);
        }
        ko_frame(c, buf, 35, &x, &flip);
        x.conn = (uint32_t)slot[i] + 1;
        snprintf(what, sizeof what, "%s: NULL for", c->name);
        check("keys_of", !KEYS_OF((uint64_t)(c->dir ^ 1), kt), what); /* the other direction: another slot */
        check("keys_of", !KEYS_OF(2, kt) && !KEYS_OF((uint64_t)c->dir, &other), what);
        x.conn = (uint32_t)slot[(i + 1) % N] + 1;
        check("keys_of", !KEYS_OF((uint64_t)c->dir, kt), what);
        x.conn = 0;
        check("keys_of", !KEYS_OF((uint64_t)c->dir, kt), what);
        x.conn = (uint32_t)slot[i] + 1;
        x.pn_off = 0;
        check("keys_of", !KEYS_OF((uint64_t)c->dir, kt), what);
        /* a byte of the key changed: the CID's last, or the peer's port and address */
        unsigned at[3], n_at = 0;
        if (c->cid_len) at[n_at++] = x.quic_off + (unsigned)c->cid_len;
        else {
            int peer_is_src = c->dir == NANOBPF_QUIC_DIR_OPEN;
            at[n_at++] = x.l4_off + (peer_is_src ? 1 : 3);
            at[n_at++] = x.l4_off + (peer_is_src ? 2 : 0);
            at[n_at++] = x.l3_off + (c->v6 ? (peer_is_src ? 23 : 39) : (peer_is_src ? 15 : 19));
        }
        for (unsigned a = 0; a < n_at; a++) {
            ko_frame(c, buf, 35, &x, &flip);
            x.conn = (uint32_t)slot[i] + 1;
            buf[35 + at[a]] ^= 0x10;
            snprintf(what, sizeof what, "%s: NULL with frame byte %u changed", c->name, at[a]);
            check("keys_of", !KEYS_OF((uint64_t)c->dir, kt), what);
        }
        /* the key's bytes cut off the frame's end, or before its start (bpf_xdp_adjust_head) */
        ko_frame(c, buf, 35, &x, &flip);
        x.conn = (uint32_t)slot[i] + 1;
        unsigned last = c->cid_len ? x.quic_off + 1 + (unsigned)c->cid_len : x.l4_off + 4;
        x.data_end = x.parse_data + last - 1;
        snprintf(what, sizeof what, "%s: NULL with the frame ending a byte before the key's end", c->name);
        check("keys_of", !KEYS_OF((uint64_t)c->dir, kt), what);
        x.data_end = x.parse_data + last;
        check("keys_of", KEYS_OF((uint64_t)c->dir, kt) == want, what);
        unsigned first = c->cid_len ? x.quic_off + 1 : x.l3_off;
        x.data = x.parse_data + first + 1;
        snprintf(what, sizeof what, "%s: NULL with the frame starting after the key's first byte", c->name);
        check("keys_of", !KEYS_OF((uint64_t)c->dir, kt), what);
    }
#undef KEYS_OF
    for (int i = 0; i < N; i++) {
        ebpf_map_delete(kt, &k[i]);
        flip = k[i];
        flip.dir ^= 1;
        ebpf_map_delete(kt, &flip);
    }
    ebpf_map_destroy(&other);
    ebpf_device_map_unbind(kt);
    done("keys_of_reads_the_key_from_the_frame", f);
}

/* bpf_quic_seal_conn (helpers.c): a frame to seal that PISA classified (ko_frame's, the shim still in it:
 * the helper counts from parse_data) is sealed in place by one call - the frame made to end 16 bytes
 * after its datagram, the UDP and IP lengths grown by the tag, the checksums left to the egress, its
 * packet number's claim word past it - and a second call with the same number is PN_REUSED; the next
 * key phase without next keys is NO_KEYS (both after the keys were found: KEYED), the fixed bit clear
 * NO_FIXED_BIT (before); a conn naming an OPEN entry, one with the slot's earlier generation (the entry
 * left and came back), a bare slot (no generation), a cid_len that is not PISA's or a frame PISA did
 * not parse (pn_off 0) leave the frame as it was (SLOW). The bytes sealed are the program's tests'
 * (tests/ebpf/test_quic_xdp.py: against xdp_quic and the reference). */
static void seal_conn_seals_or_says_why(void) {
    int f = failed;
    struct ebpf_map *pn, *kt;
    bind_device_maps(&pn, &kt);
    const struct ebpf_helper *h = ebpf_helper_find(NANOBPF_HELPER_QUIC_SEAL_CONN);
    check("seal_conn", pn && kt && h, "device maps bound, helper found");
    if (!pn || !kt || !h) return;
    static const struct ko_case cases[] = {
        {"seal, 8-byte CID behind the shim, IPv4", 0, 1, 8, NANOBPF_QUIC_DIR_SEAL},
        {"seal, zero-length CID by the destination, IPv6", 1, 1, 0, NANOBPF_QUIC_DIR_SEAL},
    };
    static uint64_t store[KO_BUF / 8];
    uint8_t *buf = (uint8_t *)store, keys[NANOBPF_QUIC_KEYS_SIZE] = {0};
    struct ebpf_xdp_buff x;
    struct nanobpf_quic_cid k[2], other, scratch;
    char what[160];
    for (int i = 0; i < 2; i++) {
        ko_frame(&cases[i], buf, 32, &x, &k[i]);
        check("seal_conn", ebpf_map_update(kt, &k[i], keys, NANOBPF_BPF_NOEXIST) == 0, "entry added");
    }
    other = k[0], other.dir = NANOBPF_QUIC_DIR_OPEN;
    check("seal_conn", ebpf_map_update(kt, &other, keys, NANOBPF_BPF_NOEXIST) == 0, "another entry added");
#define SEAL(cid_len) ((int64_t)h->fn((uintptr_t)&x, (uintptr_t)kt, (cid_len), 1504, 64))
#define DROP(why) (-1 - (int64_t)(why))
    for (int i = 0; i < 2; i++) {
        const struct ko_case *c = &cases[i];
        for (unsigned head = 32; head < 40; head += 3) {
            /* the datagram's lengths as a frame carries them; packet number 0x0102 (2 bytes) */
            ko_frame(c, buf, head, &x, &scratch);
            uint8_t *f = (uint8_t *)(uintptr_t)x.parse_data;
            unsigned end = (unsigned)(x.data_end - x.parse_data), ulen = end - x.l4_off, iplen = end - x.l3_off - (c->v6 ? 40 : 0);
            f[x.l4_off + 4] = (uint8_t)(ulen >> 8), f[x.l4_off + 5] = (uint8_t)ulen;
            f[x.l3_off + (c->v6 ? 4 : 2)] = (uint8_t)(iplen >> 8), f[x.l3_off + (c->v6 ? 5 : 3)] = (uint8_t)iplen;
            f[x.pn_off] = 1, f[x.pn_off + 1] = 2 + (uint8_t)head; /* a new number each time */
            uint64_t pn_want = 0x0102 + head;
            uint32_t before = ebpf_keytable_conn_of(&k[i]);
            /* the entry leaves and comes back (keys and claims anew): PISA's tag of before names nothing */
            check("seal_conn", ebpf_map_delete(kt, &k[i]) == 0 && ebpf_map_update(kt, &k[i], keys, NANOBPF_BPF_NOEXIST) == 0,
                  "entry deleted and added again");
            uint32_t conn = ebpf_keytable_conn_of(&k[i]);
            int64_t slot = ebpf_map_slot_of(kt, &k[i]);
            snprintf(what, sizeof what, "%s, frame at +%u", c->name, head);
            check("seal_conn", conn && before && conn != before && ebpf_conn_slot(conn) == (uint32_t)slot &&
                                   ebpf_keytable_by_conn(conn, NANOBPF_QUIC_DIR_SEAL) == ebpf_map_lookup(kt, &k[i]), what);
            const uint32_t stale[] = {ebpf_keytable_conn_of(&other), before, (uint32_t)slot + 1};
            for (unsigned j = 0; j < sizeof stale / sizeof *stale; j++) {
                x.conn = stale[j];
                check("seal_conn", SEAL((uint64_t)c->cid_len) == NANOBPF_QUIC_SEAL_SLOW, what); /* names no SEAL entry now */
            }
            x.conn = conn;
            check("seal_conn", SEAL((uint64_t)c->cid_len + 1) == NANOBPF_QUIC_SEAL_SLOW, what); /* not PISA's length */
            x.pn_off = 0;
            check("seal_conn", SEAL((uint64_t)c->cid_len) == NANOBPF_QUIC_SEAL_SLOW, what); /* not parsed */
            x.pn_off = x.quic_off + 1 + (uint32_t)c->cid_len;
            check("seal_conn", x.data_end == x.parse_data + end && !x.csum_offload, what); /* untouched so far */
            f[x.quic_off] &= (uint8_t)~0x40;
            check("seal_conn", SEAL((uint64_t)c->cid_len) == DROP(NANOBPF_QUIC_DROP_NO_FIXED_BIT), what);
            f[x.quic_off] |= 0x44; /* key phase 1: no next keys */
            check("seal_conn", SEAL((uint64_t)c->cid_len) == DROP(NANOBPF_QUIC_SEAL_KEYED | NANOBPF_QUIC_DROP_NO_KEYS), what);
            f[x.quic_off] &= (uint8_t)~0x04;
            x.data_end = x.parse_data + end;
            check("seal_conn", SEAL((uint64_t)c->cid_len) == 0, what);
            const uint64_t *claims = ebpf_map_lookup(pn, &k[i]);
            /* the datagram ends at the frame's end: its lengths are the egress's (pkt_comp.fix_len) */
            check("seal_conn", x.data_end == x.parse_data + end + 16 &&
                                   x.csum_offload == (EBPF_XDP_OFFLOAD_CSUM | EBPF_XDP_OFFLOAD_LEN) &&
                                   (unsigned)(f[x.l4_off + 4] << 8 | f[x.l4_off + 5]) == ulen &&
                                   (unsigned)(f[x.l3_off + (c->v6 ? 4 : 2)] << 8 | f[x.l3_off + (c->v6 ? 5 : 3)]) == iplen &&
                                   claims && claims[pn_want % NANOBPF_QUIC_PN_CLAIMS] == pn_want + 1,
                  what);
            /* the same number again (the frame as the host sent it) */
            ko_frame(c, buf, head, &x, &scratch);
            f[x.l4_off + 4] = (uint8_t)(ulen >> 8), f[x.l4_off + 5] = (uint8_t)ulen;
            f[x.pn_off] = 1, f[x.pn_off + 1] = 2 + (uint8_t)head;
            x.conn = conn;
            check("seal_conn", SEAL((uint64_t)c->cid_len) == DROP(NANOBPF_QUIC_SEAL_KEYED | NANOBPF_QUIC_DROP_PN_REUSED), what);
        }
    }
#undef SEAL
#undef DROP
    ebpf_map_delete(kt, &k[0]), ebpf_map_delete(kt, &k[1]), ebpf_map_delete(kt, &other);
    ebpf_device_map_unbind(kt);
    ebpf_device_map_unbind(pn);
    done("seal_conn_seals_or_says_why", f);
}

/* ebpf_keytable_place (a multiply instead of the divider) is the division for every offset of the key
 * table storage and a little past it: the place of a value's first byte, -1 for any other. */
static void keytable_place_is_the_division(void) {
    int f = failed;
    const uint64_t end = (uint64_t)NANOBPF_KEYTABLE_SLOTS * NANOBPF_QUIC_KEYS_SIZE;
    unsigned wrong = 0;
    for (uint64_t off = 0; off < end + 4 * NANOBPF_QUIC_KEYS_SIZE; off++) {
        int32_t want = off < end && off % NANOBPF_QUIC_KEYS_SIZE == 0 ? (int32_t)(off / NANOBPF_QUIC_KEYS_SIZE) : -1;
        wrong += ebpf_keytable_place(off) != want;
    }
    check("place", wrong == 0 && ebpf_keytable_place(UINT64_MAX - 79) == -1 && ebpf_keytable_place((uint64_t)-80) == -1,
          "every offset");
    done("keytable_place_is_the_division", f);
}

int main(void) {
    keytable_place_is_the_division();
    pn_map_follows_the_key_table_slots();
    keytable_slot_hint_is_only_a_hint();
    keys_of_reads_the_key_from_the_frame();
    seal_conn_seals_or_says_why();
    hash_keys_found_at_any_alignment();
    adjust_meta_limits_like_linux();
    prog_array_and_tail_call_limit();
    lru_evicts_the_least_recently_used();
    percpu_hash_keeps_a_copy_per_core();
    devmap_entries_are_ports();
    pinned_maps_are_shared_by_name();
    csum_diff_folds_like_linux();
    updates_keep_the_spin_lock();
    printf("%d/%d tests passed\n", total - (failed ? 1 : 0), total);
    return failed != 0;
}
