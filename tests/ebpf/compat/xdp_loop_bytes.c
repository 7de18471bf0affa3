/* Style: Linux's bpf_loop selftests and the "bpf_loop instead of unrolling" pattern of tracing and XDP
 * tools: a callback walks the frame through a context struct on the stack. Feature: bpf_loop with a
 * static callback (the verifier checks it once per distinct state, not once per call), packet pointers
 * carried in the callback's context, a callback that stops the loop (returns 1), the number of calls
 * bpf_loop returns, NULL as the context, and the errors it gives for bad flags and too many loops.
 * Per frame: the sum of its bytes, the offset of its first zero byte (or its length), and the calls made;
 * all three go into the frame_stats array under the EtherType's low byte mod 8, and the frame is dropped
 * when the sum is odd. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define MAX_BYTES 1536

struct walk {
    unsigned char *data;
    unsigned char *end;
    __u64 sum;
    __u32 first_zero;
};

struct frame_stat {
    __u64 sum;
    __u32 first_zero;
    __u32 calls;
    /* what bpf_loop says to flags 1, and to 2^23 + 1 loops: the low halves, as Linux 6.18's inlined
     * bpf_loop (flags a known 0) returns -E2BIG zero-extended from 32 bits (0xfffffff9) */
    __s32 bad_flags;
    __s32 too_many;
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 8);
    __type(key, __u32);
    __type(value, struct frame_stat);
} frame_stats SEC(".maps");

static int add_byte(__u32 i, struct walk *w)
{
    if (i >= MAX_BYTES)
        return 1;
    unsigned char *p = w->data + i;
    if (p + 1 > w->end)
        return 1;
    w->sum += *p;
    return 0;
}

static int find_zero(__u32 i, struct walk *w)
{
    if (i >= MAX_BYTES)
        return 1;
    unsigned char *p = w->data + i;
    if (p + 1 > w->end)
        return 1;
    if (*p == 0) {
        w->first_zero = i;
        return 1;
    }
    return 0;
}

static int nothing(__u32 i, void *unused)
{
    return 0;
}

SEC("xdp")
int xdp_loop_bytes(struct xdp_md *ctx)
{
    struct walk w = {
        .data = (void *)(long)ctx->data,
        .end = (void *)(long)ctx->data_end,
    };
    __u32 len = w.end - w.data;
    if (len > MAX_BYTES)
        return XDP_PASS;
    w.first_zero = len;
    bpf_loop(MAX_BYTES, add_byte, &w, 0);
    long calls = bpf_loop(MAX_BYTES, find_zero, &w, 0);

    if (w.data + 14 > w.end)
        return XDP_ABORTED;
    __u32 key = w.data[13] & 7; /* the EtherType's low byte */
    struct frame_stat *st = bpf_map_lookup_elem(&frame_stats, &key);
    if (!st)
        return XDP_ABORTED;
    st->sum += w.sum;
    st->first_zero = w.first_zero;
    st->calls = calls;
    st->bad_flags = bpf_loop(4, nothing, NULL, 1);
    st->too_many = bpf_loop((1 << 23) + 1, nothing, NULL, 0);
    return w.sum & 1 ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
