/* The statistics of xdp-tutorial's common/xdp_stats_kern.h (and xdp_stats_kern_user.h), shared by
 * xdp_stats1.c and xdp_sections.c: packets and bytes per XDP action in a per-CPU array pinned by name
 * (LIBBPF_PIN_BY_NAME), so every object that includes this declares xdp_stats_map with the same shape
 * and shares it; xdp_stats_record_action counts a frame under its action (no atomics: per-CPU). */
#ifndef XDP_STATS_KERN_H
#define XDP_STATS_KERN_H

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

#endif /* XDP_STATS_KERN_H */
