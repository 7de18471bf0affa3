/* The Linux fixed-width types, for bare-metal firmware that includes the generated headers shared with
 * the kernel driver and user space (nanobpf_ctrl.h). Firmware has no Linux headers; these are the same
 * widths. Byte order is the program's business: __be* fields are stored big-endian. */
#ifndef NANOBPF_FW_LINUX_TYPES_H
#define NANOBPF_FW_LINUX_TYPES_H

#include <stdint.h>

typedef uint8_t __u8;
typedef uint16_t __u16;
typedef uint32_t __u32;
typedef uint64_t __u64;
typedef uint16_t __be16;
typedef uint32_t __be32;
typedef uint64_t __be64;

#endif
