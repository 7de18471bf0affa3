/* Device load images (layout: hw/defs/ebpf.toml, docs/ebpf-abi.md): maps are created from the map
 * table, the program is copied, and after verification map references become addresses. */
#include <string.h>
#include "ebpf.h"

static int in_range(uint32_t off, uint32_t len, size_t size) {
    return off <= size && len <= size - off;
}

int ebpf_image_load(const void *image, size_t size, struct ebpf_prog *prog, struct ebpf_error *err) {
    struct nanobpf_image_header h;
    memset(prog, 0, sizeof *prog);
    if (size < sizeof h) return ebpf_fail(err, -1, "image: %lu bytes is shorter than its header", (unsigned long)size);
    memcpy(&h, image, sizeof h);
    if (h.magic != NANOBPF_IMAGE_MAGIC) return ebpf_fail(err, -1, "image: bad magic 0x%08x", h.magic);
    if (h.version != NANOBPF_IMAGE_VERSION)
        return ebpf_fail(err, -1, "image: version %u, this runtime reads version %u", h.version, NANOBPF_IMAGE_VERSION);
    if (h.header_size < sizeof h || h.total_size != size)
        return ebpf_fail(err, -1, "image: header says %u bytes, got %lu", h.total_size, (unsigned long)size);
    if (h.n_maps > NANOBPF_IMAGE_MAX_MAPS) return ebpf_fail(err, -1, "image: %u maps (at most %u)", h.n_maps, NANOBPF_IMAGE_MAX_MAPS);
    if (h.n_funcs > NANOBPF_IMAGE_MAX_FUNCS)
        return ebpf_fail(err, -1, "image: %u functions in the function table (at most %u)", h.n_funcs, NANOBPF_IMAGE_MAX_FUNCS);
    if (h.n_insns == 0 || h.n_insns > EBPF_MAX_INSNS)
        return ebpf_fail(err, -1, "image: %u instructions (1..%u)", h.n_insns, EBPF_MAX_INSNS);
    if (!in_range(h.maps_off, h.n_maps * (uint32_t)sizeof(struct nanobpf_image_map), size) ||
        !in_range(h.insns_off, h.n_insns * 8u, size) || !in_range(h.data_off, h.data_size, size) ||
        !in_range(h.funcs_off, h.n_funcs * (uint32_t)sizeof(struct nanobpf_image_func), size) || h.maps_off % 4 ||
        h.funcs_off % 4 || h.insns_off % 8)
        return ebpf_fail(err, -1, "image: a section lies outside the image or is misaligned");
    const uint8_t *base = image;
    memcpy(prog->name, h.prog_name, sizeof prog->name);
    prog->name[sizeof prog->name - 1] = 0;
    prog->n_insns = h.n_insns;
    prog->insns = ebpf_alloc(h.n_insns * sizeof(struct ebpf_insn));
    prog->maps = h.n_maps ? ebpf_alloc(h.n_maps * sizeof(struct ebpf_map *)) : NULL;
    prog->funcs = h.n_funcs ? ebpf_alloc(h.n_funcs * sizeof(struct nanobpf_image_func)) : NULL;
    if (!prog->insns || (h.n_maps && !prog->maps) || (h.n_funcs && !prog->funcs)) {
        ebpf_prog_free(prog);
        return ebpf_fail(err, -1, "image: out of memory");
    }
    memcpy(prog->insns, base + h.insns_off, h.n_insns * 8u);
    if (h.n_funcs) memcpy(prog->funcs, base + h.funcs_off, h.n_funcs * sizeof(struct nanobpf_image_func));
    prog->n_funcs = h.n_funcs; /* checked by the verifier */
    /* the programs bpf_tail_call may jump to: the attached one (index 0), then the function table's */
    prog->n_progs = 1;
    for (uint32_t k = 0; k < h.n_funcs; k++)
        if (prog->funcs[k].flags & NANOBPF_FUNC_PROGRAM) prog->prog_start[prog->n_progs++] = prog->funcs[k].start;
    for (uint32_t i = 0; i < h.n_maps; i++) {
        struct nanobpf_image_map im;
        memcpy(&im, base + h.maps_off + i * sizeof im, sizeof im);
        struct ebpf_map decl = {.type = im.type, .key_size = im.key_size, .value_size = im.value_size,
                                .max_entries = im.max_entries, .flags = im.flags, .spin_lock_off = im.spin_lock_off};
        memcpy(decl.name, im.name, sizeof decl.name);
        decl.name[sizeof decl.name - 1] = 0;
        struct ebpf_map *m;
        if (im.pinning > NANOBPF_PIN_BY_NAME) {
            ebpf_prog_free(prog);
            return ebpf_fail(err, -1, "image: map %s: pinning %u (0 or %u)", decl.name, im.pinning, NANOBPF_PIN_BY_NAME);
        }
        if (im.pinning && decl.type == NANOBPF_MAP_TYPE_PROG_ARRAY) { /* its values index this image's programs */
            ebpf_prog_free(prog);
            return ebpf_fail(err, -1, "image: map %s: a prog array cannot be pinned (its values are programs of one image)",
                             decl.name);
        }
        if (ebpf_device_map_named(decl.name) || im.pinning) {
            /* the key table or its packet-number map (the device's), or a pinned map: shared by name */
            m = ebpf_device_map_named(decl.name) ? ebpf_device_map_bind(&decl, err) : ebpf_pinned_map_bind(&decl, err);
            if (!m) {
                ebpf_prog_free(prog);
                return -1;
            }
        } else {
            if (!(m = ebpf_alloc(sizeof *m))) {
                ebpf_prog_free(prog);
                return ebpf_fail(err, -1, "image: out of memory");
            }
            *m = decl;
            if (ebpf_map_create(m, err)) {
                ebpf_free(m);
                ebpf_prog_free(prog);
                return -1;
            }
        }
        prog->maps[prog->n_maps++] = m;
        m->n_progs = prog->n_progs;
        if (im.init_size) {
            if (m->type != NANOBPF_MAP_TYPE_ARRAY || m->pinned_refs || im.init_size > m->value_size ||
                !in_range(im.init_off, im.init_size, h.data_size)) {
                /* the message first: freeing the program frees m (and its name) */
                ebpf_fail(err, -1, "image: map %s: bad initial value (%u bytes at %u)", m->name, im.init_size, im.init_off);
                ebpf_prog_free(prog);
                return -1;
            }
            memcpy(m->storage, base + h.data_off + im.init_off, im.init_size);
        }
    }
    return 0;
}

void ebpf_prog_free(struct ebpf_prog *prog) {
    for (uint32_t i = 0; i < prog->n_maps; i++) ebpf_map_release(prog->maps[i]);
    if (prog->jit_code) ebpf_jit_free(prog->jit_code, prog->jit_size);
    ebpf_free(prog->maps);
    ebpf_free(prog->funcs);
    ebpf_free(prog->insns);
    ebpf_free(prog->insn_flags);
    memset(prog, 0, sizeof *prog);
}

int ebpf_prog_resolve(struct ebpf_prog *prog, struct ebpf_error *err) {
    if (prog->resolved) return 0;
    for (uint32_t i = 0; i < prog->n_insns; i++) {
        struct ebpf_insn *in = &prog->insns[i];
        if (in->code != (EBPF_CLS_LD | EBPF_MODE_IMM | EBPF_SIZE_DW)) continue;
        if (i + 1 >= prog->n_insns) return ebpf_fail(err, (int)i, "ld_imm64 without its second slot");
        if (in->src == EBPF_PSEUDO_FUNC) { /* a callback: the interpreter and the JIT place it themselves */
            i++;
            continue;
        }
        if (in->src != 0) {
            int value = in->src == EBPF_PSEUDO_MAP_VALUE || in->src == EBPF_PSEUDO_MAP_IDX_VALUE;
            if (!value && in->src != EBPF_PSEUDO_MAP_FD && in->src != EBPF_PSEUDO_MAP_IDX)
                return ebpf_fail(err, (int)i, "ld_imm64 src %d not supported", in->src);
            if ((uint32_t)in->imm >= prog->n_maps)
                return ebpf_fail(err, (int)i, "ld_imm64 names map %d of %u", in->imm, prog->n_maps);
            struct ebpf_map *m = prog->maps[in->imm];
            uint64_t addr = (uint64_t)(uintptr_t)m;
            if (value) {
                uint32_t off = (uint32_t)in[1].imm;
                if (m->type != NANOBPF_MAP_TYPE_ARRAY || off >= m->value_size)
                    return ebpf_fail(err, (int)i, "ld_imm64 map value offset %u outside map %s", off, m->name);
                addr = (uint64_t)(uintptr_t)m->storage + off;
            }
            in->src = 0;
            in->imm = (int32_t)(uint32_t)addr;
            in[1].imm = (int32_t)(uint32_t)(addr >> 32);
        }
        i++;
    }
    prog->resolved = 1;
    for (uint32_t i = 0; prog->insn_flags && i < prog->n_insns; i++)
        if (prog->insn_flags[i] & EBPF_INSN_READS_META) prog->parse_in_meta = 1;
    return 0;
}

/* Why ebpf_xdp_exec refused a context (apart: the per-packet path then saves fewer registers). */
static __attribute__((noinline, cold)) int xdp_ctx_refused(const struct ebpf_xdp_buff *xdp, struct ebpf_error *err) {
    if (xdp->data_hard_start > xdp->data_meta || xdp->data_meta > xdp->data || xdp->data > xdp->data_end ||
        xdp->data_end > xdp->frame_end || xdp->data - xdp->data_meta > NANOBPF_XDP_META_MAX)
        return ebpf_fail(err, -1, "context: not data_hard_start <= data_meta <= data <= data_end <= frame_end with "
                         "data - data_meta <= %u (0x%llx 0x%llx 0x%llx 0x%llx 0x%llx)", NANOBPF_XDP_META_MAX,
                         (unsigned long long)xdp->data_hard_start, (unsigned long long)xdp->data_meta,
                         (unsigned long long)xdp->data, (unsigned long long)xdp->data_end,
                         (unsigned long long)xdp->frame_end);
    return ebpf_fail(err, -1, "context: parse result out of range (offsets %u %u %u %u, cid_len %u, conn %u)",
                     xdp->l3_off, xdp->l4_off, xdp->quic_off, xdp->pn_off, xdp->cid_len, xdp->conn);
}

/* A program that reads data_meta finds PISA's parse result there, where the headroom has room for it
 * (the verifier proved every metadata access against data, which stays where it is). */
static __attribute__((noinline)) void xdp_parse_in_meta(struct ebpf_xdp_buff *xdp) {
    struct nanobpf_xdp_meta m = {.l3_off = xdp->l3_off, .l4_off = xdp->l4_off, .quic_off = xdp->quic_off,
                                 .pn_off = xdp->pn_off, .cid_len = xdp->cid_len, .conn = xdp->conn};
    xdp->data_meta = xdp->data - sizeof m;
    memcpy((void *)(uintptr_t)xdp->data_meta, &m, sizeof m);
}

int ebpf_xdp_exec_general(const struct ebpf_prog *prog, struct ebpf_xdp_buff *xdp, int use_jit, uint64_t *action,
                          struct ebpf_error *err) {
    int rc = 0;
    *action = NANOBPF_XDP_ABORTED;
    if (err) err->insn = -1, err->msg[0] = 0;
    if (!ebpf_xdp_ctx_ok(xdp)) return xdp_ctx_refused(xdp, err);
    if (prog->parse_in_meta && xdp->data_meta == xdp->data &&
        xdp->data - xdp->data_hard_start >= sizeof(struct nanobpf_xdp_meta))
        xdp_parse_in_meta(xdp);
    ebpf_xdp_begin(prog, xdp);
    if (use_jit && prog->jit_code) *action = ebpf_jit_run(prog, (uint64_t)(uintptr_t)xdp, 0);
    else if ((rc = ebpf_interp(prog, (uint64_t)(uintptr_t)xdp, 0, action, err)) != 0) *action = NANOBPF_XDP_ABORTED;
    ebpf_current_xdp = NULL;
    ebpf_current_prog = NULL;
    return rc;
}

int ebpf_xdp_exec(const struct ebpf_prog *prog, struct ebpf_xdp_buff *xdp, int use_jit, uint64_t *action,
                  struct ebpf_error *err) {
    if (err || !use_jit || !ebpf_xdp_ctx_ok(xdp)) return ebpf_xdp_exec_general(prog, xdp, use_jit, action, err);
    return ebpf_xdp_exec_jit_ok(prog, xdp, action);
}

uint64_t ebpf_xdp_run(const struct ebpf_prog *prog, struct ebpf_xdp_buff *xdp, int use_jit, struct ebpf_error *err) {
    uint64_t action;
    ebpf_xdp_exec(prog, xdp, use_jit, &action, err);
    return action;
}
