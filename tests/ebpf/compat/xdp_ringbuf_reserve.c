/* Style: the BPF ring buffer of newer samples and tools (libbpf's ring_buffer__poll on the other side):
 * a record reserved in the ring, filled in place, then submitted, or discarded when the program decides
 * against it. Feature: bpf_ringbuf_reserve/submit/discard (the verifier makes every path give the record
 * back), reservations that fail when the ring is full (counted here), and one with bad flags.
 * Per frame: a 16-byte event (the frame's length and first 8 bytes), discarded for frames of odd
 * length. counts: [0] reservations that found no room, [1] discarded, [2] reservations with flags 1 that
 * did not fail. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "xdp_counters.h"

struct event {
    __u32 len;
    __u32 zero;
    __u8 head[8];
};

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 4096);
} rb SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 3);
    __type(key, __u32);
    __type(value, __u64);
} counts SEC(".maps");

SEC("xdp")
int xdp_ringbuf_reserve(struct xdp_md *ctx)
{
    unsigned char *data = (void *)(long)ctx->data;
    unsigned char *data_end = (void *)(long)ctx->data_end;
    __u32 len = data_end - data;

    void *bad = bpf_ringbuf_reserve(&rb, 8, 1);
    if (bad) {
        counter_inc(&counts, 2);
        bpf_ringbuf_discard(bad, 0);
    }
    struct event *ev = bpf_ringbuf_reserve(&rb, sizeof(*ev), 0);
    if (!ev) {
        counter_inc(&counts, 0);
        return XDP_PASS;
    }
    ev->len = len;
    ev->zero = 0; /* Linux hands out the ring's old bytes (the device zeroes a record): write every field */
    if (data + 8 <= data_end)
        __builtin_memcpy(ev->head, data, 8);
    if (len & 1) {
        bpf_ringbuf_discard(ev, 0);
        counter_inc(&counts, 1);
        return XDP_DROP;
    }
    bpf_ringbuf_submit(ev, 0);
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
