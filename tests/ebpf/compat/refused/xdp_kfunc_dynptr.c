/* Refused by the device: kfuncs (functions of the host's kernel). Style: dynptr-based parsing (Linux
 * 6.4+, tools/testing/selftests/bpf/progs/test_xdp_dynptr.c): the kfunc bpf_dynptr_from_xdp wraps the
 * frame, bpf_dynptr_read copies the Ethernet header out, and frames are counted by EtherType class.
 * Linux loads it. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

extern int bpf_dynptr_from_xdp(struct xdp_md *x, __u64 flags, struct bpf_dynptr *ptr__uninit) __ksym;

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, __u64);
} ip_or_not SEC(".maps");

SEC("xdp")
int xdp_dynptr_count(struct xdp_md *ctx)
{
    struct bpf_dynptr ptr;
    struct ethhdr eth;

    if (bpf_dynptr_from_xdp(ctx, 0, &ptr))
        return XDP_DROP;
    if (bpf_dynptr_read(&eth, sizeof(eth), &ptr, 0, 0))
        return XDP_DROP;
    __u32 key = eth.h_proto == bpf_htons(ETH_P_IP) || eth.h_proto == bpf_htons(ETH_P_IPV6);
    __u64 *n = bpf_map_lookup_elem(&ip_or_not, &key);
    if (n)
        __sync_fetch_and_add(n, 1);
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
