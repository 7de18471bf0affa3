/* Must be accepted: bpf_csum_diff with NULL and 0 bytes on one side (the two ways programs add or
 * remove words from a checksum), and with stack and packet words on both. */
#include "nanobpf_xdp.h"
SEC("xdp")
int prog(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    __u32 *words = data;
    if ((void *)(words + 4) > end) return XDP_DROP;
    __u32 repl[2] = {words[0] ^ 0xffff, words[1]};
    __s64 add = bpf_csum_diff(0, 0, repl, sizeof repl, 0);
    __s64 sub = bpf_csum_diff(words, 8, 0, 0, (__u32)add);
    __s64 both = bpf_csum_diff(words, 8, words + 2, 8, (__u32)sub);
    return both & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
