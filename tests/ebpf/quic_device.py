"""What the QUIC XDP program tests share: building the programs, the backends (device interpreter, device
JIT under qemu-riscv64, Linux BPF_PROG_TEST_RUN), a Device that sets the maps up as the control plane
does (key table entries per direction, zero-length CIDs by address, open CID lengths), the seal
contract's shim, and 1-RTT packets built with the reference packet protection (nanobpf.quic)."""
import ipaddress
import platform
import struct
import subprocess

import pytest

import nanobpf_ctrl_defs as ctrl
import nanobpf_ebpf_defs as abi
from nanobpf import BUILD, ROOT
from nanobpf.ebpf import device, linux
from nanobpf.pcap import parse_udp, udp_frame, with_payload  # noqa: F401 (with_payload: for the tests)
from nanobpf.quic import PacketKeys, next_secret, protect
from nanobpf.quic.protection import encode_pn

MAX_PAYLOAD = 1504  # the default build
BACKENDS = ["interp", "jit", "linux"]
PROGRAMS = ["xdp_quic", "xdp_quic_hw"]
# Programs that call NanoBPF device helpers: Linux refuses them, they run on the device backends only.
DEVICE_ONLY = {"xdp_quic_hw"}
XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX = 0, 1, 2, 3
LO = 1       # the host port in these tests (quic_config.host_ifindex when sealing)
NET = 2      # another port: the network
OPEN, SEAL = abi.NANOBPF_QUIC_DIR_OPEN, abi.NANOBPF_QUIC_DIR_SEAL


def const(name):
    return getattr(abi, name)


def pack(struct_name, *values):
    """One of the ABI structs (hw/defs/ebpf.toml), laid out by its generated format."""
    return struct.pack(abi.STRUCTS[struct_name].fmt, *values)


def build(prog, out_dir):
    out = out_dir / f"{prog}.o"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-Wall", "-Werror",
                    f"-I/usr/include/{platform.machine()}-linux-gnu", f"-I{ROOT}/sw/ebpf/include", f"-I{BUILD}/generated/include",
                    "-c", str(ROOT / f"sw/ebpf/quic/{prog}.c"), "-o", str(out)], check=True)
    return out


def available(name):
    return linux.available() if name == "linux" else device.available(jit=name == "jit")


def open_backend(obj, backend):
    return linux.LinuxXdp(obj) if backend == "linux" else device.DeviceXdp(obj, jit=backend == "jit")


# ---------------------------------------------------------------- the key table's keys
def addr_id(peer_ip, peer_port, local_port):
    """The 20-byte id of a zero-length-CID peer (NANOBPF_QUIC_ADDR_*): IPv6 address (IPv4 mapped), ports."""
    ip = ipaddress.ip_address(peer_ip)
    a = ip.packed if ip.version == 6 else bytes(10) + b"\xff\xff" + ip.packed
    return a + struct.pack(">HH", peer_port, local_port)


def frame_addr_id(frame, direction):
    """The address id of a frame's peer: the source of a frame from the network (OPEN), the destination
    of a frame from the host (SEAL). The frame may carry the shim."""
    frame = strip_shim(frame)
    u = parse_udp(frame)
    if direction == OPEN:
        return addr_id(u.src, u.sport, u.dport)
    return addr_id(u.dst, u.dport, u.sport)


def cid_key(cid, direction=OPEN, ident=None):
    """struct nanobpf_quic_cid: a CID of 1..20 bytes, or (empty cid) the 20-byte address id."""
    if not cid:
        assert ident is not None and len(ident) == 20, "a zero-length CID needs the peer's address id"
        return pack("quic_cid", 0, ident, direction, b"")
    return pack("quic_cid", len(cid), cid, direction, b"")


# ---------------------------------------------------------------- the seal contract's shim
def shim(frame, cid_len, flags=ctrl.NANOBPF_SHIM_F_ENCRYPT):
    """frame marked for sealing: EtherType 0x88B6, flags, the destination CID length, after the MACs."""
    return frame[:12] + struct.pack(">HBB", ctrl.SHIM_ETHERTYPE, flags, cid_len) + frame[12:]


def strip_shim(frame):
    if struct.unpack_from(">H", frame, 12)[0] == ctrl.SHIM_ETHERTYPE:
        return frame[:12] + frame[16:]
    return frame


class Device:
    """The program loaded in a backend with its maps set up like the control plane would."""

    def __init__(self, obj, backend, cid_lens=(8,), ports=(443,), host_ifindex=0, flags=0):
        self.x = open_backend(obj, backend)
        self.config(cid_lens=cid_lens, host_ifindex=host_ifindex, flags=flags)
        for p in ports:
            self.x.map_update("quic_ports", struct.pack("<H", p), struct.pack("<I", 1))

    def config(self, cid_lens=(8,), host_ifindex=0, flags=0):
        lens = sum(1 << n for n in cid_lens)
        self.x.map_update("quic_config", struct.pack("<I", 0), pack("quic_config", host_ifindex, 0, lens, flags))

    def add_keys(self, cid, cur: PacketKeys, nxt: PacketKeys | None = None, key_phase=0, dirs=(OPEN, SEAL),
                 prev: PacketKeys | None = None, frame=None, ident=None):
        """Install keys under cid for each direction in dirs. A zero-length cid is keyed by the address id
        of frame (computed per direction) or ident. nxt/prev: what the second slot holds."""
        assert not (nxt and prev)
        second = nxt or prev
        flags = const("NANOBPF_QUIC_KEY_NEXT") if nxt else const("NANOBPF_QUIC_KEY_PREV") if prev else 0
        value = pack("quic_keys", key_phase, flags, len(cid), 0,
                     cur.key + (second.key if second else bytes(16)), cur.iv + (second.iv if second else bytes(12)),
                     cur.hp, b"")
        for d in dirs:
            self.x.map_update("nanobpf_quic_keys", self.key(cid, d, frame, ident), value)

    @staticmethod
    def key(cid, direction, frame=None, ident=None):
        if not cid and ident is None:
            ident = frame_addr_id(frame, direction)
        return cid_key(cid, direction, ident)

    def del_keys(self, cid, dirs=(OPEN, SEAL), frame=None):
        for d in dirs:
            self.x.map_delete("nanobpf_quic_keys", self.key(cid, d, frame))

    def set_pn(self, cid, rx_next=0, tx_next=0, direction=OPEN, frame=None):
        """Packet-number state as if numbers below rx_next had been opened (OPEN entry) or below tx_next
        sealed (SEAL entry: every claim word at tx_next, so none of them can be sealed again)."""
        value = (pack("quic_pn_state", rx_next, 0, 0, 0, 0, bytes(32)) if direction == OPEN else
                 pack("quic_seal_pn", *[tx_next] * abi.NANOBPF_QUIC_PN_CLAIMS))
        self.x.map_update("quic_pn", self.key(cid, direction, frame), value)

    def pn_state(self, cid, direction=OPEN, frame=None):
        """The entry's state as a dict of its fields (struct nanobpf_quic_pn_state of an OPEN entry,
        nanobpf_quic_seal_pn of a SEAL entry), or None."""
        v = self.x.map_lookup("quic_pn", self.key(cid, direction, frame))
        st = abi.STRUCTS["quic_pn_state" if direction == OPEN else "quic_seal_pn"]
        return None if v is None else dict(zip((f[0] for f in st.fields), struct.unpack(st.fmt, v)))

    def counters(self, name):
        n = self.x.map_info(name).max_entries
        return [sum(struct.unpack("<Q", v)[0] for v in self.x.map_lookup_percpu(name, struct.pack("<I", i)))
                for i in range(n)]

    def drops(self):
        """{reason name: count} of the nonzero drop counters."""
        names = {v: k[len("NANOBPF_QUIC_DROP_"):] for k, v in vars(abi).items()
                 if k.startswith("NANOBPF_QUIC_DROP_") and k != "NANOBPF_QUIC_DROP_COUNT"}
        return {names[i]: n for i, n in enumerate(self.counters("quic_drops")) if n}

    def stat(self, name):
        return self.counters("quic_stats")[const(f"NANOBPF_QUIC_STAT_{name}")]

    def run(self, frame, ifindex=NET):
        return self.x.run(frame, ingress_ifindex=ifindex)

    def seal(self, plain_frame, cid_len):
        """A host frame marked for sealing through the program (the device must be configured with
        host_ifindex=LO)."""
        return self.run(shim(plain_frame, cid_len), ifindex=LO)

    def close(self):
        self.x.close()


# ---------------------------------------------------------------- frames
CID = bytes.fromhex("0011223344556677")
K0 = PacketKeys.from_secret(bytes(range(32)))
K1 = PacketKeys.from_secret(next_secret(bytes(range(32))), hp=K0.hp)
K2 = PacketKeys.from_secret(next_secret(next_secret(bytes(range(32)))), hp=K0.hp)
KS = PacketKeys.from_secret(bytes(range(100, 132)))  # another direction's keys


def short_packet(pn, payload, keys=K0, phase=0, largest=-1, pn_len=None, cid=CID):
    """(plain, protected) 1-RTT packet."""
    tpn = encode_pn(pn, largest) if pn_len is None else (pn & ((1 << (8 * pn_len)) - 1)).to_bytes(pn_len, "big")
    first = 0x40 | (phase << 2) | (len(tpn) - 1)
    plain = bytes([first]) + cid + tpn + payload
    return plain, protect(plain, keys, largest_pn=largest, short_cid_len=len(cid))


def frame_of(quic, v6=False, vlan=None):
    if v6:
        return udp_frame(quic, "2001:db8::1", "2001:db8::2", 50000, 443, vlan=vlan)
    return udp_frame(quic, "10.0.0.1", "10.0.0.2", 50000, 443, vlan=vlan)


# ---------------------------------------------------------------- pytest: parametrisation and fixtures
def pytest_generate_tests(metafunc):
    """Each test that needs a backend runs every (program, backend) pair but Linux with a device-only
    program; the others run each program. Test modules import this with the fixtures below."""
    if "backend" in metafunc.fixturenames:
        pairs = [(p, b) for p in PROGRAMS for b in BACKENDS if not (b == "linux" and p in DEVICE_ONLY)]
        metafunc.parametrize(("prog", "backend"), pairs, indirect=True, scope="module",
                             ids=[f"{p}-{b}" for p, b in pairs])
    elif "prog" in metafunc.fixturenames:
        metafunc.parametrize("prog", PROGRAMS, indirect=True, scope="module")


@pytest.fixture(scope="module")
def prog(request):
    return request.param


@pytest.fixture(scope="module")
def obj(prog, tmp_path_factory):
    return build(prog, tmp_path_factory.mktemp("quic"))


@pytest.fixture(scope="module")
def backend(request):
    ok, why = available(request.param)
    if not ok:
        pytest.skip(f"{request.param}: {why}")
    return request.param
