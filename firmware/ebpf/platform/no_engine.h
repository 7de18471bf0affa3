/* The platform hooks of a build that runs programs in one thread and has no AEAD engine (the host's
 * nanobpf-run and tests, RV64 Linux user mode under qemu): the key table storage is a static array,
 * there is nobody to quiesce, and every engine request answers "compute in software" (aead.h). Included
 * once by each such platform file (host.c, rv64linux.c), which defines the rest. */
#ifndef NANOBPF_PLATFORM_NO_ENGINE_H
#define NANOBPF_PLATFORM_NO_ENGINE_H
#include "aead.h"
#include "ebpf.h"

static uint8_t keytable_values[NANOBPF_KEYTABLE_SLOTS * NANOBPF_QUIC_KEYS_SIZE] __attribute__((aligned(8)));
uint8_t *ebpf_keytable_values(void) { return keytable_values; }
void ebpf_quiesce(void) {} /* one thread runs programs and changes maps */
int ebpf_aead_engine(int seal, const void *keys, int next, uint64_t pn, const uint8_t *aad, size_t aad_len,
                     uint8_t *text, size_t len, const uint8_t *sample, uint64_t *mask) {
    (void)seal; (void)keys; (void)next; (void)pn; (void)aad; (void)aad_len; (void)text; (void)len; (void)sample; (void)mask;
    return -1;
}
int ebpf_aead_engine_seal_hp(const void *keys, int next, uint64_t pn, uint8_t *aad, size_t aad_len, uint8_t *text,
                             size_t len, uint32_t *pending) {
    (void)keys; (void)next; (void)pn; (void)aad; (void)aad_len; (void)text; (void)len; (void)pending;
    return -1;
}
int ebpf_aead_engine_open_commit(const void *keys, void *state, int next, uint64_t pn, const uint8_t *aad, size_t aad_len,
                                 uint8_t *text, size_t len, int phase, uint32_t *pending) {
    (void)keys; (void)state; (void)next; (void)pn; (void)aad; (void)aad_len; (void)text; (void)len; (void)phase; (void)pending;
    return -1;
}
int ebpf_aead_finish(uint32_t pending) {
    (void)pending;
    return 0;
}
int ebpf_hp_engine(const void *keys, uint8_t block[16]) {
    (void)keys; (void)block;
    return -1;
}
int ebpf_hp_engine_at(const void *keys, const uint8_t *sample, uint64_t *mask) {
    (void)keys; (void)sample; (void)mask;
    return -1;
}
int ebpf_hp_engine_submit(const void *keys, const uint8_t *sample) {
    (void)keys; (void)sample;
    return -1;
}
int ebpf_hp_engine_collect(int ticket, uint64_t *mask) {
    (void)ticket; (void)mask;
    return -1;
}
#endif
