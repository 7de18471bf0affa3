/* nanobpfctl: command line for nanobpf.ko (libnanobpf), in the style of bpftool.
 * One file on purpose (about 1,500 lines): one command with a section per OBJECT, sharing the argument
 * parser and the JSON writer; the work is in libnanobpf.
 *
 *   nanobpfctl [--json] OBJECT VERB [ARGS]     OBJECT: dev key prog map events table stats
 *
 * Exit status: 0 done, 1 the operation failed (driver, device, file), 2 bad command line.
 * docs/control.md, section "nanobpfctl", describes every verb and the JSON output.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nanobpf.h"
#include "nanobpf_ebpf_defs.h"
#include "nanobpf_soc.h"

#define EXIT_FAIL 1
/* Where dev attach finds the device key without `key FILE` (docs/control.md "The device key") */
#define KEY_ENV "NANOBPF_CTRL_KEY"
#define KEY_DEFAULT "/etc/nanobpf/ctrl.key"
#define EXIT_USAGE 2

static const char *prog = "nanobpfctl";
static int json;
static int follow;		/* events --follow */
static FILE *out;		/* stdout, or a buffer while a dump runs */
static struct nanobpf *handle;

/* ------------------------------------------------------------------ help */

static void help_main(FILE *f)
{
	fprintf(f,
		"Usage: nanobpfctl [--json] OBJECT VERB [ARGS]\n"
		"       nanobpfctl OBJECT help\n"
		"\n"
		"Control the NanoBPF DPU through nanobpf.ko (generic netlink family '%s').\n"
		"\n"
		"Objects and verbs:\n"
		"  dev    attach IFNAME [name VDEV] [key FILE] | detach | show | reset\n"
		"  key    add|update ENTRY key HEX iv HEX hp HEX [phase 0|1] [next-key HEX next-iv HEX]\n"
		"         del ENTRY | list      (ENTRY: cid HEX | peer ADDR:PORT local-port PORT; [dir open|seal])\n"
		"  prog   load FILE [name NAME] | unload | show\n"
		"  map    dump NAME | lookup NAME key HEX | update NAME key HEX value HEX [any|noexist|exist]\n"
		"         delete NAME key HEX\n"
		"  events NAME [count N] [interval MS] [--follow]   (records of a RINGBUF/PERF_EVENT_ARRAY map)\n"
		"  table  add port|profile|lport_cfg INDEX VALUE | del TABLE INDEX\n"
		"  stats  (device and driver counters)\n"
		"\n"
		"Options:\n"
		"  -j, --json     machine-readable output (one JSON value on stdout; errors too)\n"
		"  -f, --follow   events: keep reading as records come (JSON: one value per line)\n"
		"  -h, --help     this text; 'nanobpfctl OBJECT help' for one object\n"
		"  -V, --version  version\n"
		"\n"
		"HEX: hex digits, optionally 0x-prefixed or with ':' between bytes (0a1b2c, 0x0a1b2c, 0a:1b:2c).\n"
		"Exit status: 0 done, 1 the operation failed, 2 bad command line.\n", NANOBPF_GENL_NAME);
}

static void help_dev(FILE *f)
{
	fprintf(f,
		"Usage: nanobpfctl dev attach IFNAME [name VDEV] [key FILE]\n"
		"                                  stack the virtual netdev (VDEV, default nbpf%%d) on IFNAME and\n"
		"                                  start a session with the DPU there\n"
		"       nanobpfctl dev detach      remove the virtual netdev (the host key table stays)\n"
		"       nanobpfctl dev show        link state, epoch, version, keys, last device error\n"
		"       nanobpfctl dev reset       reset the device, then replay the host state to it\n"
		"\n"
		"IFNAME and VDEV: at most %d bytes.\n"
		"FILE: the device key (32 hex digits; lines starting with '#' ignored), the key the DPU's image\n"
		"was built with: every control frame is authenticated with it, and a device with another key\n"
		"does not answer. Default: $%s, else %s.\n",
		NANOBPF_ATTR_LEN_IFNAME - 1, KEY_ENV, KEY_DEFAULT);
}

static void help_key(FILE *f)
{
	fprintf(f,
		"Usage: nanobpfctl key add    ENTRY key HEX iv HEX hp HEX [phase 0|1] [next-key HEX next-iv HEX]\n"
		"                             [prev-key HEX prev-iv HEX]\n"
		"       nanobpfctl key update ENTRY key HEX iv HEX hp HEX [phase 0|1] [next-key HEX next-iv HEX]\n"
		"                             [prev-key HEX prev-iv HEX]\n"
		"       nanobpfctl key del    ENTRY\n"
		"       nanobpfctl key list\n"
		"\n"
		"ENTRY names a key table entry: one of\n"
		"  cid HEX                       a connection ID, 1..%d bytes (the entry's cid_len is its length)\n"
		"  peer ADDR:PORT local-port N   a peer that uses zero-length connection IDs, by its address\n"
		"                                (a.b.c.d:PORT or [IPv6]:PORT) and the local UDP port\n"
		"  addr-id HEX                   the same as its %d-byte address id (IPv6 address, ports)\n"
		"and the direction, dir open (default) or dir seal. A connection has an entry per direction:\n"
		"  open   the key is a local connection ID (packets from the network), the keys the peer's\n"
		"  seal   the key is the peer's connection ID (packets the host sends), the keys the host's\n"
		"\n"
		"  key, iv   AES-128-GCM key (16 bytes) and IV (12 bytes) of the current key phase\n"
		"  hp        header protection key (16 bytes)\n"
		"  phase     key phase bit of the current keys (default 0)\n"
		"  next-key, next-iv   keys of the next phase (both or neither; flag NEXT)\n"
		"  prev-key, prev-iv   keys of the previous phase, kept after a key update (open entries; flag PREV)\n"
		"'add' needs keys never used before (fresh from a handshake): the device starts the entry's\n"
		"packet-number state anew. A key change of a live connection is an 'update': it replaces the\n"
		"entry's whole %d-byte value (struct nanobpf_quic_keys) in one step and keeps that state.\n",
		NANOBPF_CTRL_MAX_CID, NANOBPF_CTRL_MAX_CID, NANOBPF_CTRL_KEYS_SIZE);
}

static void help_prog(FILE *f)
{
	fprintf(f,
		"Usage: nanobpfctl prog load FILE [name NAME]   load and attach a program image on the device\n"
		"       nanobpfctl prog unload                  detach the program\n"
		"       nanobpfctl prog show                    the attached program\n"
		"\n"
		"FILE is a program image made by nanobpf-load from a clang -target bpf object\n"
		"(nanobpf-load prog.o -o prog.nbpf), at most %d bytes. NAME: at most %d bytes (default: the\n"
		"image's program name).\n", NANOBPF_CTRL_MAX_IMAGE, NANOBPF_ATTR_LEN_PROG_NAME - 1);
}

static void help_map(FILE *f)
{
	fprintf(f,
		"Usage: nanobpfctl map dump   NAME\n"
		"       nanobpfctl map lookup NAME key HEX\n"
		"       nanobpfctl map update NAME key HEX value HEX [any|noexist|exist]\n"
		"       nanobpfctl map delete NAME key HEX\n"
		"\n"
		"NAME: a map of the attached program (at most %d bytes). Keys have at most %d bytes, values at\n"
		"most %d. update: any (default) creates or replaces, noexist only creates, exist only replaces.\n",
		NANOBPF_ATTR_LEN_MAP_NAME - 1, NANOBPF_CTRL_MAX_MAP_KEY, NANOBPF_CTRL_MAX_MAP_VALUE);
}

static void help_events(FILE *f)
{
	fprintf(f,
		"Usage: nanobpfctl events NAME [count N] [interval MS] [--follow]\n"
		"\n"
		"Read the records a program sent with bpf_ringbuf_output (map type RINGBUF) or bpf_perf_event_output\n"
		"(PERF_EVENT_ARRAY) to its event map NAME (at most %d bytes). Reading takes them off the device:\n"
		"each is shown once. Without --follow: every record waiting, then exit. With --follow: keep\n"
		"reading, every MS milliseconds (default 100) while none wait, until interrupted.\n"
		"  count N   stop after N records (with --follow too)\n"
		"Each record: its index (PERF_EVENT_ARRAY: the index the program named, BPF_F_CURRENT_CPU its\n"
		"core; RINGBUF: the core) and its bytes (at most %d). Records the device dropped because the ring\n"
		"was full (or the record longer than that) are counted: 'lost N'.\n"
		"JSON: {\"records\": [{\"index\": 0, \"data\": \"HEX\"}, ...], \"lost\": N}; with --follow one value\n"
		"per line: {\"index\": 0, \"data\": \"HEX\"} per record, {\"lost\": N} when the device dropped some.\n",
		NANOBPF_ATTR_LEN_MAP_NAME - 1, NANOBPF_CTRL_MAX_EVENT);
}

static void help_table(FILE *f)
{
	fprintf(f,
		"Usage: nanobpfctl table add TABLE INDEX VALUE   write a PISA table word\n"
		"       nanobpfctl table del TABLE INDEX         clear it (the word becomes 0)\n"
		"\n"
		"TABLE: port (port_entry, %d entries), profile (profile_entry, %d), lport_cfg (%d).\n"
		"VALUE: the 32-bit register word of hw/defs/soc.toml (block pisa), decimal or 0x hex.\n",
		NANOBPF_PISA_PORT_ENTRY_COUNT, NANOBPF_PISA_PROFILE_ENTRY_COUNT, NANOBPF_PISA_LPORT_CFG_COUNT);
}

static void help_stats(FILE *f)
{
	fprintf(f, "Usage: nanobpfctl stats   the device counters and the driver counters\n");
}

struct object {
	const char *name;
	void (*help)(FILE *f);
	int (*run)(int argc, char **argv);
};

/* ------------------------------------------------------------------ JSON output */

static int jfirst = 1;

static void jstr(const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

static void jsep(void)
{
	if (!jfirst)
		fputc(',', out);
	jfirst = 0;
}

static void jkey(const char *k)
{
	jsep();
	if (k) {
		jstr(k);
		fputc(':', out);
	}
}

static void jopen(const char *k, char c)
{
	jkey(k);
	fputc(c, out);
	jfirst = 1;
}

static void jclose(char c)
{
	fputc(c, out);
	jfirst = 0;
}

static void jkv_str(const char *k, const char *v)
{
	jkey(k);
	if (v)
		jstr(v);
	else
		fputs("null", out);
}

static void jkv_u64(const char *k, uint64_t v)
{
	jkey(k);
	fprintf(out, "%" PRIu64, v);
}

static void jkv_bool(const char *k, int v)
{
	jkey(k);
	fputs(v ? "true" : "false", out);
}

static void jkv_null(const char *k)
{
	jkey(k);
	fputs("null", out);
}

static void jend(void)
{
	fputc('\n', out);
	jfirst = 1;
}

static void hexstr(char *dst, const uint8_t *b, size_t n, int spaced)
{
	char *p = dst;

	for (size_t i = 0; i < n; i++)
		p += sprintf(p, spaced && i ? " %02x" : "%02x", b[i]);
	*p = '\0';
}

/* A dump's output is collected and printed only when the whole dump worked, so that --json prints
 * one value: the entries or the error. */
static char *buf_data;
static size_t buf_size;

static void buffer_begin(void)
{
	FILE *f = open_memstream(&buf_data, &buf_size);

	if (f)
		out = f;
}

static void buffer_end(int keep)
{
	if (out == stdout)
		return;
	fclose(out);
	out = stdout;
	if (keep)
		fwrite(buf_data, 1, buf_size, stdout);
	free(buf_data);
	buf_data = NULL;
	jfirst = 1;
}

/* ------------------------------------------------------------------ errors */

static int usage_err(const char *object, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage_err(const char *object, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (json) {
		jopen(NULL, '{');
		jopen("error", '{');
		jkv_str("message", msg);
		jkv_bool("usage", 1);
		jclose('}');
		jclose('}');
		jend();
	} else {
		fprintf(stderr, "%s: %s\n", prog, msg);
		fprintf(stderr, "Try '%s %s%shelp'.\n", prog, object ? object : "", object ? " " : "");
	}
	return EXIT_USAGE;
}

static int op_err(int err, int dev_status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int op_err(int err, int dev_status, const char *fmt, ...)
{
	char msg[1200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (json) {
		jopen(NULL, '{');
		jopen("error", '{');
		jkv_str("message", msg);
		jkv_u64("errno", (uint64_t)(err < 0 ? -err : err));
		if (dev_status >= 0)
			jkv_str("device_status", nanobpf_status_name((unsigned)dev_status));
		else
			jkv_null("device_status");
		jclose('}');
		jclose('}');
		jend();
	} else {
		fprintf(stderr, "%s: %s\n", prog, msg);
	}
	return EXIT_FAIL;
}

/* the library's last error */
static int lib_err(int ret)
{
	return op_err(ret, nanobpf_dev_status(handle), "%s", nanobpf_errmsg(handle));
}

static int ok_done(void)
{
	if (json) {
		jopen(NULL, '{');
		jkv_bool("ok", 1);
		jclose('}');
		jend();
	}
	return 0;
}

/* the handle, opened on first use; NULL after printing why not */
static struct nanobpf *open_handle(int *status)
{
	char err[512];
	int ret;

	if (handle)
		return handle;
	ret = nanobpf_open(&handle, err, sizeof(err));
	if (ret < 0) {
		*status = op_err(ret, -1, "%s", err);
		return NULL;
	}
	return handle;
}

#define HANDLE_OR_FAIL() do { int st_ = EXIT_FAIL; if (!open_handle(&st_)) return st_; } while (0)

/* ------------------------------------------------------------------ argument parsing */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* hex bytes into out (at most cap); 0 or a usage error status */
static int parse_hex(const char *object, const char *what, const char *s, uint8_t *dst, size_t cap, size_t *len)
{
	size_t n = 0;
	int hi = -1;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (const char *p = s; *p; p++) {
		int v;

		if (*p == ':') {
			if (hi >= 0 || p == s || p[1] == '\0' || p[1] == ':')
				return usage_err(object, "%s: misplaced ':' in '%s' (bytes are two hex digits)", what, s);
			continue;
		}
		v = hexval((unsigned char)*p);
		if (v < 0)
			return usage_err(object, "%s: '%c' is not a hex digit in '%s'", what, *p, s);
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (n >= cap)
			return usage_err(object, "%s: longer than %zu bytes", what, cap);
		dst[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	if (hi >= 0)
		return usage_err(object, "%s: odd number of hex digits in '%s'", what, s);
	if (n == 0)
		return usage_err(object, "%s: no bytes given", what);
	*len = n;
	return 0;
}

/* exactly want bytes */
static int parse_hex_exact(const char *object, const char *what, const char *s, uint8_t *dst, size_t want)
{
	uint8_t buf[256];
	size_t n;
	int ret = parse_hex(object, what, s, buf, sizeof(buf), &n);

	if (ret)
		return ret;
	if (n != want)
		return usage_err(object, "%s must be %zu bytes, got %zu", what, want, n);
	memcpy(dst, buf, want);
	return 0;
}

/* decimal or 0x hex, at most max */
static int parse_uint(const char *object, const char *what, const char *s, uint64_t max, uint64_t *res)
{
	int base = 10;
	const char *d = s;
	char *end;
	unsigned long long v;

	if (d[0] == '0' && (d[1] == 'x' || d[1] == 'X')) {
		base = 16;
		d += 2;
	}
	if (!*d || hexval((unsigned char)*d) < 0 || (base == 10 && (*d < '0' || *d > '9')))
		return usage_err(object, "%s: '%s' is not a number (decimal or 0x hex)", what, s);
	errno = 0;
	v = strtoull(d, &end, base);
	if (*end)
		return usage_err(object, "%s: '%s' is not a number (decimal or 0x hex)", what, s);
	if (errno == ERANGE || v > max)
		return usage_err(object, "%s: %s is out of range (at most %" PRIu64 ")", what, s, max);
	*res = v;
	return 0;
}

static int no_more(const char *object, int argc, char **argv, int i)
{
	if (i < argc)
		return usage_err(object, "unexpected argument '%s'", argv[i]);
	return 0;
}

/* the value after keyword argv[i] */
static int need_value(const char *object, int argc, char **argv, int i)
{
	if (i + 1 >= argc)
		return usage_err(object, "'%s' needs a value", argv[i]);
	return 0;
}

static int check_name_len(const char *object, const char *what, const char *name, size_t max)
{
	if (!name[0])
		return usage_err(object, "the %s is empty", what);
	if (strlen(name) > max)
		return usage_err(object, "%s '%s' is %zu bytes long, at most %zu fit", what, name, strlen(name), max);
	return 0;
}

/* ------------------------------------------------------------------ dev */

static int dev_show(void)
{
	struct nanobpf_dev_info d;
	int ret = nanobpf_dev_get(handle, &d);
	int has_err = (d.present & NANOBPF_DEV_HAS_STATUS) && d.dev_status != NANOBPF_CTRL_ST_OK;
	const char *stname;

	if (ret < 0)
		return lib_err(ret);
	stname = has_err ? nanobpf_status_name(d.dev_status) : NULL;
	if (json) {
		jopen(NULL, '{');
		jkv_str("ifname", (d.present & NANOBPF_DEV_HAS_IFNAME) && d.ifname[0] ? d.ifname : NULL);
		jkv_str("vdev", (d.present & NANOBPF_DEV_HAS_VDEV) && d.vdev_name[0] ? d.vdev_name : NULL);
		if (d.present & NANOBPF_DEV_HAS_LINK_STATE) {
			jkv_str("link_state", nanobpf_link_state_name(d.link_state));
			jkv_u64("link_state_id", d.link_state);
		} else {
			jkv_null("link_state");
			jkv_null("link_state_id");
		}
#define JOPT(key, bit, val) do { if (d.present & (bit)) jkv_u64(key, val); else jkv_null(key); } while (0)
		JOPT("epoch", NANOBPF_DEV_HAS_EPOCH, d.epoch);
		JOPT("version", NANOBPF_DEV_HAS_VERSION, d.version);
		JOPT("key_count", NANOBPF_DEV_HAS_KEY_COUNT, d.key_count);
#undef JOPT
		if (has_err) {
			jopen("last_error", '{');
			jkv_str("status", stname);
			jkv_u64("status_id", d.dev_status);
			jkv_str("message", d.errmsg);
			jclose('}');
		} else {
			jkv_null("last_error");
		}
		jclose('}');
		jend();
		return 0;
	}
	fprintf(out, "ifname %s  vdev %s\n", (d.present & NANOBPF_DEV_HAS_IFNAME) && d.ifname[0] ? d.ifname : "-",
	       (d.present & NANOBPF_DEV_HAS_VDEV) && d.vdev_name[0] ? d.vdev_name : "-");
	fprintf(out, "link %s", d.present & NANOBPF_DEV_HAS_LINK_STATE ? nanobpf_link_state_name(d.link_state) : "-");
	if (d.present & NANOBPF_DEV_HAS_EPOCH)
		fprintf(out, "  epoch 0x%08" PRIx32, d.epoch);
	if (d.present & NANOBPF_DEV_HAS_VERSION)
		fprintf(out, "  version %u", d.version);
	if (d.present & NANOBPF_DEV_HAS_KEY_COUNT)
		fprintf(out, "  keys %" PRIu32, d.key_count);
	fputc('\n', out);
	if (has_err) {
		if (stname)
			fprintf(out, "last device error: %s", stname);
		else
			fprintf(out, "last device error: status %u", d.dev_status);
		fprintf(out, "%s%s\n", d.errmsg[0] ? ": " : "", d.errmsg);
	}
	return 0;
}

/* The key file of dev attach: the one given, else $NANOBPF_CTRL_KEY, else /etc/nanobpf/ctrl.key. */
static const char *key_file_path(const char *given)
{
	const char *env = getenv(KEY_ENV);

	if (given)
		return given;
	return env && env[0] ? env : KEY_DEFAULT;
}

/* dev attach IFNAME [name VDEV] [key FILE] (name and key in either order) */
static int dev_attach(int argc, char **argv)
{
	const char *o = "dev", *ifname, *vdev = NULL, *keyfile = NULL;
	uint8_t key[NANOBPF_CTRL_KEY_LEN];
	int i, ret;

	if (argc < 2)
		return usage_err(o, "dev attach needs IFNAME");
	ifname = argv[1];
	if ((ret = check_name_len(o, "interface name", ifname, NANOBPF_ATTR_LEN_IFNAME - 1)))
		return ret;
	for (i = 2; i < argc; i += 2) {
		const char **slot = !strcmp(argv[i], "name") ? &vdev : !strcmp(argv[i], "key") ? &keyfile : NULL;

		if (!slot)
			return usage_err(o, "unexpected argument '%s'", argv[i]);
		if (*slot)
			return usage_err(o, "'%s' given twice", argv[i]);
		if ((ret = need_value(o, argc, argv, i)))
			return ret;
		*slot = argv[i + 1];
	}
	if (vdev && (ret = check_name_len(o, "virtual device name", vdev, NANOBPF_ATTR_LEN_VDEV_NAME - 1)))
		return ret;
	if (keyfile && !keyfile[0])
		return usage_err(o, "key: the file name is empty");
	HANDLE_OR_FAIL();
	ret = nanobpf_key_file_read(handle, key_file_path(keyfile), key);
	if (!ret)
		ret = nanobpf_dev_attach(handle, ifname, vdev, key);
	explicit_bzero(key, sizeof(key));
	return ret < 0 ? lib_err(ret) : ok_done();
}

static int run_dev(int argc, char **argv)
{
	const char *o = "dev";
	int ret;

	if (argc < 1)
		return usage_err(o, "missing verb: attach, detach, show or reset");
	if (!strcmp(argv[0], "attach"))
		return dev_attach(argc, argv);
	if (!strcmp(argv[0], "detach") || !strcmp(argv[0], "reset")) {
		int reset = argv[0][0] == 'r';

		if ((ret = no_more(o, argc, argv, 1)))
			return ret;
		HANDLE_OR_FAIL();
		ret = reset ? nanobpf_dev_reset(handle) : nanobpf_dev_detach(handle);
		return ret < 0 ? lib_err(ret) : ok_done();
	}
	if (!strcmp(argv[0], "show")) {
		if ((ret = no_more(o, argc, argv, 1)))
			return ret;
		HANDLE_OR_FAIL();
		return dev_show();
	}
	return usage_err(o, "unknown verb 'dev %s' (attach, detach, show, reset)", argv[0]);
}

/* ------------------------------------------------------------------ key */

static const char *dir_name(unsigned dir)
{
	return dir == NANOBPF_QUIC_DIR_OPEN ? "open" : dir == NANOBPF_QUIC_DIR_SEAL ? "seal" : "unknown";
}

static int key_print(const struct nanobpf_key_entry *e, void *arg)
{
	char cid[2 * NANOBPF_CTRL_MAX_CID + 1], aid[2 * NANOBPF_CTRL_MAX_CID + 1], ip[64], peer[80] = "";
	unsigned pport = 0, lport = 0;
	const struct nanobpf_key_id *id = &e->id;

	(void)arg;
	hexstr(cid, id->id, id->cid_len, 0);
	hexstr(aid, id->id, NANOBPF_CTRL_MAX_CID, 0);
	if (!id->cid_len && !nanobpf_addr_id_format(id->id, ip, sizeof(ip), &pport, &lport))
		snprintf(peer, sizeof(peer), strchr(ip, ':') ? "[%s]:%u" : "%s:%u", ip, pport);
	if (json) {
		jopen(NULL, '{');
		jkv_str("cid", cid);
		jkv_u64("cid_len", id->cid_len);
		jkv_str("dir", e->present & NANOBPF_KEY_HAS_DIR ? dir_name(id->dir) : NULL);
		jkv_str("addr_id", id->cid_len ? NULL : aid);
		jkv_str("peer", peer[0] ? peer : NULL);
		if (peer[0])
			jkv_u64("local_port", lport);
		else
			jkv_null("local_port");
		if (e->present & NANOBPF_KEY_HAS_PHASE)
			jkv_u64("key_phase", e->key_phase);
		else
			jkv_null("key_phase");
		if (e->present & NANOBPF_KEY_HAS_SLOT)
			jkv_u64("slot", e->slot);
		else
			jkv_null("slot");
		if (e->present & NANOBPF_KEY_HAS_SYNCED)
			jkv_bool("synced", e->synced);
		else
			jkv_null("synced");
		jclose('}');
		return 0;
	}
	if (id->cid_len)
		fprintf(out, "cid %s", cid);
	else if (peer[0])
		fprintf(out, "peer %s local-port %u", peer, lport);
	else
		fprintf(out, "addr-id %s", aid);
	if (e->present & NANOBPF_KEY_HAS_DIR)
		fprintf(out, "  dir %s", dir_name(id->dir));
	if (e->present & NANOBPF_KEY_HAS_PHASE)
		fprintf(out, "  phase %u", e->key_phase);
	if (e->present & NANOBPF_KEY_HAS_SLOT)
		fprintf(out, "  slot %" PRIu32, e->slot);
	if (e->present & NANOBPF_KEY_HAS_SYNCED)
		fprintf(out, "  %s", e->synced ? "synced" : "not synced");
	fputc('\n', out);
	return 0;
}

/* The words that name an entry (cid, peer, local-port, addr-id, dir) as they are met in argv. */
struct entry_args {
	const char *cid, *peer, *local_port, *addr_id, *dir;
};

/* 1 when argv[i] is one of them (its value taken; *ret: 0, or the exit status of a usage error), else 0 */
static int entry_word(const char *o, struct entry_args *a, int argc, char **argv, int i, int *ret)
{
	static const char *const words[] = { "cid", "peer", "local-port", "addr-id", "dir" };
	const char **slot[] = { &a->cid, &a->peer, &a->local_port, &a->addr_id, &a->dir };

	for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
		if (strcmp(argv[i], words[w]))
			continue;
		if (*slot[w]) {
			*ret = usage_err(o, "'%s' given twice", argv[i]);
			return 1;
		}
		if ((*ret = need_value(o, argc, argv, i)))
			return 1;
		*slot[w] = argv[i + 1];
		return 1;
	}
	return 0;
}

/* The entry the words name, checked; 0 or an exit status. */
static int entry_id(const char *o, const struct entry_args *a, struct nanobpf_key_id *id)
{
	unsigned dir = NANOBPF_QUIC_DIR_OPEN;
	int ret, names = !!a->cid + !!a->peer + !!a->addr_id;

	if (a->dir) {
		if (!strcmp(a->dir, "open"))
			dir = NANOBPF_QUIC_DIR_OPEN;
		else if (!strcmp(a->dir, "seal"))
			dir = NANOBPF_QUIC_DIR_SEAL;
		else
			return usage_err(o, "dir: '%s' is not open or seal", a->dir);
	}
	if (names != 1)
		return usage_err(o, "name the entry with one of cid HEX, peer ADDR:PORT local-port PORT, addr-id HEX");
	if (a->local_port && !a->peer)
		return usage_err(o, "local-port goes with peer");
	if (a->cid) {
		uint8_t cid[256];
		size_t n;

		if ((ret = parse_hex(o, "cid", a->cid, cid, sizeof(cid), &n)))
			return ret;
		if (n > NANOBPF_CTRL_MAX_CID)
			return usage_err(o, "cid: a connection ID has 1 to %d bytes, got %zu (a peer with zero-length "
					 "connection IDs: peer ADDR:PORT local-port PORT)", NANOBPF_CTRL_MAX_CID, n);
		nanobpf_key_id_cid(id, dir, cid, n);
		return 0;
	}
	if (a->addr_id) {
		uint8_t aid[NANOBPF_CTRL_MAX_CID];
		size_t i;

		if ((ret = parse_hex_exact(o, "addr-id", a->addr_id, aid, sizeof(aid))))
			return ret;
		for (i = 0; i < sizeof(aid) && !aid[i]; i++)
			;
		if (i == sizeof(aid))
			return usage_err(o, "addr-id: all zero");
		memset(id, 0, sizeof(*id));
		id->dir = (uint8_t)dir;
		memcpy(id->id, aid, sizeof(aid));
		return 0;
	}
	/* peer ADDR:PORT local-port PORT */
	char host[64];
	const char *colon, *addr = a->peer;
	size_t alen;
	uint64_t pport, lport;

	if (!a->local_port)
		return usage_err(o, "peer needs local-port PORT (the local UDP port of the connection)");
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (!close || close[1] != ':')
			return usage_err(o, "peer: '%s' is not [IPv6]:PORT", a->peer);
		addr++;
		alen = (size_t)(close - addr);
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || strchr(addr, ':') != colon)
			return usage_err(o, "peer: '%s' is not ADDR:PORT (an IPv6 address goes in brackets: [ADDR]:PORT)",
					 a->peer);
		alen = (size_t)(colon - addr);
	}
	if (alen == 0 || alen >= sizeof(host))
		return usage_err(o, "peer: no address in '%s'", a->peer);
	memcpy(host, addr, alen);
	host[alen] = '\0';
	if ((ret = parse_uint(o, "peer port", colon + 1, 0xffff, &pport)) ||
	    (ret = parse_uint(o, "local-port", a->local_port, 0xffff, &lport)))
		return ret;
	if (nanobpf_key_id_addr(id, dir, host, (unsigned)pport, (unsigned)lport))
		return usage_err(o, "peer: '%s' is not an IPv4 or IPv6 address", host);
	return 0;
}

static int key_set(int argc, char **argv, int update)
{
	const char *o = "key";
	struct nanobpf_quic_keys k;
	struct nanobpf_key_id id;
	struct entry_args ea = { 0 };
	int have_key = 0, have_iv = 0, have_hp = 0, have_nkey = 0, have_niv = 0, have_pkey = 0, have_piv = 0;
	int have_phase = 0;
	int ret;

	_Static_assert(sizeof(k) == NANOBPF_CTRL_KEYS_SIZE, "struct nanobpf_quic_keys is the KEYS attribute");
	memset(&k, 0, sizeof(k));
	for (int i = 1; i < argc; i += 2) {
		const char *kw = argv[i];
		int *seen;

		ret = 0;
		if (entry_word(o, &ea, argc, argv, i, &ret)) {
			if (ret)
				return ret;
			continue;
		}
		if (!strcmp(kw, "key"))
			seen = &have_key;
		else if (!strcmp(kw, "iv"))
			seen = &have_iv;
		else if (!strcmp(kw, "hp"))
			seen = &have_hp;
		else if (!strcmp(kw, "next-key"))
			seen = &have_nkey;
		else if (!strcmp(kw, "next-iv"))
			seen = &have_niv;
		else if (!strcmp(kw, "prev-key"))
			seen = &have_pkey;
		else if (!strcmp(kw, "prev-iv"))
			seen = &have_piv;
		else if (!strcmp(kw, "phase"))
			seen = &have_phase;
		else
			return usage_err(o, "unknown keyword '%s' (cid, peer, local-port, addr-id, dir, key, iv, hp, phase, "
					 "next-key, next-iv, prev-key, prev-iv)", kw);
		if (*seen)
			return usage_err(o, "'%s' given twice", kw);
		*seen = 1;
		if ((ret = need_value(o, argc, argv, i)))
			return ret;
		const char *v = argv[i + 1];

		if (seen == &have_key) {
			ret = parse_hex_exact(o, "key", v, k.key, 16);
		} else if (seen == &have_iv) {
			ret = parse_hex_exact(o, "iv", v, k.iv, 12);
		} else if (seen == &have_hp) {
			ret = parse_hex_exact(o, "hp", v, k.hp, 16);
		} else if (seen == &have_nkey || seen == &have_pkey) {
			ret = parse_hex_exact(o, kw, v, k.key + 16, 16);
		} else if (seen == &have_niv || seen == &have_piv) {
			ret = parse_hex_exact(o, kw, v, k.iv + 12, 12);
		} else {
			uint64_t ph;

			ret = parse_uint(o, "phase", v, 1, &ph);
			k.key_phase = (uint8_t)ph;
		}
		if (ret)
			return ret;
	}
	if (!(ea.cid || ea.peer || ea.addr_id) || !have_key || !have_iv || !have_hp)
		return usage_err(o, "key %s needs the entry (cid HEX or peer ADDR:PORT local-port PORT), key, iv and hp",
				 update ? "update" : "add");
	if ((ret = entry_id(o, &ea, &id)))
		return ret;
	if (have_nkey != have_niv)
		return usage_err(o, "next-key and next-iv go together");
	if (have_pkey != have_piv)
		return usage_err(o, "prev-key and prev-iv go together");
	if (have_nkey && have_pkey)
		return usage_err(o, "next-key and prev-key share the second key slot: one or the other");
	if (have_pkey && id.dir != NANOBPF_QUIC_DIR_OPEN)
		return usage_err(o, "prev-key: previous keys are kept in open entries only");
	k.flags = have_nkey ? NANOBPF_QUIC_KEY_NEXT : have_pkey ? NANOBPF_QUIC_KEY_PREV : 0;
	k.cid_len = id.cid_len;
	HANDLE_OR_FAIL();
	ret = update ? nanobpf_key_update(handle, &id, &k, sizeof(k)) : nanobpf_key_add(handle, &id, &k, sizeof(k));
	return ret < 0 ? lib_err(ret) : ok_done();
}

static int run_key(int argc, char **argv)
{
	const char *o = "key";
	int ret;

	if (argc < 1)
		return usage_err(o, "missing verb: add, update, del or list");
	if (!strcmp(argv[0], "add") || !strcmp(argv[0], "update"))
		return key_set(argc, argv, argv[0][0] == 'u');
	if (!strcmp(argv[0], "del")) {
		struct entry_args ea = { 0 };
		struct nanobpf_key_id id;

		for (int i = 1; i < argc; i += 2) {
			ret = 0;
			if (!entry_word(o, &ea, argc, argv, i, &ret))
				return usage_err(o, "unexpected argument '%s' (key del ENTRY: cid HEX | peer ADDR:PORT "
						 "local-port PORT | addr-id HEX, [dir open|seal])", argv[i]);
			if (ret)
				return ret;
		}
		if (!(ea.cid || ea.peer || ea.addr_id))
			return usage_err(o, "key del needs 'cid HEX' (or peer ADDR:PORT local-port PORT)");
		if ((ret = entry_id(o, &ea, &id)))
			return ret;
		HANDLE_OR_FAIL();
		ret = nanobpf_key_del(handle, &id);
		return ret < 0 ? lib_err(ret) : ok_done();
	}
	if (!strcmp(argv[0], "list")) {
		if ((ret = no_more(o, argc, argv, 1)))
			return ret;
		HANDLE_OR_FAIL();
		buffer_begin();
		if (json)
			jopen(NULL, '[');
		ret = nanobpf_key_list(handle, key_print, NULL);
		if (ret < 0) {
			buffer_end(0);
			return lib_err(ret);
		}
		if (json) {
			jclose(']');
			jend();
		}
		buffer_end(1);
		return 0;
	}
	return usage_err(o, "unknown verb 'key %s' (add, update, del, list)", argv[0]);
}

/* ------------------------------------------------------------------ prog */

static int prog_print(const struct nanobpf_prog_desc *p)
{
	if (json) {
		jopen(NULL, '{');
		jkv_bool("loaded", p->present != 0);
		if (p->present & NANOBPF_PROG_HAS_NAME)
			jkv_str("name", p->name);
		else
			jkv_null("name");
#define JOPT(key, bit, val) do { if (p->present & (bit)) jkv_u64(key, val); else jkv_null(key); } while (0)
		JOPT("image_len", NANOBPF_PROG_HAS_IMAGE_LEN, p->image_len);
		JOPT("crc32", NANOBPF_PROG_HAS_CRC, p->crc32);
		JOPT("insns", NANOBPF_PROG_HAS_INSNS, p->insns);
#undef JOPT
		jclose('}');
		jend();
		return 0;
	}
	if (!p->present) {
		fprintf(out, "no program attached\n");
		return 0;
	}
	fprintf(out, "prog %s", p->present & NANOBPF_PROG_HAS_NAME ? p->name : "-");
	if (p->present & NANOBPF_PROG_HAS_INSNS)
		fprintf(out, "  insns %" PRIu32, p->insns);
	if (p->present & NANOBPF_PROG_HAS_IMAGE_LEN)
		fprintf(out, "  image %" PRIu32 " bytes", p->image_len);
	if (p->present & NANOBPF_PROG_HAS_CRC)
		fprintf(out, "  crc32 0x%08" PRIx32, p->crc32);
	fputc('\n', out);
	return 0;
}

/* the image in FILE: malloc'd buffer, or NULL after printing why not */
static uint8_t *read_image(const char *path, size_t *len, int *status)
{
	struct stat st;
	uint8_t *buf;
	char err[512];
	size_t n = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		*status = op_err(errno, -1, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*status = op_err(EINVAL, -1, "'%s' is not a regular file", path);
		close(fd);
		return NULL;
	}
	if (st.st_size > NANOBPF_CTRL_MAX_IMAGE) {
		*status = op_err(EFBIG, -1, "'%s': image is %lld bytes, more than the %d bytes the device accepts", path,
				 (long long)st.st_size, NANOBPF_CTRL_MAX_IMAGE);
		close(fd);
		return NULL;
	}
	buf = malloc(NANOBPF_CTRL_MAX_IMAGE + 1);
	if (!buf) {
		*status = op_err(ENOMEM, -1, "out of memory");
		close(fd);
		return NULL;
	}
	for (;;) {
		ssize_t r = read(fd, buf + n, NANOBPF_CTRL_MAX_IMAGE + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*status = op_err(errno, -1, "cannot read '%s': %s", path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > NANOBPF_CTRL_MAX_IMAGE)
			break;
	}
	close(fd);
	fd = -1;
	if (nanobpf_image_check(buf, n, err, sizeof(err)) < 0) {
		*status = op_err(EINVAL, -1, "'%s': %s", path, err);
		goto fail;
	}
	*len = n;
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static int run_prog(int argc, char **argv)
{
	const char *o = "prog";
	struct nanobpf_prog_desc info;
	int ret;

	if (argc < 1)
		return usage_err(o, "missing verb: load, unload or show");
	if (!strcmp(argv[0], "load")) {
		const char *file, *name = NULL;
		char img_name[NANOBPF_ATTR_LEN_PROG_NAME];
		uint8_t *img;
		size_t len;
		int i = 2, st = EXIT_FAIL;

		if (argc < 2)
			return usage_err(o, "prog load needs FILE");
		file = argv[1];
		if (i < argc && !strcmp(argv[i], "name")) {
			if ((ret = need_value(o, argc, argv, i)))
				return ret;
			name = argv[i + 1];
			if ((ret = check_name_len(o, "program name", name, NANOBPF_ATTR_LEN_PROG_NAME - 1)))
				return ret;
			i += 2;
		}
		if ((ret = no_more(o, argc, argv, i)))
			return ret;
		img = read_image(file, &len, &st);
		if (!img)
			return st;
		if (!name && nanobpf_image_name(img, len, img_name, sizeof(img_name)) == 0 && img_name[0])
			name = img_name;
		if (!open_handle(&st)) {
			free(img);
			return st;
		}
		ret = nanobpf_prog_load(handle, img, len, name);
		free(img);
		if (ret < 0)
			return lib_err(ret);
		if (nanobpf_prog_get(handle, &info) < 0)
			return ok_done();
		return prog_print(&info);
	}
	if (!strcmp(argv[0], "unload")) {
		if ((ret = no_more(o, argc, argv, 1)))
			return ret;
		HANDLE_OR_FAIL();
		ret = nanobpf_prog_unload(handle);
		return ret < 0 ? lib_err(ret) : ok_done();
	}
	if (!strcmp(argv[0], "show")) {
		if ((ret = no_more(o, argc, argv, 1)))
			return ret;
		HANDLE_OR_FAIL();
		ret = nanobpf_prog_get(handle, &info);
		if (ret == -ENOEXEC) {	/* NO_PROG */
			memset(&info, 0, sizeof(info));
			ret = 0;
		}
		if (ret < 0)
			return lib_err(ret);
		return prog_print(&info);
	}
	return usage_err(o, "unknown verb 'prog %s' (load, unload, show)", argv[0]);
}

/* ------------------------------------------------------------------ map */

#define MAP_DUMP_MAX 1000000

static void map_entry_print(const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	static char kbuf[3 * NANOBPF_CTRL_MAX_MAP_KEY + 1], vbuf[3 * NANOBPF_CTRL_MAX_MAP_VALUE + 1];

	hexstr(kbuf, key, klen, !json);
	hexstr(vbuf, val, vlen, !json);
	if (json) {
		jopen(NULL, '{');
		jkv_str("key", kbuf);
		jkv_str("value", vbuf);
		jclose('}');
	} else {
		fprintf(out, "key: %s  value: %s\n", kbuf, vbuf);
	}
}

static int map_dump(const char *name)
{
	static uint8_t key[NANOBPF_CTRL_MAX_MAP_KEY], next[NANOBPF_CTRL_MAX_MAP_KEY], val[NANOBPF_CTRL_MAX_MAP_VALUE];
	size_t klen = 0, nlen, vlen;
	unsigned count = 0;
	int ret;

	buffer_begin();
	if (json)
		jopen(NULL, '[');
	for (;;) {
		ret = nanobpf_map_get_next(handle, name, count ? key : NULL, count ? klen : 0, next, sizeof(next), &nlen);
		if (ret == -ENOENT)
			break;	/* past the last key (or an empty map) */
		if (ret < 0)
			goto fail;
		if (count && nlen == klen && !memcmp(next, key, klen)) {
			ret = -ELOOP;
			goto loop;
		}
		memcpy(key, next, nlen);
		klen = nlen;
		if (++count > MAP_DUMP_MAX) {
			ret = -E2BIG;
			goto loop;
		}
		ret = nanobpf_map_lookup(handle, name, key, klen, val, sizeof(val), &vlen);
		if (ret == -ENOENT)
			continue;	/* deleted between get_next and lookup */
		if (ret < 0)
			goto fail;
		map_entry_print(key, klen, val, vlen);
	}
	if (json) {
		jclose(']');
		jend();
	}
	buffer_end(1);
	return 0;
fail:
	buffer_end(0);
	return lib_err(ret);
loop:
	buffer_end(0);
	return op_err(ret, -1, "map dump %s: the driver returned the same key twice or more than %d keys: stopped",
		      name, MAP_DUMP_MAX);
}

static int run_map(int argc, char **argv)
{
	const char *o = "map";
	static uint8_t key[NANOBPF_CTRL_MAX_MAP_KEY], val[NANOBPF_CTRL_MAX_MAP_VALUE];
	size_t klen = 0, vlen = 0;
	const char *verb, *name;
	uint64_t flags = NANOBPF_BPF_ANY;
	int ret, i;

	if (argc < 1)
		return usage_err(o, "missing verb: dump, lookup, update or delete");
	verb = argv[0];
	if (strcmp(verb, "dump") && strcmp(verb, "lookup") && strcmp(verb, "update") && strcmp(verb, "delete"))
		return usage_err(o, "unknown verb 'map %s' (dump, lookup, update, delete)", verb);
	if (argc < 2)
		return usage_err(o, "map %s needs the map NAME", verb);
	name = argv[1];
	if ((ret = check_name_len(o, "map name", name, NANOBPF_ATTR_LEN_MAP_NAME - 1)))
		return ret;
	i = 2;
	if (strcmp(verb, "dump")) {
		if (i >= argc || strcmp(argv[i], "key"))
			return usage_err(o, "map %s needs 'key HEX'", verb);
		if ((ret = need_value(o, argc, argv, i)))
			return ret;
		if ((ret = parse_hex(o, "key", argv[i + 1], key, sizeof(key), &klen)))
			return ret;
		i += 2;
	}
	if (!strcmp(verb, "update")) {
		if (i >= argc || strcmp(argv[i], "value"))
			return usage_err(o, "map update needs 'value HEX'");
		if ((ret = need_value(o, argc, argv, i)))
			return ret;
		if ((ret = parse_hex(o, "value", argv[i + 1], val, sizeof(val), &vlen)))
			return ret;
		i += 2;
		if (i < argc) {
			if (!strcmp(argv[i], "any"))
				flags = NANOBPF_BPF_ANY;
			else if (!strcmp(argv[i], "noexist"))
				flags = NANOBPF_BPF_NOEXIST;
			else if (!strcmp(argv[i], "exist"))
				flags = NANOBPF_BPF_EXIST;
			else
				return usage_err(o, "unknown update flag '%s' (any, noexist, exist)", argv[i]);
			i++;
		}
	}
	if ((ret = no_more(o, argc, argv, i)))
		return ret;
	HANDLE_OR_FAIL();
	if (!strcmp(verb, "dump"))
		return map_dump(name);
	if (!strcmp(verb, "lookup")) {
		ret = nanobpf_map_lookup(handle, name, key, klen, val, sizeof(val), &vlen);
		if (ret < 0)
			return lib_err(ret);
		map_entry_print(key, klen, val, vlen);
		if (json)
			jend();
		return 0;
	}
	if (!strcmp(verb, "update"))
		ret = nanobpf_map_update(handle, name, key, klen, val, vlen, flags);
	else
		ret = nanobpf_map_delete(handle, name, key, klen);
	return ret < 0 ? lib_err(ret) : ok_done();
}

/* ------------------------------------------------------------------ events */

#define EVENTS_DRAIN_MAX 1000000	/* without --follow: stop after this many (a program may never pause) */

struct events_state {
	uint64_t shown, count;		/* count: stop after this many (0: no limit) */
	int listed;			/* JSON without --follow: records inside one array */
};

static int event_print(const struct nanobpf_event *ev, void *arg)
{
	static char hex[3 * NANOBPF_CTRL_MAX_EVENT + 1];
	struct events_state *st = arg;

	hexstr(hex, ev->data, ev->len, !json);
	if (json) {
		jopen(NULL, '{');
		jkv_u64("index", ev->index);
		jkv_str("data", hex);
		jclose('}');
		if (follow)
			jend();
	} else {
		fprintf(out, "index %u  len %u%s%s\n", ev->index, ev->len, ev->len ? "  " : "", hex);
	}
	st->shown++;
	return 0;
}

static void events_lost(uint64_t lost)
{
	if (json) {
		jopen(NULL, '{');
		jkv_u64("lost", lost);
		jclose('}');
		jend();
	} else {
		fprintf(out, "lost %" PRIu64 "\n", lost);
	}
}

static int run_events(int argc, char **argv)
{
	const char *o = "events", *name;
	struct events_state st = { 0 };
	uint64_t count = 0, interval = 100, lost_total = 0;
	int ret, i;

	if (argc < 1)
		return usage_err(o, "events needs the map NAME");
	name = argv[0];
	if ((ret = check_name_len(o, "map name", name, NANOBPF_ATTR_LEN_MAP_NAME - 1)))
		return ret;
	for (i = 1; i < argc; i += 2) {
		if (strcmp(argv[i], "count") && strcmp(argv[i], "interval"))
			return usage_err(o, "unknown keyword '%s' (count, interval)", argv[i]);
		if ((ret = need_value(o, argc, argv, i)))
			return ret;
		if (!strcmp(argv[i], "count"))
			ret = parse_uint(o, "count", argv[i + 1], UINT32_MAX, &count);
		else
			ret = parse_uint(o, "interval", argv[i + 1], 3600000, &interval);
		if (ret)
			return ret;
	}
	HANDLE_OR_FAIL();
	st.count = count;
	if (!follow)
		buffer_begin();	/* one JSON value, or the error alone */
	if (json && !follow)
		jopen(NULL, '{'), jopen("records", '[');
	for (;;) {
		uint64_t left = st.count ? st.count - st.shown : 0;
		uint32_t lost = 0, pending = 0;

		if (st.count && !left)
			break;
		ret = nanobpf_events_read(handle, name, left > 0xffff ? 0xffff : (unsigned)left, event_print, &st,
					  &lost, &pending);
		if (ret < 0)
			break;
		lost_total += lost;
		if (follow && lost)
			events_lost(lost);
		if (follow)
			fflush(out);
		if (!follow && (!pending || st.shown >= EVENTS_DRAIN_MAX))
			break;
		if (follow && !ret && !pending) {
			struct timespec ts = { (time_t)(interval / 1000), (long)(interval % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
	if (ret < 0) {
		buffer_end(0);
		return lib_err(ret);
	}
	if (!follow) {
		if (json) {
			jclose(']');
			jkv_u64("lost", lost_total);
			jclose('}');
			jend();
		} else if (lost_total) {
			events_lost(lost_total);
		}
		buffer_end(1);
	}
	return 0;
}

/* ------------------------------------------------------------------ table */

/* entries of each table (register arrays of hw/defs/soc.toml, block pisa) */
static const unsigned table_entries[NANOBPF_TABLE_COUNT] = {
	[NANOBPF_CTRL_TABLE_PORT] = NANOBPF_PISA_PORT_ENTRY_COUNT,
	[NANOBPF_CTRL_TABLE_PROFILE] = NANOBPF_PISA_PROFILE_ENTRY_COUNT,
	[NANOBPF_CTRL_TABLE_LPORT_CFG] = NANOBPF_PISA_LPORT_CFG_COUNT,
};

static int run_table(int argc, char **argv)
{
	const char *o = "table";
	unsigned table = NANOBPF_TABLE_COUNT;
	uint64_t index, value = 0;
	int add, ret;

	if (argc < 1)
		return usage_err(o, "missing verb: add or del");
	if (strcmp(argv[0], "add") && strcmp(argv[0], "del"))
		return usage_err(o, "unknown verb 'table %s' (add, del)", argv[0]);
	add = argv[0][0] == 'a';
	if (argc < (add ? 4 : 3))
		return usage_err(o, add ? "table add needs TABLE INDEX VALUE" : "table del needs TABLE INDEX");
	for (unsigned t = 0; t < NANOBPF_TABLE_COUNT; t++)
		if (nanobpf_table_name(t) && !strcmp(argv[1], nanobpf_table_name(t)))
			table = t;
	if (table == NANOBPF_TABLE_COUNT)
		return usage_err(o, "unknown table '%s' (port, profile, lport_cfg)", argv[1]);
	if ((ret = parse_uint(o, "INDEX", argv[2], table_entries[table] - 1, &index)))
		return ret;
	if (add && (ret = parse_uint(o, "VALUE", argv[3], 0xffffffffu, &value)))
		return ret;
	if ((ret = no_more(o, argc, argv, add ? 4 : 3)))
		return ret;
	HANDLE_OR_FAIL();
	ret = add ? nanobpf_table_set(handle, table, (unsigned)index, (uint32_t)value)
		  : nanobpf_table_del(handle, table, (unsigned)index);
	return ret < 0 ? lib_err(ret) : ok_done();
}

/* ------------------------------------------------------------------ stats */

static void stats_group(const char *title, const uint64_t *v, uint64_t present, unsigned count,
			const char *(*namef)(unsigned))
{
	if (json)
		jopen(title, '{');
	else
		fprintf(out, "%s:\n", title);
	for (unsigned id = 0; id < count; id++) {
		if (!(present & (1ull << id)))
			continue;
		if (json)
			jkv_u64(namef(id), v[id]);
		else
			fprintf(out, "  %-18s %" PRIu64 "\n", namef(id), v[id]);
	}
	if (json)
		jclose('}');
}

static int run_stats(int argc, char **argv)
{
	struct nanobpf_stats st;
	int ret;

	if ((ret = no_more("stats", argc, argv, 0)))
		return ret;
	HANDLE_OR_FAIL();
	ret = nanobpf_stats_get(handle, &st);
	if (ret < 0)
		return lib_err(ret);
	if (json)
		jopen(NULL, '{');
	stats_group("device", st.dev, st.dev_present, NANOBPF_STAT_COUNT, nanobpf_stat_name);
	stats_group("driver", st.drv, st.drv_present, NANOBPF_DRV_STAT_COUNT, nanobpf_drv_stat_name);
	if (json) {
		jclose('}');
		jend();
	}
	return 0;
}

/* ------------------------------------------------------------------ main */

static const struct object objects[] = {
	{ "dev", help_dev, run_dev },
	{ "key", help_key, run_key },
	{ "prog", help_prog, run_prog },
	{ "map", help_map, run_map },
	{ "events", help_events, run_events },
	{ "table", help_table, run_table },
	{ "stats", help_stats, run_stats },
};

int main(int argc, char **argv)
{
	char **pos = calloc((size_t)argc + 1, sizeof(*pos));
	int npos = 0, help = 0, version = 0, opts_done = 0, status;
	const struct object *obj = NULL;

	out = stdout;
	if (!pos) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return EXIT_FAIL;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (opts_done || a[0] != '-' || a[1] == '\0') {
			pos[npos++] = argv[i];
		} else if (!strcmp(a, "--")) {
			opts_done = 1;
		} else if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "-f") || !strcmp(a, "--follow")) {
			follow = 1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			help = 1;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			version = 1;
		} else {
			free(pos);
			return usage_err(NULL, "unknown option '%s'", a);
		}
	}
	if (version) {
		if (json) {
			jopen(NULL, '{');
			jkv_str("version", NANOBPF_LIB_VERSION);
			jkv_u64("protocol", NANOBPF_CTRL_VERSION);
			jkv_str("genl_family", NANOBPF_GENL_NAME);
			jkv_u64("genl_version", NANOBPF_GENL_VERSION);
			jclose('}');
			jend();
		} else {
			fprintf(out, "nanobpfctl %s (control protocol %d, generic netlink family '%s' version %d)\n",
			       NANOBPF_LIB_VERSION, NANOBPF_CTRL_VERSION, NANOBPF_GENL_NAME, NANOBPF_GENL_VERSION);
		}
		free(pos);
		return 0;
	}
	if (npos > 0) {
		for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
			if (!strcmp(pos[0], objects[i].name))
				obj = &objects[i];
	}
	if (npos > 0 && !strcmp(pos[0], "help")) {
		help = 1;	/* 'nanobpfctl help key' */
		for (size_t i = 0; npos > 1 && i < sizeof(objects) / sizeof(objects[0]); i++)
			if (!strcmp(pos[1], objects[i].name))
				obj = &objects[i];
	}
	if (help) {
		/* 'nanobpfctl key help', 'nanobpfctl key add --help': the object's text */
		(obj ? obj->help : help_main)(out);
		free(pos);
		return 0;
	}
	if (npos == 0) {
		help_main(stderr);
		free(pos);
		return EXIT_USAGE;
	}
	if (!obj) {
		status = usage_err(NULL, "unknown object '%s' (dev, key, prog, map, events, table, stats)", pos[0]);
		free(pos);
		return status;
	}
	if (npos > 1 && !strcmp(pos[1], "help")) {
		obj->help(out);
		free(pos);
		return 0;
	}
	if (follow && obj->run != run_events) {
		status = usage_err(obj->name, "--follow goes with events only");
		free(pos);
		return status;
	}
	status = obj->run(npos - 1, pos + 1);
	if (fflush(stdout) != 0 && status == 0)
		status = EXIT_FAIL;	/* stdout closed or full */
	nanobpf_close(handle);
	free(pos);
	return status;
}
