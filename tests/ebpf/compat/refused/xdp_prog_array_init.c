/* Refused by the device: a PROG_ARRAY filled in its declaration (libbpf sets the slots from .values
 * when it loads the object). The device's program arrays are filled by the host, which names the
 * programs by their index in the image. Style: libbpf selftests' static tail-call tables. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

int xdp_drop_all(struct xdp_md *ctx);

struct {
    __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __array(values, int (void *));
} jmp_table SEC(".maps") = {
    .values = { [1] = (void *)&xdp_drop_all },
};

SEC("xdp")
int xdp_drop_all(struct xdp_md *ctx)
{
    return XDP_DROP;
}

SEC("xdp")
int xdp_root(struct xdp_md *ctx)
{
    bpf_tail_call(ctx, &jmp_table, 1);
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
