/* Must be accepted: bpf_loop walking the packet through a context on the stack; the callback checks the
 * (unknown) index and each byte against data_end itself, as Linux requires. */
#include "nanobpf_xdp.h"
struct walk {
    unsigned char *data, *end;
    __u32 sum;
};
static int add(__u32 i, struct walk *w) {
    if (i > 1500) return 1;
    unsigned char *p = w->data + i;
    if (p + 1 > w->end) return 1;
    w->sum += *p;
    return 0;
}
SEC("xdp")
int prog(struct xdp_md *ctx) {
    struct walk w = {(void *)(long)ctx->data, (void *)(long)ctx->data_end, 0};
    bpf_loop(1501, add, &w, 0);
    return w.sum & 1 ? XDP_DROP : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
