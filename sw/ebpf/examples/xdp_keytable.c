/* QUIC key table lookup. For a UDP datagram to QUIC_PORT carrying a QUIC short-header packet
 * (RFC 9000 section 17.3: header form bit clear, fixed bit set), the destination connection ID
 * (cid_len bytes after the first byte; short headers do not carry its length, the endpoint that
 * issued the CID chose it) is looked up in the key table map `nanobpf_quic_keys`:
 *   found     -> XDP_PASS (a trace line names the key phase)
 *   not found -> XDP_DROP
 * Other traffic (not UDP, another port, long headers) passes; truncated frames are dropped.
 *
 * On NanoBPF the hash map named nanobpf_quic_keys with these key and value types is backed by the
 * device key table storage (docs/ebpf.md); on Linux it is an ordinary hash map. The key and value
 * types come from the generated ABI header (build with -I build/generated/include). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "nanobpf_ebpf_defs.h"

#define QUIC_PORT 443
#define PROTO_UDP 17

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, NANOBPF_KEYTABLE_ENTRIES);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_keys);
} nanobpf_quic_keys SEC(".maps");

/* Length of the connection IDs this endpoint issues. */
const volatile __u32 cid_len = 8;

/* Short-header packets whose CID was not found (.bss). */
__u64 misses;

SEC("xdp")
int xdp_keytable(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    unsigned char *p = data + 14;
    if (p > end)
        return XDP_DROP;
    __u16 proto = bpf_ntohs(*(__be16 *)(data + 12));
    __u8 l4;
    if (proto == ETH_P_IP) {
        if (p + 20 > end)
            return XDP_DROP;
        __u32 ihl = (p[0] & 0x0f) * 4;
        if (ihl < 20)
            return XDP_DROP;
        l4 = p[9];
        p += ihl;
    } else if (proto == ETH_P_IPV6) {
        if (p + 40 > end)
            return XDP_DROP;
        l4 = p[6];
        p += 40;
    } else {
        return XDP_PASS;
    }
    if (l4 != PROTO_UDP)
        return XDP_PASS;
    if (p + 8 > end)
        return XDP_DROP;
    if ((p[2] << 8 | p[3]) != QUIC_PORT)
        return XDP_PASS;
    unsigned char *q = p + 8;
    if (q + 1 > end)
        return XDP_DROP;
    if (q[0] & 0x80)
        return XDP_PASS; /* long header: the handshake is the host's business */
    if (!(q[0] & 0x40))
        return XDP_DROP; /* a short header needs the fixed bit */

    struct nanobpf_quic_cid key = {};
    __u32 n = cid_len;
    if (n > NANOBPF_KEYTABLE_CID_MAX)
        return XDP_DROP;
    key.len = n;
    for (__u32 i = 0; i < NANOBPF_KEYTABLE_CID_MAX; i++) {
        if (i >= n)
            break;
        if (q + 2 + i > end)
            return XDP_DROP;
        key.id[i] = q[1 + i];
    }

    struct nanobpf_quic_keys *keys = bpf_map_lookup_elem(&nanobpf_quic_keys, &key);
    if (!keys) {
        __sync_fetch_and_add(&misses, 1);
        bpf_printk("quic: unknown cid (%u bytes), drop", n);
        return XDP_DROP;
    }
    bpf_printk("quic: cid found, key phase %u", keys->key_phase);
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
