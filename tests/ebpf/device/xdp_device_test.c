/* XDP program run on the CVA6 model by firmware/apps/ebpf_xdp: an ordinary libbpf-style program with
 * BTF maps (per-CPU array, hash, the QUIC key table), a .rodata constant, .data, a bpf-to-bpf call,
 * trace_printk, an atomic add, packet writes and misaligned 4-byte packet loads.
 *   IPv4/UDP to a blocked port (hash map)        -> DROP
 *   QUIC short header, CID in the key table      -> swap the MAC addresses, TX
 *   QUIC short header, other CID; anything else  -> PASS
 *   malformed (truncated, fixed bit clear)       -> DROP
 * Each action is counted in action_count. */
#include "nanobpf_xdp.h"
#include "nanobpf_ebpf_defs.h"

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 5);
    __type(key, __u32);
    __type(value, __u64);
} action_count SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, __u16);
    __type(value, __u32);
} blocked_ports SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, NANOBPF_KEYTABLE_ENTRIES);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_keys);
} nanobpf_quic_keys SEC(".maps");

#define CID_LEN 8 /* short-header destination CID length this deployment uses */
const volatile __u16 quic_port = 443;
__u32 first_packet = 1;

/* Offset of the UDP header, or -1 when the frame is not IPv4/UDP, or -2 when it is malformed. */
static __noinline int udp_offset(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    int off = 14;
    if (data + 14 > end) return -2;
    __u16 proto = (__u16)(data[12] << 8 | data[13]);
    if (proto == 0x8100) {
        if (data + 18 > end) return -2;
        proto = (__u16)(data[16] << 8 | data[17]);
        off = 18;
    }
    if (proto != 0x0800) return -1;
    unsigned char *ip = data + off;
    if (ip + 20 > end) return -2;
    unsigned ihl = (ip[0] & 0x0f) * 4;
    unsigned total = (unsigned)(ip[2] << 8 | ip[3]);
    if (ihl < 20 || total < ihl || ip + total > end) return -2;
    if (ip[9] != 17) return -1;
    return off + (int)ihl;
}

static __always_inline int count(int action) {
    __u32 key = (__u32)action;
    __u64 *n = bpf_map_lookup_elem(&action_count, &key);
    if (n) __sync_fetch_and_add(n, 1);
    return action;
}

SEC("xdp")
int xdp_device_test(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if (first_packet) {
        first_packet = 0;
        bpf_printk("xdp_device_test: first packet, %d bytes", (int)(end - data));
    }
    int off = udp_offset(ctx);
    if (off == -2) return count(XDP_DROP);
    if (off < 0 || off > 64) return count(XDP_PASS);
    unsigned char *udp = data + off;
    if (udp + 8 > end) return count(XDP_DROP);
    __u16 dport = (__u16)(udp[2] << 8 | udp[3]);
    if (bpf_map_lookup_elem(&blocked_ports, &dport)) return count(XDP_DROP);
    if (dport != quic_port) return count(XDP_PASS);
    unsigned char *q = udp + 8;
    if (q + 1 + NANOBPF_KEYTABLE_CID_MAX > end) return count(XDP_DROP);
    if (q[0] & 0x80) return count(XDP_PASS);
    if (!(q[0] & 0x40)) return count(XDP_DROP);
    struct nanobpf_quic_cid cid = {};
    cid.len = CID_LEN;
    /* two 4-byte loads at frame offset 43 and 47: misaligned, which CVA6 cannot do in hardware */
    __u32 w0 = *(__u32 *)(q + 1), w1 = *(__u32 *)(q + 5);
    __builtin_memcpy(cid.id, &w0, 4);
    __builtin_memcpy(cid.id + 4, &w1, 4);
    if (!bpf_map_lookup_elem(&nanobpf_quic_keys, &cid)) return count(XDP_PASS);
    if (data + 12 > end) return count(XDP_DROP);
    for (int i = 0; i < 6; i++) {
        unsigned char t = data[i];
        data[i] = data[6 + i];
        data[6 + i] = t;
    }
    return count(XDP_TX);
}

char _license[] SEC("license") = "GPL";
