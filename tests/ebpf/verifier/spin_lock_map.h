/* The map of the reject_spin_lock_*.c programs: an ARRAY whose value is a counter and the
 * struct bpf_spin_lock that guards it. Two entries, for reject_spin_lock_two_locks.c's two locks; the
 * others use entry 0. */
#ifndef SPIN_LOCK_MAP_H
#define SPIN_LOCK_MAP_H
#include "nanobpf_xdp.h"
struct stats {
    struct bpf_spin_lock lock;
    __u32 packets;
};
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, struct stats);
} counters SEC(".maps");
#endif
