/* The control channel's authentication (docs/control.md "The device key"): the device key the image
 * carries (images.S, from the build's key file), the two keys derived from it, a request's AES-128-GCM
 * open and a response's AES-CMAC. Software AES (ebpf/aead_soft.c): the AEAD engine's keys are the
 * QUIC key table's, and a control frame is rare next to the data path. */
#include <string.h>
#include "aead.h"
#include "ctrl.h"

extern const uint8_t dpu_ctrl_key[NANOBPF_CTRL_KEY_LEN];
/* prepared at boot: a message then costs only its own blocks (about 2,000 cycles each) */
static struct ebpf_gcm_key k_req;
static struct ebpf_cmac_key k_resp;

_Static_assert(sizeof NANOBPF_CTRL_AUTH_REQ_LABEL == 17 && sizeof NANOBPF_CTRL_AUTH_RESP_LABEL == 17,
               "each label is one AES block");

void ctrl_auth_init(void) {
    uint8_t k[NANOBPF_CTRL_KEY_LEN];
    ebpf_aes128_encrypt_block(dpu_ctrl_key, (const uint8_t *)NANOBPF_CTRL_AUTH_REQ_LABEL, k);
    ebpf_gcm_key_init(&k_req, k);
    ebpf_aes128_encrypt_block(dpu_ctrl_key, (const uint8_t *)NANOBPF_CTRL_AUTH_RESP_LABEL, k);
    ebpf_cmac_key_init(&k_resp, k);
    memset(k, 0, sizeof k);
}

int ctrl_auth_open(const uint8_t *hdr, uint8_t *nonce_body_tag, unsigned body_len) {
    uint8_t *body = nonce_body_tag + NANOBPF_CTRL_NONCE_LEN;
    return ebpf_aead_open_key(&k_req, nonce_body_tag, hdr, NANOBPF_CTRL_HDR_SIZE, body, body_len, body + body_len);
}

void ctrl_auth_tag(const uint8_t *hdr_nonce_body, unsigned len, uint8_t tag[NANOBPF_CTRL_TAG_LEN]) {
    ebpf_cmac(&k_resp, hdr_nonce_body, len, tag);
}

uint32_t ctrl_auth_id(void) {
    uint8_t t[NANOBPF_CTRL_TAG_LEN] = {0};
    ebpf_cmac(&k_resp, t, 0, t);
    return ctrl_be32(t);
}
