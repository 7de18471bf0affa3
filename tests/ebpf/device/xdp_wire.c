/* The wire test program: the built-in program of the `dpu-wire` firmware (firmware/apps/dpu), run by
 * the data cores on frames that came in on the DPU's ports. It exercises every way out of a core:
 *   IPv4 (untagged) UDP to port 9 (discard)                  -> DROP
 *   IPv4 UDP to port 7 (echo): MAC addresses swapped         -> TX (back out of the ingress port)
 *   IPv4 UDP to port 19: to the ingress port's other side    -> REDIRECT (bpf_redirect)
 *   EtherType 0x88B7 from the host: its 4-byte tag removed   -> PASS (moves the frame start by 4 bytes)
 *   UDP to port 13 (IPv4 or IPv6, 0..2 VLAN tags), found at the offset PISA parsed (no parsing here):
 *     the first 12 payload bytes become the six parse-result context fields (big-endian 16-bit),
 *     MAC addresses swapped                                  -> TX (the UDP checksum is left stale)
 *   anything else                                            -> PASS (onwards: host <-> network)
 * Each (ingress, action) pair is counted in the per-CPU array wire_count. */
#include "nanobpf_xdp.h"
#include "nanobpf_ebpf_defs.h"

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 16);
    __type(key, __u32);
    __type(value, __u64);
} wire_count SEC(".maps");

static __always_inline int count(struct xdp_md *ctx, int action) {
    __u32 key = (ctx->ingress_ifindex == NANOBPF_IFINDEX_HOST ? 0 : 8) + (__u32)action;
    __u64 *n = bpf_map_lookup_elem(&wire_count, &key);
    if (n) *n += 1;
    return action;
}

static __always_inline void swap_macs(unsigned char *data) {
    for (int i = 0; i < 6; i++) {
        unsigned char t = data[i];
        data[i] = data[6 + i];
        data[6 + i] = t;
    }
}

/* UDP to port 13: what PISA parsed, written into the payload (the wire tests read it back). */
static __always_inline int parse_echo(struct xdp_md *ctx, unsigned char *data, unsigned char *end) {
    const struct nanobpf_xdp_ctx *pc = (const void *)ctx;
    __u32 l4 = pc->l4_off;
    if (!l4) return -1;
    unsigned char *udp = data + l4;
    if (udp + 8 + 12 > end || udp[2] != 0 || udp[3] != 13) return -1;
    __u32 v[6] = {pc->l3_off, l4, pc->quic_off, pc->pn_off, pc->cid_len, pc->conn};
    for (int i = 0; i < 6; i++) {
        udp[8 + 2 * i] = (unsigned char)(v[i] >> 8);
        udp[9 + 2 * i] = (unsigned char)v[i];
    }
    swap_macs(data);
    return count(ctx, XDP_TX);
}

SEC("xdp")
int xdp_wire(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if (data + 18 > end) return count(ctx, XDP_PASS);
    int echoed = parse_echo(ctx, data, end);
    if (echoed >= 0) return echoed;
    __u16 proto = (__u16)(data[12] << 8 | data[13]);
    if (proto == 0x88B7 && ctx->ingress_ifindex == NANOBPF_IFINDEX_HOST) {
        for (int i = 11; i >= 0; i--) data[i + 4] = data[i]; /* the MAC addresses move over the tag */
        if (bpf_xdp_adjust_head(ctx, 4)) return count(ctx, XDP_ABORTED);
        return count(ctx, XDP_PASS);
    }
    if (proto != 0x0800 || data + 14 + 20 + 8 > end) return count(ctx, XDP_PASS);
    unsigned char *ip = data + 14;
    if ((ip[0] & 0x0f) != 5 || ip[9] != 17) return count(ctx, XDP_PASS);
    __u16 dport = (__u16)(ip[22] << 8 | ip[23]);
    if (dport == 9) return count(ctx, XDP_DROP);
    if (dport == 7) {
        swap_macs(data);
        return count(ctx, XDP_TX);
    }
    if (dport == 19) {
        __u32 other = ctx->ingress_ifindex == NANOBPF_IFINDEX_HOST ? NANOBPF_IFINDEX_NET : NANOBPF_IFINDEX_HOST;
        count(ctx, XDP_REDIRECT);
        return (int)bpf_redirect(other, 0);
    }
    return count(ctx, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
