/* Packet parser: Ethernet, up to VLAN_MAX 802.1Q/802.1ad tags, IPv4 (options via IHL) or IPv6, UDP.
 * Every header is bounds-checked against data_end; a frame that is cut short or inconsistent is
 * counted as malformed and dropped. Each frame is counted by protocol in a per-CPU array. UDP frames
 * whose destination port is in the `udp_ports` hash map get the action stored there: XDP_TX (the
 * MAC addresses are swapped and the frame goes back out), XDP_DROP or XDP_PASS; everything else passes.
 *
 * Exercises: BTF-defined maps (PERCPU_ARRAY, HASH), a .rodata constant, a __noinline static
 * subprogram (a bpf-to-bpf call), packet writes. Builds for Linux and for NanoBPF unchanged. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ETH_HLEN_ 14
#define VLAN_HLEN 4
#define IPV4_HLEN_MIN 20
#define IPV6_HLEN 40
#define UDP_HLEN 8
#define PROTO_UDP 17

/* Counter indices of proto_count. */
enum {
    COUNT_OTHER,     /* not IPv4 or IPv6 */
    COUNT_IPV4,
    COUNT_IPV6,
    COUNT_UDP,       /* UDP over either IP version */
    COUNT_MALFORMED, /* dropped: truncated or inconsistent headers */
    COUNT_N,
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, COUNT_N);
    __type(key, __u32);
    __type(value, __u64);
} proto_count SEC(".maps");

/* UDP destination port (host byte order) -> XDP action. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 64);
    __type(key, __u16);
    __type(value, __u32);
} udp_ports SEC(".maps");

/* VLAN tags parsed before giving up (a .rodata constant; a loader may patch it before loading). */
const volatile __u32 vlan_max = 2;

static __noinline void count(__u32 idx) {
    __u64 *n = bpf_map_lookup_elem(&proto_count, &idx);
    if (n)
        *n += 1; /* per-CPU: no atomic needed */
}

/* Swap the Ethernet source and destination addresses; the caller checked 12 bytes are present. */
static __always_inline void swap_mac(unsigned char *eth) {
    unsigned char tmp[6];
    __builtin_memcpy(tmp, eth, 6);
    __builtin_memcpy(eth, eth + 6, 6);
    __builtin_memcpy(eth + 6, tmp, 6);
}

static __always_inline int malformed(void) {
    count(COUNT_MALFORMED);
    return XDP_DROP;
}

SEC("xdp")
int xdp_parse(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    unsigned char *p = data + ETH_HLEN_;
    if (p > end)
        return malformed();
    __u16 proto = bpf_ntohs(*(__be16 *)(data + 12));
#pragma unroll
    for (int i = 0; i < 2; i++) {
        if (i >= vlan_max || (proto != ETH_P_8021Q && proto != ETH_P_8021AD))
            break;
        if (p + VLAN_HLEN > end)
            return malformed();
        proto = bpf_ntohs(*(__be16 *)(p + 2));
        p += VLAN_HLEN;
    }

    __u8 l4;
    if (proto == ETH_P_IP) {
        if (p + IPV4_HLEN_MIN > end)
            return malformed();
        __u32 ihl = (p[0] & 0x0f) * 4;
        __u32 total = (__u32)p[2] << 8 | p[3];
        if (p[0] >> 4 != 4 || ihl < IPV4_HLEN_MIN || total < ihl || p + total > end)
            return malformed();
        count(COUNT_IPV4);
        if ((p[6] & 0x3f) | p[7])
            return XDP_PASS; /* fragments go to the host */
        l4 = p[9];
        p += ihl;
    } else if (proto == ETH_P_IPV6) {
        if (p + IPV6_HLEN > end)
            return malformed();
        if (p[0] >> 4 != 6)
            return malformed();
        count(COUNT_IPV6);
        l4 = p[6];
        p += IPV6_HLEN;
    } else {
        count(COUNT_OTHER);
        return XDP_PASS;
    }

    if (l4 != PROTO_UDP)
        return XDP_PASS;
    if (p + UDP_HLEN > end)
        return malformed();
    __u32 ulen = (__u32)p[4] << 8 | p[5];
    if (ulen < UDP_HLEN || p + ulen > end)
        return malformed();
    count(COUNT_UDP);

    __u16 dport = (__u16)(p[2] << 8 | p[3]);
    __u32 *action = bpf_map_lookup_elem(&udp_ports, &dport);
    if (!action)
        return XDP_PASS;
    switch (*action) {
    case XDP_TX:
        swap_mac(data);
        return XDP_TX;
    case XDP_DROP:
        return XDP_DROP;
    default:
        return XDP_PASS;
    }
}

char _license[] SEC("license") = "GPL";
