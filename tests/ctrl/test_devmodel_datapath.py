"""The reference device model's packet behaviour and the control plane around the program's maps.

With the real QUIC program (xdp_quic) attached through the control protocol: a protected 1-RTT packet
from the network reaches the host decrypted with the DECRYPTED shim, a plaintext packet the host sends
with the ENCRYPT shim (and its destination CID length) reaches the network sealed with the entry of
direction SEAL, zero-length CIDs are named by address, a seal request the program cannot serve never
leaves, other frames pass untouched, and a TAP-attached model works the same.

With a stand-in program (xdp_ctrl_test.c: the QUIC maps, no crypto, misbehaviour on demand): the model
fails closed on its own (ENCRYPT without a program, a frame the program did not count sealed, a shim
left on, a sealed frame sent back to the host, malformed shims), removes the packet-number state
(quic_pn) of an entry on KEY_ADD, KEY_DEL and KEY_FLUSH but keeps it on KEY_UPDATE and across program
swaps (then a number sealed before is not sealed again), and keeps
quic_config.open_cid_lens equal to the open entries' CID lengths.
Needs `make ebpf-tools firmware` (and clang for the stand-in)."""
import os
import platform
import shutil
import struct
import subprocess

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
import pytest

from nanobpf import BUILD, ROOT
from nanobpf import ctrl
from nanobpf.ctrl import OPEN, SEAL, Client, CtrlError, MemoryLink, addr_id, key_id
from nanobpf.devmodel import HOST_PORT, NET_PORT, DeviceModel
from nanobpf.ebpf import device
from nanobpf.pcap import parse_udp, udp_frame
from nanobpf.quic import PacketKeys, protect, unprotect
from nanobpf.quic.protection import encode_pn

IMAGE = BUILD / "firmware/bpf/xdp_quic.nbpf"
CID = bytes.fromhex("0011223344556677")        # our connection ID (open entries)
PEER_CID = bytes.fromhex("a1a2a3a4")            # the peer's (seal entries)
K0 = PacketKeys.from_secret(bytes(range(32)))   # the peer's keys (we open with them)
K1 = PacketKeys.from_secret(bytes(range(1, 33)))  # ours (we seal with them)
pytestmark = pytest.mark.skipif(not device.available()[0], reason=device.available()[1])

# The stand-in program's modes (xdp_ctrl_test.c)
PASS, TX, SEAL_OK, SEAL_KEEP_SHIM, SEAL_TX, STRIP_ONLY, OPEN_COUNT, DROP, LOOKUP = range(9)
SEAL_CHANGE_SHIM, SEAL_SHIM_TWICE = 10, 11


def pack(name, *values):
    return struct.pack(abi.STRUCTS[name].fmt, *values)


def keys_struct(k, cid_len, phase=0, flags=0):
    return pack("quic_keys", phase, flags, cid_len, 0, k.key + bytes(16), k.iv + bytes(12), k.hp, b"")


def short_packet(dcid, pn, payload, largest=-1):
    tpn = encode_pn(pn, largest)
    return bytes([0x40 | (len(tpn) - 1)]) + dcid + tpn + payload


def quic_frames(pn, payload, dcid=CID, keys=K0, largest=-1):
    """(plain frame, protected frame) of a short-header packet from the network (10.0.0.1:50000 -> 443)."""
    plain = short_packet(dcid, pn, payload, largest)
    prot = protect(plain, keys, largest_pn=largest, short_cid_len=len(dcid))
    f = lambda q: udp_frame(q, "10.0.0.1", "10.0.0.2", 50000, 443)
    return f(plain), f(prot)


def host_packet(pn, payload, dcid=PEER_CID, largest=-1, dst="10.0.0.1", dport=50000, sport=443):
    """A plaintext short-header packet the host sends (10.0.0.2:443 -> 10.0.0.1:50000)."""
    return udp_frame(short_packet(dcid, pn, payload, largest), "10.0.0.2", dst, sport, dport)


def config(host_ifindex=HOST_PORT, net_ifindex=NET_PORT, open_cid_lens=0, flags=0):
    return pack("quic_config", host_ifindex, net_ifindex, open_cid_lens, flags)


def setup_device(host):
    host.prog_load(IMAGE.read_bytes(), "xdp_quic")
    host.map_update("quic_config", bytes(4), config())
    host.map_update("quic_ports", struct.pack("<H", 443), struct.pack("<I", 1))
    host.key_add(CID, keys_struct(K0, len(CID)))                         # packets from the network
    host.key_add(PEER_CID, keys_struct(K1, len(PEER_CID)), dir=SEAL)     # packets the host sends


def drops(s):
    return s["xdp_drop"] + s["encrypt_no_prog"] + s["encrypt_unsealed"] + s["bad_shim"] + s["shim_to_net"]


def balanced(s):
    """Every data frame in went out or was dropped for a counted reason."""
    return s["host_rx"] + s["net_rx"] == s["host_tx"] + s["net_tx"] + drops(s)


@pytest.fixture
def model():
    hl, nl = MemoryLink(), MemoryLink()
    dev = DeviceModel(hl.b, nl.b, seed=11).start()
    host = Client(hl.a, retry_ms=50, retry_max_ms=1000)
    yield host, dev, hl.a, nl.a
    dev.stop()
    hl.close()
    nl.close()


@pytest.fixture(scope="module")
def test_image(tmp_path_factory):
    """xdp_ctrl_test.c as a device image."""
    if not shutil.which("clang"):
        pytest.skip("clang is not installed")
    from nanobpf.ebpf.loader import load
    obj = tmp_path_factory.mktemp("bpf") / "xdp_ctrl_test.o"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-Wall", "-Werror",
                    f"-I/usr/include/{platform.machine()}-linux-gnu", f"-I{BUILD / 'generated/include'}",
                    "-c", str(ROOT / "tests/ctrl/xdp_ctrl_test.c"), "-o", str(obj)], check=True)
    return load(obj).to_bytes()


def set_mode(host, mode):
    host.map_update("test_mode", bytes(4), struct.pack("<I", mode))


# ---------------------------------------------------------------- the real QUIC program
def test_open_to_host_and_seal_to_network(model):
    host, dev, host_end, net_end = model
    setup_device(host)
    plain, prot = quic_frames(7, b"hello, device" * 5)
    net_end.send(prot)
    flags, cid_len, got = ctrl.strip_shim(host_end.recv(5))
    assert (flags, cid_len) == (D.NANOBPF_SHIM_F_DECRYPTED, 0) and got == plain
    out = host_packet(3, b"sealed by the device" * 4)
    host_end.send(ctrl.add_shim(out, D.NANOBPF_SHIM_F_ENCRYPT, len(PEER_CID)))
    sealed = net_end.recv(5)
    assert sealed is not None and not ctrl.has_shim(sealed)
    u = parse_udp(sealed)
    assert u.payload != parse_udp(out).payload
    assert unprotect(u.payload, K1, -1, len(PEER_CID)).plain == parse_udp(out).payload
    s = dev.stats()
    assert (s["decrypted"], s["encrypt_req"], s["net_rx"], s["net_tx"]) == (1, 1, 1, 1) and balanced(s)


def test_loopback_seal_then_open(model):
    """A connection to itself: the seal entry and the open entry name the same CID with the same keys;
    what the device sealed opens back to the plaintext."""
    host, dev, host_end, net_end = model
    setup_device(host)
    host.key_add(CID, keys_struct(K0, len(CID)), dir=SEAL)
    plain, _ = quic_frames(9, b"round trip " * 6)
    host_end.send(ctrl.add_shim(plain, D.NANOBPF_SHIM_F_ENCRYPT, len(CID)))
    sealed = net_end.recv(5)
    assert sealed is not None and sealed != plain
    net_end.send(sealed)
    assert ctrl.strip_shim(host_end.recv(5)) == (D.NANOBPF_SHIM_F_DECRYPTED, 0, plain)


def test_sealed_numbers_are_not_sealed_again_after_a_program_swap(model):
    """The packet-number state is the device's: after the program is replaced, or unloaded and loaded
    again, a packet number sealed before is refused (PN_REUSED, counted), never sealed twice with one
    key; the next number is sealed."""
    host, dev, host_end, net_end = model
    setup_device(host)

    def seal(pn):
        host_end.send(ctrl.add_shim(host_packet(pn, b"once only " * 5), D.NANOBPF_SHIM_F_ENCRYPT, len(PEER_CID)))
        return net_end.recv(2)

    assert seal(3) is not None
    for again in ("swap", "unload"):
        if again == "unload":
            host.prog_unload()
        host.prog_load(IMAGE.read_bytes(), "xdp_quic")
        host.map_update("quic_config", bytes(4), config())
        host.map_update("quic_ports", struct.pack("<H", 443), struct.pack("<I", 1))
        assert seal(3) is None, again
        reused = host.map_lookup("quic_drops", struct.pack("<I", abi.NANOBPF_QUIC_DROP_PN_REUSED))
        assert struct.unpack("<Q", reused[:8])[0] == 1, again
    assert seal(4) is not None
    assert balanced(dev.stats())


def test_seal_requests_the_program_cannot_serve_never_leave(model):
    """No seal entry for the named CID (an open entry of the same CID does not count), or a CID length
    that names another connection: dropped by the program, nothing reaches the network."""
    host, dev, host_end, net_end = model
    setup_device(host)
    for frame, n in [(host_packet(1, b"x" * 40, dcid=CID), len(CID)),          # only an open entry
                     (host_packet(1, b"x" * 40, dcid=b"\x77" * 4), 4),         # unknown
                     (host_packet(1, b"x" * 40), len(PEER_CID) + 1),            # wrong length
                     (udp_frame(b"not quic at all", "10.0.0.2", "10.0.0.1", 443, 50000), 4)]:
        host_end.send(ctrl.add_shim(frame, D.NANOBPF_SHIM_F_ENCRYPT, n))
    assert net_end.recv(1.0) is None and host_end.recv(0.1) is None
    s = dev.stats()
    assert s["encrypt_req"] == 4 and s["net_tx"] == 0 and s["xdp_drop"] + s["encrypt_unsealed"] == 4 and balanced(s)


def test_zero_length_cids_by_address(model):
    """A peer that uses zero-length CIDs: its entries are named by its address and ports, both ways;
    the open entry sets bit 0 of open_cid_lens."""
    host, dev, host_end, net_end = model
    setup_device(host)
    aid = addr_id("10.0.0.1", 50000, 443)
    host.key_add(b"", keys_struct(K0, 0), addr=aid)
    host.key_add(b"", keys_struct(K1, 0), dir=SEAL, addr=aid)
    assert struct.unpack("<4I", dev.map_lookup("quic_config", bytes(4)))[2] == (1 << 0) | (1 << len(CID))
    plain, prot = quic_frames(4, b"zero-length " * 5, dcid=b"")
    net_end.send(prot)
    assert ctrl.strip_shim(host_end.recv(5)) == (D.NANOBPF_SHIM_F_DECRYPTED, 0, plain)
    out = host_packet(5, b"to a zero-length peer " * 3, dcid=b"")
    host_end.send(ctrl.add_shim(out, D.NANOBPF_SHIM_F_ENCRYPT, 0))
    sealed = net_end.recv(5)
    assert sealed is not None and unprotect(parse_udp(sealed).payload, K1, -1, 0).plain == parse_udp(out).payload
    # another peer port is another peer: no keys, never sent
    host_end.send(ctrl.add_shim(host_packet(6, b"y" * 30, dcid=b"", dport=50001), D.NANOBPF_SHIM_F_ENCRYPT, 0))
    assert net_end.recv(1.0) is None


def test_tampered_unknown_and_plain_frames(model):
    host, dev, host_end, net_end = model
    setup_device(host)
    plain, prot = quic_frames(9, bytes(40))
    bad = bytearray(prot)
    bad[-1] ^= 1
    net_end.send(bytes(bad))                                     # tag fails: never delivered
    assert host_end.recv(0.5) is None and dev.stats()["xdp_drop"] == 1
    other = udp_frame(b"not quic", "10.0.0.1", "10.0.0.2", 1234, 53)
    net_end.send(other)                                          # passes, unmarked
    assert host_end.recv(5) == other
    host_end.send(other)                                         # host frames without the shim: as they are
    assert net_end.recv(5) == other
    net_end.send(ctrl.add_shim(other, D.NANOBPF_SHIM_F_DECRYPTED))   # a forged shim from the network
    assert host_end.recv(0.5) is None
    s = dev.stats()
    assert s["bad_shim"] == 1 and s["xdp_pass"] + s["xdp_tx"] == 2 and balanced(s)      # both ran the program


# ---------------------------------------------------------------- failing closed, with the stand-in program
def test_encrypt_without_a_program_is_dropped():
    hl, nl = MemoryLink(), MemoryLink()
    dev = DeviceModel(hl.b, nl.b, seed=1).start()
    try:
        f = udp_frame(b"x" * 30, "10.0.0.1", "10.0.0.2", 1, 2)
        nl.a.send(f)
        assert hl.a.recv(5) == f
        hl.a.send(f)                                             # no shim: straight to the network
        assert nl.a.recv(5) == f
        hl.a.send(ctrl.add_shim(f, D.NANOBPF_SHIM_F_ENCRYPT, 4))  # "seal or drop": no program, dropped
        assert nl.a.recv(0.5) is None and hl.a.recv(0.1) is None
        s = dev.stats()
        assert (s["encrypt_req"], s["encrypt_no_prog"], s["net_tx"], s["host_tx"]) == (1, 1, 1, 1) and balanced(s)
    finally:
        dev.stop()
        hl.close()
        nl.close()


@pytest.mark.parametrize("mode,reason", [
    (PASS, "encrypt_unsealed"),            # passed on without sealing (the shim still on)
    (TX, "encrypt_unsealed"),              # sent back to the host
    (SEAL_CHANGE_SHIM, "encrypt_unsealed"),  # counted sealed, the shim still there but not as it came
    (SEAL_SHIM_TWICE, "shim_to_net"),      # counted sealed, a second shim behind the one the egress takes
    (SEAL_TX, "encrypt_unsealed"),         # sealed, but towards the host
    (STRIP_ONLY, "encrypt_unsealed"),      # the shim removed, nothing counted sealed
    (OPEN_COUNT, "encrypt_unsealed"),      # another counter moved
    (DROP, "xdp_drop"),                    # the program's own drop
])
def test_encrypt_frames_leave_only_sealed(model, test_image, mode, reason):
    host, dev, host_end, net_end = model
    host.prog_load(test_image, "ctrl_test")
    set_mode(host, mode)
    f = host_packet(1, b"secret" * 8)
    for n in (0, 8, 20):
        host_end.send(ctrl.add_shim(f, D.NANOBPF_SHIM_F_ENCRYPT, n))
    assert net_end.recv(0.5) is None and host_end.recv(0.1) is None
    s = dev.stats()
    assert (s["encrypt_req"], s[reason], s["net_tx"], s["host_tx"]) == (3, 3, 0, 0) and balanced(s), s


def test_a_sealed_frame_leaves_and_plain_frames_run_the_program(model, test_image):
    host, dev, host_end, net_end = model
    host.prog_load(test_image, "ctrl_test")
    set_mode(host, SEAL_OK)
    f = host_packet(1, b"secret" * 8)
    host_end.send(ctrl.add_shim(f, D.NANOBPF_SHIM_F_ENCRYPT, 4))
    assert net_end.recv(5) == f                              # the stand-in "seals" by stripping the shim
    set_mode(host, SEAL_KEEP_SHIM)
    host_end.send(ctrl.add_shim(f, D.NANOBPF_SHIM_F_ENCRYPT, 4))
    assert net_end.recv(5) == f                              # ... or leaves it where it came: the egress takes it
    set_mode(host, SEAL_OK)
    host_end.send(f)                                         # no shim: the program runs, and passes it
    assert net_end.recv(5) == f
    set_mode(host, TX)
    host_end.send(f)                                         # ... or sends it back
    assert host_end.recv(5) == f and net_end.recv(0.2) is None
    s = dev.stats()
    assert (s["encrypt_req"], s["xdp_pass"], s["xdp_tx"], s["net_tx"], s["host_tx"]) == (2, 3, 1, 3, 1) and balanced(s)


def test_a_shim_behind_a_vlan_tag_never_reaches_the_wire(model, test_image):
    """A host frame whose ENCRYPT shim follows a VLAN tag (a one-arm host VLAN's order): the guard looks
    for the shim after the MAC addresses and the program forwards the frame as the host's own, so the
    egress's deparser drops it rather than put the shim - and the plaintext it asked to have sealed -
    on the wire (shim_to_net)."""
    host, dev, host_end, net_end = model
    host.prog_load(test_image, "ctrl_test")
    set_mode(host, PASS)
    f = host_packet(1, b"secret" * 8)
    tagged = f[:12] + b"\x81\x00\x00\x05" + struct.pack(">HBB", D.SHIM_ETHERTYPE, D.NANOBPF_SHIM_F_ENCRYPT, 4) + f[12:]
    host_end.send(tagged)
    assert net_end.recv(0.5) is None and host_end.recv(0.1) is None
    s = dev.stats()
    assert (s["shim_to_net"], s["net_tx"], s["xdp_pass"]) == (1, 0, 1) and balanced(s), s


MALFORMED_SHIMS = [   # (flags, cid_len, what)
    (D.NANOBPF_SHIM_F_DECRYPTED, 0, "DECRYPTED from the host"),
    (D.NANOBPF_SHIM_F_ENCRYPT, 21, "CID length 21"),
    (D.NANOBPF_SHIM_F_ENCRYPT, 0xFF, "CID length 255"),
    (D.NANOBPF_SHIM_F_ENCRYPT | D.NANOBPF_SHIM_F_DECRYPTED, 4, "both flags"),
    (0, 0, "no flag"),
    (0x80, 4, "unknown flag"),
    (D.NANOBPF_SHIM_F_DECRYPTED, 3, "DECRYPTED with a CID length"),
]


@pytest.mark.parametrize("with_prog", [False, True], ids=["no-prog", "prog"])
def test_malformed_shims_from_the_host_are_dropped(model, test_image, with_prog):
    host, dev, host_end, net_end = model
    if with_prog:
        host.prog_load(test_image, "ctrl_test")
        set_mode(host, SEAL_OK)                  # would strip and "seal" anything
    f = host_packet(1, b"secret" * 8)
    for flags, n, _ in MALFORMED_SHIMS:
        host_end.send(ctrl.add_shim(f, flags, n))
    host_end.send(f[:12] + struct.pack(">HB", D.SHIM_ETHERTYPE, 2))            # cut inside the shim
    host_end.send(ctrl.add_shim(f[:12] + struct.pack(">H", D.ETHERTYPE) + bytes(40), D.NANOBPF_SHIM_F_ENCRYPT, 4))
    assert net_end.recv(0.5) is None and host_end.recv(0.1) is None
    s = dev.stats()
    assert s["bad_shim"] == len(MALFORMED_SHIMS) + 2 and s["encrypt_req"] == 0 and s["net_tx"] == 0 and balanced(s)


def test_shims_from_the_network_are_dropped(model, test_image):
    host, dev, host_end, net_end = model
    host.prog_load(test_image, "ctrl_test")
    f = udp_frame(b"x" * 30, "10.0.0.1", "10.0.0.2", 1, 2)
    for flags, n in ((D.NANOBPF_SHIM_F_DECRYPTED, 0), (D.NANOBPF_SHIM_F_ENCRYPT, 8), (0x80, 0)):
        net_end.send(ctrl.add_shim(f, flags, n))
    assert host_end.recv(0.5) is None
    s = dev.stats()
    assert s["bad_shim"] == 3 and s["xdp_pass"] == 0 and balanced(s)
    set_mode(host, OPEN_COUNT)
    net_end.send(f)                                           # counted opened: DECRYPTED, cid_len 0
    assert ctrl.strip_shim(host_end.recv(5)) == (D.NANOBPF_SHIM_F_DECRYPTED, 0, f)


def test_shim_codec():
    f = udp_frame(b"x" * 30, "10.0.0.1", "10.0.0.2", 1, 2)
    s = ctrl.add_shim(f, D.NANOBPF_SHIM_F_ENCRYPT, 20)
    assert s[12:16] == struct.pack(">HBB", D.SHIM_ETHERTYPE, D.NANOBPF_SHIM_F_ENCRYPT, 20) and ctrl.has_shim(s)
    assert ctrl.strip_shim(s) == (D.NANOBPF_SHIM_F_ENCRYPT, 20, f)
    assert ctrl.strip_shim(f) == (None, None, f)
    for flags, n, what in MALFORMED_SHIMS[1:]:
        with pytest.raises(ValueError):
            ctrl.strip_shim(ctrl.add_shim(f, flags, n))
    with pytest.raises(ValueError):
        ctrl.strip_shim(s[:17])


# ---------------------------------------------------------------- packet-number state and open_cid_lens
PN_STATE = pack("quic_pn_state", 100, 50, 3, 0, 0, bytes(32))


def pn(host, kid):
    return host.map_lookup("quic_pn", kid.pack())


def test_pn_state_follows_the_key_table(model, test_image):
    """quic_pn (the device's packet-number state, one per key table entry) follows the key table: a key
    without an entry has no state and none can be written for it; KEY_ADD starts it at zero, also in a
    slot an earlier entry left; KEY_UPDATE keeps it; other entries' state is untouched; KEY_DEL and
    KEY_FLUSH take it with the entries."""
    host, dev, _, _ = model
    host.prog_load(test_image, "ctrl_test")
    aid = addr_id("2001:db8::1", 4433, 443)
    kids = [key_id(CID), key_id(CID, SEAL), key_id(b"", OPEN, aid), key_id(b"", SEAL, aid)]
    bystander = key_id(b"\x99" * 5, SEAL)
    with pytest.raises(CtrlError) as refused:
        host.map_update("quic_pn", bystander.pack(), PN_STATE)   # no entry: no state to hold
    assert refused.value.status == D.NANOBPF_CTRL_ST_NOENT, refused.value
    zero = bytes(len(PN_STATE))
    for kid in kids:
        host.key_add(kid, keys_struct(K0, kid.cid_len))
        assert pn(host, kid) == zero, f"KEY_ADD {kid}: the packet-number state does not start at zero"
        host.map_update("quic_pn", kid.pack(), PN_STATE)          # the program counted packets
        host.key_update(kid, keys_struct(K1, kid.cid_len, phase=1))
        assert pn(host, kid) == PN_STATE, f"KEY_UPDATE {kid} lost the packet-number state"
    host.key_del(kids[0])
    assert pn(host, kids[0]) is None and all(pn(host, k) == PN_STATE for k in kids[1:])
    host.key_add(kids[0], keys_struct(K0, kids[0].cid_len))       # back, maybe in the slot it had
    assert pn(host, kids[0]) == zero, "KEY_ADD after KEY_DEL kept the old packet-number state"
    host.call(D.NANOBPF_CTRL_MSG_KEY_FLUSH)
    host.keys.clear()
    assert all(pn(host, k) is None for k in kids + [bystander])    # all of it: no key names any
    assert dev.map_lookup(abi.KEYTABLE_MAP_NAME, kids[1].pack()) is None


def test_key_table_without_a_pn_map(model, tmp_path):
    """A program without quic_pn and quic_config (or none at all): the key table works the same."""
    host, dev, _, _ = model
    host.key_add(CID, keys_struct(K0, len(CID)))
    if shutil.which("clang"):
        from nanobpf.ebpf.loader import load
        obj = tmp_path / "xdp_keytable.o"
        subprocess.run(["clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{platform.machine()}-linux-gnu",
                        f"-I{BUILD / 'generated/include'}", "-c", str(ROOT / "sw/ebpf/examples/xdp_keytable.c"),
                        "-o", str(obj)], check=True)
        host.prog_load(load(obj).to_bytes(), "keytable")
    host.key_add(CID, keys_struct(K0, len(CID)), dir=SEAL)
    host.key_update(CID, keys_struct(K1, len(CID)), dir=SEAL)
    host.key_del(CID)
    assert list(dev.keys()) == [key_id(CID, SEAL)]


def open_lens(dev):
    return struct.unpack("<4I", dev.map_lookup("quic_config", bytes(4)))


def test_open_cid_lens_follows_the_open_entries(model, test_image):
    host, dev, _, _ = model
    host.key_add(b"\x01" * 20, keys_struct(K0, 20))               # before any program
    host.prog_load(test_image, "ctrl_test")
    assert open_lens(dev) == (0, 0, 1 << 20, 0)                   # a fresh config gets the bits
    host.map_update("quic_config", bytes(4), config(7, 9, 0xDEAD, 1))
    assert open_lens(dev) == (7, 9, 1 << 20, 1)                   # the user's fields, the device's bits
    aid = addr_id("192.0.2.1", 1, 2)
    host.key_add(CID, keys_struct(K0, len(CID)))
    host.key_add(PEER_CID, keys_struct(K1, len(PEER_CID)), dir=SEAL)   # seal entries set no bit
    host.key_add(b"", keys_struct(K0, 0), addr=aid)
    host.key_add(b"\x02" * 8, keys_struct(K0, 8))
    assert open_lens(dev) == (7, 9, (1 << 20) | (1 << 8) | 1, 1)
    host.key_update(b"", keys_struct(K1, 0), addr=aid)
    host.key_del(CID)
    assert open_lens(dev)[2] == (1 << 20) | (1 << 8) | 1          # another 8-byte entry is still there
    host.key_del(b"\x02" * 8)
    host.key_del(b"", addr=aid)
    assert open_lens(dev) == (7, 9, 1 << 20, 1)
    assert dev.open_cid_lens() == 1 << 20
    host.call(D.NANOBPF_CTRL_MSG_KEY_FLUSH)
    host.keys.clear()
    assert open_lens(dev) == (7, 9, 0, 1)


# ---------------------------------------------------------------- other
@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"), reason="TAP devices need root")
def test_model_on_tap_devices():
    """The model owns a TAP as its host port; the host client talks to it through the kernel side."""
    tap = ctrl.TapPort("nbtest0")
    kernel_side = ctrl.PacketPort("nbtest0")
    dev = DeviceModel(tap, seed=2).start()
    try:
        host = Client(kernel_side, retry_ms=50)
        assert host.hello()["version"] == D.VERSION
        host.key_add(b"\x42", pack("quic_keys", 0, 0, 1, 0, bytes(32), bytes(24), bytes(16), b""))
        assert list(dev.keys()) == [key_id(b"\x42")] and host.peer == ctrl.DEVICE_MAC
    finally:
        dev.stop()
        kernel_side.close()
        tap.close()


def test_command_line_help():
    import sys
    p = subprocess.run([sys.executable, "-m", "nanobpf.devmodel", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "--host-tap" in p.stdout and "--loss" in p.stdout
    p = subprocess.run([sys.executable, "-m", "nanobpf.devmodel", "--host-tap", "x", "--loss", "2"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "probability" in p.stderr
