/* libnanobpf: user-space access to nanobpf.ko over the generic-netlink family "nanobpf".
 *
 * Every constant (commands, attributes, limits, status codes, counter ids) comes from the generated
 * nanobpf_ctrl.h (hw/defs/ctrl.toml); the key entry layout is struct nanobpf_quic_keys of
 * nanobpf_ebpf_defs.h (hw/defs/ebpf.toml). Semantics: docs/control.md.
 *
 * Conventions: every function returns 0 (or a count) on success and a negative errno on failure.
 * After a failure, nanobpf_errmsg() says why: the argument that was refused, the kernel's extended
 * ACK message, and when the device refused the request, the device's status and error text (read
 * back with DEV_GET). A handle is not thread-safe: use one per thread.
 */
#ifndef NANOBPF_H
#define NANOBPF_H

#include <stddef.h>
#include <stdint.h>

#include "nanobpf_ctrl.h"
#include "nanobpf_ebpf_defs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NANOBPF_LIB_VERSION "0.1.0"

struct nanobpf;

/* LINK_STATE values (the attribute's meaning in hw/defs/ctrl.toml) */
enum nanobpf_link_state {
	NANOBPF_LINK_DETACHED = 0,	/* no device attached */
	NANOBPF_LINK_NO_SESSION = 1,	/* attached, no session with the device yet */
	NANOBPF_LINK_IN_SYNC = 2,	/* the device holds the host's state */
	NANOBPF_LINK_RESYNC = 3,	/* resync pending (new epoch or lost answers) */
};
/* "detached", "no_session", "in_sync", "resync_pending"; "unknown" past the end */
const char *nanobpf_link_state_name(unsigned state);
/* NANOBPF_STATUS_NAMES[status], or NULL if status has no name */
const char *nanobpf_status_name(unsigned status);
/* NANOBPF_STAT_NAMES / NANOBPF_DRV_STAT_NAMES [id], or NULL */
const char *nanobpf_stat_name(unsigned id);
const char *nanobpf_drv_stat_name(unsigned id);
/* NANOBPF_TABLE_NAMES[table], or NULL */
const char *nanobpf_table_name(unsigned table);

/* ------------------------------------------------------------------ handle */

/* Open a generic-netlink socket and resolve the family. On failure returns -errno and, when errbuf is
 * not NULL, writes the reason there (-ENOENT: the family is absent, nanobpf.ko is not loaded). */
int nanobpf_open(struct nanobpf **hp, char *errbuf, size_t errlen);
void nanobpf_close(struct nanobpf *h);
/* Text of the last failure on this handle ("" after a success). Valid until the next call. */
const char *nanobpf_errmsg(const struct nanobpf *h);
/* The device's NANOBPF_CTRL_ST_* status of the last failure, or -1 when the device did not refuse it */
int nanobpf_dev_status(const struct nanobpf *h);
/* Time out a request after timeout_ms milliseconds without an answer (default 15000; 0: wait forever) */
int nanobpf_set_timeout(struct nanobpf *h, unsigned timeout_ms);

/* ------------------------------------------------------------------ device */

#define NANOBPF_DEV_HAS_IFNAME     (1u << 0)
#define NANOBPF_DEV_HAS_VDEV       (1u << 1)
#define NANOBPF_DEV_HAS_LINK_STATE (1u << 2)
#define NANOBPF_DEV_HAS_EPOCH      (1u << 3)
#define NANOBPF_DEV_HAS_VERSION    (1u << 4)
#define NANOBPF_DEV_HAS_KEY_COUNT  (1u << 5)
#define NANOBPF_DEV_HAS_STATUS     (1u << 6)	/* dev_status (and errmsg) of the last refused request */

struct nanobpf_dev_info {
	unsigned present;			/* NANOBPF_DEV_HAS_* */
	char ifname[NANOBPF_ATTR_LEN_IFNAME];
	char vdev_name[NANOBPF_ATTR_LEN_VDEV_NAME];
	uint8_t link_state;			/* enum nanobpf_link_state */
	uint32_t epoch;
	uint16_t version;
	uint32_t key_count;
	uint8_t dev_status;			/* NANOBPF_CTRL_ST_* */
	char errmsg[NANOBPF_ATTR_LEN_ERRMSG];	/* "" if none */
};

/* ifname: the Ethernet device of the DPU link; vdev_name: NULL for the driver's default (nbpf%d);
 * key: the device key (docs/control.md "The device key"), required (NULL: -EINVAL). Every control
 * frame is authenticated with it: a device built with another key drops the driver's requests, and
 * the attach fails with -ETIMEDOUT ("no answer from the device: check the device key"). */
int nanobpf_dev_attach(struct nanobpf *h, const char *ifname, const char *vdev_name,
		       const uint8_t key[NANOBPF_CTRL_KEY_LEN]);
/* Read a device key file (nanobpf-ctrl-key's format: 32 hex digits; whitespace and lines starting
 * with '#' ignored) into key. 0, or -errno with the reason in nanobpf_errmsg(h) (h NULL: the errno
 * only): the file unreadable (its errno), not hexadecimal or not 16 bytes (-EINVAL); key is then zero. */
int nanobpf_key_file_read(struct nanobpf *h, const char *path, uint8_t key[NANOBPF_CTRL_KEY_LEN]);
int nanobpf_dev_detach(struct nanobpf *h);
int nanobpf_dev_get(struct nanobpf *h, struct nanobpf_dev_info *info);
int nanobpf_dev_reset(struct nanobpf *h);

/* ------------------------------------------------------------------ QUIC keys */

/* The name of a key table entry. A connection has one entry per direction: NANOBPF_QUIC_DIR_OPEN, keyed
 * by a local connection ID (the destination CID of packets from the network), holds the peer's keys;
 * NANOBPF_QUIC_DIR_SEAL, keyed by the peer's connection ID (the destination CID of packets the host
 * sends), holds the host's. A peer that uses zero-length CIDs is named by its address and ports
 * instead (cid_len 0, id = the address id, nanobpf_key_id_addr()). */
struct nanobpf_key_id {
	uint8_t dir;				/* NANOBPF_QUIC_DIR_OPEN (0) or NANOBPF_QUIC_DIR_SEAL (1) */
	uint8_t cid_len;			/* 1..20: id holds the CID (zero after it); 0: the address id */
	uint8_t id[NANOBPF_CTRL_MAX_CID];
};

/* Fill *kid for a CID of 1..NANOBPF_CTRL_MAX_CID bytes; 0 or -EINVAL (bad length or direction). */
int nanobpf_key_id_cid(struct nanobpf_key_id *kid, unsigned dir, const void *cid, size_t cid_len);
/* Fill *kid for a peer with zero-length CIDs: its IP address (IPv4 dotted or IPv6 text; IPv4 is stored
 * as ::ffff:a.b.c.d), its UDP port and the local UDP port (NANOBPF_QUIC_ADDR_*). 0 or -EINVAL. */
int nanobpf_key_id_addr(struct nanobpf_key_id *kid, unsigned dir, const char *ip, unsigned peer_port,
			unsigned local_port);
/* The address of an address id as text: "a.b.c.d" for ::ffff:a.b.c.d, IPv6 text otherwise; the ports
 * in *peer_port and *local_port (either may be NULL). 0, or -ENOSPC when out is too small. */
int nanobpf_addr_id_format(const uint8_t id[NANOBPF_CTRL_MAX_CID], char *out, size_t outlen, unsigned *peer_port,
			   unsigned *local_port);

#define NANOBPF_KEY_HAS_PHASE  (1u << 0)
#define NANOBPF_KEY_HAS_SLOT   (1u << 1)
#define NANOBPF_KEY_HAS_SYNCED (1u << 2)
#define NANOBPF_KEY_HAS_DIR    (1u << 3)	/* id.dir came from the driver (else it is OPEN) */

struct nanobpf_key_entry {
	unsigned present;		/* NANOBPF_KEY_HAS_* */
	struct nanobpf_key_id id;
	uint8_t key_phase;
	uint32_t slot;
	uint8_t synced;
};

/* An entry with fresh keys (never used before: the device starts its packet-number state anew), or the
 * keys of a key update of a live connection (the state is kept). keys: exactly NANOBPF_CTRL_KEYS_SIZE
 * bytes (struct nanobpf_quic_keys). */
int nanobpf_key_add(struct nanobpf *h, const struct nanobpf_key_id *id, const void *keys, size_t keys_len);
int nanobpf_key_update(struct nanobpf *h, const struct nanobpf_key_id *id, const void *keys, size_t keys_len);
int nanobpf_key_del(struct nanobpf *h, const struct nanobpf_key_id *id);
/* Called once per entry; a nonzero return stops the walk and becomes key_list's return value. */
typedef int (*nanobpf_key_cb)(const struct nanobpf_key_entry *entry, void *arg);
/* Dump the host table: returns the number of entries seen, or a negative errno */
int nanobpf_key_list(struct nanobpf *h, nanobpf_key_cb cb, void *arg);

/* ------------------------------------------------------------------ programs */

#define NANOBPF_PROG_HAS_NAME      (1u << 0)
#define NANOBPF_PROG_HAS_IMAGE_LEN (1u << 1)
#define NANOBPF_PROG_HAS_CRC       (1u << 2)
#define NANOBPF_PROG_HAS_INSNS     (1u << 3)

struct nanobpf_prog_desc {
	unsigned present;		/* NANOBPF_PROG_HAS_*; 0: no program attached */
	char name[NANOBPF_ATTR_LEN_PROG_NAME];
	uint32_t image_len;
	uint32_t crc32;
	uint32_t insns;
};

/* Check that buf is a program image (nanobpf-load output): magic, layout version, total size,
 * at most NANOBPF_CTRL_MAX_IMAGE bytes. 0 or -EINVAL/-EFBIG/-ENOEXEC with the reason in err. */
int nanobpf_image_check(const void *buf, size_t len, char *err, size_t errlen);
/* The program name in an image header (NUL-terminated, at most outlen-1 bytes copied); 0 or -EINVAL */
int nanobpf_image_name(const void *buf, size_t len, char *out, size_t outlen);
/* name: at most NANOBPF_CTRL_NAME_LEN-1 bytes, NULL to let the driver choose */
int nanobpf_prog_load(struct nanobpf *h, const void *image, size_t len, const char *name);
int nanobpf_prog_unload(struct nanobpf *h);
/* -ENOEXEC (device status NO_PROG) when no program is attached, or success with info->present == 0 */
int nanobpf_prog_get(struct nanobpf *h, struct nanobpf_prog_desc *info);

/* ------------------------------------------------------------------ maps of the attached program */

/* name: at most NANOBPF_CTRL_NAME_LEN-1 bytes; key: 1..NANOBPF_CTRL_MAX_MAP_KEY bytes;
 * value: 1..NANOBPF_CTRL_MAX_MAP_VALUE bytes. *value_len gets the value's real length; -ENOSPC if it
 * does not fit value_cap (nothing copied). */
int nanobpf_map_lookup(struct nanobpf *h, const char *name, const void *key, size_t key_len,
		       void *value, size_t value_cap, size_t *value_len);
/* flags: NANOBPF_BPF_ANY, NANOBPF_BPF_NOEXIST or NANOBPF_BPF_EXIST (nanobpf_ebpf_defs.h: 0, 1, 2) */
int nanobpf_map_update(struct nanobpf *h, const char *name, const void *key, size_t key_len,
		       const void *value, size_t value_len, uint64_t flags);
int nanobpf_map_delete(struct nanobpf *h, const char *name, const void *key, size_t key_len);
/* key NULL (key_len 0): the first key. -ENOENT after the last one. */
int nanobpf_map_get_next(struct nanobpf *h, const char *name, const void *key, size_t key_len,
			 void *next_key, size_t next_cap, size_t *next_len);

/* ------------------------------------------------------------------ events of the attached program */

/* One record of an event map (RINGBUF, PERF_EVENT_ARRAY). */
struct nanobpf_event {
	uint32_t index;			/* PERF_EVENT_ARRAY: the index the program named (BPF_F_CURRENT_CPU:
					 * its core); RINGBUF: the core that wrote it */
	uint32_t len;			/* data bytes, 0..NANOBPF_CTRL_MAX_EVENT */
	const uint8_t *data;		/* valid during the callback */
};
/* Called once per record, oldest first; a nonzero return stops the calls (the device has given the
 * records of this read away all the same) and becomes events_read's return value. */
typedef int (*nanobpf_event_cb)(const struct nanobpf_event *ev, void *arg);
/* One read of the event map `name`: its oldest records, at most max (0: as many as one control message
 * holds), taken from the device and passed to cb; *lost: records the map dropped (ring full, or longer
 * than NANOBPF_CTRL_MAX_EVENT) since the last read; *pending: records still waiting (read again while
 * not 0). Either pointer may be NULL. Returns the number of records, or a negative errno. */
int nanobpf_events_read(struct nanobpf *h, const char *name, unsigned max, nanobpf_event_cb cb, void *arg,
			uint32_t *lost, uint32_t *pending);

/* ------------------------------------------------------------------ PISA tables */

/* table: NANOBPF_CTRL_TABLE_* (< NANOBPF_TABLE_COUNT); index: 0..65535 (the device checks its count);
 * value: the register word of hw/defs/soc.toml */
int nanobpf_table_set(struct nanobpf *h, unsigned table, unsigned index, uint32_t value);
int nanobpf_table_del(struct nanobpf *h, unsigned table, unsigned index);

/* ------------------------------------------------------------------ counters */

struct nanobpf_stats {
	uint64_t dev_present;			/* bit id: dev[id] was reported */
	uint64_t drv_present;			/* bit id: drv[id] was reported */
	uint64_t dev[NANOBPF_STAT_COUNT];	/* NANOBPF_CTRL_STAT_* */
	uint64_t drv[NANOBPF_DRV_STAT_COUNT];	/* NANOBPF_DRV_STAT_* */
	unsigned unknown;			/* counters with an id this library does not know (ignored) */
};
int nanobpf_stats_get(struct nanobpf *h, struct nanobpf_stats *st);

#ifdef __cplusplus
}
#endif

#endif
