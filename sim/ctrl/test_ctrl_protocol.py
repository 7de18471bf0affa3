"""Control protocol between the reference host (nanobpf.ctrl.Client, nanobpf.ko's algorithm) and the
reference device model (nanobpf.devmodel), over an in-memory link: sessions and epochs, the at-most-once
window and its replay cache, every refusal, and convergence of the device to the host state under
injected loss, duplication and reordering of control frames and device resets mid-sequence.
Needs `make ebpf-tools firmware` (the device runtime and the xdp_quic image)."""
import random
import struct

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
import pytest

from nanobpf import BUILD
from nanobpf import ctrl
from nanobpf.ctrl import OPEN, SEAL, Client, CtrlError, CtrlTimeout, KeyId, MemoryLink, addr_id, key_id
from nanobpf.devmodel import DeviceModel
from nanobpf.ebpf import device

IMAGE = BUILD / "firmware/bpf/xdp_quic.nbpf"
M = D  # message/status constants
pytestmark = pytest.mark.skipif(not device.available()[0], reason=device.available()[1])


def keys_for(cid, phase=0, fill=1, nxt=False, flags=None):
    """A struct nanobpf_quic_keys for cid (bytes, or a KeyId; bytes distinct per fill)."""
    k = bytes((fill * 7 + i) & 0xFF for i in range(32))
    iv = bytes((fill * 5 + i) & 0xFF for i in range(24))
    hp = bytes((fill * 3 + i) & 0xFF for i in range(16))
    n = cid.cid_len if isinstance(cid, KeyId) else len(cid)
    return struct.pack(abi.STRUCTS["quic_keys"].fmt, phase, int(nxt) if flags is None else flags, n, 0, k, iv, hp, b"")


@pytest.fixture
def pair():
    link = MemoryLink()
    dev = DeviceModel(link.b, seed=7).start()
    host = Client(link.a, retry_ms=20, retry_max_ms=160)
    yield host, dev, link
    dev.stop()
    link.close()


class Raw:
    """Hand-made requests on the host end of a link, for the device's refusals."""

    def __init__(self, port):
        self.port, self.seq, self.epoch = port, 100, 0

    def send(self, type_, body=b"", seq=None, epoch=None, version=D.VERSION, flags=0):
        if seq is None:
            self.seq += 1
            seq = self.seq
        self.port.send(ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, type_, seq, self.epoch if epoch is None else epoch,
                                  body, flags=flags, version=version))
        return seq

    def answer(self, timeout=2.0):
        raw = self.port.recv(timeout)
        return None if raw is None else ctrl.parse(raw)

    def ask(self, type_, body=b"", **kw):
        self.send(type_, body, **kw)
        f = self.answer()
        assert f is not None, "no answer"
        return f

    def hello(self):
        f = self.ask(M.NANOBPF_CTRL_MSG_HELLO, D.pack("hello_req", ver_min=1, ver_max=D.VERSION))
        assert f.hdr["status"] == M.NANOBPF_CTRL_ST_OK
        self.epoch = f.hdr["epoch"]
        return f


@pytest.fixture
def raw():
    link = MemoryLink()
    dev = DeviceModel(link.b, seed=3)
    dev.start()
    r = Raw(link.a)
    yield r, dev
    dev.stop()
    link.close()


def status(f):
    return D.STATUS_NAMES[f.hdr["status"]]


# ---------------------------------------------------------------- sessions, epochs, sequence window
def test_session_needs_hello_and_versions_are_negotiated(raw):
    r, dev = raw
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS)) == "need_hello"
    f = r.ask(M.NANOBPF_CTRL_MSG_HELLO, D.pack("hello_req", ver_min=D.VERSION + 1, ver_max=D.VERSION + 3))
    assert status(f) == "bad_version" and b"device speaks" in f.body
    assert status(r.ask(M.NANOBPF_CTRL_MSG_HELLO, b"\0")) == "bad_length"
    f = r.hello()
    h = D.unpack("hello_resp", f.body)
    assert h["version"] == D.VERSION and h["key_slots"] == abi.NANOBPF_KEYTABLE_ENTRIES
    assert f.hdr["epoch"] == dev.epoch != 0 and f.hdr["flags"] == M.NANOBPF_CTRL_F_RESPONSE
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS)) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS, epoch=r.epoch ^ 1)) == "stale_epoch"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS, version=D.VERSION + 1)) == "bad_version"


def test_duplicates_are_answered_from_the_cache_never_applied_twice(raw):
    r, dev = raw
    r.hello()
    body = D.pack("key_msg", cid_len=2, cid=b"\xab\xcd", keys=keys_for(b"\xab\xcd"))
    seq = r.send(M.NANOBPF_CTRL_MSG_KEY_ADD, body)
    first = r.answer()
    for _ in range(3):
        r.send(M.NANOBPF_CTRL_MSG_KEY_ADD, body, seq=seq)
        again = r.answer()
        assert again.hdr["flags"] == M.NANOBPF_CTRL_F_RESPONSE | M.NANOBPF_CTRL_F_REPLAY
        assert (again.hdr["status"], again.body) == (first.hdr["status"], first.body) == (0, D.pack("key_resp", slot=0))
    assert [a[1] for a in dev.applied].count(seq) == 1
    assert dev.stats()["ctrl_replayed"] == 3
    # 16 newer requests push seq out of the cache: now it is refused, still not applied
    for _ in range(D.NANOBPF_CTRL_REPLAY_CACHE):
        assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS)) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=2, cid=b"\xab\xcd"), seq=seq)) == "stale_seq"
    assert list(dev.keys()) == [key_id(b"\xab\xcd")]
    # a sequence number from the future is fine (the host gave up on some in between)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS, seq=r.seq + 1000)) == "ok"


def test_serial_arithmetic_across_the_wrap(raw):
    r, dev = raw
    r.seq = 0xFFFFFFFD
    r.hello()
    for _ in range(5):
        assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS)) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS, seq=0xFFFFFFFD)) == "stale_seq"


def test_reset_changes_the_epoch_and_clears_state(raw):
    r, dev = raw
    r.hello()
    r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", cid_len=1, cid=b"\x01", keys=keys_for(b"\x01")))
    old = r.epoch
    f = r.ask(M.NANOBPF_CTRL_MSG_RESET)
    assert status(f) == "ok" and f.hdr["epoch"] == dev.epoch != old
    assert dev.keys() == {} and dev.stats()["resets"] == 1
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS)) == "need_hello"


def test_malformed_frames_get_no_answer(raw):
    r, dev = raw
    r.hello()
    good = ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, M.NANOBPF_CTRL_MSG_STATS, 500, r.epoch)
    bad = [good[:20],                                                 # cut inside the header
           good[:26] + struct.pack(">H", 9) + good[28:],              # body length beyond the frame
           good[:28] + b"\0\1" + good[30:],                           # reserved bits
           good[:14] + b"\0" + good[15:],                             # version 0
           ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, M.NANOBPF_CTRL_MSG_STATS, 501, r.epoch,
                      flags=M.NANOBPF_CTRL_F_RESPONSE)]               # a "response" sent to the device
    for b in bad:
        r.port.send(b)
        assert r.answer(0.2) is None
    assert dev.stats()["ctrl_malformed"] == len(bad)


# ---------------------------------------------------------------- every refusal
def test_key_messages(raw):
    r, dev = raw
    r.hello()
    cid = bytes(range(20))
    ok = D.pack("key_msg", cid_len=20, cid=cid, keys=keys_for(cid))
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_UPDATE, ok)) == "noent"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, ok)) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, ok)) == "exist"
    new = keys_for(cid, phase=1, fill=9, nxt=True)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_UPDATE, D.pack("key_msg", cid_len=20, cid=cid, keys=new))) == "ok"
    assert dev.keys()[key_id(cid)] == (0, new)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, ok[:-1])) == "bad_length"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=3, cid=b"xyz"))) == "noent"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=20, cid=cid))) == "ok"
    assert status(r.ask(0x7F)) == "bad_type"
    assert list(dev.keys()) == []


def test_key_entries_per_direction_and_by_address(raw):
    """One CID can name an open and a seal entry (two slots); a zero-length CID is the peer's address id."""
    r, dev = raw
    r.hello()
    cid = b"\x0c\x1d"
    add = lambda **kw: r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", **kw))
    f_open = add(cid_len=2, dir=OPEN, cid=cid, keys=keys_for(cid, fill=1))
    f_seal = add(cid_len=2, dir=SEAL, cid=cid, keys=keys_for(cid, fill=2))
    assert status(f_open) == status(f_seal) == "ok"
    assert D.unpack("key_resp", f_open.body)["slot"] != D.unpack("key_resp", f_seal.body)["slot"]
    assert status(add(cid_len=2, dir=SEAL, cid=cid, keys=keys_for(cid, fill=3))) == "exist"
    a4, a6 = addr_id("192.0.2.7", 4433, 443), addr_id("2001:db8::7", 4433, 443)
    assert a4 == bytes(10) + b"\xff\xff" + bytes([192, 0, 2, 7]) + struct.pack(">HH", 4433, 443)
    for a, d in ((a4, OPEN), (a4, SEAL), (a6, SEAL)):
        assert status(add(cid_len=0, dir=d, cid=a, keys=keys_for(b"", fill=4))) == "ok"
    assert set(dev.keys()) == {KeyId(OPEN, 2, cid.ljust(20, b"\0")), KeyId(SEAL, 2, cid.ljust(20, b"\0")),
                               KeyId(OPEN, 0, a4), KeyId(SEAL, 0, a4), KeyId(SEAL, 0, a6)}
    assert len({s for s, _ in dev.keys().values()}) == 5
    # KEY_DEL names the direction: the other entry stays
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=0, dir=SEAL, cid=a4))) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=0, dir=SEAL, cid=a4))) == "noent"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=2, dir=OPEN, cid=cid))) == "ok"
    assert set(dev.keys()) == {KeyId(SEAL, 2, cid.ljust(20, b"\0")), KeyId(OPEN, 0, a4), KeyId(SEAL, 0, a6)}
    # KEY_UPDATE of the remaining seal entry
    new = keys_for(cid, phase=1, fill=8, nxt=True)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_UPDATE, D.pack("key_msg", cid_len=2, dir=SEAL, cid=cid, keys=new))) == "ok"
    assert dev.keys()[key_id(cid, SEAL)][1] == new


KEY_REFUSALS = [   # (key_msg fields, text the refusal must hold, the fault is in the entry's name: KEY_DEL too)
    (dict(cid_len=2, dir=2, cid=b"\1\2", keys=keys_for(b"12")), "dir 2", True),
    (dict(cid_len=2, dir=0xFF, cid=b"\1\2", keys=keys_for(b"12")), "dir 255", True),
    (dict(cid_len=21, cid=bytes(range(1, 21)), keys=keys_for(bytes(21))), "cid_len 21", True),
    (dict(cid_len=2, reserved=b"\0\1", cid=b"\1\2", keys=keys_for(b"12")), "reserved", True),
    (dict(cid_len=2, cid=b"\1\2\3", keys=keys_for(b"12")), "after the 2-byte CID", True),
    (dict(cid_len=0, cid=bytes(20), keys=keys_for(b"")), "address id", True),
    (dict(cid_len=2, cid=b"\1\2", keys=keys_for(b"123")), "cid_len 3", False),
    (dict(cid_len=0, cid=b"\1" * 20, keys=keys_for(b"1")), "cid_len 1", False),
    (dict(cid_len=2, cid=b"\1\2", keys=keys_for(b"12", phase=2)), "key_phase 2", False),
    (dict(cid_len=2, cid=b"\1\2", keys=keys_for(b"12", flags=3)), "not both", False),
    (dict(cid_len=2, cid=b"\1\2", keys=keys_for(b"12", flags=4)), "flags 0x4", False),
    (dict(cid_len=2, dir=SEAL, cid=b"\1\2", keys=keys_for(b"12", flags=abi.NANOBPF_QUIC_KEY_PREV)), "PREV", False),
    (dict(cid_len=2, cid=b"\1\2", keys=keys_for(b"12")[:3] + b"\1" + keys_for(b"12")[4:]), "reserved and pad", False),
    (dict(cid_len=2, cid=b"\1\2", keys=keys_for(b"12")[:79] + b"\1"), "pad", False),
]


@pytest.mark.parametrize("fields,text,in_name", KEY_REFUSALS, ids=[f"{t}-{i}" for i, (_, t, _) in enumerate(KEY_REFUSALS)])
def test_key_message_refusals(raw, fields, text, in_name):
    r, dev = raw
    r.hello()
    for type_ in (M.NANOBPF_CTRL_MSG_KEY_ADD, M.NANOBPF_CTRL_MSG_KEY_UPDATE):
        f = r.ask(type_, D.pack("key_msg", **fields))
        assert status(f) == "invalid" and text in f.body.decode(), f.body
    if in_name:
        f = r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", **{k: v for k, v in fields.items() if k != "keys"}))
        assert status(f) == "invalid" and text in f.body.decode(), f.body
    assert dev.keys() == {}


def test_prev_keys_in_open_entries(raw):
    r, dev = raw
    r.hello()
    k = keys_for(b"12", phase=1, flags=abi.NANOBPF_QUIC_KEY_PREV)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", cid_len=2, dir=OPEN, cid=b"12", keys=k))) == "ok"
    assert dev.keys()[key_id(b"12")][1] == k


def test_key_table_full(raw):
    r, dev = raw
    dev.key_slots = 3
    r.hello()
    for i in range(3):
        c = bytes([i + 1])
        f = r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", cid_len=1, cid=c, keys=keys_for(c)))
        assert D.unpack("key_resp", f.body)["slot"] == i
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", cid_len=1, cid=b"\x09", keys=keys_for(b"\x09")))) == "full"
    r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=1, cid=b"\x02"))
    f = r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", cid_len=1, cid=b"\x09", keys=keys_for(b"\x09")))
    assert D.unpack("key_resp", f.body)["slot"] == 1                  # the freed slot is reused


def load_raw(r, image, name="xdp_quic", crc=None, chunk=D.NANOBPF_CTRL_CHUNK):
    meta = D.pack("prog_begin", total=len(image), crc32=ctrl.crc32(image) if crc is None else crc, name=name)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_BEGIN, meta)) == "ok"
    for off in range(0, len(image), chunk):
        assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_CHUNK, D.pack("prog_chunk", offset=off) + image[off:off + chunk])) == "ok"
    return r.ask(M.NANOBPF_CTRL_MSG_PROG_COMMIT, meta)


def test_program_messages(raw):
    r, dev = raw
    image = IMAGE.read_bytes()
    r.hello()
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_INFO)) == "no_prog"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_UNLOAD)) == "no_prog"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_CHUNK, D.pack("prog_chunk", offset=0) + b"x")) == "sequence"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_BEGIN, D.pack("prog_begin", total=D.NANOBPF_CTRL_MAX_IMAGE + 1))) == "invalid"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_BEGIN, D.pack("prog_begin", total=0))) == "invalid"
    # a chunk at the wrong offset, too many bytes, a commit before the end, a CRC mismatch
    meta = D.pack("prog_begin", total=8, crc32=ctrl.crc32(image[:8]), name="x")
    r.ask(M.NANOBPF_CTRL_MSG_PROG_BEGIN, meta)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_CHUNK, D.pack("prog_chunk", offset=4) + b"abcd")) == "sequence"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_CHUNK, D.pack("prog_chunk", offset=0) + bytes(9))) == "sequence"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_COMMIT, meta)) == "sequence"
    assert status(load_raw(r, image, crc=1)) == "sequence"
    # images the loader or the verifier refuses, with the reason
    f = load_raw(r, b"\x7fELF" + bytes(60))
    assert status(f) == "verifier" and f.body
    f = load_raw(r, image)
    info = D.unpack("prog_info", f.body)
    assert status(f) == "ok" and info["name"] == "xdp_quic" and info["image_len"] == len(image) and info["maps"] == 8
    assert dev.program()["crc32"] == ctrl.crc32(image)
    assert D.unpack("prog_info", r.ask(M.NANOBPF_CTRL_MSG_PROG_INFO).body) == info
    broken = bytearray(image)
    broken[-8:] = bytes([0x95, 0, 0, 0, 0, 0, 0, 0])            # drop the program's tail: still an image?
    f = load_raw(r, bytes(broken), name="broken")
    if status(f) != "ok":                                        # refused: the old program stays attached
        assert status(f) == "verifier" and f.body
        assert dev.program()["name"] == "xdp_quic"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_UNLOAD)) == "ok" and dev.program() is None


def map_req(name, key=b"", value=b"", flags=0, **kw):
    return D.pack("map_req", name=name, flags=flags, key_len=len(key), value_len=len(value), **kw) + key + value


def test_map_messages(raw):
    r, dev = raw
    r.hello()
    port = struct.pack("<H", 4433)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_ports", port))) == "no_prog"
    load_raw(r, IMAGE.read_bytes())
    one = struct.pack("<I", 1)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_ports", port))) == "noent"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("quic_ports", port, one, flags=2))) == "noent"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("quic_ports", port, one, flags=1))) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("quic_ports", port, one, flags=1))) == "exist"
    assert r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_ports", port)).body == one
    assert dev.map_lookup("quic_ports", port) == one
    assert r.ask(M.NANOBPF_CTRL_MSG_MAP_NEXT, map_req("quic_ports")).body == port
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_NEXT, map_req("quic_ports", port))) == "noent"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_DELETE, map_req("quic_ports", port))) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_DELETE, map_req("quic_ports", port))) == "noent"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_DELETE, map_req("quic_config", bytes(4)))) == "invalid"   # arrays
    assert len(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_stats", bytes(4))).body) == 8         # per-CPU
    f = r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("nosuch", port))
    assert status(f) == "no_map" and b"quic_ports" in f.body
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_ports", port + b"\0"))) == "no_map"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("quic_ports", port, one + b"\0"))) == "no_map"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("quic_ports", port, one, flags=3))) == "invalid"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_ports", port, one))) == "invalid"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_ports", port)[:-1])) == "bad_length"
    ck = bytes([1, 9]) + bytes(22)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req(abi.KEYTABLE_MAP_NAME, ck, keys_for(b"\x09")))) == "invalid"


def test_table_messages(raw):
    r, dev = raw
    r.hello()
    word = (1 << 0) | (1 << 3) | (10 << 4) | (1 << 16)           # port_entry: valid, tagged, vid 10, lport 1
    ok = D.pack("table_msg", table=D.NANOBPF_CTRL_TABLE_PORT, index=7, value=word)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_SET, ok)) == "ok"
    assert dev.tables() == {(D.NANOBPF_CTRL_TABLE_PORT, 7): word}
    for bad in [dict(table=3, index=0), dict(table=0, index=8), dict(table=2, index=4),
                dict(table=0, index=0, value=1 << 31), dict(table=1, index=0, reserved=1)]:
        assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_SET, D.pack("table_msg", **bad))) == "invalid", bad
    assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_DEL, ok)) == "ok" and dev.tables() == {}


def test_stats_name_every_counter(pair):
    host, dev, _ = pair
    s = host.stats()
    assert list(s) == list(D.STAT_NAMES.values())
    assert s["epoch"] == dev.epoch and s["ctrl_applied"] >= 2


# ---------------------------------------------------------------- convergence under faults
def converge(seed, loss, dup, reorder, resets, ops=60):
    rng = random.Random(seed)
    link = MemoryLink()
    dev = DeviceModel(link.b, seed=seed, key_slots=32)
    dev.set_faults(loss, dup, reorder)
    dev.start()
    # (a back-off up to 640 ms: verifying xdp_quic takes the model some 400 ms, unanswered meanwhile)
    host = Client(link.a, retry_ms=5, retry_max_ms=640, retries=9)
    try:
        cids = [key_id(bytes([i]) * rng.randrange(1, 21), dir=i & 1) for i in range(1, 20)]
        cids += [key_id(b"", dir=i & 1, addr=addr_id(f"10.0.{i}.1", 4433, 443)) for i in range(4)]
        reset_at = set(rng.sample(range(ops), resets))
        host.prog_load(IMAGE.read_bytes(), "xdp_quic")
        errors = 0
        for i in range(ops):
            if i in reset_at:
                dev.reset()
            cid = rng.choice(cids)
            try:
                if cid not in host.keys:
                    host.key_add(cid, keys_for(cid, fill=i))
                elif rng.random() < 0.5:
                    host.key_update(cid, keys_for(cid, phase=i & 1, fill=i, nxt=True))
                else:
                    host.key_del(cid)
            except CtrlTimeout:
                errors += 1
        dev.set_faults()
        host.stats()                         # one clean exchange: replays if anything was left unsure
        got = {c: k for c, (_, k) in dev.keys().items()}
        assert got == host.keys
        assert dev.program()["crc32"] == ctrl.crc32(IMAGE.read_bytes())
        seen = [(e, s) for e, s, _, _ in dev.applied]
        assert len(seen) == len(set(seen)), "a request was applied twice"
        # the program's key table map shows exactly the device's key table
        keymap = sorted(KeyId(k[21], k[0], k[1:21]) for k in host.map_keys(abi.KEYTABLE_MAP_NAME))
        assert keymap == sorted(host.keys)
        return dev.stats(), host.counters, errors
    finally:
        dev.stop()
        link.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_converges_under_loss_duplication_reordering_and_resets(seed):
    stats, counters, _ = converge(seed, loss=0.15, dup=0.15, reorder=0.15, resets=2)
    assert stats["ctrl_replayed"] > 0 and counters["retransmits"] > 0 and counters["resyncs"] >= 3
    assert stats["resets"] == 2


def test_converges_without_faults_in_one_session():
    stats, counters, errors = converge(9, 0, 0, 0, resets=0, ops=40)
    # (a slow PROG_COMMIT may still be retransmitted: it is answered from the replay cache)
    assert errors == 0 and counters["resyncs"] == 1 and stats["ctrl_stale"] == 0


def test_timeouts_when_the_device_is_silent():
    link = MemoryLink()
    host = Client(link.a, retry_ms=2, retry_max_ms=8, retries=3)
    with pytest.raises(CtrlTimeout):
        host.key_add(b"\x01", keys_for(b"\x01"))
    assert host.keys == {} and host.counters["tx"] == 4 and not host.synced
    link.close()


def test_refusals_leave_the_host_state_unchanged(pair):
    host, dev, _ = pair
    with pytest.raises(ValueError):
        host.key_add(b"", keys_for(b""))                 # checked before anything is sent
    assert host.keys == {}
    host.key_add(b"\x01", keys_for(b"\x01"))
    with pytest.raises(CtrlError) as e:
        host.key_update(b"\x01", keys_for(b"\x02\x03"))   # keys.cid_len does not match
    assert e.value.status == M.NANOBPF_CTRL_ST_INVALID and host.keys[key_id(b"\x01")] == keys_for(b"\x01")
    for bad in [dict(cid=bytes(21)), dict(cid=b"", addr=bytes(20)), dict(cid=b"", addr=b"\1" * 19),
                dict(cid=b"\1", addr=b"\1" * 20), dict(cid=b"\2", dir=2)]:
        with pytest.raises(ValueError):
            host.key_add(keys=keys_for(b""), **bad)
    assert list(host.keys) == [key_id(b"\x01")]
    with pytest.raises(CtrlError) as e:
        host.prog_load(b"\x7fELF" + bytes(100), "elf")
    assert e.value.status == M.NANOBPF_CTRL_ST_VERIFIER and host.program is None


# ---------------------------------------------------------------- security
def test_control_frames_from_the_network_port_are_ignored_and_counted():
    hl, nl = MemoryLink(), MemoryLink()
    dev = DeviceModel(hl.b, nl.b, seed=5).start()
    try:
        evil = Raw(nl.a)
        for t, body in [(M.NANOBPF_CTRL_MSG_HELLO, D.pack("hello_req", ver_min=1, ver_max=1)),
                        (M.NANOBPF_CTRL_MSG_RESET, b""),
                        (M.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", cid_len=1, cid=b"\1", keys=keys_for(b"\1")))]:
            evil.send(t, body, epoch=dev.epoch)
        nl.a.port = None
        evil.port.send(b"\xff" * 12 + struct.pack(">H", D.ETHERTYPE) + b"\0")   # malformed, still foreign
        host = Client(hl.a, retry_ms=20)
        host.stats()                                       # the host port still works
        assert evil.answer(0.3) is None and hl.a.recv(0.1) is None
        s = dev.stats()
        assert s["ctrl_foreign"] == 4 and s["keys"] == 0 and s["resets"] == 0
        assert [t for _, _, t, _ in dev.applied] == [M.NANOBPF_CTRL_MSG_HELLO, M.NANOBPF_CTRL_MSG_KEY_FLUSH,
                                                     M.NANOBPF_CTRL_MSG_STATS]
    finally:
        dev.stop()
        hl.close()
        nl.close()


def test_late_hello_duplicates_do_not_restart_the_window(raw):
    r, dev = raw
    hello = D.pack("hello_req", ver_min=1, ver_max=D.VERSION)
    hseq = r.send(M.NANOBPF_CTRL_MSG_HELLO, hello)
    r.epoch = r.answer().hdr["epoch"]
    key = D.pack("key_msg", cid_len=1, cid=b"\x05", keys=keys_for(b"\x05"))
    kseq = r.send(M.NANOBPF_CTRL_MSG_KEY_ADD, key)
    assert status(r.answer()) == "ok"
    for _ in range(D.NANOBPF_CTRL_REPLAY_CACHE + 1):      # the HELLO and the KEY_ADD leave the cache
        r.ask(M.NANOBPF_CTRL_MSG_STATS)
    f = r.ask(M.NANOBPF_CTRL_MSG_HELLO, hello, seq=hseq)  # a late copy of the HELLO
    assert status(f) == "stale_seq" and struct.unpack(">I", f.body)[0] == r.seq
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=1, cid=b"\x05"), seq=kseq)) == "stale_seq"
    assert list(dev.keys()) == [key_id(b"\x05")]


def test_a_restarted_host_continues_after_the_device_window(pair):
    host, dev, link = pair
    host.key_add(b"\x01", keys_for(b"\x01"))
    again = Client(link.a, retry_ms=20, first_seq=1)      # same host, counter restarted
    again.key_add(b"\x02", keys_for(b"\x02"))
    assert list(dev.keys()) == [key_id(b"\x02")]         # its replay flushed what it did not know
    assert again.seq > host.seq
    seen = [(e, s) for e, s, _, _ in dev.applied]
    assert len(seen) == len(set(seen))
