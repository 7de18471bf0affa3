/* The smallest XDP program: every frame goes on to the host. Builds for Linux and for NanoBPF
 * unchanged (see README.md). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx) {
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
