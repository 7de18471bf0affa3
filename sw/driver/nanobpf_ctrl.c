// SPDX-License-Identifier: GPL-2.0
/*
 * nanobpf.ko control transport and session (docs/control.md):
 *  - one request in flight (the caller holds nbpf_cfg_lock), sequence numbers increasing,
 *    retransmission of the same frame after 50 ms doubling to 800 ms, 6 times, then -ETIMEDOUT;
 *  - every frame authenticated with the device key (docs/control.md "The device key"): a request is
 *    ctrl_hdr | nonce | AES-128-GCM_{K_req}(body, aad = ctrl_hdr) | tag, a response ctrl_hdr | the
 *    request's nonce | body | AES-CMAC_{K_resp}(ctrl_hdr | nonce | body); a response whose tag does not
 *    verify is dropped and counted (CTRL_AUTH_FAIL), never believed;
 *  - authentic responses matched on seq + type + nonce by the rx handler, others counted as unmatched;
 *  - session: HELLO, and on STALE_EPOCH / NEED_HELLO / a timeout a full replay of the host state
 *    (HELLO, KEY_FLUSH, program, PISA table words, every key).
 */
#include <linux/slab.h>
#include <linux/crc32.h>
#include <linux/jiffies.h>
#include <linux/pkt_sched.h>
#include <linux/if_ether.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/string.h>
#include <crypto/aes.h>
#include <crypto/algapi.h>
#include <asm/unaligned.h>

#include "nanobpf.h"

static const int nbpf_errnos[NANOBPF_STATUS_COUNT] = NANOBPF_STATUS_ERRNOS;

/* The nonce, then the body, then the tag follow the ctrl header. */
#define NBPF_AUTH_OVERHEAD (NANOBPF_CTRL_NONCE_LEN + NANOBPF_CTRL_TAG_LEN)
#define NBPF_FRAME_MAX (ETH_HLEN + NANOBPF_CTRL_HDR_SIZE + NANOBPF_CTRL_MAX_BODY + NBPF_AUTH_OVERHEAD)

static_assert(sizeof(NANOBPF_CTRL_AUTH_REQ_LABEL) - 1 == AES_BLOCK_SIZE);
static_assert(sizeof(NANOBPF_CTRL_AUTH_RESP_LABEL) - 1 == AES_BLOCK_SIZE);
static_assert(NANOBPF_CTRL_KEY_LEN == AES_KEYSIZE_128);

int nbpf_status_errno(u8 status)
{
	if (status >= NANOBPF_STATUS_COUNT || !nbpf_errnos[status])
		return -EPROTO;
	return -nbpf_errnos[status];
}

/* ---------------------------------------------------------------- the device key */

/* K = AES-128-ECB_key(label): one block each way (hw/defs/ctrl.toml [protocol]). */
static int nbpf_derive(const u8 *key, u8 *k_req, u8 *k_resp)
{
	struct crypto_aes_ctx ctx;
	int err;

	err = aes_expandkey(&ctx, key, NANOBPF_CTRL_KEY_LEN);
	if (err)
		return err;
	aes_encrypt(&ctx, k_req, NANOBPF_CTRL_AUTH_REQ_LABEL);
	aes_encrypt(&ctx, k_resp, NANOBPF_CTRL_AUTH_RESP_LABEL);
	memzero_explicit(&ctx, sizeof(ctx));
	return 0;
}

static void nbpf_auth_free(struct nbpf_auth *a)
{
	aead_request_free(a->req);	/* kfree_sensitive */
	if (!IS_ERR_OR_NULL(a->gcm))
		crypto_free_aead(a->gcm);	/* the tfm's context (the key schedule) is wiped */
	if (!IS_ERR_OR_NULL(a->cmac))
		crypto_free_shash(a->cmac);
	memset(a, 0, sizeof(*a));
}

/*
 * The transforms of a link, keyed with the keys derived from the device key. A synchronous gcm(aes)
 * (mask CRYPTO_ALG_ASYNC) so that a request is sealed in place, in the caller's context, without a
 * completion. -ENOENT when the kernel has no gcm(aes) or cmac(aes) (modules gcm, ghash-generic, ctr,
 * cmac).
 */
static int nbpf_auth_init(struct nbpf_auth *a, const u8 *key)
{
	u8 k_req[AES_BLOCK_SIZE], k_resp[AES_BLOCK_SIZE];
	int err;

	memset(a, 0, sizeof(*a));
	err = nbpf_derive(key, k_req, k_resp);
	if (err)
		goto out;
	a->gcm = crypto_alloc_aead("gcm(aes)", 0, CRYPTO_ALG_ASYNC);
	a->cmac = crypto_alloc_shash("cmac(aes)", 0, 0);
	if (IS_ERR(a->gcm) || IS_ERR(a->cmac)) {
		err = IS_ERR(a->gcm) ? PTR_ERR(a->gcm) : PTR_ERR(a->cmac);
		goto out;
	}
	a->req = aead_request_alloc(a->gcm, GFP_KERNEL);
	if (!a->req) {
		err = -ENOMEM;
		goto out;
	}
	err = crypto_aead_setkey(a->gcm, k_req, sizeof(k_req)) ?:
	      crypto_aead_setauthsize(a->gcm, NANOBPF_CTRL_TAG_LEN) ?:
	      crypto_shash_setkey(a->cmac, k_resp, sizeof(k_resp));
out:
	memzero_explicit(k_req, sizeof(k_req));
	memzero_explicit(k_resp, sizeof(k_resp));
	if (err)
		nbpf_auth_free(a);
	return err;
}

/*
 * Seal the request in txbuf in place: hdr is followed by the nonce, the len-byte body and room for
 * the tag. The AAD (the header) and the body are not adjacent (the nonce lies between them), hence
 * two scatterlist entries.
 */
static int nbpf_seal(struct nbpf_link *link, struct nanobpf_ctrl_hdr *h, u16 len)
{
	struct aead_request *req = link->auth.req;
	u8 *nonce = (u8 *)(h + 1), *body = nonce + NANOBPF_CTRL_NONCE_LEN;
	struct scatterlist sg[2];

	get_random_bytes(nonce, NANOBPF_CTRL_NONCE_LEN);	/* fresh per request, never per retry */
	sg_init_table(sg, 2);
	sg_set_buf(&sg[0], h, sizeof(*h));
	sg_set_buf(&sg[1], body, len + NANOBPF_CTRL_TAG_LEN);
	aead_request_set_callback(req, 0, NULL, NULL);
	aead_request_set_ad(req, sizeof(*h));
	aead_request_set_crypt(req, sg, sg, len, nonce);
	return crypto_aead_encrypt(req);
}

/*
 * Does the response at skb->data (header, nonce, blen-byte body, tag) carry K_resp's CMAC? The skb
 * may be paged: the MAC is fed in pieces through a small buffer. Softirq: the shash is synchronous
 * and its descriptor lives on the stack.
 */
static bool nbpf_resp_authentic(struct nbpf_link *link, const struct sk_buff *skb, unsigned int blen)
{
	SHASH_DESC_ON_STACK(desc, link->auth.cmac);
	unsigned int off, n, end = sizeof(struct nanobpf_ctrl_hdr) + NANOBPF_CTRL_NONCE_LEN + blen;
	u8 buf[64], mac[NANOBPF_CTRL_TAG_LEN], tag[NANOBPF_CTRL_TAG_LEN];
	bool ok = false;

	desc->tfm = link->auth.cmac;
	if (crypto_shash_init(desc))
		goto out;
	for (off = 0; off < end; off += n) {
		n = min_t(unsigned int, sizeof(buf), end - off);
		if (skb_copy_bits(skb, off, buf, n) || crypto_shash_update(desc, buf, n))
			goto out;
	}
	if (crypto_shash_final(desc, mac) || skb_copy_bits(skb, end, tag, sizeof(tag)))
		goto out;
	ok = !crypto_memneq(mac, tag, sizeof(tag));	/* constant time: no timing oracle on the tag */
out:
	shash_desc_zero(desc);
	memzero_explicit(buf, sizeof(buf));
	return ok;
}

int nbpf_link_init(struct nbpf_link *link, const u8 *key)
{
	int err;

	spin_lock_init(&link->rx_lock);
	init_completion(&link->done);
	err = nbpf_auth_init(&link->auth, key);
	if (err)
		return err;
	link->txbuf = kzalloc(max_t(unsigned int, NBPF_FRAME_MAX, ETH_ZLEN), GFP_KERNEL);
	link->resp = kzalloc(sizeof(*link->resp), GFP_KERNEL);
	if (!link->txbuf || !link->resp) {
		kfree(link->txbuf);
		kfree(link->resp);
		nbpf_auth_free(&link->auth);
		return -ENOMEM;
	}
	link->seq = nbpf_seq_next;	/* continues across attach/detach; from 0 at module load */
	link->state = NBPF_LINK_NO_SESSION;
	link->version = NANOBPF_CTRL_VERSION;
	link->key_slots = NBPF_DEFAULT_KEY_SLOTS;
	link->max_image = NANOBPF_CTRL_MAX_IMAGE;
	link->max_body = NANOBPF_CTRL_MAX_BODY;
	return 0;
}

void nbpf_link_free(struct nbpf_link *link)
{
	nbpf_seq_next = link->seq;
	nbpf_auth_free(&link->auth);
	kfree_sensitive(link->txbuf);	/* a request that failed to seal holds its body in clear */
	kfree(link->resp);
	kfree(link);
}

/* Does an authentic response answer the request in flight? Caller holds rx_lock. */
static bool nbpf_resp_matches(struct nbpf_link *link, const struct nanobpf_ctrl_hdr *h, const u8 *nonce)
{
	return link->pending && ntohl(h->seq) == link->pend_seq && h->type == link->pend_type &&
	       !memcmp(nonce, link->pend_nonce, NANOBPF_CTRL_NONCE_LEN);
}

/*
 * Rx handler (softirq, RCU): a control frame from the lower device; skb->data at the ctrl header.
 * Nothing of a response is read before its tag verified.
 */
void nbpf_ctrl_rx(struct nbpf_link *link, struct sk_buff *skb)
{
	struct nanobpf_ctrl_hdr _h;
	const struct nanobpf_ctrl_hdr *h;
	struct nbpf_resp *r = link->resp;
	u8 nonce[NANOBPF_CTRL_NONCE_LEN];
	unsigned int blen;
	bool matched = false;

	if (skb->pkt_type == PACKET_OTHERHOST || skb->pkt_type == PACKET_OUTGOING)
		return;
	h = skb_header_pointer(skb, 0, sizeof(_h), &_h);
	if (!h || !(h->flags & NANOBPF_CTRL_F_RESPONSE))
		goto unmatched;	/* too short, or a request (not for a host) */
	nbpf_stat_inc(link, NANOBPF_DRV_STAT_CTRL_RX);
	blen = ntohs(h->length);
	if (blen > NANOBPF_CTRL_MAX_BODY || blen + NBPF_AUTH_OVERHEAD > skb->len - sizeof(*h))
		goto unmatched;	/* body and tag longer than the frame, or a body above the limit */
	if (!nbpf_resp_authentic(link, skb, blen)) {
		nbpf_stat_inc(link, NANOBPF_DRV_STAT_CTRL_AUTH_FAIL);	/* forged, altered, another key's */
		return;
	}
	if (skb_copy_bits(skb, sizeof(*h), nonce, sizeof(nonce)))
		goto unmatched;

	spin_lock(&link->rx_lock);
	if (nbpf_resp_matches(link, h, nonce) &&
	    !skb_copy_bits(skb, sizeof(*h) + sizeof(nonce), r->body, blen)) {
		r->status = h->status;
		r->flags = h->flags;
		r->epoch = ntohl(h->epoch);
		r->len = blen;
		if (skb_mac_header_was_set(skb) && skb_mac_header_len(skb) >= ETH_HLEN &&
		    is_valid_ether_addr(eth_hdr(skb)->h_source)) {
			ether_addr_copy(link->peer, eth_hdr(skb)->h_source);
			link->peer_known = true;
		}
		link->pending = false;
		matched = true;
		complete(&link->done);
	}
	spin_unlock(&link->rx_lock);
	if (matched)
		return;
unmatched:
	nbpf_stat_inc(link, NANOBPF_DRV_STAT_CTRL_UNMATCHED);
}

/* Send the frame in link->txbuf (flen bytes, Ethernet header included) on the lower device. */
static int nbpf_ctrl_xmit(struct nbpf_link *link, unsigned int flen)
{
	struct net_device *lower;
	struct sk_buff *skb;
	unsigned int len = max_t(unsigned int, flen, ETH_ZLEN);

	rcu_read_lock();
	lower = rcu_dereference(link->lower_rcu);
	if (lower)
		dev_hold(lower);
	rcu_read_unlock();
	if (!lower)
		return -ENODEV;

	skb = alloc_skb(LL_RESERVED_SPACE(lower) + len + lower->needed_tailroom, GFP_KERNEL);
	if (!skb) {
		dev_put(lower);
		return -ENOMEM;
	}
	skb_reserve(skb, LL_RESERVED_SPACE(lower));
	skb_put_data(skb, link->txbuf, flen);
	if (len > flen)
		skb_put_zero(skb, len - flen);	/* pad to the Ethernet minimum; the header says the length */
	ether_addr_copy(skb->data + ETH_ALEN, lower->dev_addr);
	skb_reset_mac_header(skb);
	skb_set_network_header(skb, ETH_HLEN);
	skb->protocol = htons(NANOBPF_CTRL_ETHERTYPE);
	skb->priority = TC_PRIO_CONTROL;
	skb->dev = lower;
	dev_queue_xmit(skb);	/* a drop here is a loss: the retransmission covers it */
	nbpf_stat_inc(link, NANOBPF_DRV_STAT_CTRL_TX);
	dev_put(lower);
	return 0;
}

/*
 * One exchange: send a request, wait for its response, retransmit with back-off (the same sealed
 * frame: the device answers a retransmission from its replay cache). Returns 0 with the response in
 * link->resp, -ETIMEDOUT after the last retry (also what a device with another key gives: it drops
 * requests that do not authenticate), -ENODEV if the link went away.
 */
static int nbpf_xchg(struct nbpf_link *link, u8 type, const void *body, u16 len)
{
	struct ethhdr *eh = (struct ethhdr *)link->txbuf;
	struct nanobpf_ctrl_hdr *h = (struct nanobpf_ctrl_hdr *)(link->txbuf + ETH_HLEN);
	unsigned int tmo = READ_ONCE(nbpf_retry_ms), tmo_max = max(tmo, READ_ONCE(nbpf_retry_max_ms));
	u8 *nonce = (u8 *)(h + 1);
	unsigned int flen = ETH_HLEN + sizeof(*h) + len + NBPF_AUTH_OVERHEAD;
	int tries, err = 0;
	bool got;

	lockdep_assert_held(&nbpf_cfg_lock);
	if (READ_ONCE(link->dead))
		return -ENODEV;
	if (len > NANOBPF_CTRL_MAX_BODY)
		return -EMSGSIZE;

	spin_lock_bh(&link->rx_lock);
	if (link->peer_known)
		ether_addr_copy(eh->h_dest, link->peer);
	else
		eth_broadcast_addr(eh->h_dest);
	spin_unlock_bh(&link->rx_lock);
	eh->h_proto = htons(NANOBPF_CTRL_ETHERTYPE);

	link->seq++;
	h->version = type == NANOBPF_CTRL_MSG_HELLO ? NANOBPF_CTRL_VERSION : link->version;
	h->type = type;
	h->flags = 0;
	h->status = 0;
	h->seq = htonl(link->seq);
	h->epoch = htonl(type == NANOBPF_CTRL_MSG_HELLO ? 0 : link->epoch);
	h->length = htons(len);
	h->reserved = 0;
	if (len)
		memcpy(nonce + NANOBPF_CTRL_NONCE_LEN, body, len);
	err = nbpf_seal(link, h, len);
	if (err)
		return err;

	spin_lock_bh(&link->rx_lock);
	reinit_completion(&link->done);
	link->pend_seq = link->seq;
	link->pend_type = type;
	memcpy(link->pend_nonce, nonce, NANOBPF_CTRL_NONCE_LEN);
	link->pending = true;
	spin_unlock_bh(&link->rx_lock);

	for (tries = 0;; tries++) {
		if (tries)
			nbpf_stat_inc(link, NANOBPF_DRV_STAT_CTRL_RETRANSMITS);
		err = nbpf_ctrl_xmit(link, flen);
		if (err == -ENODEV)
			break;
		err = 0;
		wait_for_completion_timeout(&link->done, msecs_to_jiffies(tmo));
		spin_lock_bh(&link->rx_lock);
		got = !link->pending;
		spin_unlock_bh(&link->rx_lock);
		if (got)
			break;
		if (READ_ONCE(link->dead)) {
			err = -ENODEV;
			break;
		}
		if (tries == NANOBPF_CTRL_RETRIES) {
			nbpf_stat_inc(link, NANOBPF_DRV_STAT_CTRL_TIMEOUTS);
			err = -ETIMEDOUT;
			break;
		}
		tmo = min_t(unsigned int, tmo * 2, tmo_max);
	}
	spin_lock_bh(&link->rx_lock);
	link->pending = false;
	spin_unlock_bh(&link->rx_lock);
	/* STALE_SEQ carries the device's last sequence number: continue after it (next HELLO). */
	if (!err && link->resp->status == NANOBPF_CTRL_ST_STALE_SEQ && link->resp->len >= 4) {
		u32 last = get_unaligned_be32(link->resp->body);

		if ((s32)(last - link->seq) > 0)
			link->seq = last;
	}
	return err;
}

/* Remember a refusal (status + error text) for DEV_GET. */
static void nbpf_note_refusal(struct nbpf_link *link)
{
	struct nbpf_resp *r = link->resp;
	unsigned int i, n = min_t(unsigned int, r->len, NANOBPF_CTRL_MAX_ERRMSG - 1);

	nbpf_last_status = r->status;
	for (i = 0; i < n; i++) {
		u8 c = r->body[i];

		nbpf_last_errmsg[i] = (c < 0x20 || c == 0x7f) ? '?' : c;
	}
	nbpf_last_errmsg[n] = '\0';
}

static bool nbpf_status_stale(u8 st)
{
	return st == NANOBPF_CTRL_ST_STALE_EPOCH || st == NANOBPF_CTRL_ST_NEED_HELLO ||
	       st == NANOBPF_CTRL_ST_STALE_SEQ;
}

void nbpf_mark_unsynced(struct nbpf_link *link)
{
	struct nbpf_key *k;
	unsigned int bkt;

	lockdep_assert_held(&nbpf_cfg_lock);
	if (link && link->state == NBPF_LINK_IN_SYNC)
		link->state = NBPF_LINK_RESYNC;
	hash_for_each(nbpf_keys, bkt, k, node)
		WRITE_ONCE(k->synced, false);
}

void nbpf_key_to_msg(const struct nbpf_key *k, struct nanobpf_key_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->cid_len = k->id.cid_len;
	m->dir = k->id.dir;
	memcpy(m->cid, k->id.id, sizeof(m->cid));
	memcpy(m->keys, k->keys, sizeof(m->keys));
}

/*
 * One replay step: 0 when applied, -EAGAIN when the session is gone (the replay restarts),
 * -ETIMEDOUT/-ENODEV, or the errno of a refusal. ok_status is another status that counts as done.
 */
static int nbpf_step(struct nbpf_link *link, u8 type, const void *body, u16 len, int ok_status)
{
	int err = nbpf_xchg(link, type, body, len);
	u8 st;

	if (err)
		return err;
	st = link->resp->status;
	if (st == NANOBPF_CTRL_ST_OK || st == ok_status)
		return 0;
	if (nbpf_status_stale(st))
		return -EAGAIN;
	nbpf_note_refusal(link);
	return nbpf_status_errno(st);
}

static int nbpf_hello(struct nbpf_link *link)
{
	struct nanobpf_hello_req req = {
		.ver_min = htons(NANOBPF_CTRL_MIN_VERSION),
		.ver_max = htons(NANOBPF_CTRL_VERSION),
	};
	const struct nanobpf_hello_resp *hr;
	struct nbpf_resp *r = link->resp;
	u32 v;
	int err;

	err = nbpf_xchg(link, NANOBPF_CTRL_MSG_HELLO, &req, sizeof(req));
	if (!err && r->status == NANOBPF_CTRL_ST_STALE_SEQ)	/* the device's window is ahead of us */
		err = nbpf_xchg(link, NANOBPF_CTRL_MSG_HELLO, &req, sizeof(req));
	if (err)
		return err;
	if (r->status != NANOBPF_CTRL_ST_OK) {
		nbpf_note_refusal(link);
		return nbpf_status_errno(r->status);
	}
	if (r->len < sizeof(*hr) || !r->epoch)
		return -EPROTO;
	hr = (const struct nanobpf_hello_resp *)r->body;
	v = ntohs(hr->version);
	if (v < NANOBPF_CTRL_MIN_VERSION || v > NANOBPF_CTRL_VERSION)
		return -EPROTO;
	if (ntohs(hr->max_body) < sizeof(struct nanobpf_map_req) + 64)
		return -EPROTO;	/* cannot carry our messages */
	link->version = v;
	link->epoch = r->epoch;
	link->cores = ntohs(hr->cores);
	link->key_slots = ntohl(hr->key_slots) ?: NBPF_DEFAULT_KEY_SLOTS;
	v = ntohl(hr->max_image);
	link->max_image = (v && v < NANOBPF_CTRL_MAX_IMAGE) ? v : NANOBPF_CTRL_MAX_IMAGE;
	link->max_body = min_t(u16, ntohs(hr->max_body), NANOBPF_CTRL_MAX_BODY);
	return 0;
}

unsigned int nbpf_chunk_size(struct nbpf_link *link)
{
	return min_t(unsigned int, NANOBPF_CTRL_CHUNK,
		     link->max_body - sizeof(struct nanobpf_prog_chunk));
}

/* The PROG_COMMIT / PROG_INFO response in link->resp, if it is one. */
void nbpf_prog_note_info(struct nbpf_link *link, struct nbpf_prog *p)
{
	const struct nanobpf_prog_info *pi = (const struct nanobpf_prog_info *)link->resp->body;

	if (link->resp->len >= sizeof(*pi))
		p->insns = ntohl(pi->insns);
}

/* The replay's program load: BEGIN, CHUNKs, COMMIT. */
static int nbpf_replay_prog(struct nbpf_link *link, struct nbpf_prog *p, u8 *buf)
{
	struct nanobpf_prog_begin b;
	unsigned int off, n, chunk = nbpf_chunk_size(link);
	int err;

	b.total = htonl(p->len);
	b.crc32 = htonl(p->crc);
	memcpy(b.name, p->name, sizeof(b.name));
	err = nbpf_step(link, NANOBPF_CTRL_MSG_PROG_BEGIN, &b, sizeof(b), -1);
	for (off = 0; !err && off < p->len; off += n) {
		n = min(chunk, p->len - off);
		put_unaligned_be32(off, buf);
		memcpy(buf + sizeof(struct nanobpf_prog_chunk), p->image + off, n);
		err = nbpf_step(link, NANOBPF_CTRL_MSG_PROG_CHUNK, buf,
				sizeof(struct nanobpf_prog_chunk) + n, -1);
	}
	if (!err)
		err = nbpf_step(link, NANOBPF_CTRL_MSG_PROG_COMMIT, &b, sizeof(b), -1);
	if (!err)
		nbpf_prog_note_info(link, p);
	return err;
}

static int nbpf_resync_once(struct nbpf_link *link, u8 *buf)
{
	struct nanobpf_table_msg tm;
	struct nanobpf_key_msg km;
	struct nbpf_key *k;
	unsigned int t, i, bkt;
	int err;

	nbpf_mark_unsynced(link);
	err = nbpf_hello(link);
	if (err)
		return err;
	err = nbpf_step(link, NANOBPF_CTRL_MSG_KEY_FLUSH, NULL, 0, -1);
	if (err)
		return err;
	if (nbpf_prog_cur)
		err = nbpf_replay_prog(link, nbpf_prog_cur, buf);
	else	/* the device may still run a program the host no longer has */
		err = nbpf_step(link, NANOBPF_CTRL_MSG_PROG_UNLOAD, NULL, 0, NANOBPF_CTRL_ST_NO_PROG);
	if (err)
		return err;
	for (t = 0; t < NANOBPF_TABLE_COUNT; t++) {
		for_each_set_bit(i, &nbpf_tables_touched[t], nbpf_table_entries[t]) {
			tm.table = t;
			tm.reserved = 0;
			tm.index = htons(i);
			tm.value = htonl(nbpf_tables[t][i]);
			err = nbpf_step(link, nbpf_tables[t][i] ? NANOBPF_CTRL_MSG_TABLE_SET :
					NANOBPF_CTRL_MSG_TABLE_DEL, &tm, sizeof(tm), -1);
			if (err)
				return err;
		}
	}
	hash_for_each(nbpf_keys, bkt, k, node) {
		nbpf_key_to_msg(k, &km);
		err = nbpf_step(link, NANOBPF_CTRL_MSG_KEY_ADD, &km, sizeof(km), -1);
		if (err)
			return err;
		k->slot = link->resp->len >= sizeof(struct nanobpf_key_resp) ?
			  get_unaligned_be32(link->resp->body) : U32_MAX;
		WRITE_ONCE(k->synced, true);
	}
	link->state = NBPF_LINK_IN_SYNC;
	nbpf_stat_inc(link, NANOBPF_DRV_STAT_RESYNCS);
	return 0;
}

/* A new session and a full replay of the host state. Caller holds nbpf_cfg_lock. */
int nbpf_resync(struct nbpf_link *link)
{
	u8 *buf;
	int i, err = -EAGAIN;

	lockdep_assert_held(&nbpf_cfg_lock);
	buf = kmalloc(NANOBPF_CTRL_MAX_BODY, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < NBPF_RESYNC_TRIES && err == -EAGAIN; i++)
		err = nbpf_resync_once(link, buf);
	kfree(buf);
	if (err == -EAGAIN)
		err = -ESTALE;
	if (err && link->state == NBPF_LINK_IN_SYNC)
		link->state = NBPF_LINK_RESYNC;
	return err;
}

/*
 * A request on behalf of a netlink command. Replays first when the link is out of sync; with
 * NBPF_REQ_STATE the replay already carried the change (the host table was updated first) and
 * NBPF_COVERED is returned without sending it again. A timeout marks the link out of sync.
 * Returns 0 (response in link->resp), NBPF_COVERED, or a negative errno.
 */
int nbpf_request(struct nbpf_link *link, u8 type, const void *body, u16 len, unsigned int flags)
{
	int tries, err;
	u8 st;

	lockdep_assert_held(&nbpf_cfg_lock);
	for (tries = 0; tries < NBPF_RESYNC_TRIES; tries++) {
		if (link->state != NBPF_LINK_IN_SYNC) {
			err = nbpf_resync(link);
			if (err)
				return err;
			if (flags & NBPF_REQ_STATE)
				return NBPF_COVERED;
		}
		err = nbpf_xchg(link, type, body, len);
		if (err == -ETIMEDOUT)
			nbpf_mark_unsynced(link);
		if (err)
			return err;
		st = link->resp->status;
		if (st == NANOBPF_CTRL_ST_OK)
			return 0;
		if ((flags & NBPF_REQ_RESET) &&
		    (st == NANOBPF_CTRL_ST_STALE_EPOCH || st == NANOBPF_CTRL_ST_NEED_HELLO))
			return 0;	/* a retransmitted RESET after the first was applied */
		if (nbpf_status_stale(st)) {
			nbpf_mark_unsynced(link);
			continue;
		}
		nbpf_note_refusal(link);
		return nbpf_status_errno(st);
	}
	return -ESTALE;
}

/* Keepalive: a STATS request notices a reset device even when the host is idle. */
void nbpf_probe(struct nbpf_link *link)
{
	int err;

	lockdep_assert_held(&nbpf_cfg_lock);
	if (link->state == NBPF_LINK_IN_SYNC) {
		err = nbpf_xchg(link, NANOBPF_CTRL_MSG_STATS, NULL, 0);
		if (err == -ETIMEDOUT)
			nbpf_mark_unsynced(link);
		if (err || !nbpf_status_stale(link->resp->status))
			return;
		nbpf_mark_unsynced(link);
	}
	nbpf_resync(link);
}

/* CRC-32 (IEEE 802.3) as the device checks it. */
u32 nbpf_crc32(const u8 *buf, size_t len)
{
	return crc32_le(~0U, buf, len) ^ ~0U;
}
