/* Style: xdp-tutorial basic02 ("xdp_pass"/"xdp_drop" in one object) with basic04's pinned statistics.
 * Feature: several XDP programs in old-style sections of one object (SEC("xdp_pass"), SEC("xdp_drop"),
 * SEC("xdp_abort")), chosen by function name (nanobpf-load -p, libxdp) or by section name
 * (nanobpf-load -s), all counting into the pinned map xdp_stats_map that xdp_stats1.c declares with the
 * same shape. xdp_drop_func also keeps ARP so a host behind it can still resolve addresses. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef XDP_ACTION_MAX
#define XDP_ACTION_MAX (XDP_REDIRECT + 1)
#endif

struct datarec {
    __u64 rx_packets;
    __u64 rx_bytes;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __type(key, __u32);
    __type(value, struct datarec);
    __uint(max_entries, XDP_ACTION_MAX);
    __uint(pinning, LIBBPF_PIN_BY_NAME);
} xdp_stats_map SEC(".maps");

static __always_inline __u32 record(struct xdp_md *ctx, __u32 action)
{
    void *data_end = (void *)(long)ctx->data_end;
    void *data = (void *)(long)ctx->data;
    struct datarec *rec = bpf_map_lookup_elem(&xdp_stats_map, &action);

    if (!rec)
        return XDP_ABORTED;
    rec->rx_packets++;
    rec->rx_bytes += (__u64)(data_end - data);
    return action;
}

SEC("xdp_pass")
int xdp_pass_func(struct xdp_md *ctx)
{
    return record(ctx, XDP_PASS);
}

SEC("xdp_drop")
int xdp_drop_func(struct xdp_md *ctx)
{
    void *data_end = (void *)(long)ctx->data_end;
    void *data = (void *)(long)ctx->data;
    struct ethhdr *eth = data;

    if ((void *)(eth + 1) <= data_end && eth->h_proto == bpf_htons(ETH_P_ARP))
        return record(ctx, XDP_PASS);
    return record(ctx, XDP_DROP);
}

SEC("xdp_abort")
int xdp_abort_func(struct xdp_md *ctx)
{
    return record(ctx, XDP_ABORTED);
}

char _license[] SEC("license") = "GPL";
