/* The AES-128-GCM engine from the cores (docs/aead.md): every hart seals and opens the NIST GCM test
 * case 4 at its own unaligned place in packet memory at the same time, checks the bytes, and sees a
 * flipped tag bit refused; hart 0 also seals and opens RFC 9001's client and server Initial packets
 * (A.2, A.3) to the RFC's bytes and checks the A.2 header protection mask. Prints engine cycles and
 * the cycles a core spends per request. Ends the simulation with 0 (pass) or the failing check. */
#include <stdio.h>
#include <string.h>
#include "nanobpf.h"
#include "nanobpf_aead.h"
#include "nanobpf_ebpf_defs.h"
#include "quic_vectors.h"

#define FRAME_HDR 42 /* Ethernet + IPv4 + UDP in front of the QUIC packet in quic_vectors.h */
#define DONE(h) (0x41454144ull << 32 | (h)) /* "AEAD" + hart */
#define FAILED(h) (0x4641494cull << 32 | (h))

/* NIST GCM test case 4 (McGrew & Viega, "The Galois/Counter Mode of Operation"): AES-128, 96-bit IV. */
static const uint8_t tc4_key[16] = {0xfe, 0xff, 0xe9, 0x92, 0x86, 0x65, 0x73, 0x1c, 0x6d, 0x6a, 0x8f, 0x94, 0x67, 0x30, 0x83, 0x08};
static const uint8_t tc4_iv[12] = {0xca, 0xfe, 0xba, 0xbe, 0xfa, 0xce, 0xdb, 0xad, 0xde, 0xca, 0xf8, 0x88};
static const uint8_t tc4_aad[20] = {0xfe, 0xed, 0xfa, 0xce, 0xde, 0xad, 0xbe, 0xef, 0xfe, 0xed,
                                    0xfa, 0xce, 0xde, 0xad, 0xbe, 0xef, 0xab, 0xad, 0xda, 0xd2};
static const uint8_t tc4_plain[60] = {
    0xd9, 0x31, 0x32, 0x25, 0xf8, 0x84, 0x06, 0xe5, 0xa5, 0x59, 0x09, 0xc5, 0xaf, 0xf5, 0x26, 0x9a,
    0x86, 0xa7, 0xa9, 0x53, 0x15, 0x34, 0xf7, 0xda, 0x2e, 0x4c, 0x30, 0x3d, 0x8a, 0x31, 0x8a, 0x72,
    0x1c, 0x3c, 0x0c, 0x95, 0x95, 0x68, 0x09, 0x53, 0x2f, 0xcf, 0x0e, 0x24, 0x49, 0xa6, 0xb5, 0x25,
    0xb1, 0x6a, 0xed, 0xf5, 0xaa, 0x0d, 0xe6, 0x57, 0xba, 0x63, 0x7b, 0x39};
static const uint8_t tc4_sealed[60 + 16] = {
    0x42, 0x83, 0x1e, 0xc2, 0x21, 0x77, 0x74, 0x24, 0x4b, 0x72, 0x21, 0xb7, 0x84, 0xd0, 0xd4, 0x9c,
    0xe3, 0xaa, 0x21, 0x2f, 0x2c, 0x02, 0xa4, 0xe0, 0x35, 0xc1, 0x7e, 0x23, 0x29, 0xac, 0xa1, 0x2e,
    0x21, 0xd5, 0x14, 0xb2, 0x54, 0x66, 0x93, 0x1c, 0x7d, 0x8f, 0x6a, 0x5a, 0xac, 0x84, 0xaa, 0x05,
    0x1b, 0xa3, 0x0b, 0x39, 0x6a, 0x0a, 0xac, 0x97, 0x3d, 0x58, 0xe0, 0x91,
    0x5b, 0xc9, 0x4f, 0xbc, 0x32, 0x21, 0xa5, 0xdb, 0x94, 0xfa, 0xe9, 0x5a, 0xe7, 0x12, 0x1a, 0x47};

static uint8_t *pm(unsigned off) { return (uint8_t *)(uintptr_t)(NANOBPF_PACKET_MEM_BASE + off); }

/* Packet memory is uncached and device memory: copy and compare a byte at a time. */
static void pm_copy(uint8_t *dst, const uint8_t *src, unsigned n) {
    for (unsigned i = 0; i < n; i++) dst[i] = src[i];
}
static int pm_equal(const uint8_t *a, const uint8_t *b, unsigned n) {
    for (unsigned i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static void keys_value(uint8_t v[NANOBPF_QUIC_KEYS_SIZE], const uint8_t *key, const uint8_t *iv, const uint8_t *hp) {
    memset(v, 0, NANOBPF_QUIC_KEYS_SIZE);
    memcpy(v + __builtin_offsetof(struct nanobpf_quic_keys, key), key, 16);
    memcpy(v + __builtin_offsetof(struct nanobpf_quic_keys, iv), iv, 12);
    memcpy(v + __builtin_offsetof(struct nanobpf_quic_keys, hp), hp, 16);
}

#define CHECK(cond, code)                                                   \
    do {                                                                    \
        if (!(cond)) {                                                      \
            printf("FAIL (%d): %s\n", code, #cond);                         \
            return code;                                                    \
        }                                                                   \
    } while (0)

static int nist_case(unsigned hart) {
    uint8_t *aad = pm(0x1000 * (hart + 1) + 3), *data = aad + sizeof tc4_aad + 2 * hart + 1;
    pm_copy(aad, tc4_aad, sizeof tc4_aad);
    pm_copy(data, tc4_plain, sizeof tc4_plain);
    struct nb_aead_req r = {NB_AEAD_SEAL, 7, 0, aad, sizeof tc4_aad, data, sizeof tc4_plain, 0};
    uint32_t cycles;
    uint64_t t0 = nb_cycles();
    CHECK(nb_aead_run(&r, &cycles) == NANOBPF_AEAD_STATUS_OK, 10);
    uint64_t t1 = nb_cycles();
    CHECK(pm_equal(data, tc4_sealed, sizeof tc4_sealed), 11);
    r.op = NB_AEAD_OPEN;
    CHECK(nb_aead_run(&r, NULL) == NANOBPF_AEAD_STATUS_OK, 12);
    CHECK(pm_equal(data, tc4_plain, sizeof tc4_plain), 13);
    pm_copy(data, tc4_sealed, sizeof tc4_sealed);
    data[sizeof tc4_plain + 15] ^= 0x01;
    CHECK(nb_aead_run(&r, NULL) == NANOBPF_AEAD_STATUS_TAG_MISMATCH, 14);
    printf("NIST GCM case 4 sealed, opened, forgery refused: %u engine cycles, %llu core cycles per request\n",
           (unsigned)cycles, (unsigned long long)(t1 - t0));
    return 0;
}

/* An RFC 9001 Initial: seal the plain packet to the RFC's protected payload, check the header
 * protection mask against the RFC's protected header, open it back. */
static int rfc_case(const char *name, unsigned slot, const uint8_t *plain, unsigned plain_len,
                    const uint8_t *prot, unsigned hdr_len, uint64_t pn, unsigned off) {
    const uint8_t *q = plain + FRAME_HDR, *qp = prot + FRAME_HDR;
    unsigned pay = plain_len - FRAME_HDR - hdr_len;
    uint8_t *at = pm(off);
    pm_copy(at, q, hdr_len + pay);
    struct nb_aead_req r = {NB_AEAD_SEAL, slot, 0, at, hdr_len, at + hdr_len, pay, pn};
    uint32_t seal_cycles, open_cycles;
    CHECK(nb_aead_run(&r, &seal_cycles) == NANOBPF_AEAD_STATUS_OK, 20);
    CHECK(pm_equal(at + hdr_len, qp + hdr_len, pay + 16), 21);
    unsigned pn_off = hdr_len - ((q[0] & 3) + 1);
    uint8_t *mask = pm(0xF000);
    struct nb_aead_req hp = {NB_AEAD_HP_MASK, slot, 0, at + pn_off + 4, 0, mask, 0, 0};
    CHECK(nb_aead_run(&hp, NULL) == NANOBPF_AEAD_STATUS_OK, 22);
    CHECK((q[0] ^ (mask[0] & 0x0f)) == qp[0], 23);
    for (unsigned i = pn_off; i < hdr_len; i++) CHECK((q[i] ^ mask[1 + i - pn_off]) == qp[i], 24);
    r.op = NB_AEAD_OPEN;
    CHECK(nb_aead_run(&r, &open_cycles) == NANOBPF_AEAD_STATUS_OK, 25);
    CHECK(pm_equal(at, q, hdr_len + pay), 26);
    printf("RFC 9001 %s: %u-byte payload sealed in %u engine cycles, opened in %u, header protection mask ok\n",
           name, pay, (unsigned)seal_cycles, (unsigned)open_cycles);
    return 0;
}

int hart_main(unsigned hart) {
    unsigned n = nb_num_cores();
    if (hart == 0) {
        uint8_t v[NANOBPF_QUIC_KEYS_SIZE];
        keys_value(v, tc4_key, tc4_iv, tc4_key);
        nb_aead_set_keys(7, v);
        keys_value(v, quic_client_key, quic_client_iv, quic_client_hp);
        nb_aead_set_keys(300, v);
        keys_value(v, quic_server_key, quic_server_iv, quic_server_hp);
        nb_aead_set_keys(301, v);
        __asm__ volatile("fence w, w" ::: "memory");
        printf("AEAD engine: %u core(s) at once\n", n);
        for (unsigned h = 1; h < n; h++) nb_wake(h);
    }
    int rc = nist_case(hart);
    if (!rc && hart == 0) rc = rfc_case("A.2 client Initial", 300, quic_a2_plain, sizeof quic_a2_plain, quic_a2_protected, 22, 2, 0x8003);
    if (!rc && hart == 0) rc = rfc_case("A.3 server Initial", 301, quic_a3_plain, sizeof quic_a3_plain, quic_a3_protected, 20, 1, 0xC005);
    nb_mailbox_write(hart, rc ? FAILED(hart) : DONE(hart));
    if (hart != 0) for (;;) __asm__ volatile("wfi");
    unsigned failed = 0, waiting;
    do {
        waiting = 0;
        for (unsigned h = 0; h < n; h++) {
            uint64_t m = nb_mailbox_read(h);
            waiting += m != DONE(h) && m != FAILED(h);
        }
    } while (waiting);
    for (unsigned h = 0; h < n; h++) failed += nb_mailbox_read(h) == FAILED(h);
    uint64_t req = nb_aead_counter(NANOBPF_AEAD_COUNTER_REQUESTS), ok = nb_aead_counter(NANOBPF_AEAD_COUNTER_OK),
             bad = nb_aead_counter(NANOBPF_AEAD_COUNTER_TAG_MISMATCH);
    printf("engine counters: %llu requests, %llu ok, %llu tag mismatches\n", (unsigned long long)req,
           (unsigned long long)ok, (unsigned long long)bad);
    if (failed || req != 3 * n + 6 || ok != 2 * n + 6 || bad != n) {
        printf("FAIL: %u hart(s) failed\n", failed);
        nb_sim_end(failed ? failed : 99);
    }
    printf("PASS: AEAD engine on %u core(s)\n", n);
    nb_sim_end(0);
}
