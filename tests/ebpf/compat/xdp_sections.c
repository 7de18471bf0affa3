/* Style: xdp-tutorial basic02 ("xdp_pass"/"xdp_drop" in one object) with basic04's pinned statistics.
 * Feature: several XDP programs in old-style sections of one object (SEC("xdp_pass"), SEC("xdp_drop"),
 * SEC("xdp_abort")), chosen by function name (nanobpf-load -p, libxdp) or by section name
 * (nanobpf-load -s), all counting into the pinned map xdp_stats_map that xdp_stats1.c declares with the
 * same shape (both include xdp_stats_kern.h). xdp_drop_func also keeps ARP so a host behind it can still
 * resolve addresses. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xdp_stats_kern.h"

SEC("xdp_pass")
int xdp_pass_func(struct xdp_md *ctx)
{
    return xdp_stats_record_action(ctx, XDP_PASS);
}

SEC("xdp_drop")
int xdp_drop_func(struct xdp_md *ctx)
{
    void *data_end = (void *)(long)ctx->data_end;
    void *data = (void *)(long)ctx->data;
    struct ethhdr *eth = data;

    if ((void *)(eth + 1) <= data_end && eth->h_proto == bpf_htons(ETH_P_ARP))
        return xdp_stats_record_action(ctx, XDP_PASS);
    return xdp_stats_record_action(ctx, XDP_DROP);
}

SEC("xdp_abort")
int xdp_abort_func(struct xdp_md *ctx)
{
    return xdp_stats_record_action(ctx, XDP_ABORTED);
}

char _license[] SEC("license") = "GPL";
