/* Must be accepted: `if r1 & 0xffffffc3 goto` (jset) leaves only bits 2..5 unknown on the fall-through,
 * so the value is a multiple of 4 up to 60 and indexes a 64-byte map value. Clang does not emit jset (nor
 * does its assembler know it), so the function's body is written as instructions. */
#include "nanobpf_xdp.h"
struct val { unsigned char b[64]; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct val); } tbl SEC(".maps");
/* r0 = v; if v & 0xffffffc3 (sign-extended): r0 = 0xff */
static __attribute__((naked, noinline)) __u64 bits_2_to_5(__u64 v) {
    asm volatile("r0 = r1\n"
                 ".8byte 0xffffffc300010145\n" /* if r1 & 0xffffffc3 goto +1 */
                 "exit\n"
                 "r0 = 0xff\n"
                 "exit\n");
}
SEC("xdp")
int prog(struct xdp_md *ctx) {
    unsigned char *data = (unsigned char *)(long)ctx->data;
    unsigned char *end = (unsigned char *)(long)ctx->data_end;
    if (data + 8 > end) return XDP_DROP;
    __u32 k = 0;
    struct val *t = bpf_map_lookup_elem(&tbl, &k);
    if (!t) return XDP_DROP;
    __u64 off = bits_2_to_5(*(volatile __u64 *)data);
    if (off == 0xff) return XDP_PASS;
#ifndef READ_OFFSET /* reject_jset_bits_beyond.c includes this file with the next byte */
#define READ_OFFSET 3 /* off + 3: byte 63 of the value at most */
#endif
    return t->b[off + READ_OFFSET];
}
char _license[] SEC("license") = "GPL";
