/* clang: -mcpu=v3 */
/* Must be rejected: accept_jmp32_low_half.c reading t->b[off + 9], off up to 55: byte 64 of a 64-byte
 * map value. */
#define READ_OFFSET 9
#include "accept_jmp32_low_half.c"
