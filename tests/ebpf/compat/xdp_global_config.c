/* Style: libbpf skeleton programs (bpftool gen skeleton) configured through global variables instead
 * of declared maps. Feature: global data: `const volatile` settings in .rodata (fixed at load), tunables
 * in .data that the control plane writes at run time (through the object's ".data" map), counters in
 * .bss and a custom section .data.verdicts (its own map). The program passes management TCP traffic,
 * drops IPv4 fragments if configured to, and drops UDP to a configurable port. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* .rodata */
const volatile __u16 mgmt_port = 22;
const volatile __u8 drop_fragments = 1;

/* .data: written by the control plane */
__u16 blocked_udp_port = 9;
__u16 blocked_udp_port6 = 9;

/* .bss */
__u64 pkts_seen;
__u64 bytes_seen;
__u64 pkts_dropped;
__u64 pkts_mgmt;

/* a custom data section: one map of its own */
__u64 verdicts[XDP_REDIRECT + 1] SEC(".data.verdicts") = { 0 };

static __always_inline int verdict(int action)
{
    if (action == XDP_DROP)
        __sync_fetch_and_add(&pkts_dropped, 1);
    __sync_fetch_and_add(&verdicts[action], 1);
    return action;
}

static __always_inline int l4_verdict(__u8 proto, void *l4, void *data_end, __u16 blocked)
{
    if (proto == IPPROTO_TCP) {
        struct tcphdr *th = l4;
        if ((void *)(th + 1) <= data_end && th->dest == bpf_htons(mgmt_port)) {
            __sync_fetch_and_add(&pkts_mgmt, 1);
            return verdict(XDP_PASS);
        }
    } else if (proto == IPPROTO_UDP) {
        struct udphdr *uh = l4;
        if ((void *)(uh + 1) <= data_end && blocked && uh->dest == bpf_htons(blocked))
            return verdict(XDP_DROP);
    }
    return verdict(XDP_PASS);
}

SEC("xdp")
int xdp_global_config(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;

    __sync_fetch_and_add(&pkts_seen, 1);
    __sync_fetch_and_add(&bytes_seen, data_end - data);
    if ((void *)(eth + 1) > data_end)
        return verdict(XDP_DROP);
    if (eth->h_proto == bpf_htons(ETH_P_IP)) {
        struct iphdr *iph = (void *)(eth + 1);
        if ((void *)(iph + 1) > data_end || iph->ihl < 5)
            return verdict(XDP_DROP);
        if (drop_fragments && (iph->frag_off & bpf_htons(0x3fff)))
            return verdict(XDP_DROP);
        return l4_verdict(iph->protocol, (void *)iph + iph->ihl * 4, data_end, blocked_udp_port);
    }
    if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip6h = (void *)(eth + 1);
        if ((void *)(ip6h + 1) > data_end)
            return verdict(XDP_DROP);
        return l4_verdict(ip6h->nexthdr, ip6h + 1, data_end, blocked_udp_port6);
    }
    return verdict(XDP_PASS);
}

char _license[] SEC("license") = "GPL";
