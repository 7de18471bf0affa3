/* Style: kernel samples/bpf xdp_redirect_map (and xdp-tutorial packet03's redirect map). Feature:
 * BPF_MAP_TYPE_DEVMAP whose values are struct bpf_devmap_val (ifindex, no second program), used by
 * bpf_redirect_map with XDP_PASS in the flags: a slot without a port passes the frame to the stack.
 * The slot is the frame's VLAN id modulo 8 (0 when untagged), a tiny VLAN-to-port switch; a
 * redirected frame goes back towards its sender (MACs swapped), and each outcome is counted per slot. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define SLOTS 8

struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP);
    __uint(max_entries, SLOTS);
    __type(key, __u32);
    __type(value, struct bpf_devmap_val);
} tx_port SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, SLOTS * 2);  /* [slot]: redirected, [SLOTS + slot]: passed */
    __type(key, __u32);
    __type(value, __u64);
} rxcnt SEC(".maps");

struct vlan_hdr {
    __be16 h_vlan_TCI;
    __be16 h_vlan_encapsulated_proto;
};

static __always_inline void swap_src_dst_mac(void *data)
{
    unsigned short *p = data;
    unsigned short dst[3];

    dst[0] = p[0];
    dst[1] = p[1];
    dst[2] = p[2];
    p[0] = p[3];
    p[1] = p[4];
    p[2] = p[5];
    p[3] = dst[0];
    p[4] = dst[1];
    p[5] = dst[2];
}

SEC("xdp")
int xdp_redirect_map_vlan(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    __u32 slot = 0;

    if ((void *)(eth + 1) > data_end)
        return XDP_DROP;
    if (eth->h_proto == bpf_htons(ETH_P_8021Q)) {
        struct vlan_hdr *vh = (void *)(eth + 1);
        if ((void *)(vh + 1) > data_end)
            return XDP_DROP;
        slot = (bpf_ntohs(vh->h_vlan_TCI) & 0x0fff) % SLOTS;
    }

    long action = bpf_redirect_map(&tx_port, slot, XDP_PASS);
    __u32 idx = action == XDP_REDIRECT ? slot : SLOTS + slot;
    if (action == XDP_REDIRECT)
        swap_src_dst_mac(data);
    __u64 *n = bpf_map_lookup_elem(&rxcnt, &idx);
    if (n)
        *n += 1;
    return action;
}

char _license[] SEC("license") = "GPL";
