/* Must be rejected: indexes a 4-entry value array with an unchecked packet byte. */
#include "nanobpf_xdp.h"
struct val { __u64 slots[4]; };
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct val);
} table SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    __u32 key = 0;
    if (data + 1 > end) return XDP_DROP;
    struct val *v = bpf_map_lookup_elem(&table, &key);
    if (!v) return XDP_DROP;
    v->slots[data[0]] += 1;
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
