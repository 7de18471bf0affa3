/* A stand-in for the QUIC programs in the device model's tests (tests/ctrl/test_devmodel_datapath.py):
 * it has the maps the control plane keeps in step (nanobpf_quic_keys, quic_pn, quic_config), quic_ports and the
 * counters the model watches (quic_stats), but no crypto. What it does with a frame is chosen by
 * test_mode[0] (MODE_*), so a test can make it misbehave the ways the model must catch:
 * claim a frame sealed and change its shim or add a second one, strip the shim without counting it sealed, send a sealed
 * frame back to the host... Built by the test with clang and nanobpf.ebpf.loader. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "nanobpf_ebpf_defs.h"

#define SHIM_ETHERTYPE 0x88B6

enum {
    MODE_PASS = 0,          /* XDP_PASS, nothing counted */
    MODE_TX = 1,            /* XDP_TX, nothing counted */
    MODE_SEAL = 2,          /* shim frames: shim stripped, SEALED counted, XDP_PASS (a good sealer) */
    MODE_SEAL_KEEP_SHIM = 3, /* shim frames: SEALED counted, the shim left where it came, XDP_PASS (the egress takes it) */
    MODE_SEAL_TX = 4,       /* shim frames: shim stripped, SEALED counted, XDP_TX (back to the host) */
    MODE_STRIP_ONLY = 5,    /* shim frames: shim stripped, nothing counted, XDP_PASS */
    MODE_OPEN = 6,          /* OPENED counted, XDP_PASS */
    MODE_DROP = 7,          /* XDP_DROP */
    MODE_LOOKUP = 8,        /* XDP_PASS after looking into every map (the loader keeps referenced maps only) */
    MODE_CONN = 9,          /* test_conn[0] = what PISA parsed: conn | cid_len << 17 (conn: up to 2^16); XDP_DROP */
    MODE_SEAL_CHANGE_SHIM = 10, /* shim frames: SEALED counted, the shim's CID length changed, XDP_PASS */
    MODE_SEAL_SHIM_TWICE = 11,  /* shim frames: SEALED counted, a second shim behind the one that came, XDP_PASS */
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, NANOBPF_KEYTABLE_ENTRIES);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_keys);
} nanobpf_quic_keys SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, NANOBPF_KEYTABLE_ENTRIES);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_pn_state);
} quic_pn SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct nanobpf_quic_config);
} quic_config SEC(".maps");

/* As xdp_quic's (sw/ebpf/quic/quic_parse.h): a hash map the user writes (the driver's tests) */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 64);
    __type(key, __u16);
    __type(value, __u32);
} quic_ports SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, NANOBPF_QUIC_STAT_COUNT);
    __type(key, __u32);
    __type(value, __u64);
} quic_stats SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} test_mode SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} test_conn SEC(".maps");

static __always_inline void count(__u32 idx) {
    __u64 *v = bpf_map_lookup_elem(&quic_stats, &idx);
    if (v)
        *v += 1;
}

/* Remove the 4-byte shim after the MAC addresses: 0 done, -1 no shim (or too short). */
static __always_inline int strip_shim(struct xdp_md *ctx) {
    unsigned char *d = (unsigned char *)(long)ctx->data, *end = (unsigned char *)(long)ctx->data_end;
    if (d + 18 > end || d[12] != (SHIM_ETHERTYPE >> 8) || d[13] != (SHIM_ETHERTYPE & 0xff))
        return -1;
    for (int i = 11; i >= 0; i--)
        d[i + 4] = d[i];
    return bpf_xdp_adjust_head(ctx, 4) ? -1 : 0;
}

SEC("xdp")
int xdp_ctrl_test(struct xdp_md *ctx) {
    __u32 zero = 0, *m = bpf_map_lookup_elem(&test_mode, &zero);
    __u32 mode = m ? *m : MODE_PASS;

    switch (mode) {
    case MODE_TX:
        return XDP_TX;
    case MODE_SEAL:
        if (strip_shim(ctx) == 0)
            count(NANOBPF_QUIC_STAT_SEALED);
        return XDP_PASS;
    case MODE_SEAL_KEEP_SHIM:
        count(NANOBPF_QUIC_STAT_SEALED);
        return XDP_PASS;
    case MODE_SEAL_CHANGE_SHIM: {
        unsigned char *d = (unsigned char *)(long)ctx->data, *end = (unsigned char *)(long)ctx->data_end;
        if (d + 18 <= end)
            d[15] ^= 1;
        count(NANOBPF_QUIC_STAT_SEALED);
        return XDP_PASS;
    }
    case MODE_SEAL_SHIM_TWICE: {
        if (bpf_xdp_adjust_head(ctx, -4))
            return XDP_DROP;
        unsigned char *d = (unsigned char *)(long)ctx->data, *end = (unsigned char *)(long)ctx->data_end;
        if (d + 22 > end)
            return XDP_DROP;
        for (int i = 0; i < 16; i++) /* the MAC addresses and the shim 4 bytes down: the shim twice */
            d[i] = d[i + 4];
        count(NANOBPF_QUIC_STAT_SEALED);
        return XDP_PASS;
    }
    case MODE_SEAL_TX:
        if (strip_shim(ctx) == 0)
            count(NANOBPF_QUIC_STAT_SEALED);
        return XDP_TX;
    case MODE_STRIP_ONLY:
        strip_shim(ctx);
        return XDP_PASS;
    case MODE_OPEN:
        count(NANOBPF_QUIC_STAT_OPENED);
        return XDP_PASS;
    case MODE_DROP:
        return XDP_DROP;
    case MODE_CONN: {
        const struct nanobpf_xdp_ctx *pc = (const void *)ctx;
        __u32 v = pc->conn | pc->cid_len << 17;
        bpf_map_update_elem(&test_conn, &zero, &v, BPF_ANY);
        return XDP_DROP;
    }
    case MODE_LOOKUP: {
        struct nanobpf_quic_cid key = {};
        __u16 port = 443;
        if (bpf_map_lookup_elem(&nanobpf_quic_keys, &key) || bpf_map_lookup_elem(&quic_pn, &key) ||
            bpf_map_lookup_elem(&quic_config, &zero) || bpf_map_lookup_elem(&quic_ports, &port))
            count(NANOBPF_QUIC_STAT_ONE_RTT);
        return XDP_PASS;
    }
    default:
        return XDP_PASS;
    }
}

char _license[] SEC("license") = "GPL";
