/* The control plane on core 0 (firmware/apps/dpu): the protocol (ctrl.c), the key table (ctrl_keys.c),
 * programs and maps (ctrl_prog.c), event maps (ctrl_events.c); what it needs of the data path is in dpu.h. */
#ifndef DPU_CTRL_H
#define DPU_CTRL_H

#include <stdint.h>
#include "dpu.h"
#include "nanobpf_ctrl.h"

/* A request's outcome: status and response body (the error text when status is not OK). */
struct ctrl_reply {
    uint8_t status;
    uint16_t len;
    uint8_t body[NANOBPF_CTRL_MAX_BODY];
};
/* Fill r with an error status and its text; returns -1. */
int ctrl_refuse(struct ctrl_reply *r, uint8_t status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

uint16_t ctrl_be16(const uint8_t *p);
uint32_t ctrl_be32(const uint8_t *p);
void ctrl_put16(uint8_t *p, uint32_t v);
void ctrl_put32(uint8_t *p, uint32_t v);
void ctrl_put64(uint8_t *p, uint64_t v);

/* ctrl.c: a TABLE_SET (set) or TABLE_DEL body (struct table_msg), checked, into PISA; 0, or -1 with r
 * filled when refused (also the boot configuration's "@table" setting). */
int ctrl_table_msg(const uint8_t *b, unsigned len, struct ctrl_reply *r, int set);
/* ctrl_keys.c: a key table entry the boot configuration wrote (the map update done): into PISA's CID
 * table as KEY_ADD puts it, so its packets get conn. */
void ctrl_keys_booted(const void *key);
/* dpu.c: a TABLE_SET/TABLE_DEL word (fields checked) into PISA; -1 with r filled when refused. */
int dpu_table_write(unsigned table, unsigned index, uint32_t value, struct ctrl_reply *r);

/* ctrl_auth.c: the control channel's keys (docs/control.md "The device key"). Derive K_req and K_resp
 * from the image's device key (once, at boot). */
void ctrl_auth_init(void);
/* Decrypt a request's body in place (nonce, body_len bytes, tag follow each other; hdr is the
 * associated data): 0 when the tag verifies, -1 otherwise (the body then holds nothing to use). */
int ctrl_auth_open(const uint8_t *hdr, uint8_t *nonce_body_tag, unsigned body_len);
/* A response's tag: AES-CMAC under K_resp of header, nonce and body (len bytes in all). */
void ctrl_auth_tag(const uint8_t *hdr_nonce_body, unsigned len, uint8_t tag[NANOBPF_CTRL_TAG_LEN]);
/* The key's id (nanobpf-ctrl-key id): the first 4 bytes of K_resp's CMAC of nothing. */
uint32_t ctrl_auth_id(void);

/* ctrl.c: the protocol. Power-on state (no session, the epoch chosen at the first frame). */
void ctrl_power_on(void);
/* One control frame of `len` bytes at `data` in packet memory: answered in place (*out_len bytes to
 * send back to the host port; 0: no answer, drop it). Returns the cycles it took. */
uint64_t ctrl_frame(uintptr_t data, unsigned len, unsigned *out_len);
uint32_t ctrl_epoch(void);
extern uint64_t ctrl_counts[NANOBPF_STAT_COUNT]; /* the protocol's own counters */

/* ctrl_keys.c: the key table (the device's, shared by every program that declares it). */
int ctrl_keys_init(void);
int ctrl_key_set(const uint8_t *b, unsigned len, struct ctrl_reply *r, int update);
int ctrl_key_del(const uint8_t *b, unsigned len, struct ctrl_reply *r);
void ctrl_keys_flush(void);
uint32_t ctrl_keys_count(void);
/* The attached program's quic_config.open_cid_lens := the open entries' CID lengths (bit n). */
void ctrl_keys_sync_config(const struct ebpf_prog *prog);

/* ctrl_prog.c: programs and their maps. */
int ctrl_prog_begin(const uint8_t *b, unsigned len, struct ctrl_reply *r);
int ctrl_prog_chunk(const uint8_t *b, unsigned len, struct ctrl_reply *r);
int ctrl_prog_commit(const uint8_t *b, unsigned len, struct ctrl_reply *r);
int ctrl_prog_unload(const uint8_t *b, unsigned len, struct ctrl_reply *r);
int ctrl_prog_info(const uint8_t *b, unsigned len, struct ctrl_reply *r);
int ctrl_map(uint8_t type, const uint8_t *b, unsigned len, struct ctrl_reply *r);
/* Install a program loaded at boot (the firmware's built-in one): it is attached as PROG_COMMIT would. */
void ctrl_prog_boot(struct ebpf_prog *prog, const char *name, uint32_t image_len, uint32_t crc32);
void ctrl_prog_reset(void); /* RESET: the program detached, an unfinished load dropped */
/* A map of the attached program by name (NULL: none); the NO_MAP refusal naming the maps it has. */
struct ebpf_map *ctrl_prog_map(const struct ebpf_prog *prog, const char *name);
int ctrl_no_map(const struct ebpf_prog *prog, const char *name, struct ctrl_reply *r);

/* ctrl_events.c: EVENTS, an event map of the attached program drained for the host. */
int ctrl_events(const uint8_t *b, unsigned len, struct ctrl_reply *r);

/* What each message type cost on this core, for the summary. */
void ctrl_cost_note(uint8_t type, uint64_t total, uint64_t applied);
void ctrl_cost_print(void);

#endif
