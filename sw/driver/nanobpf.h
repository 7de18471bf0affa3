/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nanobpf.ko: host driver of the NanoBPF DPU (docs/control.md, section "nanobpf.ko").
 *
 * State shared by the parts of the module:
 *   nanobpf_main.c    module parameters, attach/detach, netdev notifier, debugfs, keepalive
 *   nanobpf_ctrl.c    control transport (one request in flight, retransmission), session, replay
 *   nanobpf_netdev.c  the virtual netdev stacked on the DPU link, rx handler, data shim
 *   nanobpf_genl.c    generic-netlink family "nanobpf" and the authoritative host tables
 *
 * Locking: nbpf_cfg_lock (a mutex) serialises every change of the host state and every exchange with
 * the device (so one request is in flight). Lock order: nbpf_cfg_lock, then RTNL. The netdev
 * notifier runs under RTNL and never takes nbpf_cfg_lock: it unhooks the link and lets
 * nbpf_reap_work (or the next netlink request) free it. The key table is an RCU hash table written
 * under nbpf_cfg_lock. link->rx_lock protects the request in flight against the rx handler.
 *
 * Every control frame is authenticated with the device key (docs/control.md "The device key"): the
 * link holds the two keys derived from it (struct nbpf_auth), never the key itself.
 */
#ifndef NANOBPF_DRV_H
#define NANOBPF_DRV_H

#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/completion.h>
#include <linux/hashtable.h>
#include <linux/atomic.h>
#include <linux/workqueue.h>
#include <linux/debugfs.h>
#include <crypto/aead.h>
#include <crypto/hash.h>

#include "nanobpf_ctrl.h"
#include "nanobpf_ebpf_defs.h"
#include "nanobpf_soc.h"

#define NBPF_SHIM_HLEN		4	/* EtherType 0x88B6 + struct nanobpf_shim */
#define NBPF_MARK_CID_MASK	0xffu	/* encrypt_mark | n: the low byte is the destination CID length */
#define NBPF_DEFAULT_KEY_SLOTS	NANOBPF_KEYTABLE_ENTRIES /* key table limit before the device said how many it has */
#define NBPF_KEEPALIVE_MS	2000	/* idle probe (STATS) period */
#define NBPF_RESYNC_TRIES	3	/* replays restarted because the device was reset during one */
#define NBPF_TABLE_MAX_ENTRIES	8	/* largest PISA table of hw/defs/soc.toml */

/* NANOBPF_ATTR_LINK_STATE values */
enum nbpf_link_state {
	NBPF_LINK_DETACHED = 0,
	NBPF_LINK_NO_SESSION = 1,
	NBPF_LINK_IN_SYNC = 2,
	NBPF_LINK_RESYNC = 3,
};

/* The response the rx handler stored for the request in flight. */
struct nbpf_resp {
	u8 status;
	u8 flags;
	u32 epoch;
	u16 len;
	u8 body[NANOBPF_CTRL_MAX_BODY];
};

/*
 * The control channel's keys of one link, derived from the device key at attach: requests are
 * sealed with AES-128-GCM under K_req (the request path, process context), responses verified with
 * AES-CMAC under K_resp (the rx handler, softirq: a synchronous shash, a descriptor on the stack).
 * Both transforms are allocated and keyed at attach so that nothing sleeps or allocates where they
 * are used, and freed (the keys wiped by the crypto API) at detach.
 */
struct nbpf_auth {
	struct crypto_aead *gcm;		/* gcm(aes) keyed with K_req */
	struct aead_request *req;		/* for gcm, used under nbpf_cfg_lock only */
	struct crypto_shash *cmac;		/* cmac(aes) keyed with K_resp */
};

struct nbpf_link {
	/* Net devices: written under RTNL (attach, nbpf_link_unhook). */
	struct net_device *lower;
	struct net_device *vdev;
	netdevice_tracker lower_tracker;
	bool hooked;				/* rx handler, upper link and vdev in place */
	struct net_device __rcu *lower_rcu;	/* transmit paths (control frames, vdev xmit) */
	bool dead;				/* lower device gone: READ_ONCE/WRITE_ONCE */

	/* Session: under nbpf_cfg_lock. */
	u8 state;				/* enum nbpf_link_state */
	u16 version;
	u32 epoch;
	u32 seq;				/* last sequence number used */
	u32 key_slots;
	u32 max_image;
	u16 max_body;
	u16 cores;
	u8 *txbuf;				/* frame of the request in flight */
	struct nbpf_resp *resp;
	struct nbpf_auth auth;			/* set before the link is hooked */

	/* Request in flight: rx_lock. */
	spinlock_t rx_lock;
	bool pending;
	u32 pend_seq;
	u8 pend_type;
	u8 pend_nonce[NANOBPF_CTRL_NONCE_LEN];	/* a response repeats its request's nonce */
	struct completion done;
	u8 peer[ETH_ALEN];
	bool peer_known;

	atomic64_t stats[NANOBPF_DRV_STAT_COUNT];
	struct dentry *dbg;
};

struct nbpf_vpriv {
	struct nbpf_link *link;
};

/* The name of a key table entry: direction, CID length, and the 20-byte id (the CID zero-padded, or
 * for a zero-length CID the peer's address id, NANOBPF_QUIC_ADDR_*). */
struct nbpf_key_id {
	u8 dir;				/* NANOBPF_QUIC_DIR_OPEN or _SEAL */
	u8 cid_len;			/* 0..NANOBPF_CTRL_MAX_CID */
	u8 id[NANOBPF_CTRL_MAX_CID];
};

/* A key table entry. Replaced whole (RCU) on KEY_UPDATE. */
struct nbpf_key {
	struct hlist_node node;
	struct rcu_head rcu;
	u32 hash;
	u32 slot;			/* device slot, U32_MAX if unknown */
	bool synced;			/* acknowledged by the device in this epoch */
	struct nbpf_key_id id;
	u8 keys[NANOBPF_CTRL_KEYS_SIZE];
};

/* The program image the host keeps for replays. */
struct nbpf_prog {
	u32 len;
	u32 crc;
	char name[NANOBPF_CTRL_NAME_LEN];
	u32 insns;
	u8 image[];
};

/* Request flags of nbpf_request(). */
#define NBPF_REQ_STATE	0x1	/* mirrors host state: a replay that ran first already covered it */
#define NBPF_REQ_RESET	0x2	/* RESET: STALE_EPOCH means it was applied (answer lost) */
#define NBPF_COVERED	1	/* nbpf_request(): the replay carried the change, nothing sent */

/* nanobpf_main.c */
extern struct mutex nbpf_cfg_lock;
extern struct nbpf_link *nbpf_cur;
extern unsigned int nbpf_decrypt_mark;
extern unsigned int nbpf_encrypt_mark;
extern unsigned int nbpf_retry_ms, nbpf_retry_max_ms;
extern DECLARE_HASHTABLE(nbpf_keys, 9);
extern unsigned int nbpf_nkeys;
extern struct nbpf_prog *nbpf_prog_cur;
extern u32 nbpf_tables[NANOBPF_TABLE_COUNT][NBPF_TABLE_MAX_ENTRIES];
extern unsigned long nbpf_tables_touched[NANOBPF_TABLE_COUNT];
extern const unsigned int nbpf_table_entries[NANOBPF_TABLE_COUNT];
extern u32 nbpf_seq_next;
extern u8 nbpf_last_status;
extern char nbpf_last_errmsg[NANOBPF_CTRL_MAX_ERRMSG];

int nbpf_attach(struct net *net, const char *ifname, const char *vname, const u8 *key,
		struct netlink_ext_ack *extack);
void nbpf_detach_locked(void);
void nbpf_reap_locked(void);
void nbpf_keepalive_arm(void);

static inline void nbpf_stat_inc(struct nbpf_link *link, int id)
{
	atomic64_inc(&link->stats[id]);
}

/* nanobpf_ctrl.c */
int nbpf_link_init(struct nbpf_link *link, const u8 *key);
void nbpf_link_free(struct nbpf_link *link);
void nbpf_ctrl_rx(struct nbpf_link *link, struct sk_buff *skb);
int nbpf_request(struct nbpf_link *link, u8 type, const void *body, u16 len, unsigned int flags);
int nbpf_resync(struct nbpf_link *link);
void nbpf_mark_unsynced(struct nbpf_link *link);
void nbpf_probe(struct nbpf_link *link);
int nbpf_status_errno(u8 status);
void nbpf_key_to_msg(const struct nbpf_key *k, struct nanobpf_key_msg *m);
unsigned int nbpf_chunk_size(struct nbpf_link *link);
void nbpf_prog_note_info(struct nbpf_link *link, struct nbpf_prog *p);
u32 nbpf_crc32(const u8 *buf, size_t len);

/* nanobpf_netdev.c */
int nbpf_vdev_create(struct nbpf_link *link, struct net *net, struct net_device *lower,
		     const char *vname, struct netlink_ext_ack *extack);
void nbpf_link_unhook(struct nbpf_link *link);
bool nbpf_is_vdev(const struct net_device *dev);
struct nbpf_link *nbpf_lower_link(const struct net_device *dev);

/* nanobpf_genl.c */
int nbpf_genl_init(void);
void nbpf_genl_exit(void);
void nbpf_keys_free_all(void);

#endif
