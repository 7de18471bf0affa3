/* The device model's native data path (model_serve.h): what nanobpf.devmodel.DeviceModel's _from_host,
 * _from_net, _run_prog and _out do for a frame when the model runs without PISA, in C, so that a frame
 * costs no Python and no hex: the same counters by reason, the same fail-closed rules for the ENCRYPT
 * shim, the same DECRYPTED shim, the deparser's checksum and length fix-ups of
 * nanobpf.models.pisa.fix_frame_checksums. Every rule here mirrors a line there; a change to one is a
 * change to both (tests/ctrl/test_devmodel_fast.py runs both models over the same frames).
 *
 * What is not data goes up to the Python model unchanged: a host frame of the control EtherType, as
 * one SOCK_SEQPACKET message [ingress ifindex][frame]. The ports are then not read again until the
 * model answers "resume", so frames keep their order around the control request it applies (its map
 * updates come as batch commands meanwhile). A control frame from the network is counted ctrl_foreign
 * and dropped here, as the model does. */
#include "model_serve.h"

#include <errno.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nanobpf_ctrl.h"
#include "nanobpf_ebpf_defs.h"

#define FRAME_MAX 65536 /* what the Python ports read at once */
#define TAILROOM 256    /* after the frame, as --batch's run */
#define SHIM_LEN 4      /* EtherType and struct nanobpf_shim */
/* IEEE 802.1Q and 802.1ad tag protocol ids (nanobpf.models.pisa.VLAN_TPIDS) */
#define TPID_8021Q 0x8100
#define TPID_8021AD 0x88A8

static const struct model_serve_cfg *cfg;
static struct ebpf_prog *prog;
static struct ebpf_map *stats;
static uint64_t count[NANOBPF_STAT_COUNT], egress_drop;
static int paused = 1, host_is_packet, net_is_packet;
static uint8_t *xbuf; /* the program's packet buffer: headroom, frame, tailroom */
static uint8_t *obuf;  /* the frame out: as long as that buffer, then room for a shim and set_lengths' 2 bytes */
static uint8_t upbuf[FRAME_MAX + 1];

static unsigned be16(const uint8_t *b, size_t i) { return (unsigned)b[i] << 8 | b[i + 1]; }
/* the byte at i, 0 past the end (the PISA model's parser sees zeros there) */
static unsigned at(const uint8_t *b, size_t n, size_t i) { return i < n ? b[i] : 0; }
static unsigned be16z(const uint8_t *b, size_t n, size_t i) { return at(b, n, i) << 8 | at(b, n, i + 1); }

static int has_shim(const uint8_t *f, size_t n) { return n >= 14 && be16(f, 12) == NANOBPF_SHIM_ETHERTYPE; }

/* ---- the deparser's parse (nanobpf.models.pisa.parse with step_shim, the fields fix-ups use) ---- */
struct parsed {
    long l3off, l4off, ulen;
    int ipver, udp, shim, trunc, bad_hdr, bad_len, bad_udp;
};

static struct parsed parse(const uint8_t *b, size_t n) {
    struct parsed p = {0};
    long N = (long)n, off = 14;
    unsigned et = be16z(b, n, 12);
    int stepped = 0;
    p.trunc = n < 14;
    if (et == NANOBPF_SHIM_ETHERTYPE) { /* the host link's shim, stepped over like a tag */
        stepped = 1;
        p.trunc |= N < 18;
        et = be16z(b, n, 16);
        off = 18;
        if (et == TPID_8021Q || et == TPID_8021AD) {
            p.trunc |= N < 22;
            et = be16z(b, n, 20);
            off = 22;
        }
    }
    for (int k = 0; k < (off == 14 ? 2 : 0); k++) {
        if (et != TPID_8021Q && et != TPID_8021AD) break;
        p.trunc |= N < off + 4;
        et = be16z(b, n, (size_t)off + 2);
        off += 4;
    }
    p.l3off = off;
    p.shim = et == NANOBPF_SHIM_ETHERTYPE || stepped;
    long l4len = 0, l4at = 0;
    if (et == 0x0800) {
        unsigned ver = at(b, n, (size_t)off) >> 4, ihl = at(b, n, (size_t)off) & 15;
        long hl = ihl * 4, tot = be16z(b, n, (size_t)off + 2);
        p.ipver = 4;
        p.trunc |= N < off + 20 || N < off + hl;
        p.bad_hdr = ver != 4 || ihl < 5;
        p.bad_len = tot < hl || tot > N - off;
        p.udp = at(b, n, (size_t)off + 9) == 17 && (be16z(b, n, (size_t)off + 6) & 0x3FFF) == 0;
        p.l4off = off + hl;
        l4at = off + (hl > 20 ? hl : 20);
        l4len = tot - hl;
    } else if (et == 0x86DD) {
        p.ipver = 6;
        p.trunc |= N < off + 40;
        p.bad_hdr = at(b, n, (size_t)off) >> 4 != 6;
        p.bad_len = (long)be16z(b, n, (size_t)off + 4) > N - off - 40;
        p.udp = at(b, n, (size_t)off + 6) == 17;
        p.l4off = l4at = off + 40;
        l4len = be16z(b, n, (size_t)off + 4);
    }
    if (p.udp) {
        p.ulen = be16z(b, n, (size_t)l4at + 4);
        p.bad_udp = l4len < 8 || p.ulen < 8 || p.ulen > l4len;
    }
    return p;
}

static uint32_t word_sum(const uint8_t *b, size_t n) {
    uint32_t s = 0;
    for (size_t i = 0; i + 1 < n; i += 2) s += be16(b, i);
    if (n & 1) s += (uint32_t)b[n - 1] << 8;
    return s;
}
static uint32_t fold(uint32_t s) {
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return s;
}
static void put16(uint8_t *b, unsigned v) { b[0] = (uint8_t)(v >> 8), b[1] = (uint8_t)v; }

/* Python's frame[start:end] = src (2 bytes) on a bytearray of *n bytes: a slice past the end shrinks to
 * it, so the frame may grow (set_lengths on a UDP header cut short does that there, and so here). */
static void slice_set2(uint8_t *f, size_t *n, size_t start, const uint8_t src[2], size_t src_len) {
    size_t s = start < *n ? start : *n, e = start + 2 < *n ? start + 2 : *n;
    memmove(f + s + src_len, f + e, *n - e);
    memcpy(f + s, src, src_len);
    *n = *n - (e - s) + src_len;
}

/* pkt_comp.fix_len (nanobpf.models.pisa.set_lengths), in place; the parse of the frame after. */
static struct parsed set_lengths(uint8_t *f, size_t *n, struct parsed p) {
    long o = p.l3off, N = (long)*n;
    if ((p.ipver != 4 && p.ipver != 6) || p.trunc || p.bad_hdr) return p;
    put16(f + o + (p.ipver == 4 ? 2 : 4), (unsigned)((N - o - (p.ipver == 4 ? 0 : 40)) & 0xFFFF));
    p = parse(f, *n);
    if (!p.udp) return p;
    size_t u = (size_t)p.l4off, old_len = u + 4 < *n ? (u + 6 < *n ? 2 : *n - (u + 4)) : 0;
    uint8_t old[2] = {0}, v[2];
    memcpy(old, f + (u + 4 < *n ? u + 4 : *n), old_len);
    put16(v, (unsigned)((N - (long)u) & 0xFFFF));
    slice_set2(f, n, u + 4, v, 2);
    struct parsed q = parse(f, *n);
    if (q.trunc || q.bad_hdr || q.bad_len || q.bad_udp) {
        slice_set2(f, n, u + 4, old, old_len); /* the UDP header does not parse even so: left as it was */
        return p;
    }
    return q;
}

/* nanobpf.models.pisa.fix_frame_checksums: the IPv4 header and UDP checksums recomputed where the
 * headers parse (fix_len: the lengths set from the frame's end first). */
static void fix_frame_checksums(uint8_t *f, size_t *n, int fix_len) {
    struct parsed p = parse(f, *n);
    if (fix_len) p = set_lengths(f, n, p);
    long o = p.l3off;
    if (p.ipver == 4 && !p.trunc && !p.bad_hdr) {
        size_t hl = (size_t)(f[o] & 15) * 4;
        put16(f + o + 10, 0);
        put16(f + o + 10, ~fold(word_sum(f + o, hl)) & 0xFFFF);
    }
    if (p.udp && !p.trunc && !p.bad_hdr && !p.bad_len && !p.bad_udp) {
        size_t u = (size_t)p.l4off;
        uint32_t pseudo = (p.ipver == 4 ? word_sum(f + o + 12, 8) : word_sum(f + o + 8, 32)) + 17 + (uint32_t)p.ulen;
        put16(f + u + 6, 0);
        unsigned c = ~fold(pseudo + word_sum(f + u, (size_t)p.ulen)) & 0xFFFF;
        put16(f + u + 6, c ? c : 0xFFFF);
    }
}

/* ---- the model's data path ---- */
static void send_to(int fd, const uint8_t *f, size_t n) {
    if (fd >= 0 && write(fd, f, n) < 0 && errno != EAGAIN && errno != ENOBUFS)
        fprintf(stderr, "nanobpf-run: --serve: sending a frame: %s\n", strerror(errno));
}

/* DeviceModel._out: the frame at f (n bytes, room for SHIM_LEN more) leaves towards port. */
static void out(uint32_t port, uint8_t *f, size_t n, int shim, int fix_csum, int fix_len) {
    if (shim) {
        if (n + SHIM_LEN > cfg->max_frame) { /* the egress refuses the completion */
            egress_drop++;
            return;
        }
        size_t head = n < 12 ? n : 12;
        memmove(f + head + SHIM_LEN, f + head, n - head);
        put16(f + head, NANOBPF_SHIM_ETHERTYPE);
        f[head + 2] = (uint8_t)shim, f[head + 3] = 0;
        n += SHIM_LEN;
    }
    if (port == NANOBPF_IFINDEX_NET && n >= 14 && parse(f, n).shim) {
        count[NANOBPF_CTRL_STAT_SHIM_TO_NET]++; /* the deparser's tx_shim: never a shim on the wire */
        return;
    }
    if (fix_csum || fix_len) fix_frame_checksums(f, &n, fix_len);
    if (port == NANOBPF_IFINDEX_HOST) {
        count[NANOBPF_CTRL_STAT_HOST_TX]++;
        if (shim) count[NANOBPF_CTRL_STAT_DECRYPTED]++;
        send_to(cfg->host_fd, f, n);
    } else {
        count[NANOBPF_CTRL_STAT_NET_TX]++;
        send_to(cfg->net_fd, f, n);
    }
}

/* DeviceModel._quic_stat: the program's quic_stats[index] summed over the CPUs, or -1 without such a
 * per-CPU map of 8-byte values (0 without the entry). */
static int64_t quic_stat(uint32_t index) {
    if (!stats) return -1;
    int64_t sum = 0;
    for (uint32_t c = 0; c < stats->n_cpus; c++) {
        const uint8_t *v = ebpf_map_value(stats, &index, c);
        if (!v) return 0;
        uint64_t x;
        memcpy(&x, v, 8); /* little-endian host, as the device */
        sum += (int64_t)x;
    }
    return sum;
}

/* DeviceModel._run_prog: the program over the frame from ingress; seal: it carries the ENCRYPT shim
 * and may leave only sealed, towards the network. */
static void run_prog(const uint8_t *frame, size_t n, uint32_t ingress, int seal) {
    int watch = seal ? NANOBPF_QUIC_STAT_SEALED : ingress == NANOBPF_IFINDEX_NET ? NANOBPF_QUIC_STAT_OPENED : -1;
    int64_t before = watch >= 0 ? quic_stat((uint32_t)watch) : -1;
    size_t hr = (size_t)cfg->headroom;
    memset(xbuf, 0, hr + n + TAILROOM); /* a fresh buffer each run, as --batch's run */
    uint8_t *data = xbuf + hr;
    memcpy(data, frame, n);
    struct ebpf_xdp_buff xdp = {.data = (uintptr_t)data, .data_end = (uintptr_t)(data + n), .data_meta = (uintptr_t)data,
                                .data_hard_start = (uintptr_t)xbuf, .frame_end = (uintptr_t)(data + n + TAILROOM),
                                .ingress_ifindex = ingress};
    struct ebpf_error err = {-1, ""};
    uint64_t action;
    size_t on = 0;
    int fix_csum = 0, fix_len = 0;
    if (ebpf_xdp_exec(prog, &xdp, 0, &action, &err)) {
        action = NANOBPF_XDP_ABORTED; /* the model's DeviceError */
    } else {
        on = (size_t)(xdp.data_end - xdp.data); /* metadata stays on the device */
        memcpy(obuf, (const void *)(uintptr_t)xdp.data, on);
        fix_csum = xdp.csum_offload != 0, fix_len = (xdp.csum_offload & EBPF_XDP_OFFLOAD_LEN) != 0;
    }
    uint32_t port;
    if (action == NANOBPF_XDP_PASS) {
        count[NANOBPF_CTRL_STAT_XDP_PASS]++;
        port = ingress == NANOBPF_IFINDEX_HOST ? NANOBPF_IFINDEX_NET : NANOBPF_IFINDEX_HOST;
    } else if (action == NANOBPF_XDP_TX || action == NANOBPF_XDP_REDIRECT) {
        port = action == NANOBPF_XDP_TX ? ingress : xdp.redirect_ifindex;
        if (port != NANOBPF_IFINDEX_HOST && port != NANOBPF_IFINDEX_NET) {
            count[NANOBPF_CTRL_STAT_XDP_DROP]++;
            return;
        }
        count[NANOBPF_CTRL_STAT_XDP_TX]++;
    } else {
        count[NANOBPF_CTRL_STAT_XDP_DROP]++;
        return;
    }
    int counted = 0;
    if (watch >= 0 && before >= 0) {
        int64_t after = quic_stat((uint32_t)watch);
        counted = (after < 0 ? 0 : after) > before;
    }
    if (seal) {
        /* the host's shim left where it came, unchanged, is the egress's to leave out; any other fails */
        int shim_ok = !has_shim(obuf, on) || (on >= 18 && !memcmp(obuf + 12, frame + 12, SHIM_LEN));
        if (port != NANOBPF_IFINDEX_NET || !counted || !shim_ok) {
            count[NANOBPF_CTRL_STAT_ENCRYPT_UNSEALED]++; /* fail closed: never out unsealed */
            return;
        }
        if (has_shim(obuf, on)) {
            memmove(obuf + 12, obuf + 12 + SHIM_LEN, on - 12 - SHIM_LEN);
            on -= SHIM_LEN;
        }
        out(port, obuf, on, 0, fix_csum, fix_len);
        return;
    }
    if (has_shim(obuf, on)) {
        count[NANOBPF_CTRL_STAT_BAD_SHIM]++; /* only the device itself adds a shim */
        return;
    }
    int opened = ingress == NANOBPF_IFINDEX_NET && port == NANOBPF_IFINDEX_HOST && counted;
    out(port, obuf, on, opened ? NANOBPF_SHIM_F_DECRYPTED : 0, fix_csum, fix_len);
}

/* Up to the Python model, which answers "resume" once it has handled it. */
static void up(uint32_t ingress, const uint8_t *f, size_t n) {
    upbuf[0] = (uint8_t)ingress;
    memcpy(upbuf + 1, f, n);
    if (send(cfg->up_fd, upbuf, n + 1, 0) < 0) {
        fprintf(stderr, "nanobpf-run: --serve: a frame up to the model: %s\n", strerror(errno));
        return;
    }
    paused = 1;
}

/* nanobpf.ctrl.strip_shim's checks: flags exactly DECRYPTED or ENCRYPT, CID length 0..20 and only with
 * ENCRYPT, an inner EtherType that is one and neither the control's nor the shim's; its flags, or -1. */
static int shim_flags(const uint8_t *f, size_t n) {
    if (n < 18) return -1;
    unsigned flags = f[14], cid_len = f[15], inner = be16(f, 16);
    if (flags != NANOBPF_SHIM_F_DECRYPTED && flags != NANOBPF_SHIM_F_ENCRYPT) return -1;
    if (cid_len > NANOBPF_CTRL_MAX_CID || (cid_len && flags != NANOBPF_SHIM_F_ENCRYPT)) return -1;
    if (inner < 0x600 || inner == NANOBPF_CTRL_ETHERTYPE || inner == NANOBPF_SHIM_ETHERTYPE) return -1;
    return (int)flags;
}

/* DeviceModel._from_host with a program attached (the model uses this path only then). */
static void from_host(const uint8_t *f, size_t n) {
    if (n >= 14 && be16(f, 12) == NANOBPF_CTRL_ETHERTYPE) {
        up(NANOBPF_IFINDEX_HOST, f, n); /* control: authentication, sessions, faults are the model's */
        return;
    }
    count[NANOBPF_CTRL_STAT_HOST_RX]++;
    int seal = has_shim(f, n);
    if (seal) {
        if (shim_flags(f, n) != NANOBPF_SHIM_F_ENCRYPT) { /* malformed, or DECRYPTED from the host */
            count[NANOBPF_CTRL_STAT_BAD_SHIM]++;
            return;
        }
        count[NANOBPF_CTRL_STAT_ENCRYPT_REQ]++;
    }
    run_prog(f, n, NANOBPF_IFINDEX_HOST, seal); /* the shim included: the program strips it */
}

/* DeviceModel._from_net with a program attached. */
static void from_net(const uint8_t *f, size_t n) {
    if (n >= 14 && be16(f, 12) == NANOBPF_CTRL_ETHERTYPE) {
        count[NANOBPF_CTRL_STAT_CTRL_FOREIGN]++; /* control frames from the network are never obeyed */
        return;
    }
    count[NANOBPF_CTRL_STAT_NET_RX]++;
    if (has_shim(f, n)) {
        count[NANOBPF_CTRL_STAT_BAD_SHIM]++; /* a shim is host-link metadata, not network traffic */
        return;
    }
    run_prog(f, n, NANOBPF_IFINDEX_NET, 0);
}

/* An AF_PACKET socket also shows the frames the kernel sends out of its interface (PacketPort skips
 * them); a TAP or a datagram socket shows only what arrives. */
static int is_packet_socket(int fd) {
    int domain = 0;
    socklen_t len = sizeof domain;
    return fd >= 0 && getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_PACKET;
}

/* One frame from fd into buf: its length, or -1 (nothing, an outgoing frame, an error). */
static long read_frame(int fd, int packet, uint8_t *buf) {
    if (!packet) return read(fd, buf, FRAME_MAX);
    struct sockaddr_ll sll;
    socklen_t len = sizeof sll;
    long n = recvfrom(fd, buf, FRAME_MAX, 0, (struct sockaddr *)&sll, &len);
    return n >= 0 && sll.sll_pkttype == PACKET_OUTGOING ? -1 : n;
}

int model_serve_command(int argc, char **argv) {
    if (!strcmp(argv[0], "resume")) {
        if (argc != 1) printf("error resume takes no arguments\n");
        else paused = 0, printf("ok\n");
    } else if (!strcmp(argv[0], "counters")) {
        if (argc != 1) {
            printf("error counters takes no arguments\n");
        } else {
            printf("counters");
            for (int i = 0; i < NANOBPF_STAT_COUNT; i++) printf(" %llu", (unsigned long long)count[i]);
            printf(" %llu\n", (unsigned long long)egress_drop);
        }
    } else {
        return 0;
    }
    return 1;
}

/* Complete lines of buf[0..*len) to command; the rest moved to the front. */
static void take_lines(char *buf, size_t *len, void (*command)(char *line)) {
    size_t start = 0;
    for (size_t i = 0; i < *len; i++)
        if (buf[i] == '\n') {
            buf[i] = 0;
            command(buf + start);
            start = i + 1;
        }
    memmove(buf, buf + start, *len - start);
    *len -= start;
}

int model_serve(struct ebpf_prog *p, const struct model_serve_cfg *c, void (*command)(char *line)) {
    prog = p, cfg = c;
    for (uint32_t i = 0; i < prog->n_maps; i++)
        if (!strcmp(prog->maps[i]->name, cfg->stats_map) && ebpf_map_is_percpu(prog->maps[i]) &&
            prog->maps[i]->value_size >= 8 && prog->maps[i]->key_size == 4)
            stats = prog->maps[i];
    host_is_packet = is_packet_socket(cfg->host_fd), net_is_packet = is_packet_socket(cfg->net_fd);
    size_t cap = 1 << 20, len = 0;
    char *line = malloc(cap);
    static uint8_t frame[FRAME_MAX];
    xbuf = malloc((size_t)cfg->headroom + FRAME_MAX + TAILROOM);
    obuf = malloc((size_t)cfg->headroom + FRAME_MAX + TAILROOM + SHIM_LEN + 2);
    if (!line || !xbuf || !obuf) {
        fprintf(stderr, "nanobpf-run: --serve: out of memory\n");
        return 2;
    }
    for (;;) {
        struct pollfd fds[3] = {{.fd = 0, .events = POLLIN},
                                {.fd = paused ? -1 : cfg->host_fd, .events = POLLIN},
                                {.fd = paused ? -1 : cfg->net_fd, .events = POLLIN}};
        if (poll(fds, 3, -1) < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "nanobpf-run: --serve: poll: %s\n", strerror(errno));
            return 2;
        }
        if (fds[0].revents) {
            if (len + 65536 + 1 > cap) { /* a long line (a big map value in hex): room to read on */
                char *nl = realloc(line, cap * 2);
                if (!nl) {
                    fprintf(stderr, "nanobpf-run: --serve: out of memory for a command line\n");
                    return 2;
                }
                line = nl, cap *= 2;
            }
            long r = read(0, line + len, cap - len - 1);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { /* the model closed the program: the last line, if unterminated, then stop */
                if (len) line[len] = 0, command(line);
                free(line);
                return 0;
            }
            len += (size_t)r;
            take_lines(line, &len, command);
        }
        long n;
        if (!paused && fds[1].revents && (n = read_frame(cfg->host_fd, host_is_packet, frame)) >= 0)
            from_host(frame, (size_t)n);
        if (!paused && fds[2].revents && (n = read_frame(cfg->net_fd, net_is_packet, frame)) >= 0)
            from_net(frame, (size_t)n);
    }
}
