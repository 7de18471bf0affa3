/* Refused by the device: bpf_ringbuf_reserve/submit (the device has bpf_ringbuf_output; reserving needs
 * the verifier to track the reserved record until it is submitted or discarded). Style: the BPF ring
 * buffer of newer samples and tools (libbpf's ring_buffer__poll on the other side): one event per frame
 * with its length and ingress port. Linux loads it. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct event {
    __u32 ifindex;
    __u32 len;
};

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 4096);
} events SEC(".maps");

SEC("xdp")
int xdp_ringbuf_events(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);

    if (!ev)
        return XDP_PASS;
    ev->ifindex = ctx->ingress_ifindex;
    ev->len = (__u32)(data_end - data);
    bpf_ringbuf_submit(ev, 0);
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
