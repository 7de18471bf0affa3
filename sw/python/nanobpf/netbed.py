"""A two-host test bench in network namespaces with the DPU in front of the server (docs/offload.md).

    with Testbed(dpu="model", bottleneck=Bottleneck(rate_mbit=5, rtt_ms=50)) as bed:
        srv = bed.popen("srv", [python, "-m", "nanobpf.quic.transfer", "serve", ...])
        bed.run("cli", [...])                       # a client in the client's namespace
        bed.wire_counters()                         # bytes per traffic class through the bottleneck

Namespaces (names carry a per-bench suffix): `srv` (the server host, 10.77.0.1 and fd77::1 on `eth0`),
`cli` (the client host, 10.77.0.2 and fd77::2), and between them the DPU with its host port towards the
server and its network port towards the client:
- dpu="model": the reference device model (nanobpf.devmodel) in namespace `dpu`, on veth pairs, as a
  process of its own (the DPU's speed is the model's: a few thousand frames per second through its
  Python data path; with model_fast=True its native one, nanobpf-devmodel --fast, some 80,000);
- dpu="rtl": the Verilator DPU (nanobpf.rtldev) whose two TAPs are moved into the hosts' namespaces;
- dpu=None: a plain veth pair (the baseline without a DPU).
A bottleneck adds namespace `wire` between the DPU and the client: a delay line (this module's `delay`
command: each frame held rtt/2 in each direction; the host kernel has no netem) and a tbf qdisc at
`rate_mbit` on the way to the client (the server -> client direction is the shared bottleneck; the
tbf queue holds `queue_bytes`; the delay line counts the bytes of the traffic classes named in
`classes`). Segmentation and checksum offloads are off on every interface, so
frames on the DPU link are real frames with real checksums.
"""
from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import select
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Bottleneck", "Testbed", "SRV_IP", "CLI_IP", "SRV_IP6", "CLI_IP6"]

SRV_IP, CLI_IP = "10.77.0.1", "10.77.0.2"
SRV_IP6, CLI_IP6 = "fd77::1", "fd77::2"
_counter = itertools.count()


@dataclass
class Bottleneck:
    rate_mbit: float = 5.0
    rtt_ms: float = 50.0
    queue_bytes: int = 62500          # about 100 ms at 5 Mbit/s (two bandwidth-delay products)
    classes: tuple = ()               # traffic classes the delay line counts: "NAME=udp|tcp:PORT[,PORT]"


# reachable: a TCP connection to a closed port is refused (RST), not timed out (no ping on the host)
_PROBE = """import socket, sys
try:
    socket.create_connection((sys.argv[1], 9), timeout=1).close()
except ConnectionRefusedError:
    pass
"""


def _sh(*args, check=True):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if check and r.returncode:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip() or r.returncode}")
    return r


class Testbed:
    __test__ = False          # not a pytest class
    def __init__(self, dpu="model", bottleneck: Bottleneck | None = None, rtl_cores=1, rtl_firmware="dpu-quic_hw",
                 log=None, workdir=None, model_fast=False):
        if os.geteuid() != 0:
            raise PermissionError("the test bench needs root (network namespaces)")
        if dpu not in ("model", "rtl", None):
            raise ValueError(f"dpu {dpu!r}: 'model', 'rtl' or None")
        n = f"{os.getpid() % 100000}{next(_counter)}"
        self.ns = {k: f"nb{k}{n}" for k in ("srv", "cli", "dpu", "wire")}
        self.dpu, self.bottleneck, self.log = dpu, bottleneck, log
        self.model_fast = model_fast      # the model's native data path (nanobpf-devmodel --fast)
        self.rtl_cores, self.rtl_firmware = rtl_cores, rtl_firmware
        self.procs, self.rtl = [], None
        self.workdir = Path(workdir or f"/tmp/nanobpf-bed-{n}")
        self.srv_if = "eth0"
        self.dpu_host_if = None           # the server's interface towards the DPU (Dpu(ifname))
        self.model_log = None

    # ------------------------------------------------------------ life
    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            for k in ("srv", "cli"):
                self._netns(k)
            if self.dpu == "model":
                self._netns("dpu")
            if self.bottleneck:
                self._netns("wire")
            # the client side of the DPU: the client itself, or the wire in between
            if self.dpu == "rtl":
                self._start_rtl()
            elif self.dpu == "model":
                self._veth("srv", "eth0", "dpu", "host0")
                self._veth("dpu", "net0", *(("wire", "a0") if self.bottleneck else ("cli", "eth0")))
                self._start_model()
            else:
                self._veth("srv", "eth0", *(("wire", "a0") if self.bottleneck else ("cli", "eth0")))
            if self.bottleneck:
                self._veth("wire", "b0", "cli", "eth0")
                self._start_wire()
            for k, v4, v6 in (("srv", SRV_IP, SRV_IP6), ("cli", CLI_IP, CLI_IP6)):
                self._addr(k, v4, v6)
            self.dpu_host_if = "eth0"
            self._wait_reachable()
        except BaseException:
            self.stop()
            raise
        return self

    def _netns(self, k):
        _sh("ip", "netns", "add", self.ns[k])
        _sh("ip", "-n", self.ns[k], "link", "set", "lo", "up")

    def _quiet(self, k, ifname):
        """Offloads off (real frames, real checksums), up."""
        _sh("ip", "netns", "exec", self.ns[k], "ethtool", "-K", ifname, "tso", "off", "gso", "off", "gro", "off",
            "tx", "off", "rx", "off", check=False)
        _sh("ip", "-n", self.ns[k], "link", "set", ifname, "up")

    def _veth(self, ka, a, kb, b):
        tmp_a, tmp_b = f"nbv{os.getpid() % 10000}{next(_counter)}", f"nbv{os.getpid() % 10000}{next(_counter)}"
        _sh("ip", "link", "add", tmp_a, "type", "veth", "peer", "name", tmp_b)
        _sh("ip", "link", "set", tmp_a, "netns", self.ns[ka], "name", a)
        _sh("ip", "link", "set", tmp_b, "netns", self.ns[kb], "name", b)
        for k, i in ((ka, a), (kb, b)):
            if k in ("dpu", "wire"):        # forwarders: no addresses, no IPv6 of their own
                _sh("ip", "netns", "exec", self.ns[k], "sysctl", "-qw", f"net.ipv6.conf.{i}.disable_ipv6=1")
            self._quiet(k, i)

    def _addr(self, k, v4, v6):
        _sh("ip", "-n", self.ns[k], "addr", "add", f"{v4}/24", "dev", "eth0")
        _sh("ip", "-n", self.ns[k], "addr", "add", f"{v6}/64", "dev", "eth0", "nodad")

    def _start_model(self):
        self.model_log = self.workdir / "devmodel.log"
        cmd = ["ip", "netns", "exec", self.ns["dpu"], sys.executable, "-m", "nanobpf.devmodel",
               "--host-if", "host0", "--net-if", "net0"] + (["--fast"] if self.model_fast else [])
        self.procs.append(subprocess.Popen(cmd, stdout=open(self.model_log, "w"), stderr=subprocess.STDOUT))

    def _start_rtl(self):
        from .rtldev import RtlDevice
        self.rtl = RtlDevice(cores=self.rtl_cores, firmware=self.rtl_firmware, log=self.log).start()
        for p in (self.rtl.host, self.rtl.net):
            p.close()
        self.rtl.host = self.rtl.net = None
        peer = ("wire", "a0") if self.bottleneck else ("cli", "eth0")
        for tap, (k, name) in ((self.rtl.host_if, ("srv", "eth0")), (self.rtl.net_if, peer)):
            _sh("ip", "link", "set", tap, "netns", self.ns[k], "name", name)
            if k == "wire":
                _sh("ip", "netns", "exec", self.ns[k], "sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1")
            self._quiet(k, name)
        self.rtl.host_if = self.rtl.net_if = None      # gone from the root namespace; stop() must not look

    def _start_wire(self):
        b = self.bottleneck
        _sh("ip", "netns", "exec", self.ns["wire"], "tc", "qdisc", "add", "dev", "b0", "root", "tbf",
            "rate", f"{b.rate_mbit}mbit", "burst", "10kb", "limit", str(b.queue_bytes))
        self.wire_file = self.workdir / "wire.json"
        cmd = ["ip", "netns", "exec", self.ns["wire"], sys.executable, "-m", "nanobpf.netbed", "delay",
               "--a", "a0", "--b", "b0", "--delay-ms", str(b.rtt_ms / 2), "--counters", str(self.wire_file)]
        for c in b.classes:
            cmd += ["--class", c]
        self.procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(self.workdir / "wire.log", "w")))

    def _wait_reachable(self, timeout=60.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.run("cli", [sys.executable, "-c", _PROBE, SRV_IP], check=False).returncode == 0:
                return
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{p.args[4:6]} ended ({p.returncode}) before the server was reachable")
        raise RuntimeError(f"the server was not reachable from the client in {timeout:.0f} s")

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs = []
        try:
            if self.rtl is not None:
                self.rtl.stop()
        finally:
            for ns in self.ns.values():
                _sh("ip", "netns", "del", ns, check=False)

    # ------------------------------------------------------------ use
    def cmd(self, k, argv):
        return ["ip", "netns", "exec", self.ns[k], *argv]

    def popen(self, k, argv, **kw):
        p = subprocess.Popen(self.cmd(k, argv), **kw)
        self.procs.insert(0, p)
        return p

    def run(self, k, argv, check=True, timeout=None):
        r = subprocess.run(self.cmd(k, argv), capture_output=True, text=True, timeout=timeout)
        if check and r.returncode:
            raise RuntimeError(f"{' '.join(argv)} in {k}: {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        return r

    def wire_counters(self):
        """The delay line's counters: bytes delivered towards the client per class, drops (None
        without a bottleneck)."""
        if not self.bottleneck:
            return None
        try:
            return json.loads(self.wire_file.read_text())
        except (OSError, ValueError):
            return None


# ---------------------------------------------------------------- the delay line
IPPROTO = {"udp": 17, "tcp": 6}


def parse_classes(specs):
    """["quic=udp:4433,4434", ...] -> {(17, 4433): "quic", ...}; ValueError for a malformed one."""
    out = {}
    for spec in specs:
        try:
            name, rest = spec.split("=", 1)
            proto, ports = rest.split(":", 1)
            for port in ports.split(","):
                out[(IPPROTO[proto], int(port))] = name
        except (ValueError, KeyError):
            raise ValueError(f"traffic class {spec!r}: NAME=udp|tcp:PORT[,PORT...]") from None
    return out


def _classify(frame, classes):
    """The traffic class of a frame (by IP protocol and either port), for the share measurement."""
    et = struct.unpack_from("!H", frame, 12)[0] if len(frame) >= 14 else 0
    if et == 0x0800 and len(frame) >= 34:
        proto, l4 = frame[23], 14 + (frame[14] & 0xF) * 4
    elif et == 0x86DD and len(frame) >= 54:
        proto, l4 = frame[20], 54
    else:
        return "other"
    if len(frame) < l4 + 4:
        return "other"
    sport, dport = struct.unpack_from("!HH", frame, l4)
    return classes.get((proto, sport)) or classes.get((proto, dport)) or "other"


def delay_line(a, b, delay_s, counters_path=None, classes=None):
    """Forward frames between interfaces a and b, each held delay_s; count bytes delivered a -> b per
    class (parse_classes()) and the frames b's qdisc refused (the bottleneck's drops)."""
    classes = classes or {}
    socks = {}
    for name in (a, b):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        s.bind((name, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        socks[name] = s
    out = {a: b, b: a}
    queues = {a: collections.deque(), b: collections.deque()}   # frames waiting to leave *towards* key
    stats = collections.Counter()
    last_dump = 0.0
    while True:
        now = time.monotonic()
        due = [q[0][0] for q in queues.values() if q]
        timeout = max(0.0, min(due) - now) if due else 0.1
        r, _, _ = select.select(list(socks.values()), [], [], min(timeout, 0.1))
        now = time.monotonic()
        for name, s in socks.items():
            if s in r:
                while True:
                    try:
                        frame, sa = s.recvfrom(65600, socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        break
                    if sa[2] == socket.PACKET_OUTGOING:
                        continue
                    queues[out[name]].append((now + delay_s, frame))
        for dst, q in queues.items():
            while q and q[0][0] <= now:
                _, frame = q.popleft()
                try:
                    socks[dst].send(frame)
                    if dst == b:
                        stats[_classify(frame, classes)] += len(frame)
                except OSError:
                    stats["dropped"] += 1          # the bottleneck queue is full (tbf refused it)
        if counters_path and now - last_dump >= 0.1:
            last_dump = now
            tmp = counters_path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(dict(stats, t=time.time()), f)
            os.replace(tmp, counters_path)


def sniff(ifname, out_path):
    """Record every frame received on `ifname` into a pcap file, until SIGTERM/SIGINT."""
    import signal
    from .pcap import write_pcap
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((ifname, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    frames, stamps, stop = [], [], []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    Path(out_path + ".ready").touch()
    try:
        while not stop:
            r, _, _ = select.select([s], [], [], 0.1)
            while r:
                try:
                    frame, sa = s.recvfrom(65600, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                if sa[2] != socket.PACKET_OUTGOING:
                    frames.append(frame)
                    stamps.append(time.time())
    except KeyboardInterrupt:
        pass
    write_pcap(out_path, frames, stamps)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m nanobpf.netbed", description="Parts of the netns test bench.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("delay", help="a delay line between two interfaces (runs until killed)")
    d.add_argument("--a", required=True, help="interface on the server side")
    d.add_argument("--b", required=True, help="interface on the client side (the bottleneck's qdisc)")
    d.add_argument("--delay-ms", type=float, required=True, help="one-way delay")
    d.add_argument("--counters", help="file the byte counters are written to, every 100 ms")
    d.add_argument("--class", dest="classes", action="append", default=[], metavar="NAME=udp|tcp:PORT[,PORT]",
                   help="count the bytes towards b of this traffic class (repeatable; the rest counts as other)")
    c = sub.add_parser("sniff", help="record the frames received on an interface into a pcap (until SIGTERM)")
    c.add_argument("--if", dest="ifname", required=True)
    c.add_argument("--out", required=True, help="pcap file written at the end")
    args = ap.parse_args(argv)
    if args.cmd == "sniff":
        sniff(args.ifname, args.out)
        return 0
    try:
        classes = parse_classes(args.classes)
    except ValueError as e:
        ap.error(str(e))
    try:
        delay_line(args.a, args.b, args.delay_ms / 1000, args.counters, classes)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
