/* Refused by the device: bpf_fib_lookup (the kernel's routing and neighbour tables). Style: kernel
 * samples/bpf xdp_fwd_kern.c, reduced to IPv4: the kernel's FIB gives the egress port and MACs. Linux
 * loads it. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define AF_INET 2

SEC("xdp")
int xdp_fwd_fib(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *iph = (void *)(eth + 1);
    struct bpf_fib_lookup fib_params = {};

    if ((void *)(iph + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
        return XDP_PASS;
    fib_params.family = AF_INET;
    fib_params.tos = iph->tos;
    fib_params.l4_protocol = iph->protocol;
    fib_params.tot_len = bpf_ntohs(iph->tot_len);
    fib_params.ipv4_src = iph->saddr;
    fib_params.ipv4_dst = iph->daddr;
    fib_params.ifindex = ctx->ingress_ifindex;
    if (bpf_fib_lookup(ctx, &fib_params, sizeof(fib_params), 0) != BPF_FIB_LKUP_RET_SUCCESS)
        return XDP_PASS;
    __builtin_memcpy(eth->h_dest, fib_params.dmac, ETH_ALEN);
    __builtin_memcpy(eth->h_source, fib_params.smac, ETH_ALEN);
    return bpf_redirect(fib_params.ifindex, 0);
}

char _license[] SEC("license") = "GPL";
