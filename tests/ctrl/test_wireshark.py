"""The Wireshark dissector of the control protocol and the data-frame shim (nanobpf.lua, written by
nanobpf-genctrl from hw/defs/ctrl.toml; `make wireshark` installs it), run by tshark: every
message type as request and as response (OK, every error status, error texts, a replay), every body
struct with non-trivial values, truncated and malformed frames, shims (ENCRYPT/DECRYPTED, CID lengths
0/8/20, malformed ones) around IPv4 and IPv6 UDP that must still decode below, a real session with the
reference device model, and the demo's pcaps when `make demo` has written them. Decoded values are
compared with what was built; no Lua error may appear. Needs tshark (`make setup` installs it)."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tomllib

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
import pytest

from nanobpf import BUILD, ROOT, command
from nanobpf import ctrl, ctrlkey, pcap

GENCTRL = command("nanobpf-genctrl")
DEFS = ROOT / "hw/defs/ctrl.toml"
NAME = {v: n.upper() for v, n in D.MSG_NAMES.items()}
MSG = {n: v for v, n in NAME.items()}
STATUS = {v: n.upper() for v, n in D.STATUS_NAMES.items()}
RESPONSE, REPLAY = D.NANOBPF_CTRL_F_RESPONSE, D.NANOBPF_CTRL_F_REPLAY
ENCRYPT, DECRYPTED = D.NANOBPF_SHIM_F_ENCRYPT, D.NANOBPF_SHIM_F_DECRYPTED
PROBLEMS = ("nanobpf.malformed", "nanobpf.invalid", "nanobpf_shim.malformed")
CLEAR = ("-o", "nanobpf.decrypted:TRUE")   # the dissector's preference: request bodies in clear


# ---------------------------------------------------------------- tshark
@pytest.fixture(scope="module")
def tshark():
    path = shutil.which("tshark")
    if path is None:
        pytest.fail("tshark is not installed: run `make setup` (sw/tools/setup.sh apt installs it with the other "
                    "apt packages)")
    return path


@pytest.fixture(scope="module")
def lua(tmp_path_factory):
    out = tmp_path_factory.mktemp("wireshark") / "nanobpf.lua"
    p = subprocess.run([GENCTRL, "--lua", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out


@pytest.fixture(scope="module")
def run(tshark, lua, tmp_path_factory):
    # An empty home: a copy installed by `make wireshark` (registering the same protocols) and the user's
    # preferences stay out of the test.
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env["HOME"] = str(home)

    def run(pcap_path, *args):
        p = subprocess.run([tshark, "-n", "-r", str(pcap_path), "-X", f"lua_script:{lua}", *args],
                           capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        noise = [ln for ln in p.stderr.splitlines() if re.search(r"lua|error", ln, re.I)]
        assert not noise, "tshark stderr:\n" + p.stderr
        assert "Lua Error" not in p.stdout and "_ws.lua.error" not in p.stdout, p.stdout[:4000]
        return p.stdout
    return run


def flatten(node, out=None):
    """{field: [values in tree order]} of one packet's tshark JSON; subtrees count as None."""
    out = {} if out is None else out
    for k, v in node.items():
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, dict):
                out.setdefault(k, []).append(None)
                flatten(x, out)
            else:
                out.setdefault(k, []).append(x)
    return out


def decode(run, path, clear=True):
    """[(fields, protocol column, info column)] per frame of the pcap; clear: its requests' bodies are in
    clear (as nanobpf-ctrl-key decrypt writes them), the dissector decodes them."""
    opts = CLEAR if clear else ()
    packets = json.loads(run(path, *opts, "-T", "json", "--no-duplicate-keys"))
    cols = [ln.split("\t") for ln in run(path, *opts, "-T", "fields", "-E", "separator=/t", "-e", "_ws.col.Protocol",
                                         "-e", "_ws.col.Info").splitlines()]
    assert len(packets) == len(cols)
    return [(flatten(p["_source"]["layers"]), c[0], c[1]) for p, c in zip(packets, cols)]


def shown(got, want):
    """got (tshark's JSON text) read as the type of want."""
    if isinstance(want, bool):
        return got == "1"
    if isinstance(want, int):
        return int(got, 0)
    if isinstance(want, bytes):
        return bytes.fromhex(got.replace(":", ""))
    return got


# ---------------------------------------------------------------- frames and what they must show
class Case:
    def __init__(self, id, frame, info, fields=None, structs=None, experts=(), messages=(), protocol="NanoBPF",
                 absent=()):
        self.id, self.frame, self.info, self.fields = id, frame, info, fields or {}
        self.structs, self.experts, self.messages = structs, set(experts), messages
        self.protocol, self.absent = protocol, absent


def body_of(parts):
    """(bytes, {field: [values]}, {struct names}) of a body given as parts: ("struct", name, fields),
    ("array", name, [fields]), ("part", name, bytes), ("text", None, str)."""
    data, fields, structs = b"", {}, set()
    for kind, name, value in parts:
        if kind == "part":
            data += value
            fields.setdefault(f"nanobpf.body.{name}", []).append(value)
            continue
        if kind == "text":
            data += value.encode()
            fields.setdefault("nanobpf.errmsg", []).append(value)
            continue
        structs.add(name)
        for fl in value if kind == "array" else [value]:
            data += D.pack(name, **fl)
            for f, k, n in D.STRUCTS[name][1]:
                v = fl.get(f, b"" if k in ("bytes", "str") else 0)
                fields.setdefault(f"nanobpf.{name}.{f}", []).append(bytes(v).ljust(n, b"\0") if k == "bytes" else v)
    return data, fields, structs


def control(id, type_, seq, parts=(), flags=0, status=0, epoch=0x5EED0000, info=None, experts=(), pad_to=0,
            length=None, version=D.VERSION):
    body, fields, structs = body_of(parts)
    resp = bool(flags & RESPONSE)
    frame = ctrl.build(ctrl.HOST_MAC if resp else ctrl.BROADCAST, ctrl.DEVICE_MAC if resp else ctrl.HOST_MAC, type_,
                       seq, epoch, body, flags=flags, status=status, version=version, nonce=bytes(range(12)) if resp else None)
    if not resp:                   # the body in clear, as nanobpf-ctrl-key decrypt writes it
        frame = ctrlkey.decrypt_frame(frame, ctrlkey.default())
    if length is not None:         # a header that lies about its body
        frame = frame[:14 + 12] + struct.pack(">H", length) + frame[14 + 14:]
    frame = frame.ljust(pad_to, b"\0")
    fields.update({"nanobpf.version": [version], "nanobpf.type": [type_], "nanobpf.flags": [flags],
                   "nanobpf.flags.response": [resp], "nanobpf.flags.replay": [bool(flags & REPLAY)],
                   "nanobpf.status": [status], "nanobpf.seq": [seq], "nanobpf.epoch": [epoch],
                   "nanobpf.length": [len(body) if length is None else length]})
    if info is None:
        name = NAME.get(type_, f"type 0x{type_:02x}")
        info = f"{name} {'response ' + STATUS[status] if resp else 'request'} seq={seq}"
        info += " [REPLAY]" if flags & REPLAY else ""
        text = [v for k, n, v in parts if k == "text"]
        info += f': "{text[0]}"' if text else ""
    if resp and status:
        experts = set(experts) | {"nanobpf.error"}
    return Case(id, frame, info, fields, structs, experts)


KEYS = [struct.pack(abi.STRUCTS["quic_keys"].fmt, phase, flags, n, 0, bytes((fill * 7 + i) & 0xFF for i in range(32)),
                    bytes((fill * 5 + i) & 0xFF for i in range(24)), bytes((fill * 3 + i) & 0xFF for i in range(16)), b"")
        for phase, flags, n, fill in ((0, 0, 8, 1), (1, abi.NANOBPF_QUIC_KEY_NEXT, 20, 2))]
CID8 = bytes.fromhex("c0ffee0011223344")
CID20 = bytes(range(0xA0, 0xB4))
PROG = dict(total=5000, crc32=0xCAFEF00D, name="xdp_quic")
# What each message carries, from docs/control.md (independent of the body keys in ctrl.toml): request body,
# OK response body.
MESSAGES = {
    "HELLO": ([("struct", "hello_req", dict(ver_min=1, ver_max=7))],
              [("struct", "hello_resp", dict(version=1, cores=4, key_slots=256, max_image=61440, max_body=1400))]),
    "RESET": ([], []),
    "STATS": ([], [("array", "stat_entry", [dict(id=v, value=(v + 1) * 1000003 + (v << 40)) for v in D.STAT_NAMES])]),
    "KEY_ADD": ([("struct", "key_msg", dict(cid_len=8, dir=abi.NANOBPF_QUIC_DIR_SEAL, cid=CID8, keys=KEYS[0]))],
                [("struct", "key_resp", dict(slot=37))]),
    "KEY_UPDATE": ([("struct", "key_msg", dict(cid_len=20, dir=abi.NANOBPF_QUIC_DIR_OPEN, cid=CID20, keys=KEYS[1]))],
                   [("struct", "key_resp", dict(slot=255))]),
    "KEY_DEL": ([("struct", "key_del", dict(cid_len=0, dir=abi.NANOBPF_QUIC_DIR_SEAL,
                                            cid=ctrl.addr_id("192.0.2.7", 4433, 443)))], []),
    "KEY_FLUSH": ([], []),
    "PROG_BEGIN": ([("struct", "prog_begin", PROG)], []),
    "PROG_CHUNK": ([("struct", "prog_chunk", dict(offset=2048)), ("part", "image", bytes(range(7, 207)))], []),
    "PROG_COMMIT": ([("struct", "prog_begin", PROG)],
                    [("struct", "prog_info", dict(name="xdp_quic", image_len=5000, crc32=0xCAFEF00D, insns=1234, maps=3))]),
    "PROG_UNLOAD": ([], []),
    "PROG_INFO": ([], [("struct", "prog_info", dict(name="p" * D.NANOBPF_CTRL_NAME_LEN, image_len=61440,
                                                   crc32=0x01020304, insns=65535, maps=9))]),
    "MAP_LOOKUP": ([("struct", "map_req", dict(name="quic_stats", key_len=4)), ("part", "key", b"\0\0\0\x02")],
                   [("part", "value", bytes(range(8, 16)))]),
    "MAP_UPDATE": ([("struct", "map_req", dict(name="quic_config", flags=2, key_len=4, value_len=12)),
                    ("part", "key", b"\0\0\0\x01"), ("part", "value", bytes(range(1, 13)))], []),
    "MAP_DELETE": ([("struct", "map_req", dict(name="counters", key_len=8)), ("part", "key", bytes(range(9, 17)))], []),
    "MAP_NEXT": ([("struct", "map_req", dict(name="counters"))], [("part", "key", bytes(range(9, 17)))]),
    "EVENTS": ([("struct", "events_req", dict(name="rb", max=3))],
               [("struct", "events_resp", dict(lost=2, pending=5, count=2)),
                ("part", "records", D.pack("event_rec", len=3, index=1) + b"abc" + D.pack("event_rec", len=0, index=2))]),
    "TABLE_SET": ([("struct", "table_msg", dict(table=D.NANOBPF_CTRL_TABLE_PROFILE, index=5, value=0x00012345))], []),
    "TABLE_DEL": ([("struct", "table_msg", dict(table=D.NANOBPF_CTRL_TABLE_LPORT_CFG, index=3))], []),
}


def cases():
    out, seq = [], 1000
    errors = sorted(s for s in STATUS if s != D.NANOBPF_CTRL_ST_OK)
    for i, (name, (req, resp)) in enumerate(MESSAGES.items()):
        t, seq = MSG[name], seq + 7
        out.append(control(f"{name}-request", t, seq, req, epoch=0 if name == "HELLO" else 0x5EED0000 + i))
        out.append(control(f"{name}-response-ok", t, seq, resp, flags=RESPONSE, epoch=0x5EED0000 + i))
        st = errors[i % len(errors)]              # 19 messages, 14 error statuses: each at least once
        if st == D.NANOBPF_CTRL_ST_STALE_SEQ:
            err = [("struct", "stale_seq", dict(last_seq=seq + 1000))]
        elif st == D.NANOBPF_CTRL_ST_BAD_LENGTH:
            err = []                              # the device sends some errors without a text
        else:
            err = [("text", None, f"{name.lower()} refused: {STATUS[st].lower()} (naïve → checked)")]
        out.append(control(f"{name}-response-{STATUS[st]}", t, seq, err, flags=RESPONSE, status=st, epoch=0x5EED0000 + i))
    # a replayed answer, and a request padded to the Ethernet minimum (padding is not body)
    out.append(control("replay", MSG["KEY_ADD"], 7, MESSAGES["KEY_ADD"][1], flags=RESPONSE | REPLAY))
    padded = control("padded", MSG["TABLE_DEL"], 8, MESSAGES["TABLE_DEL"][0], pad_to=80)
    padded.fields["nanobpf.padding"] = [bytes(80 - 14 - 16 - 12 - 8 - 16)]
    out.append(padded)
    # malformed and out-of-range control frames
    hdr = ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, MSG["KEY_ADD"], 9)
    out.append(Case("truncated-header", hdr[:14 + 5], "KEY_ADD request malformed: 5 of 16 header bytes",
                    {"nanobpf.version": [D.VERSION], "nanobpf.type": [MSG["KEY_ADD"]], "nanobpf.flags": [0], "nanobpf.status": [0]},
                    set(), {"nanobpf.malformed"}, ["5 bytes after the EtherType: ctrl_hdr needs 16"],
                    absent=["nanobpf.seq", "nanobpf.length"]))
    # no payload at all: the dissector cannot claim 0 bytes, so Wireshark writes the columns itself
    out.append(Case("empty", hdr[:14], None, {}, set(), {"nanobpf.malformed"}, protocol=None, absent=["nanobpf.version"]))
    c = control("length-beyond-frame", MSG["HELLO"], 10, [("struct", "hello_req", dict(ver_min=1, ver_max=1))],
                length=40, info="HELLO request seq=10 (malformed)", experts={"nanobpf.malformed"})
    c.messages = ["length 40: only 4 bytes follow the nonce and leave the tag"]
    out.append(c)
    out.append(Case("no-nonce-and-tag", hdr[:14 + 16 + 10], "KEY_ADD request seq=9 (malformed)",
                    {"nanobpf.seq": [9]}, set(), {"nanobpf.malformed"},
                    ["26 bytes after the EtherType: header, nonce and tag need 44"], absent=["nanobpf.nonce", "nanobpf.tag"]))
    c = control("short-body", MSG["KEY_DEL"], 11, [("part", "x", bytes(10))], info="KEY_DEL request seq=11 (malformed)",
                experts={"nanobpf.malformed"})
    c.messages, c.structs = ["KEY_DEL request body: 10 bytes, key_del needs 24"], {"key_del"}
    del c.fields["nanobpf.body.x"]
    out.append(c)
    c = control("body-on-reset", MSG["RESET"], 12, [("part", "x", b"abc")], info="RESET request seq=12 (malformed)",
                experts={"nanobpf.malformed"})
    c.messages = ["RESET request body: 3 bytes more than its layout"]
    del c.fields["nanobpf.body.x"]
    out.append(c)
    c = control("key-beyond-body", MSG["MAP_UPDATE"], 13, [("struct", "map_req", dict(name="m", key_len=4, value_len=9)),
                ("part", "key", b"\1\2\3\4"), ("part", "x", b"\5\6")], info="MAP_UPDATE request seq=13 (malformed)",
                experts={"nanobpf.malformed"})
    c.messages = ["MAP_UPDATE request body: value_len 9, but 2 bytes are left"]
    c.fields["nanobpf.body.value"] = c.fields.pop("nanobpf.body.x")
    out.append(c)
    c = control("unknown-type", 0x7F, 14, [("part", "x", b"\xee" * 6)], info="type 0x7f request seq=14",
                experts={"nanobpf.invalid"})
    c.messages = ["ctrl_hdr.type 127: no msg of that value"]
    del c.fields["nanobpf.body.x"]
    c.fields["nanobpf.body"] = [b"\xee" * 6]
    out.append(c)
    out.append(control("unknown-type-answer", 0x7F, 14, [("text", None, "unknown message type 0x7f")], flags=RESPONSE,
                       status=D.NANOBPF_CTRL_ST_BAD_TYPE, experts={"nanobpf.invalid"}))
    out.append(control("version-0", MSG["KEY_FLUSH"], 15, version=0, experts={"nanobpf.malformed"}))
    c = control("reserved-set", MSG["TABLE_SET"], 16, [("struct", "table_msg", dict(table=0, reserved=1, index=1, value=2))],
                experts={"nanobpf.invalid"})
    c.messages = ["table_msg.reserved: not zero"]
    out.append(c)
    c = control("request-with-status", MSG["STATS"], 17, status=3, experts={"nanobpf.invalid"})
    c.messages = ["request with status 3 (requests carry 0)"]
    out.append(c)
    out += shim_cases()
    return out


def quic_short(cid, payload=b"protected payload and tag....."):
    return bytes([0x43]) + cid + payload


def shim(id, flags, cid_len, ip, payload, info=None, experts=(), messages=(), dcid=None):
    src, dst = ("192.0.2.1", "198.51.100.7") if ip == 4 else ("2001:db8::1", "2001:db8:1::3")
    inner = pcap.udp_frame(payload, src, dst, 40000, 4433)
    fields = {"nanobpf_shim.flags": [flags], "nanobpf_shim.flags.encrypt": [bool(flags & ENCRYPT)],
              "nanobpf_shim.flags.decrypted": [bool(flags & DECRYPTED)], "nanobpf_shim.cid_len": [cid_len],
              "nanobpf_shim.ethertype": [0x0800 if ip == 4 else 0x86DD],
              f"ip{'' if ip == 4 else 'v6'}.src": [src], f"ip{'' if ip == 4 else 'v6'}.dst": [dst],
              "udp.srcport": [40000], "udp.dstport": [4433], "udp.payload": [payload]}
    absent = []
    if dcid is None:
        absent.append("nanobpf_shim.dcid")
    else:
        fields["nanobpf_shim.dcid"] = [dcid]
    if info is None:
        info = f"shim {'ENCRYPT' if flags == ENCRYPT else 'DECRYPTED'} cid_len={cid_len}"
    return Case(id, ctrl.add_shim(inner, flags, cid_len), info, fields, None, experts, messages, "NanoBPF/UDP", absent)


def shim_cases():
    out = [shim("shim-encrypt-ipv4-cid8", ENCRYPT, 8, 4, quic_short(CID8), dcid=CID8),
           shim("shim-encrypt-ipv6-cid20", ENCRYPT, 20, 6, quic_short(CID20), dcid=CID20),
           shim("shim-encrypt-ipv4-cid0", ENCRYPT, 0, 4, quic_short(b"")),
           shim("shim-decrypted-ipv4", DECRYPTED, 0, 4, b"plaintext QUIC frames of an opened packet"),
           shim("shim-decrypted-ipv6", DECRYPTED, 0, 6, b"plaintext QUIC frames of an opened packet"),
           shim("shim-both-flags", ENCRYPT | DECRYPTED, 0, 4, b"x" * 20, "shim flags=0x03 cid_len=0 (malformed)",
                {"nanobpf_shim.malformed"}, ["flags 0x03: exactly one of DECRYPTED, ENCRYPT"]),
           shim("shim-cid-21", ENCRYPT, 21, 6, quic_short(bytes(21)), "shim ENCRYPT cid_len=21 (malformed)",
                {"nanobpf_shim.malformed"}, ["cid_len 21: above MAX_CID 20"]),
           shim("shim-cid-without-encrypt", DECRYPTED, 8, 4, quic_short(CID8), "shim DECRYPTED cid_len=8 (malformed)",
                {"nanobpf_shim.malformed"}, ["cid_len 8 without ENCRYPT"])]
    frame = pcap.udp_frame(b"y", "192.0.2.1", "192.0.2.2", 1, 2)
    out.append(Case("shim-truncated", ctrl.add_shim(frame, ENCRYPT, 4)[:16], "shim malformed: truncated",
                    {"nanobpf_shim.flags": [ENCRYPT], "nanobpf_shim.cid_len": [4]}, None, {"nanobpf_shim.malformed"},
                    ["2 bytes after the EtherType: the shim and the inner EtherType need 4"], absent=["udp.srcport"]))
    bad = ctrl.add_shim(frame[:12] + b"\x00\x42" + bytes(30), DECRYPTED, 0)
    out.append(Case("shim-inner-not-an-ethertype", bad, "shim DECRYPTED cid_len=0 (malformed)",
                    {"nanobpf_shim.ethertype": [0x42]}, None, {"nanobpf_shim.malformed"}, ["inner EtherType 0x0042"]))
    return out


CASES = cases()


@pytest.fixture(scope="module")
def decoded(run, tmp_path_factory):
    path = tmp_path_factory.mktemp("pcap") / "cases.pcap"
    pcap.write_pcap(path, [c.frame for c in CASES])
    out = decode(run, path)
    assert len(out) == len(CASES)
    return out


def test_cases_cover_every_message_type_and_status():
    assert set(MESSAGES) == set(MSG), "a message type of ctrl.toml has no case here: add it to MESSAGES"
    ids = {c.id for c in CASES}
    assert {f"{m}-{k}" for m in MSG for k in ("request", "response-ok")} <= ids
    assert {st for st in STATUS.values() if st != "OK"} <= {i.rsplit("-", 1)[1] for i in ids if "-response-" in i}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_frame_decodes_to_what_was_built(decoded, case):
    fields, protocol, info = decoded[CASES.index(case)]
    if case.protocol == "NanoBPF/UDP":            # the inner dissectors' text follows the shim's
        assert info.startswith(case.info + " | ") and "Len=" in info, info
    if case.protocol is not None:
        assert protocol == case.protocol
        assert info == case.info or case.protocol == "NanoBPF/UDP", info
    for name, want in case.fields.items():
        got = fields.get(name, [])
        assert [shown(g, w) for g, w in zip(got, want)] == want and len(got) == len(want), (name, got, want)
    for name in case.absent:
        assert name not in fields, name
    if case.structs is not None:                  # exactly the body structs the message type has, no other
        seen = {k.split(".")[1] for k in fields if k.count(".") == 1 and k.split(".")[1] in D.STRUCTS}
        assert seen == case.structs
    experts = {k for k in fields if k in PROBLEMS or k == "nanobpf.error"}
    assert experts == case.experts, fields.get("_ws.expert.message")
    for m in case.messages:
        assert m in fields.get("_ws.expert.message", []), fields.get("_ws.expert.message")


def test_names_are_shown(run, tmp_path):
    """Enum fields show the names of ctrl.toml: every message type, status, counter and PISA table."""
    frames = [c.frame for c in CASES if "-response-" in c.id or c.id.startswith("TABLE_")]
    pcap.write_pcap(tmp_path / "names.pcap", frames)
    text = run(tmp_path / "names.pcap", *CLEAR, "-V")
    for v, n in NAME.items():
        assert f"type: {n} (0x{v:02x})" in text
    for v, n in STATUS.items():
        assert f"status: {n} ({v})" in text
    for v, n in D.STAT_NAMES.items():
        assert f"id: {n.upper()} ({v})" in text
    assert "table: PROFILE (1)" in text and "table: LPORT_CFG (2)" in text
    assert "stat_entry[21]: id=BAD_SHIM, value=" in text and "prog_info: name=\"xdp_quic\", image_len=5000" in text


def test_every_name_of_ctrl_toml_is_in_the_dissector(lua):
    """The Lua view agrees with the source: EtherTypes, every message type, status and flag by value."""
    text = lua.read_text()
    defs = tomllib.loads(DEFS.read_text())
    assert f"local ETHERTYPE = 0x{defs['protocol']['ethertype']:04X}" in text
    assert f"local SHIM_ETHERTYPE = 0x{defs['protocol']['shim_ethertype']:04X}" in text
    groups = {g["group"]: g for g in defs["const"]}
    for group in ("msg", "status", "flag", "shim_flag", "stat", "table"):
        for v in groups[group]["values"]:
            assert f'{{ value = {v["value"]}, name = "{v["name"]}"' in text, (group, v["name"])
    for s in defs["struct"]:
        for f in s["fields"]:
            assert f'name = "{f["name"]}", kind = ' in text


def test_encrypted_requests_show_no_body(run, tmp_path):
    """On the wire a request's body is encrypted: without the preference the dissector shows the bytes,
    the nonce and the tag, and decodes no struct of them; the response, in clear, it decodes."""
    body = D.pack("key_msg", cid_len=8, dir=abi.NANOBPF_QUIC_DIR_SEAL, cid=CID8, keys=KEYS[0])
    req = ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, MSG["KEY_ADD"], 77, 0x5EED0001, body)
    f = ctrl.parse(req)
    resp = ctrl.build(ctrl.HOST_MAC, ctrl.DEVICE_MAC, MSG["KEY_ADD"], 77, 0x5EED0001, D.pack("key_resp", slot=5),
                      flags=RESPONSE, nonce=f.nonce)
    pcap.write_pcap(tmp_path / "wire.pcap", [req, resp])
    (rf, _, rinfo), (sf, _, sinfo) = decode(run, tmp_path / "wire.pcap", clear=False)
    at = 14 + D.CTRL_HDR_SIZE
    assert rinfo == "KEY_ADD request seq=77 [encrypted]" and sinfo == "KEY_ADD response OK seq=77"
    assert [shown(v, b"") for v in rf["nanobpf.nonce"]] == [f.nonce] == [shown(v, b"") for v in sf["nanobpf.nonce"]]
    assert [shown(v, b"") for v in rf["nanobpf.encrypted"]] == [req[at + 12:at + 12 + len(body)]] != [body]
    assert [shown(v, b"") for v in rf["nanobpf.tag"]] == [req[-16:]] and [shown(v, b"") for v in sf["nanobpf.tag"]] == [resp[-16:]]
    assert not any(k.startswith("nanobpf.key_msg") for k in rf) and "nanobpf.key_resp.slot" in sf
    assert not {k for k in rf if k in PROBLEMS}
    # decrypted by the tool, the request decodes; one under another key stays as it was, and is named
    other = ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, MSG["KEY_ADD"], 78, 0x5EED0001, body,
                       key=ctrlkey.DeviceKey(bytes(16)))
    pcap.write_pcap(tmp_path / "wire.pcap", [req, resp, other])
    p = subprocess.run([command("nanobpf-ctrl-key"), "decrypt", str(tmp_path / "wire.pcap"), str(tmp_path / "clear.pcap")],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "1 control request(s) decrypted" in p.stderr and "(frames 3)" in p.stderr, p.stderr
    (rf, _, rinfo), _, _ = decode(run, tmp_path / "clear.pcap")
    assert rinfo == "KEY_ADD request seq=77" and [shown(v, b"") for v in rf["nanobpf.key_msg.cid"]] == [CID8.ljust(20, b"\0")]


# ---------------------------------------------------------------- generator refusals
@pytest.mark.parametrize("patch, message", [
    (('req = "hello_req"', 'req = "nosuch[]"'), "nosuch[] names no struct"),
    (('resp = "stat_entry[]"', 'resp = "stat_entry[] + tail"'), "stat_entry[] must be the whole body"),
    (('req = "prog_chunk + image"', 'req = "prog_chunk + prog_begin"'), "struct prog_begin must be the first part"),
    (('req = "prog_chunk + image"', 'req = "prog_chunk + image + more"'), "'image' (the rest of the body) must be the last"),
    (('key[key_len] + value[value_len]", resp = "value"', 'key[name] + value[value_len]", resp = "value"'),
     "'name' is no u8/u16/u32 field"),
    (('enum = "stat"', 'enum = "nosuch"'), "enum = 'nosuch' must name a const group"),
    (('bits = "flag"', 'bits = "status"'), "every value of that group must be one bit"),
    (('{ name = "RESPONSE", value = 0x01', '{ name = "ANSWER", value = 0x01'), "needs const group flag with RESPONSE"),
])
def test_bad_definitions_are_refused(tmp_path, patch, message):
    text = DEFS.read_text()
    assert patch[0] in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(patch[0], patch[1], 1))
    p = subprocess.run([GENCTRL, "--defs", str(bad), "--lua", str(tmp_path / "x.lua")],
                       capture_output=True, text=True)
    assert p.returncode == 1 and message in p.stderr, p.stderr
    assert not (tmp_path / "x.lua").exists()


# ---------------------------------------------------------------- captures of the simulation
class Recorder:
    """The host end of a link that keeps every frame sent and received, as a capture there would."""

    def __init__(self, port):
        self.port, self.frames = port, []

    def send(self, frame):
        self.frames.append(bytes(frame))
        self.port.send(frame)

    def recv(self, timeout=None):
        frame = self.port.recv(timeout)
        if frame is not None:
            self.frames.append(bytes(frame))
        return frame


def test_a_session_with_the_device_model(run, tmp_path):
    """Every frame of a real exchange with nanobpf.devmodel decodes as ctrl.parse reads it."""
    from nanobpf.devmodel import DeviceModel
    from nanobpf.ebpf import device
    image = BUILD / "firmware/bpf/xdp_quic.nbpf"
    if not device.available()[0] or not image.exists():
        pytest.skip(f"{device.available()[1] or image} missing (make ebpf-tools firmware)")
    link = ctrl.MemoryLink()
    dev = DeviceModel(link.b, seed=5).start()
    rec = Recorder(link.a)
    try:
        host = ctrl.Client(rec, retry_ms=20, retry_max_ms=160)
        host.hello()
        host.key_add(CID8, KEYS[0])
        host.key_add(CID8, KEYS[0], dir=ctrl.SEAL)
        with pytest.raises(ctrl.CtrlError):
            host.prog_info()                       # NO_PROG, with the device's text
        host.prog_load(image.read_bytes(), name="xdp_quic")
        host.prog_info()
        host.map_keys("quic_stats")
        host.stats()
        host.key_update(CID8, KEYS[0])
        host.key_del(CID8, dir=ctrl.SEAL)
        rec.send(ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, MSG["STATS"], 1, host.epoch))   # an old seq: STALE_SEQ
        assert rec.recv(2.0) is not None
        host.seq += 1
        rec.send(ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, 0x7F, host.seq, host.epoch))     # BAD_TYPE
        assert rec.recv(2.0) is not None
        host.device_reset()
    finally:
        dev.stop()
        link.close()
    pcap.write_pcap(tmp_path / "session.pcap", rec.frames)
    # as a user reads a capture: nanobpf-ctrl-key decrypt, then the dissector with request bodies in clear
    p = subprocess.run([command("nanobpf-ctrl-key"), "decrypt", str(tmp_path / "session.pcap"),
                        str(tmp_path / "clear.pcap")], capture_output=True, text=True)
    assert p.returncode == 0 and "did not verify" not in p.stderr, p.stderr
    out = decode(run, tmp_path / "clear.pcap")
    assert len(out) == len(rec.frames) > 20
    seen = set()
    for frame, (fields, protocol, info) in zip(rec.frames, out):
        f = ctrl.parse(frame)
        h, resp = f.hdr, bool(f.hdr["flags"] & RESPONSE)
        name = NAME.get(h["type"], f"type 0x{h['type']:02x}")
        want = f"{name} {'response ' + STATUS[h['status']] if resp else 'request'} seq={h['seq']}"
        assert protocol == "NanoBPF" and info.startswith(want), (info, want)
        problems = {k for k in fields if k in PROBLEMS}
        assert problems == ({"nanobpf.invalid"} if name not in MSG else set()), fields.get("_ws.expert.message")
        assert [int(v, 0) for v in fields["nanobpf.epoch"]] == [h["epoch"]]
        seen.add((name, STATUS[h["status"]] if resp else "request"))
        if h["type"] == MSG["PROG_CHUNK"] and not resp:
            assert [int(v) for v in fields["nanobpf.prog_chunk.offset"]] == [D.unpack("prog_chunk", f.body)["offset"]]
            assert len(bytes.fromhex(fields["nanobpf.body.image"][0].replace(":", ""))) == len(f.body) - 4
        if resp and h["status"] == D.NANOBPF_CTRL_ST_STALE_SEQ:
            assert [int(v) for v in fields["nanobpf.stale_seq.last_seq"]] == [D.unpack("stale_seq", f.body)["last_seq"]]
        elif resp and h["status"] and f.body:
            assert fields["nanobpf.errmsg"] == [f.body.decode()] and info.endswith(f'"{f.body.decode()}"')
        if resp and h["type"] == MSG["STATS"] and not h["status"]:
            assert len(fields["nanobpf.stat_entry.id"]) == len(f.body) // D.STAT_ENTRY_SIZE == len(D.STAT_NAMES)
    assert {("PROG_CHUNK", "OK"), ("PROG_INFO", "NO_PROG"), ("STATS", "STALE_SEQ"), ("type 0x7f", "BAD_TYPE"), ("RESET", "OK"),
            ("MAP_NEXT", "OK"), ("KEY_UPDATE", "OK")} <= seen, seen


@pytest.mark.parametrize("name", ["host-in", "host-out", "net-in", "net-out"])
def test_demo_pcaps(run, name):
    """The pcaps `make demo` writes (frames to and from the simulated DPU): every shim decoded, with the
    UDP below it."""
    path = BUILD / f"demo/{name}.pcap"
    if not path.exists():
        pytest.skip(f"{path} not written yet (make demo)")
    frames = [f for _, f in pcap.read_pcap(path)]
    out = decode(run, path)
    assert len(out) == len(frames)
    for frame, (fields, protocol, info) in zip(frames, out):
        assert not {k for k in fields if k in PROBLEMS}, fields.get("_ws.expert.message")
        if not ctrl.has_shim(frame):
            assert "nanobpf_shim" not in fields and not protocol.startswith("NanoBPF")
            continue
        flags, cid_len, inner = ctrl.strip_shim(frame)
        assert [int(fields["nanobpf_shim.flags"][0], 0), int(fields["nanobpf_shim.cid_len"][0])] == [flags, cid_len]
        assert info.startswith(f"shim {'ENCRYPT' if flags == ENCRYPT else 'DECRYPTED'} cid_len={cid_len}")
        u = pcap.parse_udp(inner)
        assert [int(fields["udp.srcport"][0]), int(fields["udp.dstport"][0])] == [u.sport, u.dport]
        assert protocol.startswith("NanoBPF/")
