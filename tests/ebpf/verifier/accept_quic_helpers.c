/* Must be accepted by the device (Linux has no such helpers): the QUIC protection helpers called as
 * documented - the key table value as the lookup returned it, after the NULL check; the request on
 * the stack; the header-protection block on the stack and in a map value. */
#include "nanobpf_xdp.h"
#include "nanobpf_helpers.h"
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_keys);
} nanobpf_quic_keys SEC(".maps");
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct nanobpf_aead_req);
} blocks SEC(".maps");

SEC("xdp")
int prog(struct xdp_md *ctx) {
    struct nanobpf_quic_cid cid = {.len = 0};
    const struct nanobpf_quic_keys *keys = bpf_map_lookup_elem(&nanobpf_quic_keys, &cid);
    if (!keys)
        return XDP_PASS;
    __u8 sample[16] = {};
    if (bpf_quic_hp_mask(keys, sample, sizeof sample))
        return XDP_ABORTED;
    __u32 zero = 0;
    struct nanobpf_aead_req *blk = bpf_map_lookup_elem(&blocks, &zero);
    if (blk && bpf_quic_hp_mask(keys, blk, 16))
        return XDP_ABORTED;
    struct nanobpf_aead_req req = {.hdr_off = 14, .hdr_len = sample[0] | 1, .payload_len = 32, .pn = 1};
    long rc = ctx->ingress_ifindex == 1 ? bpf_quic_aead_seal(ctx, keys, &req, sizeof req)
                                        : bpf_quic_aead_open(ctx, keys, &req, sizeof req);
    return rc == -NANOBPF_EBADMSG ? XDP_DROP : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
