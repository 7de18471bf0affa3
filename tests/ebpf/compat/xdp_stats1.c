/* Style: xdp-tutorial basic03/basic04 ("xdp_stats1"). Feature: an old-style section name that is not
 * "xdp" (SEC("xdp_stats1"): libxdp and the tutorial's loader take the program by name), and the
 * tutorial's pinned per-CPU statistics map (LIBBPF_PIN_BY_NAME: a second program that declares
 * xdp_stats_map with the same shape shares it). Every frame is counted, packets and bytes, under the
 * action taken (XDP_PASS here), without atomics because the map is per-CPU. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

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

static __always_inline __u32 xdp_stats_record_action(struct xdp_md *ctx, __u32 action)
{
    void *data_end = (void *)(long)ctx->data_end;
    void *data = (void *)(long)ctx->data;

    if (action >= XDP_ACTION_MAX)
        return XDP_ABORTED;

    struct datarec *rec = bpf_map_lookup_elem(&xdp_stats_map, &action);
    if (!rec)
        return XDP_ABORTED;

    rec->rx_packets++;
    rec->rx_bytes += (__u64)(data_end - data);
    return action;
}

SEC("xdp_stats1")
int xdp_stats1_func(struct xdp_md *ctx)
{
    return xdp_stats_record_action(ctx, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
