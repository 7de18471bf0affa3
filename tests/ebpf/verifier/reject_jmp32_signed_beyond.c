/* clang: -mcpu=v3 */
/* Must be rejected: accept_jmp32_signed.c reading t->b[x + 24], x up to 40: byte 64 of a 64-byte map
 * value. */
#define READ_OFFSET 24
#include "accept_jmp32_signed.c"
