/* Refused by the device: PROG_ARRAY and bpf_tail_call. Style: Cilium's and Katran's dispatchers and
 * xdp-tutorial's tail-call examples: a root program jumps to a per-protocol program by index and
 * passes the frame when the slot is empty. Linux loads it (the program array starts empty). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct {
    __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
    __uint(max_entries, 8);
    __type(key, __u32);
    __type(value, __u32);
} jmp_table SEC(".maps");

SEC("xdp")
int xdp_dispatch(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;

    if ((void *)(eth + 1) > data_end)
        return XDP_DROP;
    bpf_tail_call(ctx, &jmp_table, eth->h_proto == bpf_htons(ETH_P_IPV6) ? 1 : 0);
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
