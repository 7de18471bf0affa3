/* clang: -mcpu=v3 */
/* Must be rejected: accept_loop_countdown.c reading t->b[i + 2], i up to 62: byte 64 of a 64-byte map
 * value. */
#define READ_OFFSET 2
#include "accept_loop_countdown.c"
