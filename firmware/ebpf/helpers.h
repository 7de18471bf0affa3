/* What helpers.c (the helper table and Linux's helpers) and quic_helpers.c (the QUIC packet protection
 * helpers) share: a helper's shape - five 64-bit arguments, one result - and the QUIC ones the table
 * lists. Internal to the runtime (ebpf.h is its public header). */
#ifndef NANOBPF_EBPF_HELPERS_H
#define NANOBPF_EBPF_HELPERS_H

#include <stdint.h>

#define U64 uint64_t
#define PTR(x) ((void *)(uintptr_t)(x))

U64 h_quic_aead_seal(U64 a1, U64 a2, U64 a3, U64 a4, U64 a5);
U64 h_quic_aead_open(U64 a1, U64 a2, U64 a3, U64 a4, U64 a5);
U64 h_quic_hp_mask(U64 a1, U64 a2, U64 a3, U64 a4, U64 a5);
U64 h_quic_hp_mask_at(U64 a1, U64 a2, U64 a3, U64 a4, U64 a5);
U64 h_quic_pn_of(U64 a1, U64 a2, U64 a3, U64 a4, U64 a5);
U64 h_quic_keys_of(U64 a1, U64 a2, U64 a3, U64 a4, U64 a5);
U64 h_quic_seal_conn(U64 a1, U64 a2, U64 a3, U64 a4, U64 a5);
U64 h_quic_open_conn(U64 a1, U64 a2, U64 a3, U64 a4, U64 a5);

#endif
