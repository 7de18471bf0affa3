"""nanobpfctl and libnanobpf on a host without nanobpf.ko (make host-tools builds them into build/host).

- build/host/nanobpfctl and nanobpfctl-static: help, version, every command-line error (exit 2) and
  file error (exit 1) with its message, and a real command failing with "family not found / is
  nanobpf.ko loaded" (exit 1) because the module is not loaded here.
- build/host/nanobpfctl-mock: the same CLI and library over an in-process fake of the driver's
  generic-netlink family (sw/lib/tests/mock_genl.c): the attributes each verb sends (checked against
  the generated definitions), the reply parsing, extended ACKs, the device-status follow-up and the
  JSON output of every verb.
The driver itself is tested in a QEMU guest (tests/driver, make test-driver).
"""
import errno as errno_mod
import json
import os
import platform
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import nanobpf_ctrl_defs as ctrl
import nanobpf_ebpf_defs as abi
from nanobpf import BUILD, ROOT, command

HOST = BUILD / "host"
CTL = HOST / "nanobpfctl"
STATIC = HOST / "nanobpfctl-static"
MOCK = HOST / "nanobpfctl-mock"

pytestmark = pytest.mark.skipif(not (CTL.exists() and STATIC.exists() and MOCK.exists()),
                                reason="nanobpfctl is not built: run `make host-tools`")
MODULE_LOADED = Path("/sys/module/nanobpf").exists()
needs_no_module = pytest.mark.skipif(MODULE_LOADED, reason="nanobpf.ko is loaded on this host")

NAME_MAX = ctrl.GENL_ATTRS["PROG_NAME"][2] - 1        # bytes of a program or map name, NUL excluded
IFNAME_MAX = ctrl.GENL_ATTRS["IFNAME"][2] - 1
NOT_FOUND = "generic netlink family 'nanobpf' not found: is nanobpf.ko loaded? (modprobe nanobpf)"
OBJECTS = ["dev", "key", "prog", "map", "events", "table", "stats"]
VERBS = {"dev": ["attach", "detach", "show", "reset"], "key": ["add", "update", "del", "list"],
         "prog": ["load", "unload", "show"], "map": ["dump", "lookup", "update", "delete"],
         "events": [], "table": ["add", "del"], "stats": []}

KEY = "00112233445566778899aabbccddeeff"
IV = "000102030405060708090a0b"
HP = "ffeeddccbbaa99887766554433221100"
NKEY = "0f0e0d0c0b0a09080706050403020100"
NIV = "a0a1a2a3a4a5a6a7a8a9aaab"


def run(*args, tool=CTL, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True, env=e, timeout=60)


def image(name=b"xdp_test", extra=16):
    """A program image header (hw/defs/ebpf.toml image_header) with extra bytes after it."""
    st = abi.STRUCTS["image_header"]
    total = st.size + extra
    vals = {"magic": abi.NANOBPF_IMAGE_MAGIC, "version": abi.NANOBPF_IMAGE_VERSION, "header_size": st.size,
            "n_maps": 0, "maps_off": st.size, "n_insns": extra // 8, "insns_off": st.size, "data_off": total,
            "data_size": 0, "total_size": total, "n_funcs": 0, "funcs_off": st.size, "reserved": 0,
            "prog_name": name}
    return struct.pack(st.fmt, *(vals[f] for f, _, _ in st.fields)) + bytes(extra)


# ------------------------------------------------------------------ help and version

@pytest.mark.parametrize("args", [["--help"], ["-h"], ["help"]])
def test_main_help(args):
    p = run(*args)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("Usage: nanobpfctl")
    for obj in OBJECTS:
        assert f"\n  {obj} " in p.stdout
    assert "--json" in p.stdout and "Exit status" in p.stdout


@pytest.mark.parametrize("obj", OBJECTS)
@pytest.mark.parametrize("form", ["help", "--help", "-h"])
def test_object_help(obj, form):
    p = run(obj, form)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"Usage: nanobpfctl {obj}")
    for verb in VERBS[obj]:
        assert f"nanobpfctl {obj} {verb}" in p.stdout


def test_help_object():
    assert run("help", "key").stdout == run("key", "help").stdout == run("key", "--help").stdout


@pytest.mark.parametrize("obj,verb", [(o, v) for o in OBJECTS for v in VERBS[o]])
def test_verb_help(obj, verb):
    p = run(obj, verb, "--help")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"Usage: nanobpfctl {obj}") and verb in p.stdout


@pytest.mark.parametrize("tool", [CTL, STATIC, MOCK])
def test_version(tool):
    p = run("--version", tool=tool)
    assert p.returncode == 0 and p.stdout.startswith("nanobpfctl ")
    assert f"control protocol {ctrl.VERSION}" in p.stdout and f"'{ctrl.GENL_NAME}'" in p.stdout
    assert run("-V", tool=tool).stdout == p.stdout
    j = json.loads(run("--json", "-V", tool=tool).stdout)
    assert j["genl_family"] == ctrl.GENL_NAME and j["protocol"] == ctrl.VERSION and j["version"]


def test_no_arguments_is_usage():
    p = run()
    assert p.returncode == 2 and "Usage: nanobpfctl" in p.stderr


def test_static_binary_has_no_interpreter():
    """nanobpfctl-static runs in a busybox initramfs: no dynamic loader (no PT_INTERP), no libs."""
    data = STATIC.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2   # ELF64
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    types = [struct.unpack_from("<I", data, phoff + i * phentsize)[0] for i in range(phnum)]
    assert 3 not in types, "nanobpfctl-static has a PT_INTERP: it is not static"
    assert 2 not in types, "nanobpfctl-static has a PT_DYNAMIC"


# ------------------------------------------------------------------ command-line errors: exit 2

USAGE_ERRORS = [
    (["--bogus"], "unknown option '--bogus'"),
    (["frob"], "unknown object 'frob'"),
    (["dev"], "missing verb"),
    (["dev", "frob"], "unknown verb 'dev frob'"),
    (["key", "frob"], "unknown verb 'key frob'"),
    (["prog", "frob"], "unknown verb 'prog frob'"),
    (["map", "frob", "x"], "unknown verb 'map frob'"),
    (["table", "frob"], "unknown verb 'table frob'"),
    (["stats", "extra"], "unexpected argument 'extra'"),
    (["dev", "attach"], "needs IFNAME"),
    (["dev", "attach", "a" * (IFNAME_MAX + 1)], f"at most {IFNAME_MAX} fit"),
    (["dev", "attach", "eth0", "name"], "'name' needs a value"),
    (["dev", "attach", "eth0", "name", "v" * (IFNAME_MAX + 1)], f"at most {IFNAME_MAX} fit"),
    (["dev", "attach", "eth0", "key"], "'key' needs a value"),
    (["dev", "attach", "eth0", "key", ""], "key: the file name is empty"),
    (["dev", "attach", "eth0", "key", "a", "name", "v", "key", "b"], "'key' given twice"),
    (["dev", "attach", "eth0", "name", "v", "name", "w"], "'name' given twice"),
    (["dev", "attach", "eth0", "keyfile", "a"], "unexpected argument 'keyfile'"),
    (["dev", "show", "now"], "unexpected argument 'now'"),
    # hex
    (["key", "del", "cid", "0g"], "'g' is not a hex digit"),
    (["key", "del", "cid", "123"], "odd number of hex digits"),
    (["key", "del", "cid", "01::02"], "misplaced ':'"),
    (["key", "del", "cid", ""], "no bytes given"),
    (["key", "del", "cid", "0x"], "no bytes given"),
    (["key", "del", "cid", "01" * 21], "1 to 20 bytes, got 21"),
    (["key", "del"], "needs 'cid HEX'"),
    (["key", "del", "cid", "01", "dir", "sideways"], "dir: 'sideways' is not open or seal"),
    (["key", "del", "cid", "01", "dir", "seal", "dir", "open"], "'dir' given twice"),
    (["key", "del", "cid", "01", "phase", "1"], "unexpected argument 'phase'"),
    (["key", "del", "cid", "01", "peer", "10.0.0.1:1", "local-port", "2"], "one of cid HEX, peer"),
    (["key", "del", "peer", "10.0.0.1:1"], "peer needs local-port"),
    (["key", "del", "cid", "01", "local-port", "2"], "local-port goes with peer"),
    (["key", "del", "peer", "10.0.0.1", "local-port", "2"], "is not ADDR:PORT"),
    (["key", "del", "peer", "2001:db8::1:443", "local-port", "2"], "IPv6 address goes in brackets"),
    (["key", "del", "peer", "[2001:db8::1]443", "local-port", "2"], "is not [IPv6]:PORT"),
    (["key", "del", "peer", "10.0.0.300:1", "local-port", "2"], "not an IPv4 or IPv6 address"),
    (["key", "del", "peer", "10.0.0.1:65536", "local-port", "2"], "out of range (at most 65535)"),
    (["key", "del", "peer", "10.0.0.1:1", "local-port", "x"], "not a number"),
    (["key", "del", "peer", ":1", "local-port", "2"], "no address"),
    (["key", "del", "addr-id", "00" * 20], "addr-id: all zero"),
    (["key", "del", "addr-id", "01" * 19], "addr-id must be 20 bytes, got 19"),
    (["key", "add", "cid", "", "key", KEY, "iv", IV, "hp", HP], "no bytes given"),
    (["key", "add", "cid", "01" * 21, "key", KEY, "iv", IV, "hp", HP], "1 to 20 bytes, got 21"),
    (["key", "add", "cid", "01", "key", KEY[:-2], "iv", IV, "hp", HP], "key must be 16 bytes, got 15"),
    (["key", "add", "cid", "01", "key", KEY + "00", "iv", IV, "hp", HP], "key must be 16 bytes, got 17"),
    (["key", "add", "cid", "01", "key", KEY, "iv", IV[:-2], "hp", HP], "iv must be 12 bytes, got 11"),
    (["key", "add", "cid", "01", "key", KEY, "iv", IV, "hp", HP + "11"], "hp must be 16 bytes, got 17"),
    (["key", "add", "cid", "01", "key", KEY, "iv", IV], "needs the entry (cid HEX or peer ADDR:PORT local-port PORT), key, iv and hp"),
    (["key", "add", "key", KEY, "iv", IV, "hp", HP], "needs the entry"),
    (["key", "add", "cid", "01", "key", KEY, "iv", IV, "hp", HP, "prev-key", NKEY], "prev-key and prev-iv go together"),
    (["key", "add", "cid", "01", "key", KEY, "iv", IV, "hp", HP, "prev-key", NKEY, "prev-iv", NIV, "next-key", NKEY,
      "next-iv", NIV], "one or the other"),
    (["key", "add", "cid", "01", "dir", "seal", "key", KEY, "iv", IV, "hp", HP, "prev-key", NKEY, "prev-iv", NIV],
     "open entries only"),
    (["key", "add", "cid", "01", "key", KEY, "iv", IV, "hp", HP, "next-key", NKEY], "next-key and next-iv go together"),
    (["key", "add", "cid", "01", "key", KEY, "iv", IV, "hp", HP, "next-key", NKEY, "next-iv", NIV[:-2]],
     "next-iv must be 12 bytes"),
    (["key", "update", "cid", "01", "key", KEY, "iv", IV, "hp", HP, "phase", "2"], "out of range"),
    (["key", "add", "cid", "01", "key", KEY, "iv", IV, "hp", HP, "cid", "02"], "'cid' given twice"),
    (["key", "add", "cid", "01", "key", KEY, "iv", IV, "hp", HP, "colour", "red"], "unknown keyword 'colour'"),
    (["key", "add", "cid", "01", "key"], "'key' needs a value"),
    # prog
    (["prog", "load"], "needs FILE"),
    (["prog", "load", "x.nbpf", "name", "n" * (NAME_MAX + 1)], f"at most {NAME_MAX} fit"),
    (["prog", "load", "x.nbpf", "now"], "unexpected argument 'now'"),
    # map
    (["map", "dump"], "needs the map NAME"),
    (["map", "dump", "m" * (NAME_MAX + 1)], f"at most {NAME_MAX} fit"),
    (["map", "lookup", "m"], "needs 'key HEX'"),
    (["map", "lookup", "m", "key", "00" * 257], "longer than 256 bytes"),
    (["map", "update", "m", "key", "00"], "needs 'value HEX'"),
    (["map", "update", "m", "key", "00", "value", "00" * 1025], "longer than 1024 bytes"),
    (["map", "update", "m", "key", "00", "value", "01", "sometimes"], "unknown update flag 'sometimes'"),
    (["map", "delete", "m", "key", "zz"], "'z' is not a hex digit"),
    # events
    (["events"], "needs the map NAME"),
    (["events", "e" * (NAME_MAX + 1)], f"at most {NAME_MAX} fit"),
    (["events", "rb", "count"], "'count' needs a value"),
    (["events", "rb", "count", "x"], "not a number"),
    (["events", "rb", "interval", "3600001"], "out of range"),
    (["events", "rb", "often", "1"], "unknown keyword 'often'"),
    (["map", "dump", "m", "--follow"], "--follow goes with events only"),
    # table
    (["table", "add", "ports", "0", "1"], "unknown table 'ports'"),
    (["table", "add", "port", "0"], "needs TABLE INDEX VALUE"),
    (["table", "add", "port", "8", "1"], "out of range (at most 7)"),
    (["table", "add", "lport_cfg", "4", "1"], "out of range (at most 3)"),
    (["table", "add", "port", "0", "0x100000000"], "out of range"),
    (["table", "add", "port", "0", "-1"], "unknown option '-1'"),
    (["table", "add", "port", "zero", "1"], "not a number"),
    (["table", "add", "port", "0", "12z"], "not a number"),
    (["table", "del", "port"], "needs TABLE INDEX"),
    (["table", "del", "vlan", "0"], "unknown table 'vlan'"),
]


@pytest.mark.parametrize("args,msg", USAGE_ERRORS, ids=[" ".join(a)[:60] for a, _ in USAGE_ERRORS])
def test_usage_error(args, msg):
    p = run(*args)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert msg in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "Segmentation" not in p.stderr
    j = run("--json", *args)
    assert j.returncode == 2
    err = json.loads(j.stdout)["error"]
    assert msg in err["message"] and err["usage"] is True


# ------------------------------------------------------------------ file errors: exit 1

def test_prog_load_elf_object(tmp_path):
    f = tmp_path / "prog.o"
    f.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(200))
    p = run("prog", "load", f)
    assert p.returncode == 1
    assert "ELF object" in p.stderr and "nanobpf-load" in p.stderr


def test_prog_load_missing_file(tmp_path):
    p = run("prog", "load", tmp_path / "nope.nbpf")
    assert p.returncode == 1 and "No such file or directory" in p.stderr


def test_prog_load_directory(tmp_path):
    p = run("prog", "load", tmp_path)
    assert p.returncode == 1 and "not a regular file" in p.stderr


def test_prog_load_oversize(tmp_path):
    f = tmp_path / "big.nbpf"
    f.write_bytes(image(extra=ctrl.NANOBPF_CTRL_MAX_IMAGE))
    p = run("prog", "load", f)
    assert p.returncode == 1 and f"more than the {ctrl.NANOBPF_CTRL_MAX_IMAGE} bytes" in p.stderr


@pytest.mark.parametrize("blob,msg", [
    (b"hello world" * 20, "no 'NBPF' magic"),
    (b"NBPF", "shorter than the 80-byte image header"),
    (image()[:-4], "truncated"),
    (image()[:4] + b"\x09\x00" + image()[6:], "layout version 9"),
], ids=["text", "short", "truncated", "version"])
def test_prog_load_not_an_image(tmp_path, blob, msg):
    f = tmp_path / "x.nbpf"
    f.write_bytes(blob)
    p = run("prog", "load", f)
    assert p.returncode == 1 and msg in p.stderr, p.stderr


# ------------------------------------------------------------------ no module on this host: exit 1

VALID = [
    ["dev", "show"], ["dev", "attach", "eth0"], ["dev", "attach", "eth0", "name", "nbpf7"],
    ["dev", "attach", "eth0", "key", "/nonexistent/ctrl.key", "name", "nbpf7"], ["dev", "detach"],
    ["dev", "reset"], ["key", "list"], ["key", "del", "cid", "01" * 20], ["key", "del", "cid", "01", "dir", "seal"],
    ["key", "del", "peer", "[::1]:4433", "local-port", "443", "dir", "open"], ["key", "del", "addr-id", "01" * 20],
    ["key", "add", "cid", "0a:0b:0c:0d", "key", KEY, "iv", IV, "hp", HP, "phase", "1", "next-key", NKEY,
     "next-iv", NIV],
    ["key", "update", "cid", "0x01", "key", KEY, "iv", IV, "hp", HP], ["prog", "show"], ["prog", "unload"],
    ["key", "add", "dir", "seal", "peer", "192.0.2.1:1", "local-port", "2", "key", KEY, "iv", IV, "hp", HP],
    ["map", "dump", "m" * NAME_MAX], ["map", "dump", abi.KEYTABLE_MAP_NAME], ["map", "lookup", "m", "key", "00"], ["map", "delete", "m", "key", "00" * 256],
    ["map", "update", "m", "key", "00", "value", "00" * 1024, "exist"], ["table", "add", "port", "7", "0xffffffff"],
    ["table", "add", "profile", "0x7", "123"], ["table", "del", "lport_cfg", "3"], ["stats"],
]


@needs_no_module
@pytest.mark.parametrize("tool", [CTL, STATIC], ids=["dynamic", "static"])
@pytest.mark.parametrize("args", VALID, ids=[" ".join(a)[:50] for a in VALID])
def test_family_not_found(tool, args):
    p = run(*args, tool=tool)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert p.stderr.strip() == f"nanobpfctl: {NOT_FOUND}"
    j = run("--json", *args, tool=tool)
    assert j.returncode == 1
    assert json.loads(j.stdout) == {"error": {"message": NOT_FOUND, "errno": 2, "device_status": None}}


@needs_no_module
def test_prog_load_valid_image_reaches_the_family_lookup(tmp_path):
    f = tmp_path / "ok.nbpf"
    f.write_bytes(image())
    p = run("prog", "load", f, "name", "quic")
    assert p.returncode == 1 and NOT_FOUND in p.stderr


# ------------------------------------------------------------------ over the fake family (nanobpfctl-mock)

def mock(*args, log=None, **env):
    e = {"NANOBPF_MOCK_" + k.upper(): str(v) for k, v in env.items()}
    if log is not None:
        e["NANOBPF_MOCK_LOG"] = str(log)
    return run(*args, tool=MOCK, env=e)


def mock_json(*args, **kw):
    p = mock("--json", *args, **kw)
    assert p.returncode == 0, (p.stdout, p.stderr)
    return json.loads(p.stdout)


def requests(log):
    """The mock's log: [(command name, {attribute name: bytes})]"""
    names = {num: a for a, (num, _, _) in ctrl.GENL_ATTRS.items()}
    out = []
    for line in Path(log).read_text().splitlines():
        r = json.loads(line)
        out.append((ctrl.GENL_CMD_NAMES[r["cmd"]], {names[t]: bytes.fromhex(v) for t, v in r["attrs"]}, r["flags"]))
    return out


def test_mock_absent_family():
    p = mock("dev", "show", absent=1)
    assert p.returncode == 1 and NOT_FOUND in p.stderr


def test_mock_dev_show():
    d = mock_json("dev", "show")
    assert d == {"ifname": "eth0", "vdev": "nbpf0", "link_state": "in_sync", "link_state_id": 2,
                 "epoch": 0x1234abcd, "version": ctrl.VERSION, "key_count": 3, "last_error": None}
    p = mock("dev", "show")
    assert p.stdout.splitlines() == ["ifname eth0  vdev nbpf0",
                                     f"link in_sync  epoch 0x1234abcd  version {ctrl.VERSION}  keys 3"]


DEVICE_KEY = bytes(range(0x10, 0x20))


def key_file(tmp_path, text, name="ctrl.key"):
    f = tmp_path / name
    f.write_text(text)
    return f


def test_mock_dev_attach_sends_names_and_key(tmp_path):
    log = tmp_path / "log"
    kf = key_file(tmp_path, f"# a comment\n{DEVICE_KEY.hex()}\n")
    other = key_file(tmp_path, "ff" * 16, "other.key")
    assert mock_json("dev", "attach", "eth1", "name", "nbpf3", "key", kf, log=log) == {"ok": True}
    assert mock_json("dev", "attach", "eth2", "key", other, "name", "nbpf4", log=log) == {"ok": True}
    assert mock("dev", "detach", log=log).returncode == 0
    assert mock("dev", "reset", log=log).stdout == ""
    reqs = requests(log)
    assert [r[0] for r in reqs] == ["dev_attach", "dev_attach", "dev_detach", "dev_reset"]
    assert reqs[0][1] == {"IFNAME": b"eth1\0", "VDEV_NAME": b"nbpf3\0", "CTRL_KEY": DEVICE_KEY}
    assert reqs[1][1] == {"IFNAME": b"eth2\0", "VDEV_NAME": b"nbpf4\0", "CTRL_KEY": b"\xff" * 16}
    assert reqs[2][1] == {} and reqs[3][1] == {}


def test_mock_dev_attach_key_from_environment(tmp_path):
    log = tmp_path / "log"
    kf = key_file(tmp_path, DEVICE_KEY.hex())
    p = run("--json", "dev", "attach", "eth0", tool=MOCK, env={"NANOBPF_CTRL_KEY": str(kf), "NANOBPF_MOCK_LOG": str(log)})
    assert p.returncode == 0 and json.loads(p.stdout) == {"ok": True}, p.stderr
    assert requests(log)[0][1] == {"IFNAME": b"eth0\0", "CTRL_KEY": DEVICE_KEY}
    # key FILE wins over the environment
    p = run("dev", "attach", "eth0", "key", tmp_path / "absent.key", tool=MOCK, env={"NANOBPF_CTRL_KEY": str(kf)})
    assert p.returncode == 1 and f"device key {tmp_path / 'absent.key'}: No such file" in p.stderr


@pytest.mark.skipif(Path("/etc/nanobpf/ctrl.key").exists(), reason="this host has /etc/nanobpf/ctrl.key")
def test_mock_dev_attach_default_key_file_missing(tmp_path):
    log = tmp_path / "log"
    p = run("--json", "dev", "attach", "eth0", tool=MOCK, env={"NANOBPF_CTRL_KEY": "", "NANOBPF_MOCK_LOG": str(log)})
    assert p.returncode == 1
    err = json.loads(p.stdout)["error"]
    assert err["errno"] == errno_mod.ENOENT and err["message"].startswith(
        "device key /etc/nanobpf/ctrl.key: No such file or directory; `nanobpf-ctrl-key new FILE` makes one"), err
    assert not log.exists()          # nothing sent without a key


# The key file format, checked against the reference parser (nanobpf.ctrlkey.parse_key_text): the key
# the library sends, or the error both give.
KEY_TEXTS = {
    "plain": DEVICE_KEY.hex(),
    "newline": DEVICE_KEY.hex() + "\n",
    "upper": DEVICE_KEY.hex().upper(),
    "comments and blanks": f"# NanoBPF device key\n\n   # indented comment\n{DEVICE_KEY[:8].hex()} \t{DEVICE_KEY[8:].hex()}\r\n",
    "split in pairs": " ".join(f"{b:02x}" for b in DEVICE_KEY),
    "odd split": DEVICE_KEY.hex()[:5] + "\n" + DEVICE_KEY.hex()[5:],
    "not hex": "zz" + DEVICE_KEY.hex()[2:],
    "0x prefix": "0x" + DEVICE_KEY.hex(),
    "comment after the key": DEVICE_KEY.hex() + " # the key",
    "odd digits": DEVICE_KEY.hex()[:-1],
    "short": DEVICE_KEY[:15].hex(),
    "long": DEVICE_KEY.hex() + "00",
    "empty": "",
    "only a comment": "# nothing here\n",
}


@pytest.mark.parametrize("name", KEY_TEXTS)
def test_mock_key_file_format_as_ctrlkey(tmp_path, name):
    from nanobpf.ctrlkey import KeyFileError, parse_key_text
    text = KEY_TEXTS[name]
    kf = key_file(tmp_path, text)
    log = tmp_path / "log"
    try:
        want, why = parse_key_text(text, str(kf)), None
    except KeyFileError as e:
        want, why = None, str(e)
    p = mock("--json", "dev", "attach", "eth0", "key", kf, log=log)
    if want is not None:
        assert p.returncode == 0, p.stdout
        assert requests(log)[0][1]["CTRL_KEY"] == want
        return
    assert p.returncode == 1 and not log.exists(), p.stdout
    err = json.loads(p.stdout)["error"]
    assert err["errno"] == errno_mod.EINVAL
    assert err["message"] == f"device key {why}", (err["message"], why)     # the same text, named as a key


def test_mock_key_file_not_text(tmp_path):
    kf = tmp_path / "bin.key"          # the 16 bytes themselves (nanobpf-ctrl-key bin's output), not text
    kf.write_bytes(b"\0" + DEVICE_KEY[1:])
    p = mock("dev", "attach", "eth0", "key", kf)
    assert p.returncode == 1 and "binary, not a key file" in p.stderr, p.stderr
    big = key_file(tmp_path, "#" * 5000 + "\n" + DEVICE_KEY.hex(), "big.key")
    p = mock("dev", "attach", "eth0", "key", big)
    assert p.returncode == 1 and "not a key file" in p.stderr, p.stderr
    p = mock("dev", "attach", "eth0", "key", tmp_path)                 # a directory
    assert p.returncode == 1 and f"device key {tmp_path}:" in p.stderr, p.stderr


def keys_fields(blob):
    st = abi.STRUCTS["quic_keys"]
    assert len(blob) == st.size == ctrl.NANOBPF_CTRL_KEYS_SIZE
    return dict(zip([f for f, _, _ in st.fields], struct.unpack(st.fmt, blob)))


def test_mock_key_add_builds_the_key_entry(tmp_path):
    log = tmp_path / "log"
    cid = "0a0b0c0d0e"
    assert mock_json("key", "add", "cid", cid, "key", KEY, "iv", IV, "hp", HP, "phase", "1",
                     "next-key", NKEY, "next-iv", NIV, log=log) == {"ok": True}
    assert mock_json("key", "update", "hp", HP, "iv", IV, "key", KEY, "cid", "0x" + cid, log=log) == {"ok": True}
    assert mock_json("key", "del", "cid", "0a:0b:0c:0d:0e", log=log) == {"ok": True}
    (c1, a1, _), (c2, a2, _), (c3, a3, _) = requests(log)
    assert (c1, c2, c3) == ("key_add", "key_update", "key_del")
    k = keys_fields(a1["KEYS"])
    assert a1["CID"] == bytes.fromhex(cid) and a1["DIR"] == bytes([abi.NANOBPF_QUIC_DIR_OPEN]) and "ADDR_ID" not in a1
    assert k["key_phase"] == 1 and k["flags"] == abi.NANOBPF_QUIC_KEY_NEXT and k["cid_len"] == 5 and k["reserved"] == 0
    assert k["key"] == bytes.fromhex(KEY + NKEY) and k["iv"] == bytes.fromhex(IV + NIV)
    assert k["hp"] == bytes.fromhex(HP) and k["pad"] == bytes(4)
    k2 = keys_fields(a2["KEYS"])
    assert k2["key_phase"] == 0 and k2["flags"] == 0 and k2["key"] == bytes.fromhex(KEY) + bytes(16)
    assert k2["iv"] == bytes.fromhex(IV) + bytes(12)
    assert a3 == {"CID": bytes.fromhex(cid), "DIR": bytes([abi.NANOBPF_QUIC_DIR_OPEN])}


def test_mock_key_entries_by_direction_and_address(tmp_path):
    """dir seal, a peer with zero-length CIDs by address (IPv4 mapped, IPv6, or the raw id), previous keys."""
    log = tmp_path / "log"
    v4 = bytes(10) + b"\xff\xff" + bytes([192, 0, 2, 9]) + struct.pack(">HH", 4433, 443)
    v6 = bytes.fromhex("20010db8000000000000000000000001") + struct.pack(">HH", 50000, 8443)
    keys = ["key", KEY, "iv", IV, "hp", HP]
    assert mock_json("key", "add", "cid", "a1a2", "dir", "seal", *keys, log=log) == {"ok": True}
    assert mock_json("key", "add", "peer", "192.0.2.9:4433", "local-port", "443", "dir", "seal", *keys,
                     log=log) == {"ok": True}
    assert mock_json("key", "update", "dir", "open", "peer", "[2001:db8::1]:50000", "local-port", "8443", *keys,
                     "phase", "1", "prev-key", NKEY, "prev-iv", NIV, log=log) == {"ok": True}
    assert mock_json("key", "del", "addr-id", v6.hex(), "dir", "open", log=log) == {"ok": True}
    assert mock_json("key", "del", "dir", "seal", "cid", "a1a2", log=log) == {"ok": True}
    (c1, a1, _), (c2, a2, _), (c3, a3, _), (c4, a4, _), (c5, a5, _) = requests(log)
    seal, open_ = bytes([abi.NANOBPF_QUIC_DIR_SEAL]), bytes([abi.NANOBPF_QUIC_DIR_OPEN])
    assert (c1, a1["CID"], a1["DIR"], keys_fields(a1["KEYS"])["cid_len"]) == ("key_add", b"\xa1\xa2", seal, 2)
    assert (c2, a2["ADDR_ID"], a2["DIR"], "CID" in a2) == ("key_add", v4, seal, False)
    assert keys_fields(a2["KEYS"])["cid_len"] == 0
    k3 = keys_fields(a3["KEYS"])
    assert (c3, a3["ADDR_ID"], a3["DIR"]) == ("key_update", v6, open_)
    assert k3["flags"] == abi.NANOBPF_QUIC_KEY_PREV and k3["key_phase"] == 1 and k3["key"][16:] == bytes.fromhex(NKEY)
    assert (c4, a4) == ("key_del", {"ADDR_ID": v6, "DIR": open_})
    assert (c5, a5) == ("key_del", {"CID": b"\xa1\xa2", "DIR": seal})


def test_mock_key_list(tmp_path):
    log = tmp_path / "log"
    keys = mock_json("key", "list", log=log)
    none = {"addr_id": None, "peer": None, "local_port": None}
    assert keys == [
        {"cid": "01020304", "cid_len": 4, "dir": "open", **none, "key_phase": 0, "slot": 7, "synced": True},
        {"cid": "aabbccddeeff0011", "cid_len": 8, "dir": "seal", **none, "key_phase": 1, "slot": 8, "synced": False},
        {"cid": "", "cid_len": 0, "dir": "open", "addr_id": "00000000000000000000ffffc0000201115101bb",
         "peer": "192.0.2.1:4433", "local_port": 443, "key_phase": 0, "slot": 9, "synced": False}]
    (cmd, attrs, flags), = requests(log)
    assert cmd == "key_get" and attrs == {} and flags & 0x300 == 0x300   # NLM_F_DUMP
    assert mock("key", "list").stdout.splitlines() == [
        "cid 01020304  dir open  phase 0  slot 7  synced",
        "cid aabbccddeeff0011  dir seal  phase 1  slot 8  not synced",
        "peer 192.0.2.1:4433 local-port 443  dir open  phase 0  slot 9  not synced"]
    assert mock_json("key", "list", empty=1) == []


def test_mock_prog(tmp_path):
    log = tmp_path / "log"
    f = tmp_path / "p.nbpf"
    img = image(name=b"p" * 31, extra=64)
    f.write_bytes(img)
    info = {"loaded": True, "name": "xdp_mock", "image_len": 4096, "crc32": 0xdeadbeef, "insns": 500}
    assert mock_json("prog", "load", f, log=log) == info
    assert mock_json("prog", "load", f, "name", "quic", log=log) == info
    assert mock_json("prog", "unload", log=log) == {"ok": True}
    assert mock_json("prog", "show") == info
    assert mock("prog", "show").stdout == "prog xdp_mock  insns 500  image 4096 bytes  crc32 0xdeadbeef\n"
    assert mock_json("prog", "show", empty=1) == {"loaded": False, "name": None, "image_len": None,
                                                   "crc32": None, "insns": None}
    assert mock("prog", "show", empty=1).stdout == "no program attached\n"
    reqs = requests(log)
    assert [r[0] for r in reqs] == ["prog_load", "prog_get", "prog_load", "prog_get", "prog_unload"]
    assert reqs[0][1] == {"IMAGE": img, "PROG_NAME": b"p" * 31 + b"\0"}   # the image's name
    assert reqs[2][1] == {"IMAGE": img, "PROG_NAME": b"quic\0"}


def test_mock_maps(tmp_path):
    log = tmp_path / "log"
    entries = [{"key": "00000000", "value": "0100000000000000"}, {"key": "01000000", "value": "0201000000000000"},
               {"key": "02000000", "value": "0300000000000080"}]
    assert mock_json("map", "dump", "counters", log=log) == entries
    assert mock("map", "dump", "counters").stdout.splitlines()[1] == \
        "key: 01 00 00 00  value: 02 01 00 00 00 00 00 00"
    reqs = requests(log)
    assert [r[0] for r in reqs] == ["map_get_next", "map_lookup"] * 3 + ["map_get_next"]
    assert reqs[0][1] == {"MAP_NAME": b"counters\0"}
    assert reqs[2][1] == {"MAP_NAME": b"counters\0", "MAP_KEY": bytes(4)}
    assert mock_json("map", "dump", "counters", empty=1) == []
    assert mock_json("map", "lookup", "counters", "key", "02000000") == entries[2]
    p = mock("--json", "map", "lookup", "counters", "key", "07000000")
    assert p.returncode == 1 and json.loads(p.stdout)["error"]["errno"] == 2
    p = mock("map", "dump", "nosuch")
    assert p.returncode == 1 and "mock: no such map" in p.stderr

    log2 = tmp_path / "log2"
    for flag, num in [("any", 0), ("noexist", 1), ("exist", 2), (None, 0)]:
        args = ["map", "update", "counters", "key", "01000000", "value", "0102"] + ([flag] if flag else [])
        assert mock_json(*args, log=log2) == {"ok": True}
    assert mock_json("map", "delete", "counters", "key", "01:00:00:00", log=log2) == {"ok": True}
    reqs = requests(log2)
    for (cmd, attrs, _), num in zip(reqs, [0, 1, 2, 0]):
        assert cmd == "map_update"
        assert attrs == {"MAP_NAME": b"counters\0", "MAP_KEY": bytes([1, 0, 0, 0]), "MAP_VALUE": b"\x01\x02",
                         "MAP_FLAGS": struct.pack("=Q", num)}
    assert reqs[-1][:2] == ("map_delete", {"MAP_NAME": b"counters\0", "MAP_KEY": bytes([1, 0, 0, 0])})


MOCK_EVENTS = [(i & 1, bytes(0x10 * i + k for k in range(3 * i))) for i in range(5)]   # mock_genl.c


def test_mock_events(tmp_path):
    """events NAME reads until none wait (the mock gives 2 a read, 3 lost before the first), text and
    JSON; count N stops after N; a device refusal is explained."""
    log = tmp_path / "log"
    recs = [{"index": i, "data": d.hex()} for i, d in MOCK_EVENTS]
    assert mock_json("events", "events", log=log) == {"records": recs, "lost": 3}
    reqs = requests(log)
    assert [r[0] for r in reqs] == ["events_read"] * 3 and all(a == {"MAP_NAME": b"events\0"} for _, a, _ in reqs)
    assert mock("events", "events").stdout.splitlines() == [
        "index 0  len 0", "index 1  len 3  10 11 12", "index 0  len 6  20 21 22 23 24 25",
        "index 1  len 9  30 31 32 33 34 35 36 37 38", "index 0  len 12  40 41 42 43 44 45 46 47 48 49 4a 4b",
        "lost 3"]
    log2 = tmp_path / "log2"
    assert mock_json("events", "events", "count", "3", log=log2) == {"records": recs[:3], "lost": 3}
    assert [a.get("EVENTS_MAX") for _, a, _ in requests(log2)] == [struct.pack("=H", 3), struct.pack("=H", 1)]
    p = mock("--json", "events", "other")
    assert p.returncode == 1 and json.loads(p.stdout)["error"]["device_status"] == "no_map"
    p = mock("events", "other")
    assert p.returncode == 1 and "the device refused it (no_map)" in p.stderr


def test_mock_events_follow():
    """--follow prints each record as it comes, one JSON value per line, and the lost count as its own
    line when the device reports drops; count N ends it."""
    p = mock("--json", "events", "events", "--follow", "count", "5", "interval", "1")
    assert p.returncode == 0, p.stderr
    lines = [json.loads(ln) for ln in p.stdout.splitlines()]
    recs = [{"index": i, "data": d.hex()} for i, d in MOCK_EVENTS]
    assert lines == recs[:2] + [{"lost": 3}] + recs[2:]
    p = mock("-f", "events", "events", "count", "4")
    assert p.returncode == 0 and p.stdout.splitlines()[2] == "lost 3" and len(p.stdout.splitlines()) == 5


def test_mock_tables(tmp_path):
    log = tmp_path / "log"
    assert mock_json("table", "add", "profile", "5", "0xdeadbeef", log=log) == {"ok": True}
    assert mock_json("table", "del", "lport_cfg", "0x3", log=log) == {"ok": True}
    (c1, a1, _), (c2, a2, _) = requests(log)
    assert c1 == "table_set" and a1 == {"TABLE": bytes([ctrl.NANOBPF_CTRL_TABLE_PROFILE]),
                                        "TABLE_INDEX": struct.pack("=H", 5),
                                        "TABLE_VALUE": struct.pack("=I", 0xdeadbeef)}
    assert c2 == "table_del" and a2 == {"TABLE": bytes([ctrl.NANOBPF_CTRL_TABLE_LPORT_CFG]),
                                        "TABLE_INDEX": struct.pack("=H", 3)}


def test_mock_stats():
    s = mock_json("stats")
    assert list(s) == ["device", "driver"]
    assert s["device"] == {ctrl.STAT_NAMES[i]: 10 * i + 1 for i in sorted(ctrl.STAT_NAMES)}
    assert s["driver"] == {ctrl.DRV_STAT_NAMES[i]: 100 * i + (1 << 40) for i in sorted(ctrl.DRV_STAT_NAMES)}
    text = mock("stats").stdout.splitlines()
    assert text[0] == "device:" and text[1].split() == ["ctrl_rx", "1"]
    assert "driver:" in text and len(text) == 2 + len(ctrl.STAT_NAMES) + len(ctrl.DRV_STAT_NAMES)


def test_mock_device_refusal_is_explained(tmp_path):
    """The driver's errno for a device status, its extended ACK text, and DEV_GET's status + text."""
    f = tmp_path / "p.nbpf"
    f.write_bytes(image())
    st = ctrl.NANOBPF_CTRL_ST_VERIFIER
    errno = getattr(errno_mod, ctrl.STATUS_ERRNOS[st])   # the driver's errno for VERIFIER
    fail = f"{ctrl.NANOBPF_CMD_PROG_LOAD}:{errno}:{st}:R1 type=scalar expected=ctx"
    p = mock("prog", "load", f, fail=fail)
    assert p.returncode == 1
    assert p.stderr.strip() == ("nanobpfctl: prog load: the device refused it (verifier): mock device: verifier "
                                "[driver: R1 type=scalar expected=ctx]")
    j = json.loads(mock("--json", "prog", "load", f, fail=fail).stdout)["error"]
    assert j["device_status"] == "verifier" and j["errno"] == errno
    # a status whose errno is not the one the command failed with is not blamed on the device
    p = mock("--json", "prog", "load", f, fail=f"{ctrl.NANOBPF_CMD_PROG_LOAD}:{errno}:{ctrl.NANOBPF_CTRL_ST_FULL}")
    assert json.loads(p.stdout)["error"] == {"message": f"prog load: {os.strerror(errno)}", "errno": errno,
                                             "device_status": None}


def test_mock_driver_refusals_are_not_blamed_on_the_device():
    """The driver named the attribute it refused: its reason is shown, DEV_GET is not asked (its status
    may belong to an older request); a driver text pointing at DEV_GET is not repeated."""
    key = ["key", "add", "cid", "0102", "key", KEY, "iv", IV, "hp", HP]
    fail = f"{ctrl.NANOBPF_CMD_KEY_ADD}:17:{ctrl.NANOBPF_CTRL_ST_EXIST}:connection exists"
    p = mock("--json", *key, fail=fail, fail_attr=ctrl.GENL_ATTRS["CID"][0])
    assert json.loads(p.stdout)["error"] == {
        "message": f"key add: {os.strerror(17)}: connection exists (refused attribute CID)", "errno": 17,
        "device_status": None}
    p = mock("--json", *key, fail=fail)
    assert json.loads(p.stdout)["error"]["message"] == \
        "key add: the device refused it (exist): mock device: exist [driver: connection exists]"
    fail = f"{ctrl.NANOBPF_CMD_KEY_ADD}:17:{ctrl.NANOBPF_CTRL_ST_EXIST}:the device refused it (DEV_GET: DEV_STATUS)"
    p = mock(*key, fail=fail)
    assert p.stderr == "nanobpfctl: key add: the device refused it (exist): mock device: exist\n"


def test_mock_dev_show_last_error():
    d = mock_json("dev", "show", fail=f"0:0:{ctrl.NANOBPF_CTRL_ST_NO_MAP}")
    assert d["last_error"] == {"status": "no_map", "status_id": ctrl.NANOBPF_CTRL_ST_NO_MAP,
                               "message": "mock device: no_map"}
    assert mock("dev", "show", fail=f"0:0:{ctrl.NANOBPF_CTRL_ST_NO_MAP}").stdout.splitlines()[2] == \
        "last device error: no_map: mock device: no_map"


def test_mock_key_get_failure_is_one_json_value():
    p = mock("--json", "key", "list", fail=f"{ctrl.NANOBPF_CMD_KEY_GET}:12:0:no memory in the driver")
    assert p.returncode == 1
    assert json.loads(p.stdout) == {"error": {"message": "key list: Cannot allocate memory: no memory in the driver",
                                              "errno": 12, "device_status": None}}


def test_mock_permission_denied_hint():
    p = mock("dev", "reset", fail=f"{ctrl.NANOBPF_CMD_DEV_RESET}:1")
    assert p.returncode == 1 and "CAP_NET_ADMIN" in p.stderr


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed")
def test_mock_prog_load_of_a_real_image(tmp_path):
    """clang -> nanobpf-load -> nanobpfctl prog load: the image passes the tool's checks and is sent
    byte for byte, named as the loader named it; the object itself is refused."""
    obj, img, log = tmp_path / "xdp_pass.o", tmp_path / "xdp_pass.nbpf", tmp_path / "log"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{platform.machine()}-linux-gnu",
                    f"-I{BUILD / 'generated/include'}", "-c", str(ROOT / "sw/ebpf/examples/xdp_pass.c"),
                    "-o", str(obj)], check=True)
    subprocess.run([command("nanobpf-load"), str(obj), "-o", str(img)], check=True)
    assert mock("prog", "load", img, log=log).returncode == 0
    (cmd, attrs, _), _ = requests(log)
    info = json.loads(subprocess.run([command("nanobpf-load"), str(obj), "--json"],
                                     capture_output=True, text=True, check=True).stdout)
    assert cmd == "prog_load" and attrs["IMAGE"] == img.read_bytes()
    assert attrs["PROG_NAME"] == info["image"]["program"].encode() + b"\0" == b"xdp_pass\0"
    p = mock("prog", "load", obj)
    assert p.returncode == 1 and "nanobpf-load" in p.stderr
