/* Drives the crypto backend (aead.h) from standard input, one command per line, one result line each,
 * for tests/ebpf/test_aead.py (which checks it against NIST SP 800-38D cases and the Python
 * `cryptography` library). Hex arguments; "-" is the empty string.
 *   block KEY IN                      -> OUT
 *   seal KEY NONCE AAD PLAINTEXT      -> CIPHERTEXT TAG
 *   open KEY NONCE AAD CIPHERTEXT TAG -> ok PLAINTEXT | fail PLAINTEXT (unauthenticated)
 *   openk ...                         -> as open, with a prepared key (ebpf_gcm_key_init, ebpf_aead_open_key)
 *   cmac KEY MESSAGE                  -> TAG (ebpf_aes128_cmac)
 *   cmack KEY MESSAGE                 -> TAG (ebpf_cmac_key_init, ebpf_cmac)
 *   anything else                     -> error MESSAGE
 * Built for the host and for RV64 Linux user mode (firmware/ebpf/Makefile). */
#include <stdio.h>
#include <string.h>
#include "aead.h"

#define MAX_BYTES 4096

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Parse one hex word into out; its byte count, or -1. */
static long parse_hex(const char *s, uint8_t *out, size_t max) {
    if (!strcmp(s, "-")) return 0;
    size_t n = strlen(s);
    if (n % 2 || n / 2 > max) return -1;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return (long)(n / 2);
}

static void put_hex(const uint8_t *p, size_t n) {
    if (!n) putchar('-');
    for (size_t i = 0; i < n; i++) printf("%02x", p[i]);
}

int main(void) {
    static char line[4 * MAX_BYTES + 256];
    static uint8_t arg[5][MAX_BYTES];
    while (fgets(line, sizeof line, stdin)) {
        char *word[6];
        int n = 0;
        for (char *t = strtok(line, " \t\r\n"); t && n < 6; t = strtok(NULL, " \t\r\n")) word[n++] = t;
        if (!n) continue;
        long len[5] = {0};
        int bad = 0;
        for (int i = 1; i < n; i++)
            if ((len[i - 1] = parse_hex(word[i], arg[i - 1], MAX_BYTES)) < 0) bad = 1;
        const char *cmd = word[0];
        if (bad) {
            printf("error bad hex\n");
        } else if (!strcmp(cmd, "block") && n == 3 && len[0] == 16 && len[1] == 16) {
            ebpf_aes128_encrypt_block(arg[0], arg[1], arg[1]);
            put_hex(arg[1], 16);
            putchar('\n');
        } else if (!strcmp(cmd, "seal") && n == 5 && len[0] == 16 && len[1] == 12) {
            uint8_t tag[16];
            ebpf_aead_seal(arg[0], arg[1], arg[2], (size_t)len[2], arg[3], (size_t)len[3], tag);
            put_hex(arg[3], (size_t)len[3]);
            putchar(' ');
            put_hex(tag, 16);
            putchar('\n');
        } else if ((!strcmp(cmd, "open") || !strcmp(cmd, "openk")) && n == 6 && len[0] == 16 && len[1] == 12 && len[4] == 16) {
            int rc;
            if (!strcmp(cmd, "openk")) {
                static struct ebpf_gcm_key k;
                ebpf_gcm_key_init(&k, arg[0]);
                rc = ebpf_aead_open_key(&k, arg[1], arg[2], (size_t)len[2], arg[3], (size_t)len[3], arg[4]);
            } else {
                rc = ebpf_aead_open(arg[0], arg[1], arg[2], (size_t)len[2], arg[3], (size_t)len[3], arg[4]);
            }
            printf("%s ", rc ? "fail" : "ok");
            put_hex(arg[3], (size_t)len[3]);
            putchar('\n');
        } else if ((!strcmp(cmd, "cmac") || !strcmp(cmd, "cmack")) && n == 3 && len[0] == 16) {
            uint8_t tag[16];
            if (!strcmp(cmd, "cmack")) {
                static struct ebpf_cmac_key k;
                ebpf_cmac_key_init(&k, arg[0]);
                ebpf_cmac(&k, arg[1], (size_t)len[1], tag);
            } else {
                ebpf_aes128_cmac(arg[0], arg[1], (size_t)len[1], tag);
            }
            put_hex(tag, 16);
            putchar('\n');
        } else {
            printf("error unknown command or argument sizes\n");
        }
        fflush(stdout);
    }
    return 0;
}
