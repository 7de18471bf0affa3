"""The control protocol against both devices, through their ports only (ctrl_device.dev: the reference
model, and the RTL DPU whose core 0 runs firmware/apps/dpu/ctrl*.c in the Verilator simulation):
sessions and epochs, the at-most-once window and its replay cache, every refusal, the key table, a
program loaded in chunks, verified and compiled on the device, its maps, PISA table words, counters,
control frames from the network, convergence under loss, duplication, reordering and resets, and
event maps drained with EVENTS.
The model-only tests (which look inside the model) are in test_ctrl_protocol.py.
Needs `make sim firmware ebpf-tools` (RTL: root for the TAP devices)."""
import struct
import time

import pytest

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
from nanobpf import soc
from nanobpf.devmodel import PN_MAP

from ctrl_device import (FaultyPort, M, Raw, dev, events_image, keys_for, load_raw, map_req, shown,  # noqa: F401 (fixture)
                         device_params, stand_in_image, status)
from nanobpf import ctrl, ctrlkey
from nanobpf.ctrl import OPEN, SEAL, Client, CtrlError, KeyId, addr_id, key_id
from nanobpf.pcap import udp_frame


def raw_of(d):
    return Raw(d.host)


def keytable(r):
    """The key table as the program's map shows it: {KeyId: 80-byte value}."""
    out, key = {}, b""
    while True:
        f = r.ask(M.NANOBPF_CTRL_MSG_MAP_NEXT, map_req(abi.KEYTABLE_MAP_NAME, key))
        if status(f) == "noent":
            return out
        assert status(f) == "ok", f.body
        key = f.body
        v = r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req(abi.KEYTABLE_MAP_NAME, key))
        out[KeyId(key[21], key[0], key[1:21])] = v.body


# ---------------------------------------------------------------- sessions, epochs, sequence window
def test_session_needs_hello_and_versions_are_negotiated(dev):
    r = raw_of(dev)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS)) == "need_hello"
    f = r.ask(M.NANOBPF_CTRL_MSG_HELLO, D.pack("hello_req", ver_min=D.VERSION + 1, ver_max=D.VERSION + 3))
    assert status(f) == "bad_version" and b"device speaks" in f.body
    assert status(r.ask(M.NANOBPF_CTRL_MSG_HELLO, b"\0")) == "bad_length"
    f = r.hello()
    h = D.unpack("hello_resp", f.body)
    # the limits the device reports are the eBPF ABI's and the protocol's (one source: hw/defs/*.toml)
    assert (h["version"], h["key_slots"], h["max_image"], h["max_body"]) == \
        (D.VERSION, abi.NANOBPF_KEYTABLE_ENTRIES, D.NANOBPF_CTRL_MAX_IMAGE, D.NANOBPF_CTRL_MAX_BODY)
    assert h["cores"] >= 1 and f.hdr["epoch"] != 0 and f.hdr["flags"] == M.NANOBPF_CTRL_F_RESPONSE
    assert f.src == ctrl.DEVICE_MAC and f.dst == ctrl.HOST_MAC
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS)) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS, epoch=r.epoch ^ 1)) == "stale_epoch"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS, version=D.VERSION + 1)) == "bad_version"
    assert r.stats()["epoch"] == r.epoch


def test_duplicates_are_answered_from_the_cache_never_applied_twice(dev):
    r = raw_of(dev)
    r.hello()
    body = D.pack("key_msg", cid_len=2, cid=b"\xab\xcd", keys=keys_for(b"\xab\xcd"))
    seq = r.send(M.NANOBPF_CTRL_MSG_KEY_ADD, body)
    first = r.answer()
    assert status(first) == "ok"
    for _ in range(3):
        r.send(M.NANOBPF_CTRL_MSG_KEY_ADD, body, seq=seq)
        again = r.answer()
        assert again.hdr["flags"] == M.NANOBPF_CTRL_F_RESPONSE | M.NANOBPF_CTRL_F_REPLAY
        assert (again.hdr["status"], again.body) == (first.hdr["status"], first.body)
    s = r.stats()
    assert s["ctrl_replayed"] == 3 and s["keys"] == 1
    # 16 newer requests push seq out of the cache: now it is refused, still not applied
    for _ in range(D.NANOBPF_CTRL_REPLAY_CACHE):
        assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS)) == "ok"
    f = r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=2, cid=b"\xab\xcd"), seq=seq)
    assert status(f) == "stale_seq" and struct.unpack(">I", f.body)[0] == r.seq
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, body)) == "exist"          # the entry is still there
    # a sequence number from the future is fine (the host gave up on some in between)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS, seq=r.seq + 1000)) == "ok"


def test_serial_arithmetic_across_the_wrap(dev):
    r = raw_of(dev)
    r.seq = 0xFFFFFFFD
    r.hello()
    for _ in range(5):
        assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS)) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS, seq=0xFFFFFFFD)) == "stale_seq"


def test_reset_changes_the_epoch_and_clears_state(dev):
    r = raw_of(dev)
    r.hello()
    add = D.pack("key_msg", cid_len=1, cid=b"\x01", keys=keys_for(b"\x01"))
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, add)) == "ok"
    old = r.epoch
    f = r.ask(M.NANOBPF_CTRL_MSG_RESET)
    assert status(f) == "ok" and f.hdr["epoch"] not in (0, old)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS, epoch=f.hdr["epoch"])) == "need_hello"
    r.hello()
    assert r.epoch == f.hdr["epoch"]
    s = r.stats()
    assert s["resets"] == 1 and s["keys"] == 0 and s["ctrl_applied"] == 2   # counters start again at a reset
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, add)) == "ok"


def test_malformed_frames_get_no_answer(dev):
    r = raw_of(dev)
    r.hello()
    good = ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, M.NANOBPF_CTRL_MSG_STATS, 500, r.epoch)
    bad = [good[:20],                                                 # cut inside the header
           good[:26] + struct.pack(">H", 200) + good[28:],            # body length beyond the (padded) frame
           good[:28] + b"\0\1" + good[30:],                           # reserved bits
           good[:14] + b"\0" + good[15:],                             # version 0
           r.frame(M.NANOBPF_CTRL_MSG_STATS, seq=501, flags=M.NANOBPF_CTRL_F_RESPONSE)]   # a "response" sent to the device
    for b in bad:
        r.port.send(b.ljust(60, b"\0") if len(b) >= 30 else b)
        assert r.answer(dev.answer_s) is None
    assert r.stats()["ctrl_malformed"] == len(bad)


def test_forged_altered_and_replayed_requests_are_dropped_and_counted(dev):
    """The control channel's authentication (docs/control.md "The device key"): a request under another
    key or altered anywhere (header, nonce, body, tag) gets no answer, changes nothing and is counted
    ctrl_auth_fail (one of protocol version 1, without nonce and tag, ctrl_malformed); an authentic request replayed is never
    applied twice: answered from the replay cache while it is there, refused as STALE_SEQ after, as
    STALE_EPOCH after a reset; on the network port it is foreign."""
    r = raw_of(dev)
    r.hello()
    before = r.stats()
    cid = b"\x51\x52\x53\x54"
    add = D.pack("key_msg", cid_len=4, cid=cid, keys=keys_for(cid))
    good_seq = r.seq + 50                                              # above what the checks below use
    good = r.frame(M.NANOBPF_CTRL_MSG_KEY_ADD, add, seq=good_seq)
    body_at, tag_at = 14 + D.CTRL_HDR_SIZE + D.NANOBPF_CTRL_NONCE_LEN, len(good) - D.NANOBPF_CTRL_TAG_LEN

    def flip(frame, i):
        return frame[:i] + bytes([frame[i] ^ 0x01]) + frame[i + 1:]
    v1 = good[:14] + D.pack("ctrl_hdr", version=1, type=M.NANOBPF_CTRL_MSG_KEY_ADD, seq=r.seq, epoch=r.epoch,
                            length=len(add)) + add                     # protocol version 1: keys in clear
    forged = [r.frame(M.NANOBPF_CTRL_MSG_KEY_ADD, add, key=ctrlkey.DeviceKey(bytes(range(16)))),   # another key
              flip(good, 14 + 4),                                      # the header's sequence number
              flip(good, 14 + D.CTRL_HDR_SIZE),                        # the nonce
              flip(good, body_at + 30),                                # the encrypted body (the CID)
              flip(good, tag_at + 15)]                                 # the tag
    for f in forged + [v1]:
        r.port.send(f.ljust(60, b"\0"))
        assert r.answer(dev.answer_s) is None
    s = r.stats()
    assert s["ctrl_auth_fail"] - before["ctrl_auth_fail"] == len(forged)
    assert s["ctrl_malformed"] - before["ctrl_malformed"] == 1        # v1: shorter than its v2 length says
    assert s["keys"] == 0 and s["ctrl_applied"] - before["ctrl_applied"] == 1          # only the STATS
    assert s["ctrl_rx"] - before["ctrl_rx"] == 1                       # the forged ones are not requests
    # the authentic request, then its replays
    assert r.seq < good_seq
    r.port.send(good)
    r.seq = good_seq
    f = r.answer()
    assert status(f) == "ok" and not f.hdr["flags"] & M.NANOBPF_CTRL_F_REPLAY
    assert f.nonce == good[14 + D.CTRL_HDR_SIZE:body_at]               # the response names its request
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=4, cid=cid))) == "ok"
    r.port.send(good)                                                  # a replay the cache still holds
    f = r.answer()
    assert status(f) == "ok" and f.hdr["flags"] & M.NANOBPF_CTRL_F_REPLAY
    assert r.stats()["keys"] == 0                                      # ... answered, not applied again
    for _ in range(D.NANOBPF_CTRL_REPLAY_CACHE):
        r.stats()
    r.port.send(good)                                                  # past the cache: refused
    assert status(r.answer()) == "stale_seq" and r.stats()["keys"] == 0
    r.port.send(good.ljust(60, b"\0"))
    dev.net.send(good)                                                 # on the network's port: never obeyed
    assert status(r.answer()) == "stale_seq"
    # nothing orders the two ports against each other (the model polls both, the device has a pipeline
    # per port): the network's copy may be handled after the host's next request, so wait for its count
    deadline = time.monotonic() + 10 * dev.answer_s
    while (s := r.stats())["ctrl_foreign"] == before["ctrl_foreign"] and time.monotonic() < deadline:
        time.sleep(dev.answer_s / 10)
    assert s["ctrl_foreign"] - before["ctrl_foreign"] == 1 and s["keys"] == 0
    f = r.ask(M.NANOBPF_CTRL_MSG_RESET)
    assert status(f) == "ok"
    r.port.send(good)                                                  # an earlier epoch's
    assert status(r.answer()) == "need_hello"
    r.hello()
    r.port.send(good)
    assert status(r.answer()) == "stale_epoch"
    s = r.stats()
    assert s["keys"] == 0 and s["ctrl_stale"] == 2 and s["ctrl_auth_fail"] == 0     # counters start again at a reset


# ---------------------------------------------------------------- keys
def test_key_messages(dev):
    r = raw_of(dev)
    r.hello()
    cid = bytes(range(20))
    ok = D.pack("key_msg", cid_len=20, cid=cid, keys=keys_for(cid))
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_UPDATE, ok)) == "noent"
    f = r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, ok)
    assert status(f) == "ok"
    slot = D.unpack("key_resp", f.body)["slot"]
    # the connection tag: a key table slot, and above it the slot's generation (the device's counts from
    # 1; the model numbers its entries without one)
    gen = slot >> abi.NANOBPF_KEYTABLE_SLOT_BITS
    assert slot < 1 << abi.NANOBPF_KEYTABLE_CONN_BITS and (gen >= 1 if dev.kind == "rtl" else gen == 0)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, ok)) == "exist"
    new = keys_for(cid, phase=1, fill=9, nxt=True)
    f = r.ask(M.NANOBPF_CTRL_MSG_KEY_UPDATE, D.pack("key_msg", cid_len=20, cid=cid, keys=new))
    assert status(f) == "ok" and D.unpack("key_resp", f.body)["slot"] == slot       # an update keeps the slot
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, ok[:-1])) == "bad_length"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=3, cid=b"xyz"))) == "noent"
    assert r.stats()["keys"] == 1
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=20, cid=cid))) == "ok"
    assert status(r.ask(0x7F)) == "bad_type"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_FLUSH, b"\0")) == "bad_length"
    assert r.stats()["keys"] == 0


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


def test_key_message_refusals_name_the_field(dev):
    r = raw_of(dev)
    r.hello()
    for fields, text, in_name in KEY_REFUSALS:
        for type_ in (M.NANOBPF_CTRL_MSG_KEY_ADD, M.NANOBPF_CTRL_MSG_KEY_UPDATE):
            f = r.ask(type_, D.pack("key_msg", **fields))
            assert status(f) == "invalid" and text in f.body.decode(), (fields, f.body)
        if in_name:
            f = r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", **{k: v for k, v in fields.items() if k != "keys"}))
            assert status(f) == "invalid" and text in f.body.decode(), (fields, f.body)
    assert r.stats()["keys"] == 0


def test_key_entries_per_direction_by_address_and_in_the_programs_map(dev):
    """One CID names an open and a seal entry; a zero-length CID is the peer's address id. A program's
    nanobpf_quic_keys map shows the device's table (entries made before the program included), the
    program's packet-number state of an entry goes with KEY_ADD and KEY_DEL and stays with KEY_UPDATE,
    and quic_config.open_cid_lens follows the open entries."""
    r = raw_of(dev)
    r.hello()
    cid = b"\x0c\x1d"
    add = lambda **kw: r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", **kw))
    f_open = add(cid_len=2, dir=OPEN, cid=cid, keys=keys_for(cid, fill=1))
    assert status(load_raw(r, stand_in_image())) == "ok"
    f_seal = add(cid_len=2, dir=SEAL, cid=cid, keys=keys_for(cid, fill=2))
    assert status(f_open) == status(f_seal) == "ok"
    assert D.unpack("key_resp", f_open.body)["slot"] != D.unpack("key_resp", f_seal.body)["slot"]
    assert status(add(cid_len=2, dir=SEAL, cid=cid, keys=keys_for(cid, fill=3))) == "exist"
    a4, a6 = addr_id("192.0.2.7", 4433, 443), addr_id("2001:db8::7", 4433, 443)
    for a, d in ((a4, OPEN), (a4, SEAL), (a6, SEAL)):
        assert status(add(cid_len=0, dir=d, cid=a, keys=keys_for(b"", fill=4))) == "ok"
    entries = {KeyId(OPEN, 2, cid.ljust(20, b"\0")): keys_for(cid, fill=1), KeyId(SEAL, 2, cid.ljust(20, b"\0")): keys_for(cid, fill=2),
               KeyId(OPEN, 0, a4): keys_for(b"", fill=4), KeyId(SEAL, 0, a4): keys_for(b"", fill=4),
               KeyId(SEAL, 0, a6): keys_for(b"", fill=4)}
    assert keytable(r) == {k: shown(v) for k, v in entries.items()}     # the keys themselves never leave
    if dev.kind == "model":
        assert {k: v for k, (_, v) in dev.model.keys().items()} == entries
    config = lambda: struct.unpack("<4I", r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_config", bytes(4))).body)
    assert config()[2] == (1 << 2) | (1 << 0)                    # open entries of 2-byte and zero-length CIDs
    # the user's quic_config fields are kept; open_cid_lens is the device's
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("quic_config", bytes(4), struct.pack("<4I", 1, 2, 0xFFFF, 4)))) == "ok"
    assert config() == (1, 2, (1 << 2) | 1, 4)
    # packet-number state: kept by KEY_UPDATE, removed by KEY_ADD (fresh keys) and KEY_DEL
    seal = KeyId(SEAL, 2, cid.ljust(20, b"\0"))
    pn = struct.pack("<Q", 7).ljust(abi.STRUCTS["quic_seal_pn"].size, b"\0")
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("quic_pn", seal.pack(), pn))) == "ok"
    new = keys_for(cid, phase=1, fill=8, nxt=True)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_UPDATE, D.pack("key_msg", cid_len=2, dir=SEAL, cid=cid, keys=new))) == "ok"
    assert r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_pn", seal.pack())).body == pn
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=2, dir=SEAL, cid=cid))) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_pn", seal.pack()))) == "noent"
    # KEY_DEL names the direction: the other entry stays
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=0, dir=SEAL, cid=a4))) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=2, dir=OPEN, cid=cid))) == "ok"
    assert set(keytable(r)) == {KeyId(OPEN, 0, a4), KeyId(SEAL, 0, a6)}
    assert config()[2] == 1
    # the key table is changed with KEY_* only
    ck = KeyId(OPEN, 1, b"\x09".ljust(20, b"\0")).pack()
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req(abi.KEYTABLE_MAP_NAME, ck, keys_for(b"\x09")))) == "invalid"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_FLUSH)) == "ok" and keytable(r) == {} and config()[2] == 0


def test_open_entries_fill_pisas_cid_table_and_programs_see_conn(dev):
    """Entries of 1..20-byte CIDs go into PISA's CID table (direction, CID, length) -> slot; a
    short-header packet from the network with an open entry's destination CID reaches the program with
    conn = 1 + the slot KEY_ADD answered, and with conn 0 once KEY_DEL removed it; a frame to seal from
    the host (the ENCRYPT shim, its CID length) with a seal entry's CID reaches it with that entry's
    slot. Each direction finds only its own entries, also for the same CID bytes; a zero-length CID's
    entry is found by the peer's address id. A full table refuses the insert (STATS cid_full): the entry still works. KEY_FLUSH and
    RESET empty it."""
    from nanobpf.models import pisa as pisa_model
    from nanobpf.soc import DATAPATH, pack
    r = raw_of(dev)
    r.hello()
    assert status(load_raw(r, stand_in_image())) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("test_mode", bytes(4), struct.pack("<I", 9)))) == "ok"
    profile = pack("pisa", "profile_entry", valid=1, lport=DATAPATH["net_lport"], udp_port=443, short_cid_len=4)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_SET, D.pack("table_msg", table=D.NANOBPF_CTRL_TABLE_PROFILE, index=0,
                                                           value=profile))) == "ok"
    # the host's QUIC port: frames to seal are parsed behind their shim (their CID length is the shim's)
    profile = pack("pisa", "profile_entry", valid=1, lport=DATAPATH["host_lport"], udp_port=443, short_cid_len=0)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_SET, D.pack("table_msg", table=D.NANOBPF_CTRL_TABLE_PROFILE, index=1,
                                                           value=profile))) == "ok"
    add = lambda cid, d=OPEN, **kw: r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", cid_len=kw.get("n", len(cid)), dir=d, cid=cid,
                                                                          keys=keys_for(cid if kw.get("n", len(cid)) else b"")))
    delete = lambda cid, d=OPEN: r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=len(cid), dir=d, cid=cid))

    def conn_of(dcid, seal=False):
        """(conn, cid_len) the program saw for a short-header packet to dcid from the network (seal: a
        frame to seal from the host)."""
        r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("test_conn", bytes(4), struct.pack("<I", 0xFFFFFFFF)))
        if seal:
            frame = udp_frame(bytes([0x41]) + dcid + bytes(range(30)), "192.0.2.1", "192.0.2.9", 443, 4433)
            dev.host.send(ctrl.add_shim(frame, D.NANOBPF_SHIM_F_ENCRYPT, len(dcid)))
        else:
            dev.net.send(udp_frame(bytes([0x41]) + dcid + bytes(range(30)), "192.0.2.9", "192.0.2.1", 4433, 443))
        for _ in range(100):
            v = struct.unpack("<I", r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("test_conn", bytes(4))).body)[0]
            if v != 0xFFFFFFFF:
                return v & 0x1FFFF, v >> 17
        raise AssertionError("the program never saw the packet")

    x, y = b"\xa1\xa2\xa3\xa4", b"\xb1\xb2\xb3\xb4"
    f = add(x)
    slot = D.unpack("key_resp", f.body)["slot"]
    g = add(y, SEAL)
    assert status(f) == "ok" and status(g) == "ok"
    assert status(add(addr_id("192.0.2.9", 4433, 443), n=0)) == "ok"
    assert conn_of(x) == (1 + slot, 4)
    assert conn_of(y) == (0, 4)                                  # a seal entry's CID is not the device's
    assert conn_of(y, seal=True) == (1 + D.unpack("key_resp", g.body)["slot"], 4)
    assert conn_of(x, seal=True) == (0, 4)                       # nor an open entry's one to seal with
    h = add(x, SEAL)                                             # the same bytes in both directions
    assert status(h) == "ok" and conn_of(x, seal=True) == (1 + D.unpack("key_resp", h.body)["slot"], 4)
    assert conn_of(x) == (1 + slot, 4)
    assert status(delete(x, SEAL)) == "ok" and conn_of(x, seal=True) == (0, 4) and conn_of(x) == (1 + slot, 4)
    # a peer with zero-length CIDs: a frame to seal (shim length 0) is looked up by the peer's address id
    assert conn_of(b"", seal=True) == (0, 0)
    z = add(addr_id("192.0.2.9", 4433, 443), SEAL, n=0)
    assert status(z) == "ok" and conn_of(b"", seal=True) == (1 + D.unpack("key_resp", z.body)["slot"], 0)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_UPDATE, D.pack("key_msg", cid_len=4, dir=OPEN, cid=x,
                                                           keys=keys_for(x, phase=1, fill=5)))) == "ok"
    assert conn_of(x) == (1 + slot, 4)                           # an update keeps the slot
    assert status(delete(x)) == "ok" and conn_of(x) == (0, 4)
    # capacity: CIDs with the same bucket in every way of the hashed table (nanobpf.models.pisa.cid_collisions)
    # fill all their places; the next two are refused and work without conn
    ways = pisa_model.Pisa().cid_ways
    cids = pisa_model.cid_collisions(bytes(range(0x51, 0x59)), ways + 2)
    for c in cids:
        assert status(add(c)) == "ok"
    assert r.stats()["cid_full"] == 2
    assert status(delete(cids[0])) == "ok" and status(add(b"\xc1\xc2\xc3\xc4")) == "ok"
    assert conn_of(b"\xc1\xc2\xc3\xc4")[0] != 0 and r.stats()["cid_full"] == 2
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_FLUSH)) == "ok"
    assert status(add(x)) == "ok" and conn_of(x)[0] != 0 and r.stats()["cid_full"] == 2
    r.ask(M.NANOBPF_CTRL_MSG_RESET)
    r.hello()
    assert r.stats()["cid_full"] == 0 and r.stats()["keys"] == 0


# ---------------------------------------------------------------- programs, maps, tables
def test_program_messages(dev):
    r = raw_of(dev)
    image = stand_in_image()
    r.hello()
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_INFO)) == "no_prog"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_UNLOAD)) == "no_prog"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_CHUNK, D.pack("prog_chunk", offset=0) + b"x")) == "sequence"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_BEGIN, D.pack("prog_begin", total=D.NANOBPF_CTRL_MAX_IMAGE + 1))) == "invalid"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_BEGIN, D.pack("prog_begin", total=0))) == "invalid"
    # a chunk at the wrong offset, too many bytes, a commit before the end, a CRC mismatch
    meta = D.pack("prog_begin", total=8, crc32=ctrl.crc32(image[:8]), name="x")
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_BEGIN, meta)) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_CHUNK, D.pack("prog_chunk", offset=4) + b"abcd")) == "sequence"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_CHUNK, D.pack("prog_chunk", offset=0) + bytes(9))) == "sequence"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_COMMIT, meta)) == "sequence"
    assert status(load_raw(r, image, crc=1)) == "sequence"
    # an image the loader refuses, and one the verifier refuses, with the reason
    f = load_raw(r, b"\x7fELF" + bytes(100))
    assert status(f) == "verifier" and b"magic" in f.body
    f = load_raw(r, image, chunk=700)                            # chunks need not be CHUNK bytes
    info = D.unpack("prog_info", f.body)
    assert status(f) == "ok" and info["name"] == "xdp_ctrl_test" and info["image_len"] == len(image)
    assert info["crc32"] == ctrl.crc32(image) and info["maps"] == 7 and info["insns"] > 100
    assert D.unpack("prog_info", r.ask(M.NANOBPF_CTRL_MSG_PROG_INFO).body) == info
    # a program with QUIC maps replaces one with QUIC maps: the device holds both programs' maps at once
    # until the data cores have moved on (the key table and quic_pn are the device's, held once)
    f = load_raw(r, image)
    assert status(f) == "ok" and D.unpack("prog_info", f.body) == info, f.body
    # a program whose exit returns an unset r0: the verifier's reason comes back, the old one stays
    from nanobpf.ebpf.loader import Image, Insn
    bad = Image(name="broken", maps=[], insns=[Insn(0x95, 0, 0, 0, 0)]).to_bytes()
    f = load_raw(r, bad, name="broken")
    assert status(f) == "verifier" and b"R0" in f.body, f.body
    assert D.unpack("prog_info", r.ask(M.NANOBPF_CTRL_MSG_PROG_INFO).body)["name"] == "xdp_ctrl_test"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_UNLOAD)) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_INFO)) == "no_prog"


def test_map_messages(dev):
    r = raw_of(dev)
    r.hello()
    zero, mode = bytes(4), struct.pack("<I", 6)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("test_mode", zero))) == "no_prog"
    assert status(load_raw(r, stand_in_image())) == "ok"
    assert r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("test_mode", zero)).body == bytes(4)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("test_mode", zero, mode))) == "ok"
    assert r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("test_mode", zero)).body == mode
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("test_mode", zero, mode, flags=1))) == "exist"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("test_mode", struct.pack("<I", 1)))) == "noent"
    assert r.ask(M.NANOBPF_CTRL_MSG_MAP_NEXT, map_req("test_mode")).body == zero
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_NEXT, map_req("test_mode", zero))) == "noent"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_DELETE, map_req("test_mode", zero))) == "invalid"       # arrays
    # quic_pn holds a state per key table entry: none for a key without one, zero from KEY_ADD
    pk = KeyId(OPEN, 1, b"\x05".ljust(20, b"\0")).pack()
    pv = struct.pack("<QQQQ", 1, 2, 3, 4).ljust(abi.STRUCTS["quic_pn_state"].size, b"\0")
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("quic_pn", pk, pv, flags=2))) == "noent"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("quic_pn", pk, pv))) == "noent"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_NEXT, map_req("quic_pn"))) == "noent"
    add = D.pack("key_msg", cid_len=1, cid=b"\x05", keys=keys_for(b"\x05"))
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, add)) == "ok"
    assert r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_pn", pk)).body == bytes(len(pv))
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("quic_pn", pk, pv, flags=1))) == "exist"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("quic_pn", pk, pv))) == "ok"
    assert r.ask(M.NANOBPF_CTRL_MSG_MAP_NEXT, map_req("quic_pn")).body == pk
    assert r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_pn", pk)).body == pv
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_DELETE, map_req("quic_pn", pk))) == "ok"          # back to zero
    assert r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_pn", pk)).body == bytes(len(pv))
    assert status(r.ask(M.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", cid_len=1, cid=b"\x05"))) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_DELETE, map_req("quic_pn", pk))) == "noent"      # gone with the entry
    assert len(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_stats", zero)).body) == 8             # per-CPU
    f = r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("nosuch", zero))
    assert status(f) == "no_map" and b"test_mode" in f.body
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("test_mode", zero + b"\0"))) == "no_map"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("test_mode", zero, mode + b"\0"))) == "no_map"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("test_mode", zero, mode, flags=3))) == "invalid"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("test_mode", zero, mode))) == "invalid"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("test_mode", zero)[:-1])) == "bad_length"


def test_table_messages(dev):
    r = raw_of(dev)
    r.hello()
    word = (1 << 0) | (1 << 3) | (10 << 4) | (1 << 16)           # port_entry: valid, tagged, vid 10, lport 1
    ok = D.pack("table_msg", table=D.NANOBPF_CTRL_TABLE_PORT, index=7, value=word)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_SET, ok)) == "ok"
    for bad in [dict(table=3, index=0), dict(table=0, index=8), dict(table=2, index=4),
                dict(table=0, index=7, value=1 << 31), dict(table=1, index=0, reserved=1)]:
        assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_SET, D.pack("table_msg", **bad))) == "invalid", bad
    assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_DEL, ok)) == "ok"
    # some entry must bring the host's control frames in: without one nothing from the host would reach
    # the device again. The boot's entry 0 is the only one, so it stays ...
    port = lambda index, value=0: D.pack("table_msg", table=D.NANOBPF_CTRL_TABLE_PORT, index=index, value=value)
    f = r.ask(M.NANOBPF_CTRL_MSG_TABLE_DEL, port(0))
    assert status(f) == "invalid" and b"control link" in f.body
    net = soc.pack("pisa", "port_entry", valid=1, port=soc.DATAPATH["host_port"], lport=soc.DATAPATH["net_lport"])
    assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_SET, port(0, net))) == "invalid"   # nor may it lead elsewhere
    # ... until another one does (the way the host moves itself: another VLAN or port, new entry first)
    host = soc.pack("pisa", "port_entry", valid=1, port=soc.DATAPATH["host_port"], lport=soc.DATAPATH["host_lport"])
    assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_SET, port(5, host))) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_DEL, port(0))) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS)) == "ok"                       # in through entry 5 now
    f = r.ask(M.NANOBPF_CTRL_MSG_TABLE_DEL, port(5))
    assert status(f) == "invalid" and b"control link" in f.body
    assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_SET, port(0, host))) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_TABLE_DEL, port(5))) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_STATS)) == "ok"


def test_stats_name_every_counter(dev):
    host = Client(dev.host, **dev.retry)
    s = host.stats()
    assert list(s) == list(D.STAT_NAMES.values())
    assert s["epoch"] == host.epoch and s["ctrl_applied"] >= 2


# ---------------------------------------------------------------- security
def test_control_frames_from_the_network_port_are_ignored_and_counted(dev):
    evil = Raw(dev.net)
    host = Client(dev.host, **dev.retry)
    epoch = host.stats()["epoch"]
    for t, body in [(M.NANOBPF_CTRL_MSG_HELLO, D.pack("hello_req", ver_min=1, ver_max=1)),
                    (M.NANOBPF_CTRL_MSG_RESET, b""),
                    (M.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", cid_len=1, cid=b"\1", keys=keys_for(b"\1")))]:
        evil.send(t, body, epoch=epoch)
    evil.port.send(b"\xff" * 12 + struct.pack(">H", D.ETHERTYPE) + bytes(46))   # malformed, still foreign
    assert evil.answer(dev.answer_s) is None
    s = host.stats()
    assert s["ctrl_foreign"] == 4 and s["keys"] == 0 and s["resets"] == 0 and s["epoch"] == epoch


# ---------------------------------------------------------------- convergence
@pytest.mark.parametrize("dev", device_params(rtl_long=True), indirect=True)  # the RTL run: make test-long
def test_converges_under_loss_duplication_reordering_and_resets(dev):
    """The driver's algorithm (Client) over a link that loses, duplicates and reorders control frames
    both ways, with device resets in between: the device ends with exactly the host's key table and
    program, and no request was applied twice (STATS: every applied request is one the host sent)."""
    port = FaultyPort(dev.host, seed=4, loss=0.15, dup=0.15, reorder=0.15)
    host = Client(port, **dev.retry)
    rng = __import__("random").Random(4)
    host.prog_load(stand_in_image(), "xdp_ctrl_test")
    cids = [key_id(bytes([i]) * rng.randrange(1, 21), dir=i & 1) for i in range(1, 9)]
    cids += [key_id(b"", dir=i & 1, addr=addr_id(f"10.0.{i}.1", 4433, 443)) for i in range(2)]
    for i in range(24):
        if i in (8, 17):
            f = Raw(dev.host).ask(M.NANOBPF_CTRL_MSG_RESET, epoch=host.epoch, seq=host.seq + 1000)
            assert status(f) == "ok"                                            # another host resets the device
        cid = rng.choice(cids)
        try:
            if cid not in host.keys:
                host.key_add(cid, keys_for(cid, fill=i))
            elif rng.random() < 0.5:
                host.key_update(cid, keys_for(cid, phase=i & 1, fill=i, nxt=True))
            else:
                host.key_del(cid)
        except ctrl.CtrlTimeout:
            pass
    port.clean()
    s = host.stats()                   # one clean exchange: replays if anything was left unsure
    assert host.counters["retransmits"] > 0 and host.counters["resyncs"] >= 3 and s["resets"] == 2
    r = Raw(dev.host)
    r.seq, r.epoch = host.seq, host.epoch
    assert keytable(r) == {k: shown(v) for k, v in host.keys.items()}
    if dev.kind == "model":                                                 # the keys themselves: the model's
        assert {k: v for k, (_, v) in dev.model.keys().items()} == host.keys
    info = D.unpack("prog_info", r.ask(M.NANOBPF_CTRL_MSG_PROG_INFO).body)
    assert info["crc32"] == ctrl.crc32(stand_in_image())


# ---------------------------------------------------------------- data frames around the program
def frames_on(port, n, wait):
    """Up to n data frames (control frames skipped) from port, waiting up to wait s for each."""
    out = []
    while len(out) < n and (f := port.recv(wait)) is not None:
        if ctrl.parse(f) is None:
            out.append(f)
    return out


def test_data_frames_fail_closed_around_the_loaded_program(dev):
    """Without a program: frames go onwards unchanged, an ENCRYPT request is dropped. With the stand-in
    program in MODE_OPEN, a network frame reaches the host with the DECRYPTED shim (the egress puts it
    in); in MODE_STRIP_ONLY an ENCRYPT request (stripped, not counted sealed) never leaves; counted
    sealed with its shim left where it came (MODE_SEAL_KEEP_SHIM) it leaves without it (the egress
    leaves it out), with the shim changed (MODE_SEAL_CHANGE_SHIM) never, and with a second shim behind
    the first (MODE_SEAL_SHIM_TWICE) the egress drops it (shim_to_net). Every frame in is out or
    counted."""
    r = raw_of(dev)
    r.hello()
    udp = udp_frame(bytes(range(40)), "192.0.2.1", "192.0.2.2", 4433, 443)   # PISA parses it: a real one
    encrypt = ctrl.add_shim(udp, D.NANOBPF_SHIM_F_ENCRYPT, 4)

    dev.net.send(udp)
    assert frames_on(dev.host, 1, 30) == [udp]
    dev.host.send(encrypt)
    dev.host.send(udp)
    assert frames_on(dev.net, 2, 30) == [udp]
    assert status(load_raw(r, stand_in_image())) == "ok"
    r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("test_mode", bytes(4), struct.pack("<I", 6)))     # MODE_OPEN
    dev.net.send(udp)
    assert frames_on(dev.host, 1, 30) == [ctrl.add_shim(udp, D.NANOBPF_SHIM_F_DECRYPTED)]
    r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("test_mode", bytes(4), struct.pack("<I", 5)))     # MODE_STRIP_ONLY
    dev.host.send(encrypt)
    assert frames_on(dev.net, 1, dev.answer_s * 3) == []
    r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("test_mode", bytes(4), struct.pack("<I", 3)))     # MODE_SEAL_KEEP_SHIM
    dev.host.send(encrypt)
    assert frames_on(dev.net, 1, 30) == [udp]
    r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("test_mode", bytes(4), struct.pack("<I", 10)))    # MODE_SEAL_CHANGE_SHIM
    dev.host.send(encrypt)
    r.ask(M.NANOBPF_CTRL_MSG_MAP_UPDATE, map_req("test_mode", bytes(4), struct.pack("<I", 11)))    # MODE_SEAL_SHIM_TWICE
    dev.host.send(encrypt)
    assert frames_on(dev.net, 1, dev.answer_s * 3) == []
    s = r.stats()
    assert (s["net_rx"], s["host_tx"], s["decrypted"]) == (2, 2, 1)
    assert (s["host_rx"], s["net_tx"], s["encrypt_req"], s["encrypt_no_prog"], s["encrypt_unsealed"], s["shim_to_net"]) == (6, 2, 5, 1, 2, 1)


@pytest.mark.parametrize("dev", device_params(rtl_long=True), indirect=True)  # the RTL run (100 s): make test-long
def test_packet_number_state_outlives_program_swaps(dev):
    """The packet-number map (quic_pn) is the device's, like the key table: a program that replaces
    another, or is loaded after an unload, finds the state the last one left (so a number sealed
    before stays claimed: test_devmodel_datapath.py sends the packets). A program whose quic_pn has
    another shape is refused by name. KEY_FLUSH clears all of it (a state goes with its key table entry)."""
    host = Client(dev.host, **dev.retry)
    host.hello()
    image = stand_in_image()
    host.prog_load(image, name="xdp_ctrl_test")
    cid = b"\x0c\x1d\x2e"
    host.key_add(cid, keys_for(cid, fill=5), dir=SEAL)
    claims = struct.pack("<QQQQ", 13, 10, 11, 12).ljust(abi.STRUCTS["quic_seal_pn"].size, b"\0")  # a seal entry's claim words
    host.map_update(PN_MAP, key_id(cid, SEAL).pack(), claims)

    def pn_state():
        return {k: host.map_lookup(PN_MAP, k) for k in host.map_keys(PN_MAP)}

    assert pn_state() == {key_id(cid, SEAL).pack(): claims}
    host.prog_load(image, name="xdp_ctrl_test")                   # a swap
    assert pn_state() == {key_id(cid, SEAL).pack(): claims}
    host.prog_unload()
    host.prog_load(image, name="xdp_ctrl_test")                   # an unload, then a load
    assert pn_state() == {key_id(cid, SEAL).pack(): claims}
    # a program whose quic_pn is not the device's shape: refused, naming the map; the attached one stays
    from nanobpf.ebpf.loader import Image, Insn, Map
    bad = Image(name="bad_pn", maps=[Map(PN_MAP, abi.NANOBPF_MAP_TYPE_HASH, abi.STRUCTS["quic_cid"].size, 16, 8)],
                insns=[Insn(0xB7, 0, 0, 0, 2), Insn(0x95, 0, 0, 0, 0)]).to_bytes()
    with pytest.raises(CtrlError) as refused:
        host.prog_load(bad, name="bad_pn")
    assert refused.value.status == D.NANOBPF_CTRL_ST_VERIFIER and PN_MAP in str(refused.value), refused.value
    assert host.prog_info()["name"] == "xdp_ctrl_test"
    # no state without an entry; KEY_FLUSH takes every entry's
    with pytest.raises(CtrlError) as refused:
        host.map_update(PN_MAP, key_id(b"abc", SEAL).pack(), claims)
    assert refused.value.status == D.NANOBPF_CTRL_ST_NOENT, refused.value
    host.key_add(b"abc", keys_for(b"abc", fill=6), dir=SEAL)
    assert pn_state() == {key_id(cid, SEAL).pack(): claims, key_id(b"abc", SEAL).pack(): bytes(len(claims))}
    host.call(M.NANOBPF_CTRL_MSG_KEY_FLUSH)
    host.keys.clear()
    assert pn_state() == {}


def test_pinned_maps_are_shared_by_name_across_program_swaps(dev):
    """A map pinned by name (LIBBPF_PIN_BY_NAME) is one map on the device: a program that replaces
    another and pins the same name finds its entries. One that pins the name with another shape is
    refused, naming the map, and the attached program stays. A map of the same name that is not pinned
    is the program's own, and when the last program pinning a map goes, the map goes with it."""
    from nanobpf.ebpf.loader import Image, Insn, Map
    host = Client(dev.host, **dev.retry)
    host.hello()

    def image(name, value_size=8, pinning=abi.NANOBPF_PIN_BY_NAME):
        flows = Map("flows", abi.NANOBPF_MAP_TYPE_HASH, 4, value_size, 4, pinning=pinning)
        return Image(name=name, maps=[flows], insns=[Insn(0xB7, 0, 0, 0, 2), Insn(0x95, 0, 0, 0, 0)]).to_bytes()

    def flows(key):
        try:
            return host.map_lookup("flows", key)
        except CtrlError as e:
            assert e.status == D.NANOBPF_CTRL_ST_NOENT, e
            return None

    key, value = struct.pack("<I", 7), struct.pack("<Q", 0x1122334455667788)
    host.prog_load(image("first"), name="first")
    host.map_update("flows", key, value)
    host.prog_load(image("second"), name="second")                 # a swap: the same map
    assert flows(key) == value
    with pytest.raises(CtrlError) as refused:                     # another shape under the pinned name
        host.prog_load(image("third", value_size=16), name="third")
    assert refused.value.status == D.NANOBPF_CTRL_ST_VERIFIER, refused.value
    assert "map flows: pinned with type 1, key 4, value 8" in str(refused.value), refused.value
    assert host.prog_info()["name"] == "second" and flows(key) == value
    host.prog_load(image("own", pinning=abi.NANOBPF_PIN_NONE), name="own")   # its own map, empty
    assert flows(key) is None
    host.prog_load(image("fourth"), name="fourth")                 # the pinned map went with "second"
    assert flows(key) is None


# ---------------------------------------------------------------- events (RINGBUF, PERF_EVENT_ARRAY)
# xdp_events_test.c: per frame a perf event (the first 8 bytes, then the frame) and a ring buffer
# record (256 bytes of the frame, or 16 of a shorter one) into its 4096-byte ring; last_rc keeps the
# helpers' results; the frame is dropped.
RING_BYTES = 4096


def net_frames(sizes, tag):
    """Distinct UDP frames of the given sizes (PISA passes them to the program)."""
    return [udp_frame(bytes((tag + k + i) & 0xFF for i in range(n - 42)), "192.0.2.1", "192.0.2.2", 4433, 443)
            for k, n in enumerate(sizes)]


def wait_dropped(stats, n, dev):
    """Until the program has dropped n frames (its runs are over: their records are in the rings)."""
    import time
    end = time.monotonic() + (10 if dev.kind == "model" else 300)
    while (got := stats()["xdp_drop"]) < n:
        assert time.monotonic() < end, f"{got} of {n} frames ran"
        time.sleep(0.05 if dev.kind == "model" else 1)


def test_events_are_drained_in_order_and_a_full_ring_counts_its_drops(dev):
    """A program's perf event array and ring buffer are read back through EVENTS: every record whole, in
    the order the frames came, tagged with the core; the perf records carry the packet bytes the flags
    asked for. A ring that fills drops what does not fit and counts it: the next EVENTS says how many
    (once), the program got -EAGAIN, the records kept are the oldest. A response holds what fits (pending
    says more wait), max bounds it, and taken records are gone."""
    host = Client(dev.host, **dev.retry)
    host.hello()
    host.prog_load(events_image(), name="xdp_events")
    small = net_frames([64, 90, 128], tag=1)
    for f in small:
        dev.net.send(f)
    wait_dropped(host.stats, 3, dev)
    assert host.events("events") == (0, 0, [(0, f[:8] + f) for f in small])   # core 0 runs it (1 core)
    assert host.events("rb") == (0, 0, [(0, f[:16]) for f in small])
    assert host.events("rb") == (0, 0, [])
    # 20 frames of 300 bytes: 256 bytes each into the 4096-byte ring (264 with the record header): 15 fit
    big = net_frames([300] * 20, tag=50)
    for f in big:
        dev.net.send(f)
    wait_dropped(host.stats, 23, dev)
    fit = RING_BYTES // (abi.NANOBPF_EVENT_REC_HDR + 256)
    per_response = (D.NANOBPF_CTRL_MAX_BODY - D.EVENTS_RESP_SIZE) // (D.EVENT_REC_SIZE + 256)
    lost, pending, first = host.events("rb")
    assert (lost, pending, len(first)) == (20 - fit, fit - per_response, per_response)
    one = host.events("rb", max=1)
    assert one == (0, fit - per_response - 1, [(0, big[per_response][:256])])
    lost, rest = host.events_all("rb")
    assert lost == 0 and [d for _, d in first + one[2] + rest] == [f[:256] for f in big[:fit]]
    rc = host.map_lookup("last_rc", bytes(4))
    assert struct.unpack("<qq", rc) == (-abi.NANOBPF_EAGAIN, 0)     # the last frame found the ring full
    lost, perf = host.events_all("events")
    assert lost == 0 and perf == [(0, f[:8] + f) for f in big]     # the perf ring had room for all
    # refusals: a map that is not an event map, an event map through MAP_*, an unknown map
    with pytest.raises(CtrlError) as e:
        host.events("last_rc")
    assert e.value.status == D.NANOBPF_CTRL_ST_INVALID and "not an event map" in str(e.value)
    with pytest.raises(CtrlError) as e:
        host.map_lookup("rb", b"")
    assert e.value.status == D.NANOBPF_CTRL_ST_INVALID and "EVENTS" in str(e.value)
    with pytest.raises(CtrlError) as e:
        host.events("nope")
    assert e.value.status == D.NANOBPF_CTRL_ST_NO_MAP and "rb" in str(e.value)


def test_events_request_is_applied_once(dev):
    """EVENTS takes the records it answers with: a retransmission (same sequence number) is answered
    from the replay cache with the same records, never drained again; the next request finds none.
    Without a program, with a bad length or reserved bits it is refused."""
    r = raw_of(dev)
    r.hello()
    req = D.pack("events_req", name="rb")
    assert status(r.ask(M.NANOBPF_CTRL_MSG_EVENTS, req)) == "no_prog"
    assert status(load_raw(r, events_image(), name="xdp_events")) == "ok"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_EVENTS, req[:-1])) == "bad_length"
    assert status(r.ask(M.NANOBPF_CTRL_MSG_EVENTS, D.pack("events_req", name="rb", reserved=1))) == "invalid"
    frames = net_frames([70, 80], tag=9)
    for f in frames:
        dev.net.send(f)
    wait_dropped(r.stats, 2, dev)
    seq = r.send(M.NANOBPF_CTRL_MSG_EVENTS, req)
    first = r.answer()
    assert status(first) == "ok" and ctrl.parse_events(first.body) == (0, 0, [(0, f[:16]) for f in frames])
    r.send(M.NANOBPF_CTRL_MSG_EVENTS, req, seq=seq)
    again = r.answer()
    assert again.hdr["flags"] == M.NANOBPF_CTRL_F_RESPONSE | M.NANOBPF_CTRL_F_REPLAY and again.body == first.body
    assert ctrl.parse_events(r.ask(M.NANOBPF_CTRL_MSG_EVENTS, req).body) == (0, 0, [])
