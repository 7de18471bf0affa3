// SPDX-License-Identifier: GPL-2.0
/*
 * nanobpf.ko generic-netlink family "nanobpf" (commands and attributes of hw/defs/ctrl.toml) and the
 * authoritative host state: key table by (direction, CID or address id), program image, PISA table words. Every change goes to
 * the host state first, then to the device; the command returns once the device acknowledged. A
 * refusal or a timeout rolls the host change back.
 *
 * One file on purpose (about 1,100 lines): the family's handlers share its policy, the host state's
 * lock and the rollback; nanobpf_ctrl.c (the control link), nanobpf_netdev.c and nanobpf_main.c
 * hold the rest.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/jhash.h>
#include <linux/string.h>
#include <linux/stringify.h>
#include <linux/rtnetlink.h>
#include <net/genetlink.h>
#include <asm/unaligned.h>

#include "nanobpf.h"

static const struct nla_policy nbpf_policy[NANOBPF_ATTR_MAX + 1] = NANOBPF_GENL_POLICY;
static struct genl_family nbpf_family;

#define ATTR(info, a) ((info)->attrs[NANOBPF_ATTR_##a])

/* A required attribute: missing -> -EINVAL with the attribute named in the extended ack. */
#define NEED(info, a, msg) ({								\
	bool __miss = !ATTR(info, a);							\
	if (__miss) {									\
		NL_SET_ERR_ATTR_MISS((info)->extack, NULL, NANOBPF_ATTR_##a);		\
		NL_SET_ERR_MSG((info)->extack, msg);					\
	}										\
	__miss;										\
})

/* A NLA_NUL_STRING attribute (the policy guarantees the NUL) with no characters. */
static bool nbpf_str_empty(const struct nlattr *a)
{
	return !*(const char *)nla_data(a);
}

static struct nbpf_link *nbpf_need_link(struct genl_info *info)
{
	/* DEV_GET's DEV_STATUS/ERRMSG describe this command's refusal only: a failure the driver raises
	 * itself must not be blamed on an older device refusal with the same errno. */
	nbpf_last_status = 0;
	nbpf_last_errmsg[0] = '\0';
	nbpf_reap_locked();
	if (!nbpf_cur)
		GENL_SET_ERR_MSG(info, "no DPU link attached (DEV_ATTACH first)");
	return nbpf_cur;
}

static int nbpf_reply_errno(struct genl_info *info, int err)
{
	if (err == -ETIMEDOUT)
		GENL_SET_ERR_MSG(info, "no answer from the device: check the device key; the link will be resynchronised");
	else if (err == -ENODEV)
		GENL_SET_ERR_MSG(info, "the DPU link went away");
	else if (err < 0 && !info->extack->_msg)
		GENL_SET_ERR_MSG(info, "the device refused the request (DEV_GET: DEV_STATUS, ERRMSG)");
	return err;
}

static struct sk_buff *nbpf_reply_new(struct genl_info *info, size_t size, void **hdr)
{
	struct sk_buff *msg = genlmsg_new(size, GFP_KERNEL);

	if (!msg)
		return NULL;
	*hdr = genlmsg_put_reply(msg, info, &nbpf_family, 0, info->genlhdr->cmd);
	if (!*hdr) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

static int nbpf_reply_send(struct sk_buff *msg, void *hdr, struct genl_info *info)
{
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

/* ---------------------------------------------------------------- key table */

static u32 nbpf_id_hash(const struct nbpf_key_id *id)
{
	return jhash(id->id, sizeof(id->id), (u32)id->dir << 8 | id->cid_len);
}

static struct nbpf_key *nbpf_key_find(const struct nbpf_key_id *id)
{
	u32 h = nbpf_id_hash(id);
	struct nbpf_key *k;

	hash_for_each_possible_rcu(nbpf_keys, k, node, h, lockdep_is_held(&nbpf_cfg_lock))
		if (k->hash == h && !memcmp(&k->id, id, sizeof(*id)))
			return k;
	return NULL;
}

void nbpf_keys_free_all(void)
{
	struct hlist_node *tmp;
	struct nbpf_key *k;
	unsigned int bkt;

	hash_for_each_safe(nbpf_keys, bkt, tmp, k, node) {
		hash_del_rcu(&k->node);
		kfree_rcu(k, rcu);
	}
	nbpf_nkeys = 0;
}

/*
 * The entry a request names: DIR (default OPEN), and a CID of 1..20 bytes, or an empty or absent CID
 * with ADDR_ID (exactly 20 bytes, the policy checks the length; not all zero) for a peer that uses
 * zero-length CIDs.
 */
static int nbpf_parse_id(struct genl_info *info, struct nbpf_key_id *id)
{
	struct nlattr *c = ATTR(info, CID), *a = ATTR(info, ADDR_ID), *d = ATTR(info, DIR);
	int n = c ? nla_len(c) : 0;

	memset(id, 0, sizeof(*id));
	id->dir = d ? nla_get_u8(d) : NANOBPF_QUIC_DIR_OPEN;
	if (id->dir != NANOBPF_QUIC_DIR_OPEN && id->dir != NANOBPF_QUIC_DIR_SEAL) {
		NL_SET_ERR_MSG_ATTR(info->extack, d, "DIR must be 0 (open) or 1 (seal)");
		return -EINVAL;
	}
	if (n > NANOBPF_CTRL_MAX_CID) {		/* the policy checks it too */
		NL_SET_ERR_MSG_ATTR(info->extack, c, "CID must be 0..20 bytes");
		return -EINVAL;
	}
	if (n) {
		if (a) {
			NL_SET_ERR_MSG_ATTR(info->extack, a, "ADDR_ID names a zero-length CID only (CID empty or absent)");
			return -EINVAL;
		}
		id->cid_len = n;
		memcpy(id->id, nla_data(c), n);
		return 0;
	}
	if (!a) {
		if (c) {
			NL_SET_ERR_ATTR_MISS(info->extack, NULL, NANOBPF_ATTR_ADDR_ID);
			NL_SET_ERR_MSG(info->extack, "an empty CID needs ADDR_ID (the peer's address and ports)");
		} else {
			NL_SET_ERR_ATTR_MISS(info->extack, NULL, NANOBPF_ATTR_CID);
			NL_SET_ERR_MSG(info->extack, "missing CID (or ADDR_ID for a peer with zero-length CIDs)");
		}
		return -EINVAL;
	}
	if (nla_len(a) != NANOBPF_CTRL_MAX_CID || !memchr_inv(nla_data(a), 0, NANOBPF_CTRL_MAX_CID)) {
		NL_SET_ERR_MSG_ATTR(info->extack, a, "ADDR_ID must be 20 bytes, not all zero");
		return -EINVAL;
	}
	memcpy(id->id, nla_data(a), NANOBPF_CTRL_MAX_CID);
	return 0;
}

/* The attribute that named the entry (for extended-ack messages about it). */
static struct nlattr *nbpf_id_attr(struct genl_info *info)
{
	return ATTR(info, CID) && nla_len(ATTR(info, CID)) ? ATTR(info, CID) : ATTR(info, ADDR_ID);
}

static int nbpf_parse_keys(struct genl_info *info, const struct nbpf_key_id *id, u8 *keys)
{
	struct nlattr *a = ATTR(info, KEYS);
	const struct nanobpf_quic_keys *q;

	if (NEED(info, KEYS, "missing KEYS"))
		return -EINVAL;
	if (nla_len(a) != NANOBPF_CTRL_KEYS_SIZE) {	/* the policy checks it too */
		NL_SET_ERR_MSG_ATTR(info->extack, a, "KEYS must be 80 bytes (struct nanobpf_quic_keys)");
		return -EINVAL;
	}
	q = nla_data(a);
	if (q->cid_len != id->cid_len) {
		NL_SET_ERR_MSG_ATTR(info->extack, a, "cid_len in KEYS differs from the CID length");
		return -EINVAL;
	}
	if (q->key_phase > 1) {
		NL_SET_ERR_MSG_ATTR(info->extack, a, "key_phase in KEYS must be 0 or 1");
		return -EINVAL;
	}
	if (q->flags & ~(NANOBPF_QUIC_KEY_NEXT | NANOBPF_QUIC_KEY_PREV) ||
	    q->flags == (NANOBPF_QUIC_KEY_NEXT | NANOBPF_QUIC_KEY_PREV)) {
		NL_SET_ERR_MSG_ATTR(info->extack, a, "flags in KEYS: NEXT or PREV (not both), nothing else");
		return -EINVAL;
	}
	if (q->flags & NANOBPF_QUIC_KEY_PREV && id->dir != NANOBPF_QUIC_DIR_OPEN) {
		NL_SET_ERR_MSG_ATTR(info->extack, a, "flag PREV (previous keys) only in open entries");
		return -EINVAL;
	}
	memcpy(keys, q, NANOBPF_CTRL_KEYS_SIZE);
	return 0;
}

static u32 nbpf_resp_slot(struct nbpf_link *link)
{
	return link->resp->len >= sizeof(struct nanobpf_key_resp) ?
	       get_unaligned_be32(link->resp->body) : U32_MAX;
}

static int nbpf_cmd_key_add(struct sk_buff *skb, struct genl_info *info)
{
	struct nanobpf_key_msg m;
	struct nbpf_link *link;
	struct nbpf_key_id id;
	struct nbpf_key *k;
	int err;

	err = nbpf_parse_id(info, &id);
	if (err)
		return err;
	k = kzalloc(sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	err = nbpf_parse_keys(info, &id, k->keys);
	if (err)
		goto out_free;
	k->id = id;
	k->hash = nbpf_id_hash(&id);
	k->slot = U32_MAX;

	mutex_lock(&nbpf_cfg_lock);
	link = nbpf_need_link(info);
	err = -ENODEV;
	if (!link)
		goto out_unlock;
	err = -EEXIST;
	if (nbpf_key_find(&id)) {
		NL_SET_ERR_MSG_ATTR(info->extack, nbpf_id_attr(info), "the entry exists (KEY_UPDATE replaces keys)");
		goto out_unlock;
	}
	err = -ENOSPC;
	if (nbpf_nkeys >= link->key_slots) {
		GENL_SET_ERR_MSG(info, "key table full (device key_slots)");
		goto out_unlock;
	}
	hash_add_rcu(nbpf_keys, &k->node, k->hash);	/* host table first */
	nbpf_nkeys++;
	nbpf_key_to_msg(k, &m);
	err = nbpf_request(link, NANOBPF_CTRL_MSG_KEY_ADD, &m, sizeof(m), NBPF_REQ_STATE);
	if (err >= 0) {
		if (!err) {
			k->slot = nbpf_resp_slot(link);
			WRITE_ONCE(k->synced, true);
		}
		mutex_unlock(&nbpf_cfg_lock);
		return 0;
	}
	hash_del_rcu(&k->node);		/* roll back */
	nbpf_nkeys--;
	if (err == -EEXIST)		/* the device had an entry the host did not: diverged */
		nbpf_mark_unsynced(link);
	mutex_unlock(&nbpf_cfg_lock);
	kfree_rcu(k, rcu);
	return nbpf_reply_errno(info, err);

out_unlock:
	mutex_unlock(&nbpf_cfg_lock);
out_free:
	kfree(k);
	return err;
}

static int nbpf_cmd_key_update(struct sk_buff *skb, struct genl_info *info)
{
	struct nanobpf_key_msg m;
	struct nbpf_link *link;
	struct nbpf_key *old, *k;
	struct nbpf_key_id id;
	u8 keys[NANOBPF_CTRL_KEYS_SIZE];
	int err;

	err = nbpf_parse_id(info, &id);
	if (!err)
		err = nbpf_parse_keys(info, &id, keys);
	if (err)
		return err;

	mutex_lock(&nbpf_cfg_lock);
	link = nbpf_need_link(info);
	err = -ENODEV;
	if (!link)
		goto out_unlock;
	old = nbpf_key_find(&id);
	err = -ENOENT;
	if (!old) {
		NL_SET_ERR_MSG_ATTR(info->extack, nbpf_id_attr(info), "no such entry (CID or ADDR_ID, and DIR)");
		goto out_unlock;
	}
	k = kmemdup(old, sizeof(*old), GFP_KERNEL);
	err = -ENOMEM;
	if (!k)
		goto out_unlock;
	memcpy(k->keys, keys, sizeof(k->keys));
	k->synced = false;
	hlist_replace_rcu(&old->node, &k->node);	/* readers see the old or the new entry */
	nbpf_key_to_msg(k, &m);
	err = nbpf_request(link, NANOBPF_CTRL_MSG_KEY_UPDATE, &m, sizeof(m), NBPF_REQ_STATE);
	if (err >= 0) {
		if (!err) {
			k->slot = nbpf_resp_slot(link);
			WRITE_ONCE(k->synced, true);
		}
		mutex_unlock(&nbpf_cfg_lock);
		kfree_rcu(old, rcu);
		return 0;
	}
	hlist_replace_rcu(&k->node, &old->node);	/* roll back */
	if (err == -ENOENT)
		nbpf_mark_unsynced(link);
	mutex_unlock(&nbpf_cfg_lock);
	kfree_rcu(k, rcu);
	return nbpf_reply_errno(info, err);

out_unlock:
	mutex_unlock(&nbpf_cfg_lock);
	return err;
}

static int nbpf_cmd_key_del(struct sk_buff *skb, struct genl_info *info)
{
	struct nanobpf_key_del d;
	struct nbpf_link *link;
	struct nbpf_key *k, *back;
	struct nbpf_key_id id;
	int err;

	err = nbpf_parse_id(info, &id);
	if (err)
		return err;
	mutex_lock(&nbpf_cfg_lock);
	link = nbpf_need_link(info);
	err = -ENODEV;
	if (!link)
		goto out_unlock;
	k = nbpf_key_find(&id);
	err = -ENOENT;
	if (!k) {
		NL_SET_ERR_MSG_ATTR(info->extack, nbpf_id_attr(info), "no such entry (CID or ADDR_ID, and DIR)");
		goto out_unlock;
	}
	back = kmemdup(k, sizeof(*k), GFP_KERNEL);	/* for a roll back (a removed node waits for RCU) */
	err = -ENOMEM;
	if (!back)
		goto out_unlock;
	hash_del_rcu(&k->node);
	nbpf_nkeys--;
	memset(&d, 0, sizeof(d));
	d.cid_len = id.cid_len;
	d.dir = id.dir;
	memcpy(d.cid, id.id, sizeof(d.cid));
	err = nbpf_request(link, NANOBPF_CTRL_MSG_KEY_DEL, &d, sizeof(d), NBPF_REQ_STATE);
	if (err >= 0) {
		mutex_unlock(&nbpf_cfg_lock);
		kfree_rcu(k, rcu);
		kfree(back);
		return 0;
	}
	back->synced = false;
	hash_add_rcu(nbpf_keys, &back->node, back->hash);	/* roll back */
	nbpf_nkeys++;
	if (err == -ENOENT)
		nbpf_mark_unsynced(link);
	mutex_unlock(&nbpf_cfg_lock);
	kfree_rcu(k, rcu);
	return nbpf_reply_errno(info, err);

out_unlock:
	mutex_unlock(&nbpf_cfg_lock);
	return err;
}

static int nbpf_put_key(struct sk_buff *msg, const struct nbpf_key *k)
{
	if (nla_put(msg, NANOBPF_ATTR_CID, k->id.cid_len, k->id.id) ||
	    nla_put_u8(msg, NANOBPF_ATTR_DIR, k->id.dir) ||
	    (!k->id.cid_len && nla_put(msg, NANOBPF_ATTR_ADDR_ID, sizeof(k->id.id), k->id.id)) ||
	    nla_put_u8(msg, NANOBPF_ATTR_KEY_PHASE, k->keys[0]) ||
	    nla_put_u32(msg, NANOBPF_ATTR_SLOT, k->slot) ||
	    nla_put_u8(msg, NANOBPF_ATTR_SYNCED, READ_ONCE(k->synced)))
		return -EMSGSIZE;
	return 0;
}

/* KEY_GET with a CID (or ADDR_ID) and DIR: that entry. */
static int nbpf_cmd_key_get(struct sk_buff *skb, struct genl_info *info)
{
	struct nbpf_key_id id;
	struct sk_buff *msg;
	struct nbpf_key *k;
	void *hdr;
	int err;

	err = nbpf_parse_id(info, &id);
	if (err)
		return err;
	msg = nbpf_reply_new(info, NLMSG_DEFAULT_SIZE, &hdr);
	if (!msg)
		return -ENOMEM;
	rcu_read_lock();
	k = nbpf_key_find(&id);
	err = k ? nbpf_put_key(msg, k) : -ENOENT;
	rcu_read_unlock();
	if (err) {
		if (err == -ENOENT)
			NL_SET_ERR_MSG_ATTR(info->extack, nbpf_id_attr(info), "no such entry (CID or ADDR_ID, and DIR)");
		nlmsg_free(msg);
		return err;
	}
	return nbpf_reply_send(msg, hdr, info);
}

/* KEY_GET dump: one message per entry. cb->args: bucket, entries of it already sent. */
static int nbpf_cmd_key_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	unsigned long bkt = cb->args[0], skip = cb->args[1], idx = 0;
	struct nbpf_key *k;
	void *hdr;

	rcu_read_lock();
	for (; bkt < HASH_SIZE(nbpf_keys); bkt++, skip = 0) {
		idx = 0;
		hlist_for_each_entry_rcu(k, &nbpf_keys[bkt], node) {
			if (idx < skip) {
				idx++;
				continue;
			}
			hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
					  &nbpf_family, NLM_F_MULTI, NANOBPF_CMD_KEY_GET);
			if (!hdr)
				goto out;
			if (nbpf_put_key(skb, k)) {
				genlmsg_cancel(skb, hdr);
				goto out;
			}
			genlmsg_end(skb, hdr);
			idx++;
		}
	}
out:
	rcu_read_unlock();
	cb->args[0] = bkt;
	cb->args[1] = idx;
	return skb->len;
}

/* ---------------------------------------------------------------- programs */

/* BEGIN, CHUNKs, COMMIT as requests; a replay in between carries the whole (new) program. */
static int nbpf_prog_send(struct nbpf_link *link, struct nbpf_prog *p)
{
	struct nanobpf_prog_begin b;
	unsigned int off, n, chunk;
	u8 *buf;
	int err;

	buf = kmalloc(NANOBPF_CTRL_MAX_BODY, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	b.total = htonl(p->len);
	b.crc32 = htonl(p->crc);
	memcpy(b.name, p->name, sizeof(b.name));
	err = nbpf_request(link, NANOBPF_CTRL_MSG_PROG_BEGIN, &b, sizeof(b), NBPF_REQ_STATE);
	chunk = nbpf_chunk_size(link);
	for (off = 0; !err && off < p->len; off += n) {
		n = min(chunk, p->len - off);
		put_unaligned_be32(off, buf);
		memcpy(buf + sizeof(struct nanobpf_prog_chunk), p->image + off, n);
		err = nbpf_request(link, NANOBPF_CTRL_MSG_PROG_CHUNK, buf,
				   sizeof(struct nanobpf_prog_chunk) + n, NBPF_REQ_STATE);
	}
	if (!err) {
		err = nbpf_request(link, NANOBPF_CTRL_MSG_PROG_COMMIT, &b, sizeof(b), NBPF_REQ_STATE);
		if (!err)
			nbpf_prog_note_info(link, p);
	}
	kfree(buf);
	return err;
}

static int nbpf_cmd_prog_load(struct sk_buff *skb, struct genl_info *info)
{
	const struct nanobpf_image_header *ih;
	struct nbpf_prog *p, *old;
	struct nbpf_link *link;
	struct nlattr *a;
	u32 len;
	int err;

	if (NEED(info, IMAGE, "missing IMAGE"))
		return -EINVAL;
	a = ATTR(info, IMAGE);
	len = nla_len(a);
	if (len < 1 || len > NANOBPF_CTRL_MAX_IMAGE) {
		NL_SET_ERR_MSG_ATTR(info->extack, a, "IMAGE must be 1.." __stringify(NANOBPF_CTRL_MAX_IMAGE) " bytes");
		return -EINVAL;
	}
	if (ATTR(info, PROG_NAME) && nbpf_str_empty(ATTR(info, PROG_NAME))) {
		NL_SET_ERR_MSG_ATTR(info->extack, ATTR(info, PROG_NAME), "empty PROG_NAME");
		return -EINVAL;
	}
	p = kvzalloc(sizeof(*p) + len, GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->len = len;
	memcpy(p->image, nla_data(a), len);
	p->crc = nbpf_crc32(p->image, len);
	ih = (const struct nanobpf_image_header *)p->image;
	if (ATTR(info, PROG_NAME))
		nla_strscpy(p->name, ATTR(info, PROG_NAME), sizeof(p->name));
	else if (len >= sizeof(*ih) && get_unaligned_le32(&ih->magic) == NANOBPF_IMAGE_MAGIC)
		strscpy_pad(p->name, ih->prog_name, sizeof(p->name));	/* truncates to 15 */
	if (!p->name[0])
		strscpy_pad(p->name, "prog", sizeof(p->name));

	mutex_lock(&nbpf_cfg_lock);
	link = nbpf_need_link(info);
	err = -ENODEV;
	if (!link)
		goto out_unlock;
	err = -EFBIG;
	if (len > link->max_image) {
		NL_SET_ERR_MSG_ATTR(info->extack, a, "IMAGE larger than the device's max_image");
		goto out_unlock;
	}
	old = nbpf_prog_cur;
	nbpf_prog_cur = p;				/* host state first */
	err = nbpf_prog_send(link, p);
	if (err >= 0) {
		mutex_unlock(&nbpf_cfg_lock);
		kvfree(old);
		return 0;
	}
	nbpf_prog_cur = old;				/* roll back */
	mutex_unlock(&nbpf_cfg_lock);
	kvfree(p);
	return nbpf_reply_errno(info, err);

out_unlock:
	mutex_unlock(&nbpf_cfg_lock);
	kvfree(p);
	return err;
}

static int nbpf_cmd_prog_unload(struct sk_buff *skb, struct genl_info *info)
{
	struct nbpf_link *link;
	struct nbpf_prog *old;
	int err;

	mutex_lock(&nbpf_cfg_lock);
	link = nbpf_need_link(info);
	if (!link) {
		mutex_unlock(&nbpf_cfg_lock);
		return -ENODEV;
	}
	old = nbpf_prog_cur;
	nbpf_prog_cur = NULL;
	err = nbpf_request(link, NANOBPF_CTRL_MSG_PROG_UNLOAD, NULL, 0, NBPF_REQ_STATE);
	if (err >= 0) {
		mutex_unlock(&nbpf_cfg_lock);
		kvfree(old);
		return 0;
	}
	nbpf_prog_cur = old;
	mutex_unlock(&nbpf_cfg_lock);
	return nbpf_reply_errno(info, err);
}

static int nbpf_cmd_prog_get(struct sk_buff *skb, struct genl_info *info)
{
	struct nanobpf_prog_info pi;
	struct nbpf_link *link;
	struct sk_buff *msg;
	char name[NANOBPF_CTRL_NAME_LEN];
	void *hdr;
	int err;

	mutex_lock(&nbpf_cfg_lock);
	link = nbpf_need_link(info);
	if (!link) {
		mutex_unlock(&nbpf_cfg_lock);
		return -ENODEV;
	}
	err = nbpf_request(link, NANOBPF_CTRL_MSG_PROG_INFO, NULL, 0, 0);
	memset(&pi, 0, sizeof(pi));
	if (!err)
		memcpy(&pi, link->resp->body, min_t(size_t, link->resp->len, sizeof(pi)));
	mutex_unlock(&nbpf_cfg_lock);
	if (err)
		return nbpf_reply_errno(info, err);

	msg = nbpf_reply_new(info, NLMSG_DEFAULT_SIZE, &hdr);
	if (!msg)
		return -ENOMEM;
	strscpy_pad(name, pi.name, sizeof(name));
	if (nla_put_string(msg, NANOBPF_ATTR_PROG_NAME, name) ||
	    nla_put_u32(msg, NANOBPF_ATTR_IMAGE_LEN, ntohl(pi.image_len)) ||
	    nla_put_u32(msg, NANOBPF_ATTR_PROG_CRC, ntohl(pi.crc32)) ||
	    nla_put_u32(msg, NANOBPF_ATTR_PROG_INSNS, ntohl(pi.insns))) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	return nbpf_reply_send(msg, hdr, info);
}

/* ---------------------------------------------------------------- maps (passed through) */

/* Build map_req + key (+ value) in buf; returns the body length or a negative errno. */
static int nbpf_map_body(struct genl_info *info, u8 *buf, bool key_required, bool with_value)
{
	struct nanobpf_map_req *req = (struct nanobpf_map_req *)buf;
	struct nlattr *key = ATTR(info, MAP_KEY), *val = ATTR(info, MAP_VALUE);
	struct nlattr *name = ATTR(info, MAP_NAME), *flags = ATTR(info, MAP_FLAGS);
	unsigned int klen = 0, vlen = 0;
	u64 f = 0;

	if (NEED(info, MAP_NAME, "missing MAP_NAME"))
		return -EINVAL;
	if (nbpf_str_empty(name)) {
		NL_SET_ERR_MSG_ATTR(info->extack, name, "empty MAP_NAME");
		return -EINVAL;
	}
	if (key_required && NEED(info, MAP_KEY, "missing MAP_KEY"))
		return -EINVAL;
	if (key) {
		klen = nla_len(key);
		if ((key_required && klen < 1) || klen > NANOBPF_CTRL_MAX_MAP_KEY) {
			NL_SET_ERR_MSG_ATTR(info->extack, key, "MAP_KEY must be 1..256 bytes");
			return -EINVAL;
		}
	}
	if (with_value) {
		if (NEED(info, MAP_VALUE, "missing MAP_VALUE"))
			return -EINVAL;
		vlen = nla_len(val);
		if (vlen < 1 || vlen > NANOBPF_CTRL_MAX_MAP_VALUE) {
			NL_SET_ERR_MSG_ATTR(info->extack, val, "MAP_VALUE must be 1..1024 bytes");
			return -EINVAL;
		}
		if (flags) {
			f = nla_get_u64(flags);
			if (f > NANOBPF_BPF_EXIST) {
				NL_SET_ERR_MSG_ATTR(info->extack, flags,
						    "MAP_FLAGS must be BPF_ANY, BPF_NOEXIST or BPF_EXIST");
				return -EINVAL;
			}
		}
	} else if (val || flags) {
		NL_SET_ERR_MSG_ATTR(info->extack, val ?: flags, "MAP_VALUE/MAP_FLAGS only with MAP_UPDATE");
		return -EINVAL;
	}
	if (sizeof(*req) + klen + vlen > NANOBPF_CTRL_MAX_BODY)
		return -EMSGSIZE;
	memset(req, 0, sizeof(*req));
	nla_strscpy(req->name, name, sizeof(req->name));
	req->flags = cpu_to_be64(f);
	req->key_len = htons(klen);
	req->value_len = htons(vlen);
	if (klen)
		memcpy(buf + sizeof(*req), nla_data(key), klen);
	if (vlen)
		memcpy(buf + sizeof(*req) + klen, nla_data(val), vlen);
	return sizeof(*req) + klen + vlen;
}

static int nbpf_cmd_map(struct sk_buff *skb, struct genl_info *info)
{
	u8 cmd = info->genlhdr->cmd, type;
	int reply_attr = 0, max_reply = 0;
	struct nbpf_link *link;
	struct sk_buff *msg = NULL;
	void *hdr = NULL;
	u8 *buf;
	int len, err;

	switch (cmd) {
	case NANOBPF_CMD_MAP_LOOKUP:
		type = NANOBPF_CTRL_MSG_MAP_LOOKUP;
		reply_attr = NANOBPF_ATTR_MAP_VALUE;
		max_reply = NANOBPF_CTRL_MAX_MAP_VALUE;
		break;
	case NANOBPF_CMD_MAP_UPDATE:
		type = NANOBPF_CTRL_MSG_MAP_UPDATE;
		break;
	case NANOBPF_CMD_MAP_DELETE:
		type = NANOBPF_CTRL_MSG_MAP_DELETE;
		break;
	default:
		type = NANOBPF_CTRL_MSG_MAP_NEXT;
		reply_attr = NANOBPF_ATTR_MAP_KEY;
		max_reply = NANOBPF_CTRL_MAX_MAP_KEY;
		break;
	}
	buf = kmalloc(NANOBPF_CTRL_MAX_BODY, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	len = nbpf_map_body(info, buf, cmd != NANOBPF_CMD_MAP_GET_NEXT, cmd == NANOBPF_CMD_MAP_UPDATE);
	if (len < 0) {
		kfree(buf);
		return len;
	}
	if (reply_attr) {
		msg = nbpf_reply_new(info, NLMSG_DEFAULT_SIZE, &hdr);
		if (!msg) {
			kfree(buf);
			return -ENOMEM;
		}
	}
	mutex_lock(&nbpf_cfg_lock);
	link = nbpf_need_link(info);
	err = -ENODEV;
	if (link)
		err = nbpf_request(link, type, buf, len, 0);
	if (!err && reply_attr) {
		if (link->resp->len > max_reply) {
			GENL_SET_ERR_MSG(info, "the device answered with an oversize key or value");
			err = -EPROTO;
		} else if (nla_put(msg, reply_attr, link->resp->len, link->resp->body)) {
			err = -EMSGSIZE;
		}
	}
	mutex_unlock(&nbpf_cfg_lock);
	kfree(buf);
	if (err) {
		nlmsg_free(msg);
		return link ? nbpf_reply_errno(info, err) : err;
	}
	if (msg)
		return nbpf_reply_send(msg, hdr, info);
	return 0;
}

/* ---------------------------------------------------------------- events (passed through) */

/* Copy an EVENTS response into the reply: EVENTS_LOST, EVENTS_PENDING, EVENT_LIST of EVENT nests. The
 * device's answer is checked whole first (records inside the body, each at most MAX_EVENT bytes, nothing
 * after them): the records are gone from the device either way, but user space gets all or an error. */
static int nbpf_put_events(struct sk_buff *msg, const u8 *body, unsigned int len, struct genl_info *info)
{
	const struct nanobpf_events_resp *h = (const void *)body;
	struct nlattr *list, *ev;
	unsigned int off = sizeof(*h), i, n;

	if (len < sizeof(*h))
		goto bad;
	n = ntohs(h->count);
	for (i = 0; i < n; i++) {
		const struct nanobpf_event_rec *rec = (const void *)(body + off);

		if (off + sizeof(*rec) > len || ntohs(rec->len) > NANOBPF_CTRL_MAX_EVENT ||
		    off + sizeof(*rec) + ntohs(rec->len) > len)
			goto bad;
		off += sizeof(*rec) + ntohs(rec->len);
	}
	if (off != len)
		goto bad;
	if (nla_put_u32(msg, NANOBPF_ATTR_EVENTS_LOST, ntohl(h->lost)) ||
	    nla_put_u32(msg, NANOBPF_ATTR_EVENTS_PENDING, ntohl(h->pending)))
		return -EMSGSIZE;
	list = nla_nest_start(msg, NANOBPF_ATTR_EVENT_LIST);
	if (!list)
		return -EMSGSIZE;
	for (off = sizeof(*h), i = 0; i < n; i++) {
		const struct nanobpf_event_rec *rec = (const void *)(body + off);

		ev = nla_nest_start(msg, NANOBPF_ATTR_EVENT);
		if (!ev || nla_put_u32(msg, NANOBPF_ATTR_EVENT_INDEX, ntohl(rec->index)) ||
		    nla_put(msg, NANOBPF_ATTR_EVENT_DATA, ntohs(rec->len), rec + 1))
			return -EMSGSIZE;
		nla_nest_end(msg, ev);
		off += sizeof(*rec) + ntohs(rec->len);
	}
	nla_nest_end(msg, list);
	return 0;
bad:
	GENL_SET_ERR_MSG(info, "the device answered EVENTS with malformed records");
	return -EPROTO;
}

static int nbpf_cmd_events_read(struct sk_buff *skb, struct genl_info *info)
{
	struct nanobpf_events_req req;
	struct nbpf_link *link;
	struct sk_buff *msg;
	void *hdr;
	int err;

	if (NEED(info, MAP_NAME, "missing MAP_NAME"))
		return -EINVAL;
	if (nbpf_str_empty(ATTR(info, MAP_NAME))) {
		NL_SET_ERR_MSG_ATTR(info->extack, ATTR(info, MAP_NAME), "empty MAP_NAME");
		return -EINVAL;
	}
	memset(&req, 0, sizeof(req));
	nla_strscpy(req.name, ATTR(info, MAP_NAME), sizeof(req.name));
	if (ATTR(info, EVENTS_MAX))
		req.max = htons(nla_get_u16(ATTR(info, EVENTS_MAX)));
	/* a full response's records, their nests and headers */
	msg = nbpf_reply_new(info, NANOBPF_CTRL_MAX_BODY * 2 + 256, &hdr);
	if (!msg)
		return -ENOMEM;
	mutex_lock(&nbpf_cfg_lock);
	link = nbpf_need_link(info);
	err = -ENODEV;
	if (link)
		err = nbpf_request(link, NANOBPF_CTRL_MSG_EVENTS, &req, sizeof(req), 0);
	if (!err)
		err = nbpf_put_events(msg, link->resp->body, link->resp->len, info);
	mutex_unlock(&nbpf_cfg_lock);
	if (err) {
		nlmsg_free(msg);
		return link && err != -EPROTO && err != -EMSGSIZE ? nbpf_reply_errno(info, err) : err;
	}
	return nbpf_reply_send(msg, hdr, info);
}

/* ---------------------------------------------------------------- PISA tables */

static int nbpf_cmd_table(struct sk_buff *skb, struct genl_info *info)
{
	bool set = info->genlhdr->cmd == NANOBPF_CMD_TABLE_SET, was;
	struct nanobpf_table_msg tm;
	struct nbpf_link *link;
	u32 value = 0, old;
	u16 index;
	u8 table;
	int err;

	if (NEED(info, TABLE, "missing TABLE") || NEED(info, TABLE_INDEX, "missing TABLE_INDEX"))
		return -EINVAL;
	table = nla_get_u8(ATTR(info, TABLE));
	if (table >= NANOBPF_TABLE_COUNT) {
		NL_SET_ERR_MSG_ATTR(info->extack, ATTR(info, TABLE), "unknown TABLE");
		return -EINVAL;
	}
	index = nla_get_u16(ATTR(info, TABLE_INDEX));
	if (index >= nbpf_table_entries[table]) {
		NL_SET_ERR_MSG_ATTR(info->extack, ATTR(info, TABLE_INDEX), "TABLE_INDEX beyond the table");
		return -EINVAL;
	}
	if (set) {
		if (NEED(info, TABLE_VALUE, "missing TABLE_VALUE"))
			return -EINVAL;
		value = nla_get_u32(ATTR(info, TABLE_VALUE));
	} else if (ATTR(info, TABLE_VALUE)) {
		NL_SET_ERR_MSG_ATTR(info->extack, ATTR(info, TABLE_VALUE), "TABLE_DEL takes no TABLE_VALUE");
		return -EINVAL;
	}
	tm.table = table;
	tm.reserved = 0;
	tm.index = htons(index);
	tm.value = htonl(value);

	mutex_lock(&nbpf_cfg_lock);
	link = nbpf_need_link(info);
	if (!link) {
		mutex_unlock(&nbpf_cfg_lock);
		return -ENODEV;
	}
	old = nbpf_tables[table][index];
	was = test_bit(index, &nbpf_tables_touched[table]);
	nbpf_tables[table][index] = value;
	set_bit(index, &nbpf_tables_touched[table]);
	err = nbpf_request(link, set ? NANOBPF_CTRL_MSG_TABLE_SET : NANOBPF_CTRL_MSG_TABLE_DEL,
			   &tm, sizeof(tm), NBPF_REQ_STATE);
	if (err < 0) {
		nbpf_tables[table][index] = old;
		if (!was)
			clear_bit(index, &nbpf_tables_touched[table]);
	}
	mutex_unlock(&nbpf_cfg_lock);
	return err < 0 ? nbpf_reply_errno(info, err) : 0;
}

/* ---------------------------------------------------------------- device */

/*
 * CTRL_KEY, the device key, is required: every control frame is authenticated with it. It is used
 * at attach to derive the link's keys and is never stored or sent back (DEV_GET has no such attribute).
 */
static int nbpf_cmd_dev_attach(struct sk_buff *skb, struct genl_info *info)
{
	char ifname[IFNAMSIZ], vname[IFNAMSIZ] = "nbpf%d";
	int err;

	if (NEED(info, IFNAME, "missing IFNAME"))
		return -EINVAL;
	if (NEED(info, CTRL_KEY, "missing CTRL_KEY (the device key, 16 bytes)"))
		return -EINVAL;
	if (nla_len(ATTR(info, CTRL_KEY)) != NANOBPF_CTRL_KEY_LEN) {	/* the policy checks it too */
		NL_SET_ERR_MSG_ATTR(info->extack, ATTR(info, CTRL_KEY), "CTRL_KEY must be 16 bytes");
		return -EINVAL;
	}
	if (nla_strscpy(ifname, ATTR(info, IFNAME), sizeof(ifname)) <= 0) {
		NL_SET_ERR_MSG_ATTR(info->extack, ATTR(info, IFNAME), "empty or too long IFNAME");
		return -EINVAL;
	}
	if (ATTR(info, VDEV_NAME)) {
		if (nla_strscpy(vname, ATTR(info, VDEV_NAME), sizeof(vname)) <= 0 ||
		    !dev_valid_name(vname)) {
			NL_SET_ERR_MSG_ATTR(info->extack, ATTR(info, VDEV_NAME), "invalid VDEV_NAME");
			return -EINVAL;
		}
	}
	mutex_lock(&nbpf_cfg_lock);
	err = nbpf_attach(genl_info_net(info), ifname, vname, nla_data(ATTR(info, CTRL_KEY)), info->extack);
	mutex_unlock(&nbpf_cfg_lock);
	return err;
}

static int nbpf_cmd_dev_detach(struct sk_buff *skb, struct genl_info *info)
{
	int err = 0;

	mutex_lock(&nbpf_cfg_lock);
	if (nbpf_need_link(info))
		nbpf_detach_locked();
	else
		err = -ENODEV;
	mutex_unlock(&nbpf_cfg_lock);
	return err;
}

static int nbpf_cmd_dev_get(struct sk_buff *skb, struct genl_info *info)
{
	char ifname[IFNAMSIZ] = "", vname[IFNAMSIZ] = "";
	struct nbpf_link *link;
	struct sk_buff *msg;
	void *hdr;
	int err = 0;

	msg = nbpf_reply_new(info, NLMSG_DEFAULT_SIZE, &hdr);
	if (!msg)
		return -ENOMEM;
	mutex_lock(&nbpf_cfg_lock);
	nbpf_reap_locked();
	link = nbpf_cur;
	if (link) {
		rtnl_lock();
		if (link->hooked) {
			strscpy(ifname, link->lower->name, sizeof(ifname));
			strscpy(vname, link->vdev->name, sizeof(vname));
		}
		rtnl_unlock();
		if (nla_put_string(msg, NANOBPF_ATTR_IFNAME, ifname) ||
		    nla_put_string(msg, NANOBPF_ATTR_VDEV_NAME, vname) ||
		    nla_put_u8(msg, NANOBPF_ATTR_LINK_STATE, link->state) ||
		    nla_put_u32(msg, NANOBPF_ATTR_EPOCH, link->epoch) ||
		    nla_put_u16(msg, NANOBPF_ATTR_VERSION, link->version))
			err = -EMSGSIZE;
	} else if (nla_put_u8(msg, NANOBPF_ATTR_LINK_STATE, NBPF_LINK_DETACHED)) {
		err = -EMSGSIZE;
	}
	if (!err && (nla_put_u32(msg, NANOBPF_ATTR_KEY_COUNT, nbpf_nkeys) ||
		     nla_put_u8(msg, NANOBPF_ATTR_DEV_STATUS, nbpf_last_status) ||
		     (nbpf_last_status && nla_put_string(msg, NANOBPF_ATTR_ERRMSG, nbpf_last_errmsg))))
		err = -EMSGSIZE;
	mutex_unlock(&nbpf_cfg_lock);
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return nbpf_reply_send(msg, hdr, info);
}

static int nbpf_cmd_dev_reset(struct sk_buff *skb, struct genl_info *info)
{
	struct nbpf_link *link;
	int err;

	mutex_lock(&nbpf_cfg_lock);
	link = nbpf_need_link(info);
	err = -ENODEV;
	if (link) {
		err = nbpf_request(link, NANOBPF_CTRL_MSG_RESET, NULL, 0, NBPF_REQ_RESET);
		if (!err) {
			nbpf_mark_unsynced(link);
			err = nbpf_resync(link);
		}
		if (err)
			err = nbpf_reply_errno(info, err);
	}
	mutex_unlock(&nbpf_cfg_lock);
	return err;
}

static int nbpf_put_stat(struct sk_buff *msg, u32 id, u64 value)
{
	struct nlattr *st = nla_nest_start(msg, NANOBPF_ATTR_STAT);

	if (!st || nla_put_u32(msg, NANOBPF_ATTR_STAT_ID, id) ||
	    nla_put_u64_64bit(msg, NANOBPF_ATTR_STAT_VALUE, value, NANOBPF_ATTR_UNSPEC))
		return -EMSGSIZE;
	nla_nest_end(msg, st);
	return 0;
}

static int nbpf_cmd_stats_get(struct sk_buff *skb, struct genl_info *info)
{
	const struct nanobpf_stat_entry *e;
	struct nbpf_link *link;
	struct nlattr *nest;
	struct sk_buff *msg;
	unsigned int i, n;
	void *hdr;
	int err;

	msg = nbpf_reply_new(info, NLMSG_GOODSIZE, &hdr);
	if (!msg)
		return -ENOMEM;
	mutex_lock(&nbpf_cfg_lock);
	link = nbpf_need_link(info);
	err = -ENODEV;
	if (!link)
		goto out;
	err = nbpf_request(link, NANOBPF_CTRL_MSG_STATS, NULL, 0, 0);
	if (err) {
		err = nbpf_reply_errno(info, err);
		goto out;
	}
	err = -EMSGSIZE;
	nest = nla_nest_start(msg, NANOBPF_ATTR_STATS);
	if (!nest)
		goto out;
	n = link->resp->len / sizeof(*e);
	e = (const struct nanobpf_stat_entry *)link->resp->body;
	for (i = 0; i < n; i++)
		if (nbpf_put_stat(msg, get_unaligned_be32(&e[i].id), get_unaligned_be64(&e[i].value)))
			goto out;
	nla_nest_end(msg, nest);
	nest = nla_nest_start(msg, NANOBPF_ATTR_DRV_STATS);
	if (!nest)
		goto out;
	for (i = 0; i < NANOBPF_DRV_STAT_COUNT; i++)
		if (nbpf_put_stat(msg, i, atomic64_read(&link->stats[i])))
			goto out;
	nla_nest_end(msg, nest);
	err = 0;
out:
	mutex_unlock(&nbpf_cfg_lock);
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return nbpf_reply_send(msg, hdr, info);
}

/* ---------------------------------------------------------------- family */

static const struct genl_ops nbpf_ops[] = {
	{ .cmd = NANOBPF_CMD_DEV_ATTACH, .doit = nbpf_cmd_dev_attach, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_DEV_DETACH, .doit = nbpf_cmd_dev_detach, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_DEV_GET, .doit = nbpf_cmd_dev_get },
	{ .cmd = NANOBPF_CMD_DEV_RESET, .doit = nbpf_cmd_dev_reset, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_KEY_ADD, .doit = nbpf_cmd_key_add, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_KEY_UPDATE, .doit = nbpf_cmd_key_update, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_KEY_DEL, .doit = nbpf_cmd_key_del, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_KEY_GET, .doit = nbpf_cmd_key_get, .dumpit = nbpf_cmd_key_dump },
	{ .cmd = NANOBPF_CMD_PROG_LOAD, .doit = nbpf_cmd_prog_load, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_PROG_UNLOAD, .doit = nbpf_cmd_prog_unload, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_PROG_GET, .doit = nbpf_cmd_prog_get },
	/* map contents may be secrets (the key table map): privileged like changes */
	{ .cmd = NANOBPF_CMD_MAP_LOOKUP, .doit = nbpf_cmd_map, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_MAP_UPDATE, .doit = nbpf_cmd_map, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_MAP_DELETE, .doit = nbpf_cmd_map, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_MAP_GET_NEXT, .doit = nbpf_cmd_map, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_TABLE_SET, .doit = nbpf_cmd_table, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_TABLE_DEL, .doit = nbpf_cmd_table, .flags = GENL_ADMIN_PERM },
	{ .cmd = NANOBPF_CMD_STATS_GET, .doit = nbpf_cmd_stats_get },
	/* reading takes the records: privileged like map access */
	{ .cmd = NANOBPF_CMD_EVENTS_READ, .doit = nbpf_cmd_events_read, .flags = GENL_ADMIN_PERM },
};

static struct genl_family nbpf_family __ro_after_init = {
	.name = NANOBPF_GENL_NAME,
	.version = NANOBPF_GENL_VERSION,
	.maxattr = NANOBPF_ATTR_MAX,
	.policy = nbpf_policy,
	.module = THIS_MODULE,
	.ops = nbpf_ops,
	.n_ops = ARRAY_SIZE(nbpf_ops),
	.parallel_ops = true,	/* nbpf_cfg_lock serialises; requests may wait for the device */
	.netnsok = false,
};

int nbpf_genl_init(void)
{
	return genl_register_family(&nbpf_family);
}

void nbpf_genl_exit(void)
{
	genl_unregister_family(&nbpf_family);
}
