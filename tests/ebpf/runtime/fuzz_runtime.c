/* Sanitised fuzzing of the host eBPF runtime (loader, verifier, interpreter, maps, helpers), built with
 * AddressSanitizer and UBSan by `make fuzz` (firmware/ebpf/Makefile, target fuzz). A deterministic,
 * seeded, self-driving harness (clang's libFuzzer runtime is not part of the toolchain here):
 *
 *   (a) device images: real images (the IMAGE arguments, nanobpf-load output) and images made here from
 *       generated programs, mutated (bit flips, interesting bytes, truncation, extension, splices and
 *       mutations aimed at the header counts/offsets/sizes, the map and function tables and the
 *       instructions), each copied into a buffer of exactly its size and given to ebpf_image_load; a
 *       loaded image is verified and, when accepted, resolved and run by the interpreter over random
 *       frames in buffers that end exactly at data_end (after random map updates);
 *   (b) random programs: fuzz_verifier.c's generator (packet-parsing-like XDP programs), with some
 *       instructions mutated, through the verifier and, when accepted, the interpreter on frames of
 *       0..96 bytes.
 *
 * A finding is a sanitizer report (the run stops; the death callback prints the summary and saves the
 * input), an accepted program that faults in the interpreter, or an accepted image that does not
 * resolve. Inputs that found something are written to the --out folder (an image: replay it with
 * --replay FILE; a program: printed, with the seed and execution number).
 *
 *   fuzz_runtime [--seconds S] [--runs N] [--seed N] [--out DIR] [--replay FILE] [--plant-bug] [IMAGE...]
 *
 * --plant-bug reads freed memory in the first image execution: a check that a sanitizer report ends the
 * run with the input saved, the summary printed and a non-zero exit status.
 * Stops after S seconds (default 60) or N executions, whichever comes first; prints
 * "fuzz: N executions (...), F findings" and exits 0 without findings, 1 with. */
#define FUZZ_VERIFIER_NO_MAIN
#include "fuzz_verifier.c"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>

#define MAX_SEEDS 64
#define MAX_IMAGE (1u << 20)

struct seed {
    uint8_t *b;
    size_t len;
    char name[64];
};
static struct seed seeds[MAX_SEEDS];
static uint32_t nseeds;

static struct {
    uint64_t executions, images, loaded, verified, image_runs, programs, findings;
    struct prog_counts prog;
} cnt;

static const char *out_dir = "build/ebpf/fuzz";
static FILE *report_to; /* the real standard output: stdout itself goes to /dev/null (trace_printk) */
static uint64_t base_seed = 1;
static double t_start;
/* what is running: for the death callback */
static const uint8_t *cur_image;
static size_t cur_len;
static int in_program;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void summary(void) {
    fprintf(report_to, "fuzz: %llu executions in %.1f s (seed %llu): %llu images (%llu loaded, %llu verified, %llu runs), "
           "%llu programs (%u accepted, %u runs); %llu findings\n",
           (unsigned long long)cnt.executions, now() - t_start, (unsigned long long)base_seed,
           (unsigned long long)cnt.images, (unsigned long long)cnt.loaded, (unsigned long long)cnt.verified,
           (unsigned long long)cnt.image_runs, (unsigned long long)cnt.programs, cnt.prog.accepted, cnt.prog.runs,
           (unsigned long long)cnt.findings);
    fflush(report_to);
}

/* Saves the image being run to the output folder. */
static void save_input(const char *why) {
    char path[512];
    if (in_program || !cur_image) {
        fprintf(stderr, "fuzz: finding (%s) in program execution %llu, seed %llu\n", why,
                (unsigned long long)cnt.executions, (unsigned long long)base_seed);
        return;
    }
    snprintf(path, sizeof path, "%s/finding-%llu-%llu.nbpf", out_dir, (unsigned long long)base_seed,
             (unsigned long long)cnt.executions);
    FILE *f = fopen(path, "wb");
    if (f && fwrite(cur_image, 1, cur_len, f) == cur_len && !fclose(f))
        fprintf(stderr, "fuzz: finding (%s): image saved to %s (replay: --replay %s)\n", why, path, path);
    else
        fprintf(stderr, "fuzz: finding (%s): cannot write %s: %s\n", why, path, strerror(errno));
}

static void on_death(void) {
    cnt.findings++;
    if (in_program) dump_prog();
    save_input("sanitizer report");
    summary();
}

static void finding(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void finding(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz: FINDING: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    cnt.findings++;
    save_input("see above");
}

/* ---- images ---- */
static uint32_t rd32(const uint8_t *b, size_t len, size_t off) {
    uint32_t v = 0;
    if (off + 4 <= len) memcpy(&v, b + off, 4);
    return v;
}
static void wr32(uint8_t *b, size_t len, size_t off, uint32_t v) {
    if (off + 4 <= len) memcpy(b + off, &v, 4);
}

/* An image of the generated program `prog[0..n)` with a one-entry array map (16-byte value), and with
 * `keytable` the key table and a hash map too; a third of them get an initial map value. */
static size_t make_image(uint8_t *b, int keytable) {
    struct nanobpf_image_header h = {0};
    uint32_t nm = keytable ? 3 : 1;
    h.magic = NANOBPF_IMAGE_MAGIC;
    h.version = NANOBPF_IMAGE_VERSION;
    h.header_size = sizeof h;
    h.n_maps = nm;
    h.maps_off = sizeof h;
    h.n_insns = n;
    h.insns_off = (uint32_t)(sizeof h + nm * sizeof(struct nanobpf_image_map));
    h.data_off = h.insns_off + n * 8;
    h.data_size = pick(3) == 0 ? 16 : 0;
    h.funcs_off = h.data_off + h.data_size;
    h.total_size = h.funcs_off;
    snprintf(h.prog_name, sizeof h.prog_name, "gen");
    struct nanobpf_image_map m[3];
    memset(m, 0, sizeof m);
    m[0] = (struct nanobpf_image_map){.type = NANOBPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 16, .max_entries = 1,
                                      .init_size = h.data_size};
    snprintf(m[0].name, sizeof m[0].name, "values");
    m[1] = (struct nanobpf_image_map){.type = NANOBPF_MAP_TYPE_HASH, .key_size = NANOBPF_QUIC_CID_SIZE,
                                      .value_size = NANOBPF_QUIC_KEYS_SIZE, .max_entries = 4};
    snprintf(m[1].name, sizeof m[1].name, "%s", NANOBPF_KEYTABLE_MAP_NAME);
    m[2] = (struct nanobpf_image_map){.type = NANOBPF_MAP_TYPE_HASH, .key_size = 8, .value_size = 8, .max_entries = 8};
    snprintf(m[2].name, sizeof m[2].name, "hash");
    memcpy(b, &h, sizeof h);
    memcpy(b + h.maps_off, m, nm * sizeof m[0]);
    memcpy(b + h.insns_off, prog, n * 8u);
    for (uint32_t k = 0; k < h.data_size; k++) b[h.data_off + k] = (uint8_t)rnd();
    return h.total_size;
}

static uint32_t interesting32(const uint8_t *b, size_t len, uint32_t old) {
    static const uint32_t v[] = {0, 1, 2, 3, 4, 7, 8, 16, 24, 36, 63, 64, 65, 80, 127, 128, 255, 256, 4095, 4096,
                                 4097, 0x7fff, 0x8000, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xfffffff8,
                                 0xfffffffc, 0xffffffff};
    switch (pick(6)) {
    case 0: return v[pick(sizeof v / sizeof v[0])];
    case 1: return (uint32_t)len + (uint32_t)range(-9, 9);
    case 2: return old + (uint32_t)range(-9, 9);
    case 3: return old * 2 + 1;
    case 4: return rd32(b, len, pick(20) * 4); /* another header field's value */
    default: return rnd();
    }
}

/* One mutation of the image in b (len bytes, cap available); returns the new length. */
static size_t mutate_once(uint8_t *b, size_t len, size_t cap) {
    uint32_t n_maps = rd32(b, len, 8), maps_off = rd32(b, len, 12), n_insns = rd32(b, len, 16),
             insns_off = rd32(b, len, 20), n_funcs = rd32(b, len, 40), funcs_off = rd32(b, len, 44);
    switch (pick(12)) {
    case 0: /* bit flip */
        if (len) b[pick((uint32_t)len)] ^= (uint8_t)(1u << pick(8));
        break;
    case 1: { /* interesting byte */
        static const uint8_t v[] = {0, 1, 0x7f, 0x80, 0xff, 0x10, 0x20, 0x40};
        if (len) b[pick((uint32_t)len)] = v[pick(sizeof v)];
        break;
    }
    case 2: { /* header field (version/header_size are one u32 at 4) */
        size_t off = 4 + 4 * pick(12);
        wr32(b, len, off, interesting32(b, len, rd32(b, len, off)));
        break;
    }
    case 3: /* map table field */
        if (n_maps && n_maps <= NANOBPF_IMAGE_MAX_MAPS) {
            size_t off = (size_t)maps_off + pick(n_maps) * sizeof(struct nanobpf_image_map) + 4 * pick(8);
            wr32(b, len, off, interesting32(b, len, rd32(b, len, off)));
        }
        break;
    case 4: /* function table field */
        if (n_funcs && n_funcs <= NANOBPF_IMAGE_MAX_FUNCS) {
            size_t e = (size_t)funcs_off + pick(n_funcs) * sizeof(struct nanobpf_image_func);
            if (pick(2)) {
                size_t off = e + 4 * pick(9);
                wr32(b, len, off, interesting32(b, len, rd32(b, len, off)));
            } else if (e + 16 <= len) {
                b[e + 8 + pick(8)] = (uint8_t)pick(6); /* ret, n_args, arg types */
            }
        }
        break;
    case 5: case 6: /* instruction fields (copied out: the table may be misaligned in a mutated image) */
        if (n_insns && (size_t)insns_off + 8 <= len) {
            uint32_t avail = n_insns < (len - insns_off) / 8 ? n_insns : (uint32_t)((len - insns_off) / 8);
            for (uint32_t k = 0, m = 1 + pick(2); k < m; k++) {
                struct ebpf_insn in, other;
                size_t at = (size_t)insns_off + 8 * pick(avail);
                memcpy(&in, b + at, 8);
                memcpy(&other, b + insns_off + 8 * pick(avail), 8);
                mutate_insn(&in, &other);
                memcpy(b + at, &in, 8);
            }
        }
        break;
    case 7: /* truncate */
        if (len) len = pick(4) ? len - pick(len < 64 ? (uint32_t)len : 64) : pick((uint32_t)len);
        break;
    case 8: { /* extend with random bytes */
        uint32_t k = 1 + pick(64);
        while (k-- && len < cap) b[len++] = (uint8_t)rnd();
        break;
    }
    case 9: /* copy a chunk within the image */
        if (len > 8) {
            uint32_t k = 1 + pick(32), from = pick((uint32_t)len), to = pick((uint32_t)len);
            if (from + k > len) k = (uint32_t)len - from;
            if (to + k > len) k = (uint32_t)len - to;
            memmove(b + to, b + from, k);
        }
        break;
    case 10: /* splice a chunk of another seed */
        if (nseeds && len) {
            const struct seed *o = &seeds[pick(nseeds)];
            uint32_t k = 1 + pick(64), from = pick((uint32_t)o->len), to = pick((uint32_t)len);
            if (from + k > o->len) k = (uint32_t)o->len - from;
            if (to + k > len) k = (uint32_t)len - to;
            memcpy(b + to, o->b + from, k);
        }
        break;
    default: /* a count against its table: one more or one less entry */
        switch (pick(3)) {
        case 0: wr32(b, len, 8, n_maps + (uint32_t)range(-1, 1)); break;
        case 1: wr32(b, len, 16, n_insns + (uint32_t)range(-1, 1)); break;
        default: wr32(b, len, 40, n_funcs + (uint32_t)range(-1, 1)); break;
        }
        break;
    }
    return len;
}

/* Random map contents: updates, lookups, deletes and key walks. */
static void touch_maps(struct ebpf_prog *p) {
    uint8_t key[512], val[1024];
    for (uint32_t i = 0; i < p->n_maps; i++) {
        struct ebpf_map *m = p->maps[i];
        if (m->key_size > sizeof key || m->value_size > sizeof val || pick(2)) continue;
        for (uint32_t r = 0, k = 1 + pick(4); r < k; r++) {
            for (uint32_t j = 0; j < m->key_size; j++) key[j] = (uint8_t)(pick(4) ? 0 : rnd());
            if (m->type != NANOBPF_MAP_TYPE_HASH) memset(key, 0, 4), key[0] = (uint8_t)pick(3);
            for (uint32_t j = 0; j < m->value_size; j++) val[j] = (uint8_t)rnd();
            switch (pick(5)) {
            case 0: ebpf_map_delete(m, key); break;
            case 1: ebpf_map_lookup(m, key); break;
            case 2: ebpf_map_get_next_key(m, pick(2) ? key : NULL, val); break;
            default: ebpf_map_update(m, key, val, pick(3)); break;
            }
            ebpf_map_slot_of(m, key);
        }
    }
}

/* A frame: random bytes, often starting like Ethernet + IPv4/IPv6 + UDP towards 443/4433 and a QUIC
 * first byte, so the parsing programs get past their first checks. */
static void fill_frame(uint8_t *d, uint32_t len) {
    static const uint8_t hdr4[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00, 0x45, 0, 0, 0, 0, 0, 0x40, 0,
                                   64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0x01, 0xbb, 0, 0, 0, 0};
    for (uint32_t k = 0; k < len; k++) d[k] = (uint8_t)rnd();
    if (pick(3)) {
        uint32_t k = len < sizeof hdr4 ? len : (uint32_t)sizeof hdr4;
        memcpy(d, hdr4, k);
        if (len > 16) d[16] = (uint8_t)((len - 14) >> 8), d[17] = (uint8_t)(len - 14);
        if (len > 38 && pick(2)) d[36] = 0x11, d[37] = 0x51; /* port 4433 */
        if (len > 42) d[42] = pick(2) ? 0x40 | (uint8_t)pick(64) : 0xc0 | (uint8_t)pick(64);
    }
}

/* Load, verify, resolve and run one image (b, exactly len bytes). */
static void exec_image(const uint8_t *b, size_t len) {
    struct ebpf_prog p;
    struct ebpf_error err = {-1, ""};
    cnt.images++;
    if (ebpf_image_load(b, len, &p, &err)) {
        ebpf_prog_free(&p); /* a failed load leaves nothing allocated: freeing again is harmless */
        return;
    }
    cnt.loaded++;
    struct ebpf_verify_opts o = {.max_processed = 300000};
    if (ebpf_verify(&p, &o, &err)) {
        ebpf_prog_free(&p);
        return;
    }
    cnt.verified++;
    if (ebpf_prog_resolve(&p, &err)) {
        finding("accepted image does not resolve: insn %d: %s", err.insn, err.msg);
        ebpf_prog_free(&p);
        return;
    }
    for (uint32_t r = 0, runs = 1 + pick(4); r < runs; r++) {
        touch_maps(&p);
        uint32_t flen = pick(4) ? pick(200) : pick(1600), head = pick(2) ? 0 : 1 + pick(256), tail = pick(2) ? 0 : pick(256);
        uint8_t *buf = malloc(head + flen + tail + 1);
        fill_frame(buf + head, flen);
        for (uint32_t k = 0; k < head; k++) buf[k] = (uint8_t)rnd();
        struct ebpf_xdp_buff x = {0};
        x.data_hard_start = (uint64_t)(uintptr_t)buf;
        x.data = x.data_meta = (uint64_t)(uintptr_t)(buf + head);
        x.data_end = x.data + flen;
        x.frame_end = x.data_end + tail;
        x.ingress_ifindex = pick(4);
        memset(&err, 0, sizeof err);
        ebpf_xdp_run(&p, &x, 0, &err);
        cnt.image_runs++;
        free(buf);
        if (err.msg[0]) {
            finding("accepted image faulted (frame of %u bytes): insn %d: %s", flen, err.insn, err.msg);
            break;
        }
    }
    ebpf_prog_free(&p);
}

static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *b = malloc(MAX_IMAGE);
    *len = b ? fread(b, 1, MAX_IMAGE, f) : 0;
    fclose(f);
    return b;
}

static void add_seed(uint8_t *b, size_t len, const char *name) {
    if (nseeds == MAX_SEEDS || !len) {
        free(b);
        return;
    }
    seeds[nseeds].b = b;
    seeds[nseeds].len = len;
    snprintf(seeds[nseeds].name, sizeof seeds[nseeds].name, "%s", name);
    nseeds++;
}

int main(int argc, char **argv) {
    double seconds = 60;
    uint64_t runs = 0;
    const char *replay = NULL;
    int plant_bug = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--seconds") && a + 1 < argc) seconds = strtod(argv[++a], NULL);
        else if (!strcmp(argv[a], "--runs") && a + 1 < argc) runs = strtoull(argv[++a], NULL, 0);
        else if (!strcmp(argv[a], "--seed") && a + 1 < argc) base_seed = strtoull(argv[++a], NULL, 0);
        else if (!strcmp(argv[a], "--out") && a + 1 < argc) out_dir = argv[++a];
        else if (!strcmp(argv[a], "--replay") && a + 1 < argc) replay = argv[++a];
        else if (!strcmp(argv[a], "--plant-bug")) plant_bug = 1;
        else if (argv[a][0] == '-') {
            fprintf(stderr, "usage: fuzz_runtime [--seconds S] [--runs N] [--seed N] [--out DIR] [--replay FILE] [--plant-bug] "
                            "[IMAGE...]\n");
            return 2;
        } else {
            size_t len;
            uint8_t *b = read_file(argv[a], &len);
            if (!b) {
                fprintf(stderr, "fuzz: %s: %s\n", argv[a], strerror(errno));
                return 2;
            }
            const char *base = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
            add_seed(b, len, base);
        }
    }
    /* the programs' trace_printk lines (host console: stdout) are not wanted here */
    fflush(stdout);
    int keep = dup(1), null_fd = open("/dev/null", O_WRONLY);
    report_to = keep >= 0 ? fdopen(keep, "w") : NULL;
    if (!report_to) report_to = stderr;
    else if (null_fd >= 0) dup2(null_fd, 1);
    if (null_fd >= 0) close(null_fd);
    t_start = now();
    rng_state = base_seed * 0x9e3779b97f4a7c15ull + 1;
#ifdef HAVE_SANITIZER
    __sanitizer_set_death_callback(on_death);
#endif
    if (replay) {
        size_t len;
        uint8_t *b = read_file(replay, &len);
        if (!b) return fprintf(stderr, "fuzz: %s: %s\n", replay, strerror(errno)), 2;
        uint8_t *exact = malloc(len ? len : 1);
        memcpy(exact, b, len);
        cur_image = exact, cur_len = len;
        exec_image(exact, len);
        cnt.executions++;
        free(exact);
        free(b);
        summary();
        return cnt.findings != 0;
    }
    uint32_t real = nseeds;
    /* images of generated programs: plain and with the key table */
    for (uint32_t k = 0; k < 8 && nseeds < MAX_SEEDS; k++) {
        gen();
        uint8_t *b = malloc(MAX_IMAGE);
        char name[32];
        snprintf(name, sizeof name, "generated-%u", k);
        add_seed(b, make_image(b, k & 1), name);
    }
    fprintf(report_to, "fuzz: %u seed images (%u given", nseeds, real);
    for (uint32_t k = 0; k < real; k++) fprintf(report_to, "%s%s", k ? ", " : ": ", seeds[k].name);
    fprintf(report_to, "), %.0f s", seconds);
    if (runs) fprintf(report_to, " or %llu executions", (unsigned long long)runs);
    fprintf(report_to, " at most\n");
    fflush(report_to);
    /* every seed once as it is */
    for (uint32_t k = 0; k < nseeds; k++) {
        uint8_t *exact = malloc(seeds[k].len);
        memcpy(exact, seeds[k].b, seeds[k].len);
        cur_image = exact, cur_len = seeds[k].len;
        exec_image(exact, seeds[k].len);
        cur_image = NULL;
        free(exact);
        cnt.executions++;
    }
    uint8_t *work = malloc(MAX_IMAGE + 64);
    while (!cnt.findings && (!runs || cnt.executions < runs) && now() - t_start < seconds) {
        if (pick(3) == 0) { /* (b) a random program */
            in_program = 1;
            struct prog_counts before = cnt.prog;
            int rc = program_iteration((uint32_t)cnt.executions, pick(2) ? 0 : 1 + pick(3), &cnt.prog);
            in_program = 0;
            cnt.programs += cnt.prog.programs - before.programs;
            if (rc == 1) cnt.findings++, fprintf(stderr, "fuzz: FINDING in program execution %llu (seed %llu)\n",
                                                 (unsigned long long)cnt.executions, (unsigned long long)base_seed);
            else if (rc) return rc;
        } else { /* (a) a mutated image */
            const struct seed *s = &seeds[pick(nseeds)];
            size_t len = s->len;
            memcpy(work, s->b, len);
            for (uint32_t k = 0, m = 1 + pick(pick(4) ? 3 : 12); k < m; k++) len = mutate_once(work, len, MAX_IMAGE);
            if (pick(8)) wr32(work, len, 32, (uint32_t)len); /* total_size matches, so the checks go further */
            uint8_t *exact = malloc(len ? len : 1);
            memcpy(exact, work, len);
            cur_image = exact, cur_len = len;
            if (plant_bug) { /* a read of freed memory: the sanitizer must report it */
                uint8_t *volatile freed = malloc(8);
                free(freed);
                cnt.images += freed[0];
            }
            exec_image(exact, len);
            cur_image = NULL;
            free(exact);
        }
        cnt.executions++;
    }
    free(work);
    for (uint32_t k = 0; k < nseeds; k++) free(seeds[k].b);
    summary();
    return cnt.findings != 0;
}
