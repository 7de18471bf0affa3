"""Control protocol between the reference host (nanobpf.ctrl.Client, nanobpf.ko's algorithm) and the
reference device model (nanobpf.devmodel), over an in-memory link, where a test looks inside the model
(its table, the requests it applied, its own fault injection): the key table's limit, the real QUIC
program's messages and maps, convergence of the device to the host state under injected loss,
duplication and reordering of control frames and device resets mid-sequence (no request applied
twice), timeouts, late HELLOs, a restarted host. What a host sees of any device (sessions, the cache,
every refusal, keys, programs, tables, counters) is tested against the model and the RTL DPU in
test_ctrl_device.py.
Needs `make ebpf-tools firmware` (the device runtime and the xdp_quic image)."""
import random
import struct

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
import pytest

from nanobpf import BUILD
from nanobpf import ctrl
from nanobpf.ctrl import OPEN, Client, CtrlError, CtrlTimeout, KeyId, MemoryLink, addr_id, key_id
from nanobpf.devmodel import DeviceModel
from nanobpf.ebpf import device

from ctrl_device import Raw, keys_for, load_raw, map_req, status  # noqa: E402 (shared with test_ctrl_device.py)

IMAGE = BUILD / "firmware/bpf/xdp_quic.nbpf"
M = D  # message/status constants
pytestmark = pytest.mark.skipif(not device.available()[0], reason=device.available()[1])


@pytest.fixture
def pair():
    link = MemoryLink()
    dev = DeviceModel(link.b, seed=7).start()
    host = Client(link.a, retry_ms=20, retry_max_ms=160)
    yield host, dev, link
    dev.stop()
    link.close()


@pytest.fixture
def raw():
    link = MemoryLink()
    dev = DeviceModel(link.b, seed=3)
    dev.start()
    r = Raw(link.a)
    yield r, dev
    dev.stop()
    link.close()


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


def test_program_messages(raw):
    r, dev = raw
    image = IMAGE.read_bytes()
    r.hello()
    # (the sequence, CRC and refusal rules are tested on the model and the RTL DPU: test_ctrl_device.py)
    f = load_raw(r, image, name="xdp_quic")
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


def test_map_messages(raw):
    r, dev = raw
    r.hello()
    port = struct.pack("<H", 4433)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_MAP_LOOKUP, map_req("quic_ports", port))) == "no_prog"
    load_raw(r, IMAGE.read_bytes(), name="xdp_quic")
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
