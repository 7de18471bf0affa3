/* Refused by the device: map-in-map (ARRAY_OF_MAPS). Style: per-tenant policy tables swapped atomically
 * by replacing the inner map (Cilium's and Katran's outer/inner maps, libbpf's __array(values, ...)).
 * Linux loads it. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct inner_map {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, __u32);
} policy_v1 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
    __uint(max_entries, 2);
    __type(key, __u32);
    __array(values, struct inner_map);
} policies SEC(".maps") = {
    .values = { [0] = &policy_v1 },
};

SEC("xdp")
int xdp_policy(struct xdp_md *ctx)
{
    __u32 tenant = 0, rule = 0;
    void *inner = bpf_map_lookup_elem(&policies, &tenant);

    if (!inner)
        return XDP_PASS;
    __u32 *action = bpf_map_lookup_elem(inner, &rule);
    if (!action || *action > XDP_TX)
        return XDP_PASS;
    return *action;
}

char _license[] SEC("license") = "GPL";
