/* Refused by the device: PERF_EVENT_ARRAY and bpf_perf_event_output. Style: kernel samples/bpf
 * xdp_sample_pkts: the first bytes of every frame are sent to user space through a perf buffer.
 * Linux loads it. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, sizeof(__u32));
} my_map SEC(".maps");

struct sample_meta {
    __u16 cookie;
    __u16 pkt_len;
};

SEC("xdp")
int xdp_sample_prog(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct sample_meta meta = { .cookie = 0xdead, .pkt_len = (__u16)(data_end - data) };
    __u64 flags = BPF_F_CURRENT_CPU;
    __u64 sample = meta.pkt_len < 64 ? meta.pkt_len : 64;

    flags |= sample << 32;  /* copy this many frame bytes after the metadata */
    bpf_perf_event_output(ctx, &my_map, flags, &meta, sizeof(meta));
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
