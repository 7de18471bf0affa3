/* Refused by the device: CPUMAP. Style: kernel samples/bpf xdp_redirect_cpu: every frame is handed to
 * another CPU of the host, which builds the skb there. Linux loads it. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_CPUMAP);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, struct bpf_cpumap_val);
} cpu_map SEC(".maps");

SEC("xdp")
int xdp_redirect_cpu(struct xdp_md *ctx)
{
    __u32 cpu = ctx->rx_queue_index % 4;
    return bpf_redirect_map(&cpu_map, cpu, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
