/* Style: xdp-tools xdp-forward / a two-port XDP bridge ("wire" mode). Feature:
 * BPF_MAP_TYPE_DEVMAP_HASH keyed by ifindex with plain __u32 ifindex values: every frame leaves by the
 * port paired with its ingress port (bpf_redirect_map keyed by ctx->ingress_ifindex); a port without a
 * pair drops (XDP_DROP in the flags is the action on a miss). Forwarded bytes are counted per ingress
 * port in a hash map. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
    __uint(max_entries, 32);
    __type(key, __u32);
    __type(value, __u32);
} fwd_ports SEC(".maps");

struct port_stats {
    __u64 packets;
    __u64 bytes;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 32);
    __type(key, __u32);
    __type(value, struct port_stats);
} fwd_stats SEC(".maps");

SEC("xdp")
int xdp_l2fwd_devmap_hash(struct xdp_md *ctx)
{
    __u32 in = ctx->ingress_ifindex;
    long action = bpf_redirect_map(&fwd_ports, in, XDP_DROP);

    if (action == XDP_REDIRECT) {
        struct port_stats *st = bpf_map_lookup_elem(&fwd_stats, &in);
        if (st) {
            __sync_fetch_and_add(&st->packets, 1);
            void *data = (void *)(long)ctx->data;
            void *data_end = (void *)(long)ctx->data_end;
            __sync_fetch_and_add(&st->bytes, data_end - data);
        }
    }
    return action;
}

char _license[] SEC("license") = "GPL";
