/* The boot configuration (sw/python/nanobpf/bootcfg.py): map entries linked into the firmware image,
 * written into the built-in program's maps by the control core at boot, and device settings (names
 * starting with '@': "@sched", the core select's pkt.sched register; "@table", a PISA table word as
 * TABLE_SET writes it). Until the control plane runs on the device, this is how a firmware build
 * carries its keys and settings; key table entries also enter PISA's CID table, as with KEY_ADD. Every
 * entry must apply: a name no map has, a size that does not fit, a full map, an unknown or bad
 * setting stop the boot. */
#include <stdio.h>
#include <string.h>
#include "ctrl.h"
#include "dpu.h"
#include "nanobpf.h"

extern const uint8_t dpu_boot_config[], dpu_boot_config_end[];

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

/* A device setting: 0, or -1 after printing why. */
static int apply_setting(const char *name, const uint8_t *key, uint32_t klen, const uint8_t *value, uint32_t vlen) {
    (void)key;
    if (!strcmp(name, "@sched")) {
        uint32_t v = vlen == 4 ? le16(value) | le16(value + 2) << 16 : 0;
        uint32_t policy = (uint32_t)NANOBPF_GET(v, NANOBPF_PKT_SCHED_POLICY), bound = (uint32_t)NANOBPF_GET(v, NANOBPF_PKT_SCHED_BOUND);
        if (klen != 0 || vlen != 4 || v != (NANOBPF_PUT(NANOBPF_PKT_SCHED_POLICY, policy) | NANOBPF_PUT(NANOBPF_PKT_SCHED_BOUND, bound)) ||
            bound == 0)
            return printf("FAIL boot config: @sched takes no key and a 4-byte pkt.sched value with a bound of 1 or more\n"), -1;
        NB_REG64(NANOBPF_PKT_BASE + NANOBPF_PKT_SCHED_OFFSET) = v;
        return 0;
    }
    if (!strcmp(name, "@table")) { /* value: a table_msg, checked as TABLE_SET's */
        struct ctrl_reply r;
        if (klen != 0 || ctrl_table_msg(value, vlen, &r, 1))
            return printf("FAIL boot config: @table takes no key and a %u-byte table_msg: %.*s\n", NANOBPF_TABLE_MSG_SIZE,
                          klen ? 0 : (int)r.len, (const char *)r.body), -1;
        return 0;
    }
    return printf("FAIL boot config: unknown setting %s\n", name), -1;
}

int dpu_boot_config_apply(const struct ebpf_prog *prog, unsigned *applied) {
    const uint8_t *p = dpu_boot_config, *end = dpu_boot_config_end;
    *applied = 0;
    if (end - p < 8 || memcmp(p, "NBCF", 4)) return printf("FAIL boot config: no NBCF header\n"), -1;
    uint32_t count = le16(p + 4) | le16(p + 6) << 16;
    p += 8;
    for (uint32_t i = 0; i < count; i++) {
        if (end - p < 1 || end - p < 1 + p[0] + 4) return printf("FAIL boot config: entry %u truncated\n", (unsigned)i), -1;
        char name[NANOBPF_MAP_NAME_LEN];
        unsigned n = p[0];
        if (n == 0 || n >= sizeof name) return printf("FAIL boot config: entry %u: bad map name\n", (unsigned)i), -1;
        memcpy(name, p + 1, n);
        name[n] = 0;
        p += 1 + n;
        uint32_t klen = le16(p), vlen = le16(p + 2);
        p += 4;
        if ((size_t)(end - p) < klen + vlen) return printf("FAIL boot config: entry %u truncated\n", (unsigned)i), -1;
        if (name[0] == '@') {
            if (apply_setting(name, p, klen, p + klen, vlen)) return -1;
            p += klen + vlen;
            ++*applied;
            continue;
        }
        struct ebpf_map *m = NULL;
        for (uint32_t k = 0; k < prog->n_maps; k++)
            if (!strcmp(prog->maps[k]->name, name)) m = prog->maps[k];
        if (!m) return printf("FAIL boot config: the program has no map %s\n", name), -1;
        if (klen != m->key_size || vlen != m->value_size)
            return printf("FAIL boot config: map %s takes %u-byte keys and %u-byte values, not %u and %u\n", name,
                          (unsigned)m->key_size, (unsigned)m->value_size, (unsigned)klen, (unsigned)vlen), -1;
        if (ebpf_map_update(m, p, p + klen, 0)) return printf("FAIL boot config: map %s: update refused\n", name), -1;
        if (!strcmp(name, NANOBPF_KEYTABLE_MAP_NAME)) ctrl_keys_booted(p);
        p += klen + vlen;
        ++*applied;
    }
    if (p != end) return printf("FAIL boot config: %u bytes after the last entry\n", (unsigned)(end - p)), -1;
    return 0;
}
