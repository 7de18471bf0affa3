/* libnanobpf: one function per generic-netlink command of the family nanobpf (hw/defs/ctrl.toml).
 * Arguments are checked here before anything is sent. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "nanobpf_int.h"

#define PUT(call) do { if ((call) < 0) goto nomem; } while (0)

static int put_fail(struct nanobpf *h, struct nl_msg *msg)
{
	nlmsg_free(msg);
	return nb_fail(h, ENOMEM, "out of memory building the request");
}

/* a request without attributes and without a reply payload */
static int simple(struct nanobpf *h, int cmd, const char *what)
{
	struct nb_req r = { 0 };
	struct nl_msg *msg;

	nb_clear(h);
	msg = nb_msg(h, cmd, 0, 0);
	if (!msg)
		return -ENOMEM;
	return nb_transact(h, msg, &r, what);
}

static int check_name(struct nanobpf *h, const char *what, const char *kind, const char *name, size_t maxlen)
{
	size_t n;

	if (!name || !name[0])
		return nb_fail(h, EINVAL, "%s: the %s is empty", what, kind);
	n = strlen(name);
	if (n > maxlen)
		return nb_fail(h, EINVAL, "%s: %s '%s' is %zu bytes long, at most %zu fit", what, kind, name, n, maxlen);
	return 0;
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static int check_id(struct nanobpf *h, const char *what, const struct nanobpf_key_id *id)
{
	if (!id)
		return nb_fail(h, EINVAL, "%s: no entry named", what);
	if (id->dir != NANOBPF_QUIC_DIR_OPEN && id->dir != NANOBPF_QUIC_DIR_SEAL)
		return nb_fail(h, EINVAL, "%s: direction %u: %d (open) or %d (seal)", what, id->dir,
			       NANOBPF_QUIC_DIR_OPEN, NANOBPF_QUIC_DIR_SEAL);
	if (id->cid_len > NANOBPF_CTRL_MAX_CID)
		return nb_fail(h, EINVAL, "%s: a connection ID has 0 to %d bytes, not %u", what, NANOBPF_CTRL_MAX_CID,
			       id->cid_len);
	if (id->cid_len && !all_zero(id->id + id->cid_len, NANOBPF_CTRL_MAX_CID - id->cid_len))
		return nb_fail(h, EINVAL, "%s: bytes after the %u-byte connection ID are not zero", what, id->cid_len);
	if (!id->cid_len && all_zero(id->id, NANOBPF_CTRL_MAX_CID))
		return nb_fail(h, EINVAL, "%s: a zero-length connection ID needs the peer's address id (all zero)", what);
	return 0;
}

/* the attributes that name an entry: CID (1..20 bytes) or ADDR_ID, and DIR */
static int put_id(struct nl_msg *msg, const struct nanobpf_key_id *id)
{
	if (id->cid_len ? nla_put(msg, NANOBPF_ATTR_CID, id->cid_len, id->id) < 0
			: nla_put(msg, NANOBPF_ATTR_ADDR_ID, NANOBPF_CTRL_MAX_CID, id->id) < 0)
		return -1;
	return nla_put_u8(msg, NANOBPF_ATTR_DIR, id->dir);
}

int nanobpf_key_id_cid(struct nanobpf_key_id *kid, unsigned dir, const void *cid, size_t cid_len)
{
	if (!kid || !cid || cid_len < 1 || cid_len > NANOBPF_CTRL_MAX_CID ||
	    (dir != NANOBPF_QUIC_DIR_OPEN && dir != NANOBPF_QUIC_DIR_SEAL))
		return -EINVAL;
	memset(kid, 0, sizeof(*kid));
	kid->dir = (uint8_t)dir;
	kid->cid_len = (uint8_t)cid_len;
	memcpy(kid->id, cid, cid_len);
	return 0;
}

int nanobpf_key_id_addr(struct nanobpf_key_id *kid, unsigned dir, const char *ip, unsigned peer_port,
			unsigned local_port)
{
	struct in_addr a4;
	uint8_t *p;

	if (!kid || !ip || peer_port > 0xffff || local_port > 0xffff ||
	    (dir != NANOBPF_QUIC_DIR_OPEN && dir != NANOBPF_QUIC_DIR_SEAL))
		return -EINVAL;
	memset(kid, 0, sizeof(*kid));
	kid->dir = (uint8_t)dir;
	p = kid->id + NANOBPF_QUIC_ADDR_IP_OFF;
	if (inet_pton(AF_INET, ip, &a4) == 1) {
		p[10] = p[11] = 0xff;		/* ::ffff:a.b.c.d */
		memcpy(p + 12, &a4, 4);
	} else if (inet_pton(AF_INET6, ip, p) != 1) {
		return -EINVAL;
	}
	kid->id[NANOBPF_QUIC_ADDR_PEER_PORT_OFF] = (uint8_t)(peer_port >> 8);
	kid->id[NANOBPF_QUIC_ADDR_PEER_PORT_OFF + 1] = (uint8_t)peer_port;
	kid->id[NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF] = (uint8_t)(local_port >> 8);
	kid->id[NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF + 1] = (uint8_t)local_port;
	return 0;
}

int nanobpf_addr_id_format(const uint8_t id[NANOBPF_CTRL_MAX_CID], char *out, size_t outlen, unsigned *peer_port,
			   unsigned *local_port)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const uint8_t *ip = id + NANOBPF_QUIC_ADDR_IP_OFF;
	const char *r;

	if (!memcmp(ip, v4mapped, sizeof(v4mapped)))
		r = inet_ntop(AF_INET, ip + 12, out, (socklen_t)outlen);
	else
		r = inet_ntop(AF_INET6, ip, out, (socklen_t)outlen);
	if (!r)
		return -ENOSPC;
	if (peer_port)
		*peer_port = (unsigned)id[NANOBPF_QUIC_ADDR_PEER_PORT_OFF] << 8 | id[NANOBPF_QUIC_ADDR_PEER_PORT_OFF + 1];
	if (local_port)
		*local_port = (unsigned)id[NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF] << 8 | id[NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF + 1];
	return 0;
}

/* ------------------------------------------------------------------ device */

int nanobpf_dev_attach(struct nanobpf *h, const char *ifname, const char *vdev_name,
		       const uint8_t key[NANOBPF_CTRL_KEY_LEN])
{
	struct nb_req r = { 0 };
	struct nl_msg *msg;
	int ret;

	nb_clear(h);
	ret = check_name(h, "dev attach", "interface name", ifname, NANOBPF_ATTR_LEN_IFNAME - 1);
	if (!ret && vdev_name)
		ret = check_name(h, "dev attach", "virtual device name", vdev_name, NANOBPF_ATTR_LEN_VDEV_NAME - 1);
	if (!ret && !key)
		ret = nb_fail(h, EINVAL, "dev attach: no device key (every control frame is authenticated with it)");
	if (ret)
		return ret;
	msg = nb_msg(h, NANOBPF_CMD_DEV_ATTACH, 0, 64);
	if (!msg)
		return -ENOMEM;
	PUT(nla_put_string(msg, NANOBPF_ATTR_IFNAME, ifname));
	if (vdev_name)
		PUT(nla_put_string(msg, NANOBPF_ATTR_VDEV_NAME, vdev_name));
	PUT(nla_put(msg, NANOBPF_ATTR_CTRL_KEY, NANOBPF_CTRL_KEY_LEN, key));
	return nb_transact(h, msg, &r, "dev attach");
nomem:
	return put_fail(h, msg);
}

/* ------------------------------------------------------------------ device key files */

#define KEY_FILE_MAX 4096	/* a key and its comments; anything larger is not a key file */

/* The key's hex digits of text (comment lines and whitespace skipped) into key: the number of bytes
 * the digits make, or -1 for a character that is no hex digit or an odd number of digits. Digits
 * beyond the key's 16 bytes are counted, not stored. */
static long key_text_parse(const char *text, uint8_t key[NANOBPF_CTRL_KEY_LEN])
{
	const char *p = text;
	size_t digits = 0;
	int line_start = 1, comment = 0;

	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '\n' || c == '\r') {
			line_start = 1;
			comment = 0;
			continue;
		}
		if (comment)
			continue;
		if (isspace(c))
			continue;
		if (c == '#' && line_start) {	/* '#' first on its line (after blanks): a comment */
			comment = 1;
			continue;
		}
		line_start = 0;
		if (!isxdigit(c))
			return -1;
		if (digits / 2 < NANOBPF_CTRL_KEY_LEN) {
			unsigned v = isdigit(c) ? (unsigned)(c - '0') : (unsigned)(tolower(c) - 'a' + 10);

			key[digits / 2] = (uint8_t)(digits & 1 ? key[digits / 2] | v : v << 4);
		}
		digits++;
	}
	return digits & 1 ? -1 : (long)(digits / 2);
}

/* The text of a key file (at most KEY_FILE_MAX bytes, NUL-terminated) into text: 0 or -errno. */
static int key_file_text(struct nanobpf *h, const char *path, char text[KEY_FILE_MAX + 1])
{
	FILE *f = fopen(path, "r");
	size_t n;
	int err;

	if (!f) {
		err = errno;
		return nb_fail(h, err, "device key %s: %s; `nanobpf-ctrl-key new FILE` makes one "
			       "(docs/control.md \"The device key\")", path, strerror(err));
	}
	n = fread(text, 1, KEY_FILE_MAX + 1, f);
	err = ferror(f) ? (errno ? errno : EIO) : 0;
	fclose(f);
	if (err)
		return nb_fail(h, err, "device key %s: %s", path, strerror(err));
	if (n > KEY_FILE_MAX)
		return nb_fail(h, EINVAL, "device key %s: larger than %d bytes, not a key file", path, KEY_FILE_MAX);
	if (memchr(text, '\0', n))
		return nb_fail(h, EINVAL, "device key %s: binary, not a key file (32 hex digits)", path);
	text[n] = '\0';
	return 0;
}

int nanobpf_key_file_read(struct nanobpf *h, const char *path, uint8_t key[NANOBPF_CTRL_KEY_LEN])
{
	struct nanobpf scratch;		/* the error text's place when the caller has no handle */
	char text[KEY_FILE_MAX + 1];
	long bytes;
	int ret;

	if (!h)
		h = &scratch;
	nb_clear(h);
	if (!path || !key)
		return nb_fail(h, EINVAL, "device key: no file or no buffer given");
	ret = key_file_text(h, path, text);
	bytes = ret ? 0 : key_text_parse(text, key);
	explicit_bzero(text, sizeof(text));
	if (!ret && bytes < 0)
		ret = nb_fail(h, EINVAL, "device key %s: not hexadecimal (expected %d hex digits)", path,
			      2 * NANOBPF_CTRL_KEY_LEN);
	else if (!ret && bytes != NANOBPF_CTRL_KEY_LEN)
		ret = nb_fail(h, EINVAL, "device key %s: %ld bytes, a device key is %d (%d hex digits)", path, bytes,
			      NANOBPF_CTRL_KEY_LEN, 2 * NANOBPF_CTRL_KEY_LEN);
	if (ret)
		explicit_bzero(key, NANOBPF_CTRL_KEY_LEN);
	return ret;
}

int nanobpf_dev_detach(struct nanobpf *h)
{
	return simple(h, NANOBPF_CMD_DEV_DETACH, "dev detach");
}

int nanobpf_dev_reset(struct nanobpf *h)
{
	return simple(h, NANOBPF_CMD_DEV_RESET, "dev reset");
}

static int parse_dev(struct nb_req *r, struct nlattr **tb)
{
	struct nanobpf_dev_info *d = r->arg;

	if (nb_get_str(tb[NANOBPF_ATTR_IFNAME], d->ifname, sizeof(d->ifname)))
		d->present |= NANOBPF_DEV_HAS_IFNAME;
	if (nb_get_str(tb[NANOBPF_ATTR_VDEV_NAME], d->vdev_name, sizeof(d->vdev_name)))
		d->present |= NANOBPF_DEV_HAS_VDEV;
	if (nb_get_u8(tb[NANOBPF_ATTR_LINK_STATE], &d->link_state))
		d->present |= NANOBPF_DEV_HAS_LINK_STATE;
	if (nb_get_u32(tb[NANOBPF_ATTR_EPOCH], &d->epoch))
		d->present |= NANOBPF_DEV_HAS_EPOCH;
	if (nb_get_u16(tb[NANOBPF_ATTR_VERSION], &d->version))
		d->present |= NANOBPF_DEV_HAS_VERSION;
	if (nb_get_u32(tb[NANOBPF_ATTR_KEY_COUNT], &d->key_count))
		d->present |= NANOBPF_DEV_HAS_KEY_COUNT;
	if (nb_get_u8(tb[NANOBPF_ATTR_DEV_STATUS], &d->dev_status))
		d->present |= NANOBPF_DEV_HAS_STATUS;
	nb_get_str(tb[NANOBPF_ATTR_ERRMSG], d->errmsg, sizeof(d->errmsg));
	return 0;
}

int nanobpf_dev_get(struct nanobpf *h, struct nanobpf_dev_info *info)
{
	struct nb_req r = { .parse = parse_dev, .arg = info };
	struct nl_msg *msg;

	if (!h->in_followup)
		nb_clear(h);
	memset(info, 0, sizeof(*info));
	msg = nb_msg(h, NANOBPF_CMD_DEV_GET, 0, 0);
	if (!msg)
		return -ENOMEM;
	return nb_transact(h, msg, &r, "dev show");
}

/* ------------------------------------------------------------------ keys */

static int key_set(struct nanobpf *h, int cmd, const char *what, const struct nanobpf_key_id *id,
		   const void *keys, size_t keys_len)
{
	struct nb_req r = { 0 };
	struct nl_msg *msg;
	int ret;

	nb_clear(h);
	ret = check_id(h, what, id);
	if (ret)
		return ret;
	if (!keys || keys_len != NANOBPF_CTRL_KEYS_SIZE)
		return nb_fail(h, EINVAL, "%s: a key entry (struct nanobpf_quic_keys) is %d bytes, not %zu", what,
			       NANOBPF_CTRL_KEYS_SIZE, keys ? keys_len : 0);
	msg = nb_msg(h, cmd, 0, 128);
	if (!msg)
		return -ENOMEM;
	PUT(put_id(msg, id));
	PUT(nla_put(msg, NANOBPF_ATTR_KEYS, (int)keys_len, keys));
	return nb_transact(h, msg, &r, what);
nomem:
	return put_fail(h, msg);
}

int nanobpf_key_add(struct nanobpf *h, const struct nanobpf_key_id *id, const void *keys, size_t keys_len)
{
	return key_set(h, NANOBPF_CMD_KEY_ADD, "key add", id, keys, keys_len);
}

int nanobpf_key_update(struct nanobpf *h, const struct nanobpf_key_id *id, const void *keys, size_t keys_len)
{
	return key_set(h, NANOBPF_CMD_KEY_UPDATE, "key update", id, keys, keys_len);
}

int nanobpf_key_del(struct nanobpf *h, const struct nanobpf_key_id *id)
{
	struct nb_req r = { 0 };
	struct nl_msg *msg;
	int ret;

	nb_clear(h);
	ret = check_id(h, "key del", id);
	if (ret)
		return ret;
	msg = nb_msg(h, NANOBPF_CMD_KEY_DEL, 0, 48);
	if (!msg)
		return -ENOMEM;
	PUT(put_id(msg, id));
	return nb_transact(h, msg, &r, "key del");
nomem:
	return put_fail(h, msg);
}

struct key_walk {
	nanobpf_key_cb cb;
	void *arg;
	int bad;
};

static int parse_key(struct nb_req *r, struct nlattr **tb)
{
	struct key_walk *w = r->arg;
	struct nanobpf_key_entry e;
	struct nlattr *cid = tb[NANOBPF_ATTR_CID], *addr = tb[NANOBPF_ATTR_ADDR_ID];
	int n = cid ? nla_len(cid) : 0;

	memset(&e, 0, sizeof(e));
	/* a CID of 1..20 bytes, or an empty/absent one with a 20-byte address id */
	if (n > NANOBPF_CTRL_MAX_CID || (!n && (!addr || nla_len(addr) != NANOBPF_CTRL_MAX_CID))) {
		w->bad++;	/* an entry without a usable name: skipped, reported after the walk */
		return 0;
	}
	e.id.cid_len = (uint8_t)n;
	memcpy(e.id.id, n ? nla_data(cid) : nla_data(addr), n ? (size_t)n : NANOBPF_CTRL_MAX_CID);
	if (nb_get_u8(tb[NANOBPF_ATTR_DIR], &e.id.dir))
		e.present |= NANOBPF_KEY_HAS_DIR;
	if (nb_get_u8(tb[NANOBPF_ATTR_KEY_PHASE], &e.key_phase))
		e.present |= NANOBPF_KEY_HAS_PHASE;
	if (nb_get_u32(tb[NANOBPF_ATTR_SLOT], &e.slot))
		e.present |= NANOBPF_KEY_HAS_SLOT;
	if (nb_get_u8(tb[NANOBPF_ATTR_SYNCED], &e.synced))
		e.present |= NANOBPF_KEY_HAS_SYNCED;
	return w->cb ? w->cb(&e, w->arg) : 0;
}

int nanobpf_key_list(struct nanobpf *h, nanobpf_key_cb cb, void *arg)
{
	struct key_walk w = { .cb = cb, .arg = arg };
	struct nb_req r = { .parse = parse_key, .arg = &w };
	struct nl_msg *msg;
	int ret;

	nb_clear(h);
	msg = nb_msg(h, NANOBPF_CMD_KEY_GET, NLM_F_DUMP, 0);
	if (!msg)
		return -ENOMEM;
	ret = nb_transact(h, msg, &r, "key list");
	if (ret)
		return ret;
	if (w.bad)
		return nb_fail(h, EPROTO, "key list: %d entr%s from the driver without a valid CID or address id", w.bad,
			       w.bad == 1 ? "y" : "ies");
	return (int)r.count;
}

/* ------------------------------------------------------------------ programs */

int nanobpf_prog_load(struct nanobpf *h, const void *image, size_t len, const char *name)
{
	struct nb_req r = { 0 };
	struct nl_msg *msg;
	int ret;

	nb_clear(h);
	if (!image || len == 0)
		return nb_fail(h, EINVAL, "prog load: the image is empty");
	if (len > NANOBPF_CTRL_MAX_IMAGE)
		return nb_fail(h, EFBIG, "prog load: image is %zu bytes, more than the %d bytes the device accepts",
			       len, NANOBPF_CTRL_MAX_IMAGE);
	if (name) {
		ret = check_name(h, "prog load", "program name", name, NANOBPF_ATTR_LEN_PROG_NAME - 1);
		if (ret)
			return ret;
	}
	msg = nb_msg(h, NANOBPF_CMD_PROG_LOAD, 0, len + 64);
	if (!msg)
		return -ENOMEM;
	PUT(nla_put(msg, NANOBPF_ATTR_IMAGE, (int)len, image));
	if (name)
		PUT(nla_put_string(msg, NANOBPF_ATTR_PROG_NAME, name));
	return nb_transact(h, msg, &r, "prog load");
nomem:
	return put_fail(h, msg);
}

int nanobpf_prog_unload(struct nanobpf *h)
{
	return simple(h, NANOBPF_CMD_PROG_UNLOAD, "prog unload");
}

static int parse_prog(struct nb_req *r, struct nlattr **tb)
{
	struct nanobpf_prog_desc *p = r->arg;

	if (nb_get_str(tb[NANOBPF_ATTR_PROG_NAME], p->name, sizeof(p->name)))
		p->present |= NANOBPF_PROG_HAS_NAME;
	if (nb_get_u32(tb[NANOBPF_ATTR_IMAGE_LEN], &p->image_len))
		p->present |= NANOBPF_PROG_HAS_IMAGE_LEN;
	if (nb_get_u32(tb[NANOBPF_ATTR_PROG_CRC], &p->crc32))
		p->present |= NANOBPF_PROG_HAS_CRC;
	if (nb_get_u32(tb[NANOBPF_ATTR_PROG_INSNS], &p->insns))
		p->present |= NANOBPF_PROG_HAS_INSNS;
	return 0;
}

int nanobpf_prog_get(struct nanobpf *h, struct nanobpf_prog_desc *info)
{
	struct nb_req r = { .parse = parse_prog, .arg = info };
	struct nl_msg *msg;

	nb_clear(h);
	memset(info, 0, sizeof(*info));
	msg = nb_msg(h, NANOBPF_CMD_PROG_GET, 0, 0);
	if (!msg)
		return -ENOMEM;
	return nb_transact(h, msg, &r, "prog show");
}

/* ------------------------------------------------------------------ maps */

struct map_out {
	int attr;		/* NANOBPF_ATTR_MAP_VALUE or NANOBPF_ATTR_MAP_KEY */
	void *buf;
	size_t cap;
	size_t len;
	int found;
	int too_small;
};

static int parse_map(struct nb_req *r, struct nlattr **tb)
{
	struct map_out *o = r->arg;
	struct nlattr *a = tb[o->attr];

	if (!a)
		return 0;
	o->found = 1;
	o->len = (size_t)nla_len(a);
	if (o->len > o->cap)
		o->too_small = 1;
	else if (o->buf)
		memcpy(o->buf, nla_data(a), o->len);
	return 0;
}

static int map_req(struct nanobpf *h, int cmd, const char *what, const char *name, const void *key,
		   size_t key_len, int key_required, const void *value, size_t value_len, int flags_too,
		   uint64_t flags, struct map_out *out)
{
	/* get_next: ENOENT after the last key is an answer */
	struct nb_req r = { .parse = out ? parse_map : NULL, .arg = out,
			    .expected_errno = cmd == NANOBPF_CMD_MAP_GET_NEXT ? ENOENT : 0 };
	struct nl_msg *msg;
	int ret;

	nb_clear(h);
	ret = check_name(h, what, "map name", name, NANOBPF_ATTR_LEN_MAP_NAME - 1);
	if (ret)
		return ret;
	if (key_required || key_len) {
		if (!key || key_len < 1 || key_len > NANOBPF_CTRL_MAX_MAP_KEY)
			return nb_fail(h, EINVAL, "%s: a map key has 1 to %d bytes, not %zu", what,
				       NANOBPF_CTRL_MAX_MAP_KEY, key ? key_len : 0);
	}
	if (value && (value_len < 1 || value_len > NANOBPF_CTRL_MAX_MAP_VALUE))
		return nb_fail(h, EINVAL, "%s: a map value has 1 to %d bytes, not %zu", what,
			       NANOBPF_CTRL_MAX_MAP_VALUE, value_len);
	if (flags_too && flags > NANOBPF_BPF_EXIST)
		return nb_fail(h, EINVAL, "%s: flags %llu: BPF_ANY (0), BPF_NOEXIST (1) or BPF_EXIST (2)", what,
			       (unsigned long long)flags);
	msg = nb_msg(h, cmd, 0, key_len + value_len + 64);
	if (!msg)
		return -ENOMEM;
	PUT(nla_put_string(msg, NANOBPF_ATTR_MAP_NAME, name));
	if (key_len)
		PUT(nla_put(msg, NANOBPF_ATTR_MAP_KEY, (int)key_len, key));
	if (value)
		PUT(nla_put(msg, NANOBPF_ATTR_MAP_VALUE, (int)value_len, value));
	if (flags_too)
		PUT(nla_put_u64(msg, NANOBPF_ATTR_MAP_FLAGS, flags));
	ret = nb_transact(h, msg, &r, what);
	if (ret || !out)
		return ret;
	if (!out->found)
		return nb_fail(h, EPROTO, "%s: the driver's answer has no %s", what,
			       out->attr == NANOBPF_ATTR_MAP_KEY ? "key" : "value");
	if (out->too_small)
		return nb_fail(h, ENOSPC, "%s: the answer has %zu bytes, the buffer %zu", what, out->len, out->cap);
	return 0;
nomem:
	return put_fail(h, msg);
}

int nanobpf_map_lookup(struct nanobpf *h, const char *name, const void *key, size_t key_len,
		       void *value, size_t value_cap, size_t *value_len)
{
	struct map_out o = { .attr = NANOBPF_ATTR_MAP_VALUE, .buf = value, .cap = value_cap };
	int ret = map_req(h, NANOBPF_CMD_MAP_LOOKUP, "map lookup", name, key, key_len, 1, NULL, 0, 0, 0, &o);

	if (value_len)
		*value_len = o.len;
	return ret;
}

int nanobpf_map_update(struct nanobpf *h, const char *name, const void *key, size_t key_len,
		       const void *value, size_t value_len, uint64_t flags)
{
	if (!value) {
		nb_clear(h);
		return nb_fail(h, EINVAL, "map update: no value");
	}
	return map_req(h, NANOBPF_CMD_MAP_UPDATE, "map update", name, key, key_len, 1, value, value_len, 1, flags,
		       NULL);
}

int nanobpf_map_delete(struct nanobpf *h, const char *name, const void *key, size_t key_len)
{
	return map_req(h, NANOBPF_CMD_MAP_DELETE, "map delete", name, key, key_len, 1, NULL, 0, 0, 0, NULL);
}

int nanobpf_map_get_next(struct nanobpf *h, const char *name, const void *key, size_t key_len,
			 void *next_key, size_t next_cap, size_t *next_len)
{
	struct map_out o = { .attr = NANOBPF_ATTR_MAP_KEY, .buf = next_key, .cap = next_cap };
	int ret = map_req(h, NANOBPF_CMD_MAP_GET_NEXT, "map get_next", name, key, key ? key_len : 0, 0, NULL, 0,
			  0, 0, &o);

	if (next_len)
		*next_len = o.len;
	return ret;
}

/* ------------------------------------------------------------------ events */

struct events_out {
	nanobpf_event_cb cb;
	void *arg;
	uint32_t lost, pending;
	int lost_seen, pending_seen, records, bad;
};

static int parse_events(struct nb_req *r, struct nlattr **tb)
{
	struct events_out *o = r->arg;
	struct nlattr *a, *ev[NANOBPF_ATTR_MAX + 1];
	int rem;

	o->lost_seen = nb_get_u32(tb[NANOBPF_ATTR_EVENTS_LOST], &o->lost);
	o->pending_seen = nb_get_u32(tb[NANOBPF_ATTR_EVENTS_PENDING], &o->pending);
	if (!tb[NANOBPF_ATTR_EVENT_LIST])
		return 0;
	nla_for_each_nested(a, tb[NANOBPF_ATTR_EVENT_LIST], rem) {
		struct nanobpf_event e;
		int ret;

		if (nla_type(a) != NANOBPF_ATTR_EVENT || nla_parse_nested(ev, NANOBPF_ATTR_MAX, a, NULL) < 0 ||
		    !nb_get_u32(ev[NANOBPF_ATTR_EVENT_INDEX], &e.index) || !ev[NANOBPF_ATTR_EVENT_DATA] ||
		    nla_len(ev[NANOBPF_ATTR_EVENT_DATA]) > NANOBPF_CTRL_MAX_EVENT) {
			o->bad++;
			continue;
		}
		e.len = (uint32_t)nla_len(ev[NANOBPF_ATTR_EVENT_DATA]);
		e.data = nla_data(ev[NANOBPF_ATTR_EVENT_DATA]);
		o->records++;
		if (o->cb && (ret = o->cb(&e, o->arg)) != 0)
			return ret;
	}
	return 0;
}

int nanobpf_events_read(struct nanobpf *h, const char *name, unsigned max, nanobpf_event_cb cb, void *arg,
			uint32_t *lost, uint32_t *pending)
{
	struct events_out o = { .cb = cb, .arg = arg };
	struct nb_req r = { .parse = parse_events, .arg = &o };
	struct nl_msg *msg;
	int ret;

	nb_clear(h);
	ret = check_name(h, "events", "map name", name, NANOBPF_ATTR_LEN_MAP_NAME - 1);
	if (ret)
		return ret;
	if (max > 0xffff)
		return nb_fail(h, EINVAL, "events: at most %u records, a read takes 0..65535", max);
	msg = nb_msg(h, NANOBPF_CMD_EVENTS_READ, 0, 64);
	if (!msg)
		return -ENOMEM;
	PUT(nla_put_string(msg, NANOBPF_ATTR_MAP_NAME, name));
	if (max)
		PUT(nla_put_u16(msg, NANOBPF_ATTR_EVENTS_MAX, (uint16_t)max));
	ret = nb_transact(h, msg, &r, "events");
	if (lost)
		*lost = o.lost;
	if (pending)
		*pending = o.pending;
	if (ret)
		return ret; /* a refusal, or the callback's stop */
	if (!o.lost_seen || !o.pending_seen || o.bad)
		return nb_fail(h, EPROTO, "events: the driver's answer lacks %s", o.bad ? "a record's index or data" :
			       "the lost or pending count");
	return o.records;
nomem:
	return put_fail(h, msg);
}

/* ------------------------------------------------------------------ tables */

static int table_req(struct nanobpf *h, int cmd, const char *what, unsigned table, unsigned index,
		     int with_value, uint32_t value)
{
	struct nb_req r = { 0 };
	struct nl_msg *msg;

	nb_clear(h);
	if (table >= NANOBPF_TABLE_COUNT)
		return nb_fail(h, EINVAL, "%s: table %u: there are %d tables", what, table, NANOBPF_TABLE_COUNT);
	if (index > 0xffff)
		return nb_fail(h, EINVAL, "%s: index %u does not fit 16 bits", what, index);
	msg = nb_msg(h, cmd, 0, 32);
	if (!msg)
		return -ENOMEM;
	PUT(nla_put_u8(msg, NANOBPF_ATTR_TABLE, (uint8_t)table));
	PUT(nla_put_u16(msg, NANOBPF_ATTR_TABLE_INDEX, (uint16_t)index));
	if (with_value)
		PUT(nla_put_u32(msg, NANOBPF_ATTR_TABLE_VALUE, value));
	return nb_transact(h, msg, &r, what);
nomem:
	return put_fail(h, msg);
}

int nanobpf_table_set(struct nanobpf *h, unsigned table, unsigned index, uint32_t value)
{
	return table_req(h, NANOBPF_CMD_TABLE_SET, "table add", table, index, 1, value);
}

int nanobpf_table_del(struct nanobpf *h, unsigned table, unsigned index)
{
	return table_req(h, NANOBPF_CMD_TABLE_DEL, "table del", table, index, 0, 0);
}

/* ------------------------------------------------------------------ counters */

static void parse_stat_nest(struct nanobpf_stats *st, struct nlattr *nest, int drv)
{
	struct nlattr *a, *tb[NANOBPF_ATTR_MAX + 1];
	int rem;

	nla_for_each_nested(a, nest, rem) {
		uint32_t id;
		uint64_t v;

		if (nla_type(a) != NANOBPF_ATTR_STAT || nla_parse_nested(tb, NANOBPF_ATTR_MAX, a, NULL) < 0)
			continue;
		if (!nb_get_u32(tb[NANOBPF_ATTR_STAT_ID], &id) || !nb_get_u64(tb[NANOBPF_ATTR_STAT_VALUE], &v)) {
			st->unknown++;
			continue;
		}
		if (!drv && id < NANOBPF_STAT_COUNT) {
			st->dev[id] = v;
			st->dev_present |= 1ull << id;
		} else if (drv && id < NANOBPF_DRV_STAT_COUNT) {
			st->drv[id] = v;
			st->drv_present |= 1ull << id;
		} else {
			st->unknown++;
		}
	}
}

static int parse_stats(struct nb_req *r, struct nlattr **tb)
{
	struct nanobpf_stats *st = r->arg;

	if (tb[NANOBPF_ATTR_STATS])
		parse_stat_nest(st, tb[NANOBPF_ATTR_STATS], 0);
	if (tb[NANOBPF_ATTR_DRV_STATS])
		parse_stat_nest(st, tb[NANOBPF_ATTR_DRV_STATS], 1);
	return 0;
}

_Static_assert(NANOBPF_STAT_COUNT <= 64 && NANOBPF_DRV_STAT_COUNT <= 64, "counter bitmaps hold 64 ids");

int nanobpf_stats_get(struct nanobpf *h, struct nanobpf_stats *st)
{
	struct nb_req r = { .parse = parse_stats, .arg = st };
	struct nl_msg *msg;

	nb_clear(h);
	memset(st, 0, sizeof(*st));
	msg = nb_msg(h, NANOBPF_CMD_STATS_GET, 0, 0);
	if (!msg)
		return -ENOMEM;
	return nb_transact(h, msg, &r, "stats");
}
