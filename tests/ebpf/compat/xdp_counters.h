/* Event counters in an ARRAY of __u64 that the program declares (a common/ helper as in xdp-tutorial):
 * counter_inc(&map, k) adds one to entry k; a key past the array's end counts nothing. Used by
 * xdp_ringbuf_reserve.c and xdp_tail_calls.c. */
#ifndef XDP_COUNTERS_H
#define XDP_COUNTERS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static __always_inline void counter_inc(void *map, __u32 k)
{
    __u64 *v = bpf_map_lookup_elem(map, &k);

    if (v)
        *v += 1;
}

#endif /* XDP_COUNTERS_H */
