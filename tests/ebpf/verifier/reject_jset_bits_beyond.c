/* Must be rejected: accept_jset_bits.c reading t->b[off + 4], off up to 60: byte 64 of a 64-byte map
 * value. */
#define READ_OFFSET 4
#include "accept_jset_bits.c"
