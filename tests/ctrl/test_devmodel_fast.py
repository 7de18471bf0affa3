"""The device model's native data path (DeviceModel(fast=True): nanobpf-run --serve, libcrypto's AES)
against its Python data path, frame for frame.

Two models on socketpair links, one of each, get the same program (xdp_quic_hw and the plain xdp_quic,
whose AES is eBPF), the same keys through the control protocol and the same frames, one at a time:
1-RTT packets to open and to seal at several sizes and CID lengths (0: keyed by the peer's address),
IPv4 and IPv6, key phase changes (NEXT keys, then PREV after the update), forged tags, reused packet
numbers, unknown CIDs, malformed and misplaced shims, frames that are not QUIC or not even Ethernet,
control frames from the network, a frame that the DECRYPTED shim would make too long, a program swap in
the middle (key table, packet-number state and counters handed over). Every frame out of either port
must be the same, in the same order, and so must the counters (STATS) and the program's quic_stats,
quic_drops and quic_pn at the end. Needs `make ebpf-tools firmware`."""
import random
import struct
import time

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
import pytest

from nanobpf import BUILD, ctrl
from nanobpf.ctrl import OPEN, SEAL, Client, MemoryLink, addr_id
from nanobpf.devmodel import DeviceModel
from nanobpf.ebpf import device
from nanobpf.pcap import udp_frame
from nanobpf.quic import PacketKeys, protect

CID = bytes.fromhex("0011223344556677")
PEER_CID = bytes.fromhex("a1a2a3a4")
K0, K1, K2, K3 = (PacketKeys.from_secret(bytes(range(i, 32 + i))) for i in range(4))
HOST_IP, PEER_IP, HOST6, PEER6 = "10.0.0.2", "10.0.0.1", "2001:db8::2", "2001:db8::1"

pytestmark = [pytest.mark.skipif(not device.available()[0], reason=device.available()[1]),
              pytest.mark.skipif(not device.RUN_FAST.exists(), reason=f"{device.RUN_FAST} is not built (make ebpf-tools)")]


def keys_struct(k, cid_len, phase=0, flags=0, second=None):
    """quic_keys: k current; second (NEXT or PREV by flags) in the second slot."""
    s = second or k
    return struct.pack(abi.STRUCTS["quic_keys"].fmt, phase, flags, cid_len, 0, k.key + (s.key if second else bytes(16)),
                       k.iv + (s.iv if second else bytes(12)), k.hp, b"")


def short(dcid, pn, size, phase=0):
    """A short-header packet with a 2-byte packet number, size bytes once protected."""
    head = bytes([0x40 | (phase << 2) | 1]) + dcid + (pn & 0xFFFF).to_bytes(2, "big")
    return head + bytes((pn * 7 + i) & 0xFF for i in range(max(4, size - len(head) - 16)))


def from_net(dcid, pn, size, keys, v6=False, phase=0, sport=50000):
    q = protect(short(dcid, pn, size, phase), keys, short_cid_len=len(dcid))
    return udp_frame(q, PEER6 if v6 else PEER_IP, HOST6 if v6 else HOST_IP, sport, 443)


def to_seal(dcid, pn, size, v6=False, cid_len=None, dport=50000):
    f = udp_frame(short(dcid, pn, size), HOST6 if v6 else HOST_IP, PEER6 if v6 else PEER_IP, 443, dport)
    return ctrl.add_shim(f, D.NANOBPF_SHIM_F_ENCRYPT, len(dcid) if cid_len is None else cid_len)


class Pair:
    """A Python and a native model, driven alike."""

    def __init__(self):
        self.links = [(MemoryLink(), MemoryLink()) for _ in range(2)]
        self.devs = [DeviceModel(h.b, n.b, seed=11, fast=fast).start() for (h, n), fast in zip(self.links, (False, True))]
        assert not self.devs[0].fast and self.devs[1].fast, self.devs[1].fast_why
        self.clients = [Client(h.a, retry_ms=100, retry_max_ms=2000) for h, _ in self.links]
        self.outs = [[], []]

    def control(self, name, *args, **kw):
        return [getattr(c, name)(*args, **kw) for c in self.clients]

    def send(self, port, frame):
        """One frame into both models; wait until each handled it; collect what came out."""
        for k, ((h, n), dev) in enumerate(zip(self.links, self.devs)):
            before = handled(dev.stats())
            (h.a if port == "host" else n.a).send(frame)
            end = time.monotonic() + 20
            while handled(dev.stats()) == before:
                assert time.monotonic() < end, f"model {k} did not take the frame"
                time.sleep(0.0005)
            for name, end_ in (("host", h.a), ("net", n.a)):
                while (f := end_.recv(0)) is not None:
                    self.outs[k].append((name, f))

    def close(self):
        for dev in self.devs:
            dev.stop()
        for h, n in self.links:
            h.close()
            n.close()


def handled(s):
    return s["host_rx"] + s["net_rx"] + s["ctrl_foreign"]


def program_maps(dev):
    x = dev._prog[0]
    return {name: x.map_items(name) for name in ("quic_stats", "quic_drops", "quic_pn") if name in x.map_names()}


@pytest.fixture
def pair():
    p = Pair()
    yield p
    p.close()


def install(p, image):
    p.control("prog_load", image.read_bytes(), image.stem)
    configure(p)
    p.control("key_add", CID, keys_struct(K0, len(CID)))
    p.control("key_add", PEER_CID, keys_struct(K1, len(PEER_CID)), dir=SEAL)
    p.control("key_add", b"", keys_struct(K2, 0), addr=addr_id(PEER_IP, 50000, 443))
    p.control("key_add", b"", keys_struct(K3, 0), dir=SEAL, addr=addr_id(PEER_IP, 50000, 443))


def configure(p):
    """The program's own maps (not pinned: set again after each load)."""
    p.control("map_update", "quic_config", bytes(4), struct.pack(abi.STRUCTS["quic_config"].fmt, abi.NANOBPF_IFINDEX_HOST,
                                                                 abi.NANOBPF_IFINDEX_NET, 0, 0))
    p.control("map_update", "quic_ports", struct.pack("<H", 443), struct.pack("<I", 1))


def traffic(p, image, sizes, rng):
    """The frame sequence (both ports), with key updates and a program swap in it."""
    pn = {"open": 1, "seal": 1, "open0": 1, "seal0": 1}

    def nxt(k):
        pn[k] += 1
        return pn[k] - 1

    for size in sizes:
        for v6 in (False, True):
            p.send("net", from_net(CID, nxt("open"), size, K0, v6))
            p.send("host", to_seal(PEER_CID, nxt("seal"), size, v6))
            p.send("net", from_net(b"", nxt("open0"), size, K2, v6=False))          # address-keyed (IPv4 peer)
            p.send("host", to_seal(b"", nxt("seal0"), size))
    replay = from_net(CID, nxt("open"), sizes[0], K0)
    p.send("net", replay)
    p.send("net", replay)                                          # a packet number opened before
    forged = bytearray(from_net(CID, nxt("open"), sizes[-1], K0))
    forged[-1] ^= 0x20
    p.send("net", bytes(forged))                                   # forged tag
    p.send("net", from_net(bytes(rng.randbytes(8)), 5, sizes[0], K0))        # unknown CID
    p.send("host", to_seal(bytes(rng.randbytes(4)), 5, sizes[0]))            # no seal entry
    reused = nxt("seal")
    p.send("host", to_seal(PEER_CID, reused, sizes[0]))
    p.send("host", to_seal(PEER_CID, reused, sizes[0]))            # a packet number sealed before
    p.send("host", to_seal(b"", 9, sizes[0], dport=50001))         # another peer port: no entry
    # malformed shims from the host, a shim from the network, frames that are not QUIC
    plain = udp_frame(short(PEER_CID, 77, 60), HOST_IP, PEER_IP, 443, 50000)
    for flags, cid_len in ((D.NANOBPF_SHIM_F_DECRYPTED, 0), (D.NANOBPF_SHIM_F_ENCRYPT, 21), (3, 4), (0, 0)):
        p.send("host", ctrl.add_shim(plain, flags, cid_len))
    p.send("host", plain[:12] + struct.pack(">HBB", D.SHIM_ETHERTYPE, D.NANOBPF_SHIM_F_ENCRYPT, 4))   # truncated
    p.send("net", ctrl.add_shim(from_net(CID, 3, 80, K0), D.NANOBPF_SHIM_F_DECRYPTED))
    p.send("host", plain)                                          # no shim: forwarded as it is
    p.send("host", udp_frame(b"dns?", HOST_IP, "10.0.0.53", 5353, 53))
    p.send("net", udp_frame(b"dns!", "10.0.0.53", HOST_IP, 53, 5353))
    p.send("net", bytes(6) * 2 + b"\x08\x06" + bytes(28))          # ARP-sized
    p.send("host", b"\x01\x02\x03")                                 # not even an Ethernet header
    p.send("net", b"")
    p.send("net", bytes(12) + struct.pack(">H", D.ETHERTYPE) + bytes(40))   # control from the network
    if len(from_net(CID, 1, 1476, K0)) + 4 > 1522 and max(sizes) >= 1200:
        p.send("net", from_net(CID, nxt("open"), 1476, K0))        # opened, too long for the DECRYPTED shim
    # key phase: the next keys installed (NEXT), a packet in phase 1, then the update done (PREV kept)
    p.control("key_update", CID, keys_struct(K0, len(CID), flags=abi.NANOBPF_QUIC_KEY_NEXT, second=K3))
    p.send("net", from_net(CID, nxt("open"), sizes[0], K3, phase=1))
    p.send("net", from_net(CID, nxt("open"), sizes[0], K0, phase=0))
    p.control("key_update", CID, keys_struct(K3, len(CID), phase=1, flags=abi.NANOBPF_QUIC_KEY_PREV, second=K0))
    p.send("net", from_net(CID, nxt("open"), sizes[-1], K3, phase=1, v6=True))
    p.send("net", from_net(CID, nxt("open"), sizes[0], K0, phase=0))   # the previous phase, later number
    p.control("key_update", PEER_CID, keys_struct(K2, len(PEER_CID), phase=1), dir=SEAL)
    p.send("host", to_seal(PEER_CID, nxt("seal"), sizes[-1]))          # sealed in phase 1
    # a program swap: the same image again; keys, packet-number state and counters stay
    install_again = image.read_bytes()
    p.control("prog_load", install_again, image.stem)
    configure(p)
    p.send("host", to_seal(PEER_CID, reused, sizes[0]))            # still refused after the swap
    p.send("host", to_seal(PEER_CID, nxt("seal"), sizes[0], v6=True))
    p.send("net", from_net(CID, nxt("open"), sizes[0], K3, phase=1))
    p.send("host", to_seal(b"", nxt("seal0"), sizes[-1], v6=False))
    p.send("net", from_net(b"", nxt("open0"), sizes[0], K2))


@pytest.mark.parametrize("name,sizes", [("xdp_quic_hw", (40, 300, 1200)), ("xdp_quic", (40, 200))])
def test_native_path_matches_python(pair, name, sizes):
    image = BUILD / f"firmware/bpf/{name}.nbpf"
    if not image.exists():
        pytest.skip(f"{image} is not built (make firmware)")
    install(pair, image)
    traffic(pair, image, sizes, random.Random(45))
    py, fast = pair.outs
    assert len(py) == len(fast), f"{len(py)} frames out of the Python model, {len(fast)} out of the native one"
    for k, (a, b) in enumerate(zip(py, fast)):
        assert a == b, f"frame out {k}: Python {a[0]} {a[1].hex()}\n native {b[0]} {b[1].hex()}"
    s_py, s_fast = (dev.stats() for dev in pair.devs)
    assert s_py == s_fast
    assert program_maps(pair.devs[0]) == program_maps(pair.devs[1])
    # the sequence did what it is for: frames sealed, opened, refused for each reason
    assert s_py["decrypted"] >= 2 * len(sizes) and s_py["encrypt_req"] > s_py["net_tx"] > 2 * len(sizes)
    assert all(s_py[k] for k in ("xdp_drop", "bad_shim", "ctrl_foreign", "xdp_pass")), {k: v for k, v in s_py.items() if v}
    assert [port for port, _ in py[-3:]] == ["host", "net", "host"], "after the swap: opened, sealed, opened"
    s_wire = pair.clients[1].stats()           # the native path's counts reach STATS
    assert s_wire["decrypted"] == s_py["decrypted"] and s_wire["host_rx"] == s_py["host_rx"]
