"""What tests/ebpf/test_linux_compat.py runs its XDP programs with: building them, the three backends (the
device runtime's interpreter and JIT through nanobpf.ebpf.device, Linux's BPF_PROG_TEST_RUN through
nanobpf.ebpf.linux) behind one Session, the frames, and the checks a case makes. Not a test module."""
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from scapy.all import ARP, ICMP, IP, TCP, UDP, Dot1Q, Ether, IPv6, Raw

import nanobpf_ebpf_defs as abi
from nanobpf import BUILD, ROOT
from nanobpf.ebpf import device, linux
from nanobpf.ebpf.loader import load, parse_image

COMPAT = ROOT / "tests/ebpf/compat"
BACKENDS = ("interp", "jit", "linux")
XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT = range(5)
DEVMAP_TYPES = {14, 25}  # Linux BPF_MAP_TYPE_DEVMAP, DEVMAP_HASH
PROG_ARRAY = 3
HOST, NET = 1, 2         # device ports
M32 = 0xffffffff


# ---------------------------------------------------------------- building and backends
def build(src, out_dir):
    obj = out_dir / (src.stem + ".o")
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-Wall", "-Werror",
                    f"-I/usr/include/{platform.machine()}-linux-gnu", f"-I{ROOT}/sw/ebpf/include",
                    f"-I{BUILD}/generated/include", "-c", str(src), "-o", str(obj)], check=True)
    return obj


def available(kind):
    return linux.available() if kind == "linux" else device.available(jit=kind == "jit")


def linux_ports():
    """Device port -> Linux ifindex: lo for the host port, the first other device for the network."""
    others = []
    for d in Path("/sys/class/net").iterdir():
        try:
            others.append(int((d / "ifindex").read_text()))
        except (OSError, ValueError):
            continue
    others = sorted(i for i in others if i != 1)
    return {HOST: 1, NET: others[0] if others else 1}


def _bpffs_mounts():
    try:
        with open("/proc/mounts") as f:
            return [line.split()[1] for line in f if line.split()[2] == "bpf"]
    except OSError:
        return []


@pytest.fixture(scope="module")
def pin_base():
    """A directory on a bpffs for LIBBPF_PIN_BY_NAME maps (under /sys/fs/bpf when it is mounted,
    else a bpffs mounted here for the module); removed, with every pin in it, afterwards."""
    if not linux.available()[0]:
        yield None
        return
    mounted = None
    if "/sys/fs/bpf" in _bpffs_mounts():
        base = tempfile.mkdtemp(prefix="nanobpf-compat-", dir="/sys/fs/bpf")
    else:
        mounted = tempfile.mkdtemp(prefix="nanobpf-bpffs-")
        p = subprocess.run(["mount", "-t", "bpf", "bpf", mounted], capture_output=True, text=True)
        if p.returncode:
            os.rmdir(mounted)
            yield None  # pinned cases skip Linux with this reason
            return
        base = os.path.join(mounted, "compat")
        os.mkdir(base)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)
        if mounted:
            subprocess.run(["umount", mounted], check=False)
            os.rmdir(mounted)


Run = namedtuple("Run", "label port frame action out redirect")


def canonical(name):
    """Global-data maps by their section (libbpf cuts the object name to 8 characters, the device to
    fit 31 bytes): "xdp_glob.bss" and "xdp_global_config.bss" are both ".bss"."""
    return name if name.startswith(".") or "." not in name else name[name.index("."):]


def sum_percpu(values):
    """Per-CPU values added word by word (64-bit words, or 32-bit when the size is not a multiple of 8)."""
    size = len(values[0])
    w, fmt = (8, "Q") if size % 8 == 0 else (4, "I") if size % 4 == 0 else (1, "B")
    n = size // w
    tot = [0] * n
    for v in values:
        for i, x in enumerate(struct.unpack(f"<{n}{fmt}", v)):
            tot[i] = (tot[i] + x) % (1 << (8 * w))
    return struct.pack(f"<{n}{fmt}", *tot)


class Session:
    """One case's program in one backend: the frames it ran and its maps afterwards."""

    def __init__(self, case, kind, obj, pin_root=None):
        self.case, self.kind, self.obj = case, kind, obj
        self.ports = linux_ports() if kind == "linux" else {HOST: HOST, NET: NET}
        kw = dict(program=case.program, section=case.section, map_sizes=case.map_sizes)
        if kind == "linux":
            self.x = linux.LinuxXdp(obj, pin_root_path=pin_root, **kw)
        else:
            self.x = device.DeviceXdp(obj, jit=kind == "jit", **kw)
        self.program = self.x.program
        self.runs, self.maps, self.sizes = [], {}, {}
        try:
            case.steps(self)
            self._snapshot()
        finally:
            self.x.close()

    def ifindex(self, port):
        return self.ports[port]

    def port_of(self, ifindex):
        return {v: k for k, v in self.ports.items()}.get(ifindex, -ifindex)

    def update(self, name, key, value, flags=0):
        self.x.map_update(name, key, value, flags)

    def delete(self, name, key):
        return self.x.map_delete(name, key)

    def set_prog(self, name, key, program):
        """PROG_ARRAY `name`[key] := the object's program `program` (an fd in Linux, an image index on the
        device)."""
        self.x.map_update(name, u32(key), self.x.prog_value(program))

    def data_map(self, section):
        return self.x.map_by_suffix(section)

    def run(self, label, frame, port=NET):
        frame = bytes(frame)
        # a program that reads data_meta gets PISA's parse result there on the device (all 0 here: the
        # runs pass no parse result); Linux gets the same bytes as the test run's metadata
        meta = bytes(24) if self.kind == "linux" and self.case.parse_in_meta else b""
        action, out = self.x.run(frame, ingress_ifindex=self.ifindex(port), **({"meta": meta} if meta else {}))
        redirect = None if self.kind == "linux" else self.x.redirect_ifindex
        self.runs.append(Run(label, port, frame, action, out, redirect))

    def run_all(self, frames, port=NET):
        for label, f in frames:
            self.run(label, f, port)

    def _snapshot(self):
        for name in self.x.map_names():
            info = self.x.map_info(name)
            if info.type == PROG_ARRAY:  # program fds (ids) in Linux, image indexes on the device
                continue
            canon = canonical(name)
            d = {}
            for k, v in self.x.map_items(name):
                if info.percpu:
                    v = sum_percpu(v)
                if canon in self.case.ifindex_keyed:
                    k = struct.pack("<i", self.port_of(struct.unpack("<I", k)[0]))
                if info.type in DEVMAP_TYPES:  # the ifindex (of struct bpf_devmap_val) as a port
                    v = struct.pack("<i", self.port_of(struct.unpack_from("<I", v)[0])) + v[4:]
                d[k] = v
            self.maps[canon] = d
            self.sizes[canon] = info.max_entries


# ---------------------------------------------------------------- frames
MAC_PEER, MAC_SELF = "02:00:00:00:00:01", "02:00:00:00:00:02"
V4_SRC, V4_DST = "10.0.0.1", "10.0.1.2"
V6_SRC, V6_DST = "2001:db8::1", "2001:db8:1::2"


def eth(src=MAC_PEER, dst=MAC_SELF, **kw):
    return Ether(src=src, dst=dst, **kw)


def payload(n, seed=0):
    return Raw(bytes((seed + 7 * i) & 0xff for i in range(n)))


def v4(l4, src=V4_SRC, dst=V4_DST, vlans=(), **ip):
    e = eth()
    if len(vlans) == 2:
        e = eth(type=0x88a8) / Dot1Q(vlan=vlans[0]) / Dot1Q(vlan=vlans[1])
    elif vlans:
        e = eth() / Dot1Q(vlan=vlans[0])
    return bytes(e / IP(src=src, dst=dst, **ip) / l4)


def v6(l4, src=V6_SRC, dst=V6_DST, vlans=(), **ip):
    e = eth() / Dot1Q(vlan=vlans[0]) if vlans else eth()
    return bytes(e / IPv6(src=src, dst=dst, **ip) / l4)


def standard_frames():
    """(label, frame): every family and encapsulation once, then frames cut inside each header."""
    f = [
        ("v4-udp", v4(UDP(sport=40000, dport=53) / payload(20))),
        ("v4-udp-nocsum", v4(UDP(sport=40001, dport=5353, chksum=0) / payload(33, 1))),
        ("v4-tcp-syn", v4(TCP(sport=40002, dport=80, flags="S"))),
        ("v4-tcp-ssh", v4(TCP(sport=40003, dport=22, flags="PA") / payload(48, 2))),
        ("v4-options-udp", v4(UDP(sport=40004, dport=53) / payload(12, 3), options=b"\x01\x01\x01\x00")),
        ("v4-ttl1-udp", v4(UDP(sport=40005, dport=53) / payload(16, 4), ttl=1)),
        ("v4-fragment-udp", v4(UDP(sport=40006, dport=5353) / payload(24, 5), flags="MF", id=7)),
        ("v4-later-fragment", v4(payload(24, 6), proto=17, frag=3, id=7)),
        ("v4-icmp", v4(ICMP(id=1, seq=2) / payload(56, 7), tos=0x10)),
        ("v6-udp", v6(UDP(sport=40010, dport=53) / payload(20, 8))),
        ("v6-tcp", v6(TCP(sport=40011, dport=443, flags="S"))),
        ("v6-hlim1-udp", v6(UDP(sport=40012, dport=53) / payload(8, 9), hlim=1)),
        ("vlan5-v4-udp", v4(UDP(sport=40020, dport=53) / payload(30, 10), vlans=(5,))),
        ("vlan3-v6-tcp", v6(TCP(sport=40021, dport=80, flags="A") / payload(10, 11), vlans=(3,))),
        ("qinq-v4-udp", v4(UDP(sport=40022, dport=53) / payload(20, 12), vlans=(100, 5))),
        ("arp", bytes(eth(dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=MAC_PEER, psrc=V4_SRC, pdst=V4_DST))),
        ("lldp", bytes(eth(dst="01:80:c2:00:00:0e", type=0x88cc) / payload(40, 13))),
    ]
    full = dict(f)
    f += [
        ("cut-eth", full["v4-udp"][:14]),
        ("cut-v4", full["v4-udp"][:14 + 12]),
        ("cut-v4-ports", full["v4-udp"][:14 + 20 + 4]),
        ("cut-v4-udp", full["v4-udp"][:14 + 20 + 6]),
        ("cut-v6", full["v6-udp"][:14 + 30]),
        ("cut-v6-tcp", full["v6-tcp"][:14 + 40 + 10]),
        ("cut-vlan", full["vlan5-v4-udp"][:16]),
        ("cut-vlan-v4", full["vlan5-v4-udp"][:18 + 10]),
    ]
    return f


class Pkt:
    """What the frame's headers say, read here independently of any backend. max_vlans: tags followed
    (802.1Q and 802.1ad). trunc: the first header that does not fit ("vlan", "ip"), else None."""

    def __init__(self, f, max_vlans=2, vlan_types=(0x8100, 0x88a8)):
        self.f, self.len = f, len(f)
        self.vlans, self.trunc = [], None
        self.ip = self.proto = self.l4 = self.ttl = self.ihl = None
        self.src = self.dst = None
        self.frag = 0
        self.eth_type = int.from_bytes(f[12:14], "big")
        off = 14
        for _ in range(max_vlans):
            if self.eth_type not in vlan_types:
                break
            if off + 4 > self.len:
                self.trunc = "vlan"
                return
            self.vlans.append(int.from_bytes(f[off:off + 2], "big") & 0xfff)
            self.eth_type = int.from_bytes(f[off + 2:off + 4], "big")
            off += 4
        self.l3 = off
        if self.eth_type == 0x0800:
            if off + 20 > self.len:
                self.trunc = "ip"
                return
            self.ip, self.ihl, self.ttl, self.proto = 4, f[off] & 15, f[off + 8], f[off + 9]
            self.frag = int.from_bytes(f[off + 6:off + 8], "big") & 0x3fff
            self.src, self.dst = f[off + 12:off + 16], f[off + 16:off + 20]
            self.l4 = off + self.ihl * 4
        elif self.eth_type == 0x86dd:
            if off + 40 > self.len:
                self.trunc = "ip"
                return
            self.ip, self.proto, self.ttl = 6, f[off + 6], f[off + 7]
            self.src, self.dst = f[off + 8:off + 24], f[off + 24:off + 40]
            self.l4 = off + 40

    def has(self, n):
        """n bytes of the L4 header present?"""
        return self.l4 is not None and self.l4 + n <= self.len

    @property
    def dport(self):
        return int.from_bytes(self.f[self.l4 + 2:self.l4 + 4], "big")

    @property
    def sport(self):
        return int.from_bytes(self.f[self.l4:self.l4 + 2], "big")




def mac(s):
    return bytes.fromhex(s.replace(":", ""))


def u32(i):
    return struct.pack("<I", i)


def u64s(*v):
    return struct.pack(f"<{len(v)}Q", *v)


# ---------------------------------------------------------------- checks
class Check:
    """Collects what a session got wrong, with the frame's label and the backend."""

    def __init__(self, s):
        self.s, self.problems = s, []

    def expect(self, cond, msg):
        if not cond:
            self.problems.append(f"{self.s.kind}: {msg}")

    def action(self, r, want):
        self.expect(r.action == want, f"{r.label}: action {r.action}, expected {want}")

    def unchanged(self, r):
        self.expect(r.out == r.frame, f"{r.label}: frame changed:\n  in  {r.frame.hex()}\n  out {r.out.hex()}")

    def out(self, r, want):
        self.expect(r.out == want, f"{r.label}: frame\n  got      {r.out.hex()}\n  expected {want.hex()}")

    def redirect(self, r, port):
        if r.redirect is not None:  # the device says where; Linux's test run does not
            self.expect(r.redirect == port, f"{r.label}: redirected to port {r.redirect}, expected {port}")

    def map(self, name, want):
        got = self.s.maps.get(name)
        self.expect(got == want, f"map {name}:\n  got      {describe(got)}\n  expected {describe(want)}")

    def assert_ok(self):
        assert not self.problems, "\n".join(self.problems)


def describe(d):
    if d is None:
        return "missing"
    return "{" + ", ".join(f"{k.hex()}: {v.hex()}" for k, v in sorted(d.items())) + "}"


def array(values, fmt="Q"):
    """An array map's contents from its values in key order."""
    return {u32(i): struct.pack(f"<{fmt}", v) if isinstance(v, int) else v for i, v in enumerate(values)}


