/* Style: xdp-tutorial basic03/basic04 ("xdp_stats1"). Feature: an old-style section name that is not
 * "xdp" (SEC("xdp_stats1"): libxdp and the tutorial's loader take the program by name), and the
 * tutorial's pinned per-CPU statistics map (xdp_stats_kern.h, LIBBPF_PIN_BY_NAME: a second program that
 * declares xdp_stats_map with the same shape shares it). Every frame is counted, packets and bytes,
 * under the action taken (XDP_PASS here), without atomics because the map is per-CPU. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "xdp_stats_kern.h"

SEC("xdp_stats1")
int xdp_stats1_func(struct xdp_md *ctx)
{
    return xdp_stats_record_action(ctx, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
