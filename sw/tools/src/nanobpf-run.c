/* nanobpf-run: run one eBPF program with the NanoBPF runtime and print r0 in hex.
 *
 * The interface follows the conformance plugins of uBPF and PREVAIL, so external suites
 * (bpf_conformance) can drive it: the program as hex bytes on standard input, the memory contents as
 * hex in the first argument, r0 printed in hex on exit; r1 points at the memory and r2 holds its size.
 * --jit runs the RV64 JIT: natively on RISC-V, else by re-executing the RV64 build of this tool under
 * qemu-riscv64. --image runs a device image (nanobpf-load output) as an XDP program: verified,
 * resolved, then run with the memory as the packet. --image with --batch keeps the program loaded and
 * runs a script of map updates, lookups, packets and event drains (one result line per command): the
 * device runtime as a test oracle for whole packet flows. --serve (host builds) adds the device model's
 * native data path to --batch: the frames of two ports through the program in C (model_serve.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef __riscv
#include <libgen.h>
#include <limits.h>
#include <unistd.h>
#endif
#include "ebpf.h"
#ifndef __riscv
#include "model_serve.h"
#endif

static const char usage[] =
    "usage: nanobpf-run [options] [MEMORY-HEX]\n"
    "Run an eBPF program and print r0 in hex (uBPF/PREVAIL conformance plugin convention).\n"
    "The program is read as hex bytes from standard input unless --program or --image is given.\n"
    "  --interp          run with the interpreter (default)\n"
    "  --jit             compile to RV64 and run (under qemu-riscv64 on a non-RISC-V host)\n"
    "  --rvc --zba --zbb JIT extensions (compressed, Zba, Zbb)\n"
    "  --program FILE    raw program bytes (8 per instruction) from FILE instead of stdin\n"
    "  --image FILE      a device image: verify it and run it as XDP over MEMORY (the packet)\n"
    "  --verify          verify a raw program as XDP first (r1 is then an xdp_md over MEMORY)\n"
    "  --headroom N      bytes before the frame in its buffer (default 256; odd values test alignment)\n"
    "  --check           only verify (raw program or --image) and print 'accepted' or the error\n"
    "  --write-record F  with --image: verify, write the verification record to F (firmware images carry\n"
    "                    it so the device need not verify the program again) and stop\n"
    "  --record F        with --image: apply the record F instead of verifying (refused if it is not\n"
    "                    this image's), then run as usual\n"
    "  --batch FILE      with --image: run the commands of FILE ('-': standard input), one per line,\n"
    "                    printing one result line each (flushed, so a driver can talk to it):\n"
    "                      update MAP KEY VALUE [FLAGS] -> ok | error MSG (hex; FLAGS 0 any, 1 noexist,\n"
    "                                            2 exist; per-CPU maps: every CPU)\n"
    "                      lookup MAP KEY        -> value HEX | none\n"
    "                      delete MAP KEY        -> ok | none | error MSG\n"
    "                      next MAP [KEY]        -> key HEX | none   (the key after KEY, or the first)\n"
    "                      slot MAP KEY          -> slot N | none   (a hash map's slot of KEY; the key table's\n"
    "                                            entry: slot N conn C, C PISA's connection for it, PARSE's CONN)\n"
    "                      info                  -> info INSNS MAPS   (the program was verified)\n"
    "                      events MAP [MAX [BYTES]] -> events LOST PENDING [INDEX:HEX ...]\n"
    "                                            (drain an event map, RINGBUF or PERF_EVENT_ARRAY: its oldest\n"
    "                                            records, at most MAX (0: no limit) and while their lengths\n"
    "                                            plus 8 each stay within BYTES; LOST: records dropped since\n"
    "                                            the last events, PENDING: records left)\n"
    "                      run IFINDEX FRAME [PARSE] -> result ACTION OUT-HEX REDIRECT-IFINDEX META-LEN CSUM LEN\n"
    "                      (OUT starts at data_meta, as Linux's test run returns it: META-LEN bytes of\n"
    "                      metadata (bpf_xdp_adjust_meta), then the frame; CSUM 1: the program\n"
    "                      left its checksums to the egress, bpf_xdp_csum_offload; LEN 1: its IP and\n"
    "                      UDP lengths too, set from the frame's end, as the one-call QUIC helpers do)\n"
    "                    (PARSE: what PISA parsed, the context fields past xdp_md, as\n"
    "                     L3_OFF,L4_OFF,QUIC_OFF,PN_OFF,CID_LEN,CONN; without it all 0)\n"
    "                    (MAP by name; the frame gets --headroom bytes before it and 256 after)\n"
    "  --serve H,N,UP    with --batch -: also be the device model's data path (nanobpf.devmodel fast=True,\n"
    "                    docs/control.md): frames read from file descriptor H (host port) and N (network\n"
    "                    port; -1: none) run the program and leave as DeviceModel forwards them without\n"
    "                    PISA; host control frames go to the SOCK_SEQPACKET socket UP as [ifindex][frame],\n"
    "                    the ports then wait for 'resume'. Starts waiting. Two more commands:\n"
    "                      resume                -> ok   (read the ports)\n"
    "                      counters              -> counters V0 .. V26 EGRESS_DROP (by device counter id)\n"
    "  --max-frame N     with --serve: the egress's longest frame (PISA params.max_frame; default 1522)\n"
    "  --stats-map NAME  with --serve: the program's per-CPU counters (default quic_stats)\n"
    "  --dump-jit FILE   write the JIT's RV64 code to FILE (raw bytes; objdump -b binary -m riscv:rv64 -D)\n"
    "  --stats           print the JIT's RV64 instructions per eBPF instruction class and the map\n"
    "                    lookups it compiles inline and the accesses it tests for alignment,\n"
    "                    do not run\n"
    "  -h, --help        this help\n"
    "Exit status: 0 ran, 1 program rejected or faulted, 2 usage or input error.\n";

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Hex bytes with optional whitespace and 0x prefixes; returns bytes or -1. */
static long parse_hex(const char *s, uint8_t **out) {
    size_t cap = strlen(s) / 2 + 1, n = 0;
    uint8_t *b = malloc(cap);
    int hi = -1;
    for (; b && *s; s++) {
        if (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r' || *s == ',') continue;
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && hi < 0) {
            s++;
            continue;
        }
        int v = hexval(*s);
        if (v < 0) {
            free(b);
            return -1;
        }
        if (hi < 0) hi = v;
        else b[n++] = (uint8_t)(hi << 4 | v), hi = -1;
    }
    if (!b || hi >= 0) {
        free(b);
        return -1;
    }
    *out = b;
    return (long)n;
}

static char *read_all(FILE *f, size_t *len) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
    }
    if (buf) buf[n] = 0;
    *len = n;
    return buf;
}

/* The whole file at path, or NULL after saying why. */
static char *read_path(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "nanobpf-run: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *buf = read_all(f, len);
    fclose(f);
    if (!buf) fprintf(stderr, "nanobpf-run: %s: cannot read it\n", path);
    return buf;
}

static int die(int code, const char *what, const struct ebpf_error *err) {
    if (err && err->insn >= 0) fprintf(stderr, "nanobpf-run: %s: insn %d: %s\n", what, err->insn, err->msg);
    else fprintf(stderr, "nanobpf-run: %s: %s\n", what, err ? err->msg : "");
    return code;
}

static struct ebpf_map *map_named(const struct ebpf_prog *prog, const char *name) {
    for (uint32_t i = 0; i < prog->n_maps; i++)
        if (!strcmp(prog->maps[i]->name, name)) return prog->maps[i];
    return NULL;
}

static void print_hex(const uint8_t *b, size_t n) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) putchar(digits[b[i] >> 4]), putchar(digits[b[i] & 15]);
}

static int serving; /* --serve: the model_serve commands too */

/* One --batch command (line, NUL-terminated, modified); prints its result line. */
static void batch_command(struct ebpf_prog *prog, char *line, int jit, long headroom) {
    char *argv[6] = {0};
    int argc = 0;
    for (char *t = strtok(line, " \t\r\n"); t && argc < 6; t = strtok(NULL, " \t\r\n")) argv[argc++] = t;
    if (!argc || argv[0][0] == '#') return;
    uint8_t *key = NULL, *val = NULL;
    long klen = -1, vlen = -1;
    if (!strcmp(argv[0], "info")) {
        if (argc != 1) printf("error info takes no arguments\n");
        else printf("info %u %u\n", prog->n_insns, prog->n_maps);
    } else if (!strcmp(argv[0], "delete") || !strcmp(argv[0], "next")) {
        int del = argv[0][0] == 'd';
        struct ebpf_map *m = argc > 1 ? map_named(prog, argv[1]) : NULL;
        if (del ? argc != 3 : argc != 2 && argc != 3) {
            printf("error %s takes MAP %s\n", argv[0], del ? "KEY" : "[KEY]");
        } else if (!m) {
            printf("error no map named '%s'\n", argv[1]);
        } else if (argc == 3 && (klen = parse_hex(argv[2], &key)) != (long)m->key_size) {
            if (klen < 0) printf("error map %s: the key is not hex bytes\n", m->name);
            else printf("error map %s: key of %ld bytes, expected %u\n", m->name, klen, m->key_size);
        } else if (del) {
            int rc = ebpf_map_delete(m, key);
            if (rc == -ENOENT) printf("none\n");
            else if (rc) printf("error map %s: delete failed (%d%s)\n", m->name, rc,
                                rc == -EINVAL ? ": array elements cannot be deleted" : "");
            else printf("ok\n");
        } else {
            uint8_t *next = malloc(m->key_size);
            if (next && ebpf_map_get_next_key(m, key, next) == 0) {
                printf("key ");
                print_hex(next, m->key_size);
                putchar('\n');
            } else {
                printf("none\n");
            }
            free(next);
        }
    } else if (!strcmp(argv[0], "update") || !strcmp(argv[0], "lookup")) {
        int upd = argv[0][0] == 'u';
        struct ebpf_map *m = argc > 1 ? map_named(prog, argv[1]) : NULL;
        char *endf = NULL;
        unsigned long flags = upd && argc == 5 ? strtoul(argv[4], &endf, 0) : 0;
        if (upd ? argc != 4 && argc != 5 : argc != 3) {
            printf("error %s takes MAP KEY%s\n", argv[0], upd ? " VALUE [FLAGS]" : "");
        } else if (endf && (*endf || flags > 2)) {
            printf("error update: FLAGS is 0 (any), 1 (noexist) or 2 (exist)\n");
        } else if (!m) {
            printf("error no map named '%s'\n", argv[1]);
        } else if ((klen = parse_hex(argv[2], &key)) != (long)m->key_size) {
            if (klen < 0) printf("error map %s: the key is not hex bytes\n", m->name);
            else printf("error map %s: key of %ld bytes, expected %u\n", m->name, klen, m->key_size);
        } else if (upd && (vlen = parse_hex(argv[3], &val)) != (long)m->value_size) {
            if (vlen < 0) printf("error map %s: the value is not hex bytes\n", m->name);
            else printf("error map %s: value of %ld bytes, expected %u\n", m->name, vlen, m->value_size);
        } else if (upd) {
            int rc = ebpf_map_update(m, key, val, flags);
            /* per-CPU maps: the same value in every CPU's copy (the update above wrote this CPU's) */
            for (uint32_t c = 0; !rc && ebpf_map_is_percpu(m) && c < m->n_cpus; c++)
                memcpy(ebpf_map_value(m, key, c), val, m->value_size);
            if (rc) printf("error map %s: update failed (%d)\n", m->name, rc);
            else printf("ok\n");
        } else {
            const uint8_t *v = ebpf_map_value(m, key, 0);
            if (!v) {
                printf("none\n");
            } else {
                printf("value ");
                print_hex(v, m->value_size);
                putchar('\n');
            }
        }
    } else if (!strcmp(argv[0], "slot")) {
        struct ebpf_map *m = argc > 1 ? map_named(prog, argv[1]) : NULL;
        if (argc != 3) {
            printf("error slot takes MAP KEY\n");
        } else if (!m) {
            printf("error no map named '%s'\n", argv[1]);
        } else if ((klen = parse_hex(argv[2], &key)) != (long)m->key_size) {
            if (klen < 0) printf("error map %s: the key is not hex bytes\n", m->name);
            else printf("error map %s: key of %ld bytes, expected %u\n", m->name, klen, m->key_size);
        } else {
            int64_t slot = ebpf_map_slot_of(m, key);
            if (slot < 0) printf("none\n");
            else if (ebpf_map_is_keytable(m)) printf("slot %lld conn %u\n", (long long)slot, ebpf_keytable_conn_of(key));
            else printf("slot %lld\n", (long long)slot);
        }
    } else if (!strcmp(argv[0], "events")) {
        struct ebpf_map *m = argc > 1 ? map_named(prog, argv[1]) : NULL;
        char *e1 = NULL, *e2 = NULL;
        unsigned long max = argc > 2 ? strtoul(argv[2], &e1, 0) : 0, bytes = argc > 3 ? strtoul(argv[3], &e2, 0) : ~0ul;
        if (argc < 2 || argc > 4 || (e1 && *e1) || (e2 && *e2)) {
            printf("error events takes MAP [MAX [BYTES]]\n");
        } else if (!m) {
            printf("error no map named '%s'\n", argv[1]);
        } else if (!ebpf_map_is_event(m)) {
            printf("error map %s is not an event map (RINGBUF, PERF_EVENT_ARRAY)\n", m->name);
        } else {
            uint8_t data[NANOBPF_EVENT_MAX];
            uint32_t index, lost = ebpf_event_take_lost(m);
            unsigned long taken = 0, used = 0, cap = bytes < (1ul << 20) ? bytes : 1ul << 20;
            char *line = malloc(2 * (size_t)cap + 64), *o = line; /* " INDEX:" + 2 digits a byte < 2 x (8 + len) */
            int len;
            /* as the device's EVENTS: whole records, oldest first, while they fit */
            while (line && (!max || taken < max) && (len = ebpf_event_peek(m, data, &index)) >= 0 &&
                   used + NANOBPF_EVENT_REC_HDR + (unsigned long)len <= cap) {
                o += sprintf(o, " %u:", index);
                for (int i = 0; i < len; i++) o += sprintf(o, "%02x", data[i]);
                used += NANOBPF_EVENT_REC_HDR + (unsigned long)len;
                taken++;
                ebpf_event_pop(m);
            }
            if (line) {
                *o = 0;
                printf("events %u %u%s\n", lost, ebpf_event_pending(m), line);
            } else {
                printf("error out of memory\n");
            }
            free(line);
        }
    } else if (!strcmp(argv[0], "run")) {
        char *endp = NULL;
        unsigned long ifindex = argc == 3 || argc == 4 ? strtoul(argv[1], &endp, 0) : 0;
        long n = argc == 3 || argc == 4 ? parse_hex(argv[2], &val) : -1;
        unsigned long parse[6] = {0};
        int parse_ok = 1;
        if (argc == 4) { /* six numbers, comma-separated, each below 2^32 (ebpf_xdp_exec checks the ranges) */
            const char *s = argv[3];
            for (int k = 0; k < 6 && parse_ok; k++) {
                char *e = NULL;
                parse[k] = strtoul(s, &e, 0);
                parse_ok = e != s && parse[k] <= UINT32_MAX && (k < 5 ? *e == ',' : *e == 0);
                s = e + 1;
            }
        }
        if ((argc != 3 && argc != 4) || !endp || *endp || ifindex > UINT32_MAX) {
            printf("error run takes IFINDEX FRAME [L3_OFF,L4_OFF,QUIC_OFF,PN_OFF,CID_LEN,CONN]\n");
        } else if (!parse_ok) {
            printf("error PARSE is six comma-separated numbers: L3_OFF,L4_OFF,QUIC_OFF,PN_OFF,CID_LEN,CONN\n");
        } else if (n < 0) {
            printf("error the frame is not hex bytes\n");
        } else {
            uint8_t *buf = calloc(1, (size_t)(n + headroom + 256)), *data = buf + headroom;
            if (!buf) {
                printf("error out of memory for a frame of %ld bytes\n", n);
                free(val);
                fflush(stdout);
                return;
            }
            memcpy(data, val, (size_t)n);
            struct ebpf_xdp_buff xdp = {.data = (uintptr_t)data, .data_end = (uintptr_t)(data + n),
                                        .data_meta = (uintptr_t)data, .data_hard_start = (uintptr_t)buf,
                                        .frame_end = (uintptr_t)(data + n + 256), .ingress_ifindex = (uint32_t)ifindex,
                                        .l3_off = (uint32_t)parse[0], .l4_off = (uint32_t)parse[1],
                                        .quic_off = (uint32_t)parse[2], .pn_off = (uint32_t)parse[3],
                                        .cid_len = (uint32_t)parse[4], .conn = (uint32_t)parse[5]};
            struct ebpf_error err = {-1, ""};
            uint64_t r0;
            if (ebpf_xdp_exec(prog, &xdp, jit, &r0, &err)) {
                printf("error fault: insn %d: %s\n", err.insn, err.msg);
            } else {
                printf("result %llu ", (unsigned long long)r0);
                /* from data_meta, as Linux's BPF_PROG_TEST_RUN returns it: metadata, then the frame */
                print_hex((const uint8_t *)(uintptr_t)xdp.data_meta, (size_t)(xdp.data_end - xdp.data_meta));
                printf(" %u %u %u %u\n", xdp.redirect_ifindex, (unsigned)(xdp.data - xdp.data_meta), xdp.csum_offload != 0,
                       (xdp.csum_offload & EBPF_XDP_OFFLOAD_LEN) != 0);
            }
            free(buf);
        }
#ifndef __riscv
    } else if (serving && model_serve_command(argc, argv)) {
#endif
    } else {
        printf("error unknown command '%s' (info, update, lookup, delete, next, slot, events, run%s)\n", argv[0],
               serving ? ", resume, counters" : "");
    }
    free(key);
    free(val);
    fflush(stdout);
}

static int run_batch(struct ebpf_prog *prog, const char *path, int jit, long headroom) {
    FILE *in = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!in) {
        fprintf(stderr, "nanobpf-run: %s: %s\n", path, strerror(errno));
        return 2;
    }
    size_t cap = 1 << 16;
    char *line = malloc(cap);
    size_t n = 0;
    int c;
    while (line && (c = getc(in)) != EOF) {
        if (n + 1 >= cap) {
            char *nl = realloc(line, cap * 2);
            if (!nl) break;
            line = nl, cap *= 2;
        }
        if (c != '\n') {
            line[n++] = (char)c;
            continue;
        }
        line[n] = 0;
        batch_command(prog, line, jit, headroom);
        n = 0;
    }
    if (line && n) {
        line[n] = 0;
        batch_command(prog, line, jit, headroom);
    }
    free(line);
    if (in != stdin) fclose(in);
    return 0;
}

#ifndef __riscv
/* --serve: the batch commands of model_serve's loop */
static struct ebpf_prog *serve_prog;
static long serve_headroom;
static void serve_command(char *line) { batch_command(serve_prog, line, 0, serve_headroom); }

/* --jit on a non-RISC-V host: run the RV64 build of this tool under qemu-riscv64, same arguments. */
static int exec_rv64(char **argv) {
    char self[PATH_MAX], path[PATH_MAX + 32];
    const char *env = getenv("NANOBPF_RUN_RV64");
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (env) {
        snprintf(path, sizeof path, "%s", env);
    } else {
        if (n < 0) return die(2, "--jit", &(struct ebpf_error){-1, "cannot find this executable"});
        self[n] = 0;
        snprintf(path, sizeof path, "%s/../rv64/nanobpf-run", dirname(self));
    }
    if (access(path, X_OK)) {
        fprintf(stderr, "nanobpf-run: --jit: no RV64 build at %s (make ebpf-tools, or set NANOBPF_RUN_RV64)\n", path);
        return 2;
    }
    int argc = 0;
    while (argv[argc]) argc++;
    char **args = calloc((size_t)argc + 2, sizeof *args);
    args[0] = "qemu-riscv64";
    args[1] = path;
    for (int i = 1; i < argc; i++) args[i + 1] = argv[i];
    execvp(args[0], args);
    fprintf(stderr, "nanobpf-run: --jit: cannot run qemu-riscv64: %s\n", strerror(errno));
    return 2;
}
#endif

int main(int argc, char **argv) {
    int jit = 0, stats = 0, verify = 0, check = 0;
    long headroom = 256;
    unsigned flags = 0;
    const char *program = NULL, *image = NULL, *memhex = NULL, *dump = NULL, *batch = NULL;
    const char *write_record = NULL, *record = NULL, *serve = NULL, *stats_map = "quic_stats";
    unsigned long max_frame = 1522;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--interp")) jit = 0;
        else if (!strcmp(a, "--jit")) jit = 1;
        else if (!strcmp(a, "--rvc")) flags |= EBPF_JIT_RVC;
        else if (!strcmp(a, "--zba")) flags |= EBPF_JIT_ZBA;
        else if (!strcmp(a, "--zbb")) flags |= EBPF_JIT_ZBB;
        else if (!strcmp(a, "--stats")) stats = 1;
        else if (!strcmp(a, "--verify")) verify = 1;
        else if (!strcmp(a, "--check")) check = verify = 1;
        else if (!strcmp(a, "--program") && i + 1 < argc) program = argv[++i];
        else if (!strcmp(a, "--headroom") && i + 1 < argc) {
            char *endp;
            headroom = strtol(argv[++i], &endp, 0);
            if (*endp || headroom < 0 || headroom > 4096) {
                fprintf(stderr, "nanobpf-run: --headroom takes 0..4096\n");
                return 2;
            }
        }
        else if (!strcmp(a, "--image") && i + 1 < argc) image = argv[++i];
        else if (!strcmp(a, "--batch") && i + 1 < argc) batch = argv[++i];
        else if (!strcmp(a, "--serve") && i + 1 < argc) serve = argv[++i];
        else if (!strcmp(a, "--stats-map") && i + 1 < argc) stats_map = argv[++i];
        else if (!strcmp(a, "--max-frame") && i + 1 < argc) {
            char *endp;
            max_frame = strtoul(argv[++i], &endp, 0);
            if (*endp || !max_frame || max_frame > 65535) {
                fprintf(stderr, "nanobpf-run: --max-frame takes 1..65535\n");
                return 2;
            }
        }
        else if (!strcmp(a, "--write-record") && i + 1 < argc) write_record = argv[++i];
        else if (!strcmp(a, "--record") && i + 1 < argc) record = argv[++i];
        else if (!strcmp(a, "--dump-jit") && i + 1 < argc) dump = argv[++i], jit = 1;
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "nanobpf-run: unknown or incomplete option '%s'\n%s", a, usage);
            return 2;
        } else if (!memhex) memhex = a;
        else {
            fprintf(stderr, "nanobpf-run: more than one memory argument\n%s", usage);
            return 2;
        }
    }
    if (batch && (!image || memhex || check)) {
        fprintf(stderr, "nanobpf-run: --batch needs --image and takes no memory argument or --check\n");
        return 2;
    }
    if ((write_record || record) && (!image || (write_record && (check || record)))) {
        fprintf(stderr, "nanobpf-run: --write-record and --record need --image; --write-record takes no --check or --record\n");
        return 2;
    }
#ifndef __riscv
    struct model_serve_cfg serve_cfg = {.net_fd = -1};
    if (serve) {
        char *e1, *e2, *e3;
        serve_cfg.host_fd = (int)strtol(serve, &e1, 10);
        serve_cfg.net_fd = *e1 == ',' ? (int)strtol(e1 + 1, &e2, 10) : -2;
        serve_cfg.up_fd = serve_cfg.net_fd != -2 && *e2 == ',' ? (int)strtol(e2 + 1, &e3, 10) : -2;
        if (serve_cfg.up_fd < 0 || *e3 || serve_cfg.host_fd < 0 || serve_cfg.net_fd < -1 || !batch ||
            strcmp(batch, "-") || jit) {
            fprintf(stderr, "nanobpf-run: --serve takes HOST-FD,NET-FD,UP-FD (NET-FD -1: none) and goes with "
                            "--batch - (interpreter only)\n");
            return 2;
        }
        serve_cfg.max_frame = (unsigned)max_frame, serve_cfg.headroom = headroom, serve_cfg.stats_map = stats_map;
    }
    if (jit) return exec_rv64(argv);
#else
    (void)stats_map, (void)max_frame;
    if (serve) {
        fprintf(stderr, "nanobpf-run: --serve is in the host builds only\n");
        return 2;
    }
#endif
    struct ebpf_error err = {-1, ""};
    struct ebpf_prog prog;
    memset(&prog, 0, sizeof prog);
    uint8_t *mem = NULL;
    long memlen = 0;
    if (memhex && (memlen = parse_hex(memhex, &mem)) < 0) {
        fprintf(stderr, "nanobpf-run: memory argument is not hex bytes\n");
        return 2;
    }
    if (image) {
        size_t len;
        char *buf = read_path(image, &len);
        if (!buf) return 2;
        if (ebpf_image_load(buf, len, &prog, &err)) return die(2, image, &err);
        if (write_record) {
            if (ebpf_verify(&prog, NULL, &err)) return die(1, "verifier", &err);
            size_t n = ebpf_record_size(&prog);
            void *out = malloc(n);
            if (!out || ebpf_record_write(&prog, buf, len, out, n, &err)) return die(1, write_record, &err);
            FILE *o = fopen(write_record, "wb");
            if (!o) {
                fprintf(stderr, "nanobpf-run: %s: %s\n", write_record, strerror(errno));
                return 2;
            }
            if (fwrite(out, 1, n, o) != n || fclose(o)) {
                fprintf(stderr, "nanobpf-run: %s: write failed\n", write_record);
                return 2;
            }
            printf("recorded: %u insns, %u functions, %lu bytes\n", prog.n_insns, prog.n_subprogs, (unsigned long)n);
            return 0;
        }
        if (record) {
            size_t rlen;
            char *rbuf = read_path(record, &rlen);
            if (!rbuf) return 2;
            if (ebpf_record_apply(&prog, buf, len, rbuf, rlen, &err)) return die(1, image, &err);
            free(rbuf);
        }
        free(buf);
        verify = 1;
    } else {
        size_t len;
        char *text;
        if (program) {
            text = read_path(program, &len);
            if (!text) return 2;
            prog.insns = (struct ebpf_insn *)text;
        } else {
            text = read_all(stdin, &len);
            uint8_t *bytes;
            long n = text ? parse_hex(text, &bytes) : -1;
            if (n < 0) {
                fprintf(stderr, "nanobpf-run: standard input is not hex bytes\n");
                return 2;
            }
            free(text);
            len = (size_t)n;
            prog.insns = (struct ebpf_insn *)bytes;
        }
        if (len == 0 || len % 8) {
            fprintf(stderr, "nanobpf-run: program is %lu bytes, not a positive multiple of 8\n", (unsigned long)len);
            return 2;
        }
        prog.n_insns = (uint32_t)(len / 8);
    }
    /* XDP runs get a packet buffer with headroom (default 256) and 256 bytes of tailroom, like a driver's. */
    struct ebpf_xdp_buff xdp;
    uint8_t *frame = NULL;
    if (verify) {
        frame = calloc(1, (size_t)(memlen + headroom + 256));
        uint8_t *data = frame + headroom;
        memcpy(data, mem, (size_t)memlen);
        xdp = (struct ebpf_xdp_buff){.data = (uintptr_t)data, .data_end = (uintptr_t)(data + memlen),
                                     .data_meta = (uintptr_t)data, .data_hard_start = (uintptr_t)frame,
                                     .frame_end = (uintptr_t)(data + memlen + 256)};
        if (!prog.verified && ebpf_verify(&prog, NULL, &err)) return die(1, "verifier", &err);
        if (check && record) {
            printf("accepted: %u insns, %u subprograms, from the verification record\n", prog.n_insns, prog.n_subprogs);
            return 0;
        }
        if (check) {
            printf("accepted: %u insns, %u subprograms, %u insns processed, %u states (%u at once), %u paths pruned, "
                   "%u pending at peak, %u bytes of states at peak\n",
                   prog.n_insns, prog.n_subprogs, ebpf_verify_last_stats.processed, ebpf_verify_last_stats.states,
                   ebpf_verify_last_stats.peak_states, ebpf_verify_last_stats.pruned, ebpf_verify_last_stats.peak_pending,
                   ebpf_verify_last_stats.peak_bytes);
            return 0;
        }
    }
    if (ebpf_prog_resolve(&prog, &err)) return die(1, "resolve", &err);
    if (stats) {
        struct ebpf_jit_stats st;
        static const char *cls[8] = {"ld", "ldx", "st", "stx", "alu", "jmp", "jmp32", "alu64"};
        if (ebpf_jit_stats(&prog, flags, &st, &err)) return die(1, "jit", &err);
        printf("class bpf_insns rv_insns rv_per_bpf\n");
        for (int c = 0; c < 8; c++)
            if (st.bpf_insns[c]) printf("%s %u %u %.2f\n", cls[c], st.bpf_insns[c], st.rv_insns[c], (double)st.rv_insns[c] / st.bpf_insns[c]);
        printf("total_bytes %u\n", st.rv_bytes);
        printf("inline_lookups %u\n", st.inline_lookups);
        printf("align_tests %u\n", st.align_tests);
        return 0;
    }
    if (jit && ebpf_jit_compile(&prog, flags, &err)) return die(1, "jit", &err);
#ifndef __riscv
    if (serve) {
        serving = 1, serve_prog = &prog, serve_headroom = headroom;
        return model_serve(&prog, &serve_cfg, serve_command);
    }
#endif
    if (batch) return run_batch(&prog, batch, jit, headroom);
    if (dump) {
        FILE *f = fopen(dump, "wb");
        if (!f || fwrite(prog.jit_code, 1, prog.jit_size, f) != prog.jit_size || fclose(f)) {
            fprintf(stderr, "nanobpf-run: %s: cannot write\n", dump);
            return 2;
        }
    }
    uint64_t r0;
    if (verify) {
        if (ebpf_xdp_exec(&prog, &xdp, jit, &r0, &err)) return die(1, "fault", &err);
    } else if (jit) {
        r0 = ebpf_jit_run(&prog, (uintptr_t)mem, (uint64_t)memlen);
    } else {
        struct ebpf_bounds bounds = {(uintptr_t)mem, (uint64_t)memlen};
        ebpf_interp_bounds = &bounds;
        if (ebpf_interp(&prog, (uintptr_t)mem, (uint64_t)memlen, &r0, &err)) return die(1, "fault", &err);
    }
    printf("%llx\n", (unsigned long long)r0);
    return 0;
}
