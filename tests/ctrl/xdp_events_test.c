/* Events to the host, written as for Linux (tests/ctrl/test_ctrl_device.py, tests/driver/test_driver.py,
 * tests/ebpf/test_events.py): every frame sends
 *   - a perf event, bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU | len << 32, &first8, 8): the
 *     frame's first 8 bytes, then the whole frame (xdpdump's way of sending a packet with metadata);
 *   - a ring buffer record, bpf_ringbuf_output(&rb, buf, n, 0): the frame's first 256 bytes when it
 *     has them, else its first 16 (the 4096-byte ring then holds 15 big records, so it fills);
 * keeps the helpers' results in last_rc and drops the frame. Frames shorter than 16 bytes are dropped
 * without events. The perf map's max_entries is left to the loader (libbpf: the number of CPUs).
 * Built by the tests with clang and nanobpf.ebpf.loader. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 4096);
} rb SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, sizeof(__u32));
} events SEC(".maps");

struct last_rc {
    __s64 ringbuf; /* bpf_ringbuf_output's result for the last frame */
    __s64 perf;    /* bpf_perf_event_output's */
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct last_rc);
} last_rc SEC(".maps");

SEC("xdp")
int xdp_events_test(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    __u32 zero = 0;
    struct last_rc *rc = bpf_map_lookup_elem(&last_rc, &zero);
    if (!rc || data + 16 > end)
        return XDP_DROP;
    __u64 first8 = *(__u64 *)data, len = (__u64)(end - data);
    rc->perf = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU | len << 32, &first8, sizeof first8);
    /* copied to the stack first: Linux does not let bpf_ringbuf_output read the packet (the device does) */
    if (data + 256 <= end) {
        __u8 buf[256];
        if (bpf_xdp_load_bytes(ctx, 0, buf, sizeof buf))
            return XDP_ABORTED;
        rc->ringbuf = bpf_ringbuf_output(&rb, buf, sizeof buf, 0);
    } else {
        __u64 buf[2] = {first8, *(__u64 *)(data + 8)};
        rc->ringbuf = bpf_ringbuf_output(&rb, buf, sizeof buf, 0);
    }
    return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
