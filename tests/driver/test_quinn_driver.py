"""quinn on the DPU through nanobpf.ko in QEMU (docs/offload.md "quinn through the driver").

The guest (Debian's kernel, busybox, nanobpf.ko: the rig of test_driver.py) runs `nanobpf-quinn serve
--offload driver`: quinn + rustls whose 1-RTT keys go into the device's key table over the driver's
generic-netlink family and whose packets leave with SO_MARK (sealed by the device) and arrive with
SO_RCVMARK (opened by it). The device is the reference device model on the guest's TAP; its network
port is a second TAP on this host, where `nanobpf-quinn get` is the client, a plain quinn without a
DPU, writing the TLS key log. For each transfer:

- the payload's SHA-256 checked by the client (and the bytes counted by the server);
- every 1-RTT packet on the network side opened here, independently of the stack and the device, with
  the client's key log (nanobpf.quic.protection, key generations followed across updates): every
  packet the server sent is authentic, none of the transfer's plaintext appears on the wire, and the
  check is shown to see plaintext where it is (the opened packets carry the pattern);
- key updates both ways: each side started at least one (the first packet of a new generation came
  from it), and both directions used at least three generations;
- the offload did the work: the device model sealed and opened packets (its counters), the server
  reports packets sealed and opened by the device and none unsealable, the driver counted marks.

Transfers: IPv4 with 8-byte CIDs on both sides; IPv6 with a client using zero-length CIDs (the
server's SEAL entry is named by the client's address) and a server using 20-byte CIDs, on a second
server process (two processes share the device through the driver).

In `make test-long` (marker long), one transfer through the Verilator DPU instead of the model
(`nanobpf.rtldev`, one core: xdp_quic_hw loaded through the driver and verified on the simulated core
0, sealing and opening on the AEAD engine), with the same checks but the model's counters: the
device's own, read through the driver.
"""
import json
import os
import select
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from nanobpf import BUILD
from nanobpf.ctrl import PacketPort, TapPort
from nanobpf.devmodel import DeviceModel
from nanobpf.pcap import parse_udp, write_pcap
from nanobpf.quic import protection
from nanobpf.quic.capture import self_signed
from nanobpf.quic.keylog import parse_keylog
from nanobpf.quic.keys import key_generations
from nanobpf.quic.transfer import BLOCK

import nanobpf_ebpf_defs as abi
from test_driver import (CTL, DRIVER, INIT, KERNEL, KEY_FILE, QEMU, QUIC_HW_IMAGE, RTL_RETRY, Guest, RtlRig, _cpio,
                         _ip, guest_base, set_retry)

QUINN = BUILD / "rust/x86_64-unknown-linux-gnu/release/nanobpf-quinn"
SRV4, CLI4 = "10.79.0.1", "10.79.0.2"
SRV6, CLI6 = "fd79::1", "fd79::2"
PORT_A, PORT_B = 4435, 4437
WINDOW = 16               # bytes of the payload pattern a plaintext search looks for

pytestmark = pytest.mark.skipif(not QEMU or not KERNEL or not KERNEL.exists(),
                                reason="needs qemu-system-x86_64 and the kernel image (see test_driver.py)")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("certs")
    self_signed(d, host=SRV4)
    return d


@pytest.fixture(scope="module")
def quinn_initramfs(tmp_path_factory, certs):
    for f, how in ((DRIVER, "make driver"), (CTL, "make host-tools"), (QUINN, "make quinn"),
                   (QUIC_HW_IMAGE, "make firmware")):
        if not f.exists():
            pytest.fail(f"{f} is missing ({how})")
    # IPv6 stays on here (test_driver.py turns it off to keep the model's port quiet): the IPv6 transfer
    # needs it on the driver's netdev; the lower device keeps it off
    entries = guest_base(INIT.replace("echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6\n", ""))
    entries.append(("certs", 0o40755, b"", (0, 0)))
    entries.append(("bin/nanobpf-quinn", 0o100755, QUINN.read_bytes(), (0, 0)))
    entries.append(("xdp_quic_hw.nbpf", 0o100644, QUIC_HW_IMAGE.read_bytes(), (0, 0)))
    for f in ("cert.pem", "key.pem"):
        entries.append((f"certs/{f}", 0o100600, (certs / f).read_bytes(), (0, 0)))
    path = tmp_path_factory.mktemp("quinn-initramfs") / "initramfs.cpio"
    path.write_bytes(_cpio(entries))
    return path


class Sniffer(threading.Thread):
    """Every frame on the network side's TAP, both ways, with its direction, until stopped."""

    def __init__(self, ifname):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
        self.sock.bind((ifname, 0))
        self.frames, self._done = [], threading.Event()

    def _drain(self):
        while True:
            try:
                frame, addr = self.sock.recvfrom(65600, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            self.frames.append((addr[2] == socket.PACKET_OUTGOING, frame))

    def run(self):
        while not self._done.is_set():
            if select.select([self.sock], [], [], 0.05)[0]:
                self._drain()

    def stop(self):
        self._done.set()
        self.join()
        self._drain()
        self.sock.close()
        return self.frames


def serve(guest, port, cid_len, key_update_every, log):
    """A server process in the guest (background), up once its UDP port is bound."""
    guest.run(f"nanobpf-quinn serve --listen [::]:{port} --cert-dir /certs --offload driver "
              f"--program /xdp_quic_hw.nbpf --key-file {KEY_FILE} --cid-len {cid_len} "
              f"--key-update-every {key_update_every} --max-conns 1 > {log} 2>&1 &")
    end = time.monotonic() + 60
    while f":{port} " not in guest.run("netstat -uln"):
        if time.monotonic() > end:
            raise AssertionError(f"the server on {port} did not come up:\n" + guest.run(f"cat {log}"))
        time.sleep(0.5)


class QuinnRig:
    """The guest's TAP with the reference device model on it; the model's network port a TAP of this
    host with the client's addresses; the guest's driver attached, its netdev addressed."""

    def __init__(self, workdir, initrd):
        tag = f"{os.getpid() % 10000}"
        self.tap, self.nettap = f"nbqq{tag}", f"nbqn{tag}"
        self.guest = self.dev = self.host_port = self.net_port = None
        _ip("tuntap", "add", "dev", self.tap, "mode", "tap")
        try:
            Path(f"/proc/sys/net/ipv6/conf/{self.tap}/disable_ipv6").write_text("1")
            _ip("link", "set", self.tap, "up")
            self.guest = Guest(workdir, initrd, self.tap)
            self.host_port = PacketPort(self.tap)
            self.net_port = TapPort(self.nettap)
            Path(f"/proc/sys/net/ipv6/conf/{self.nettap}/disable_ipv6").write_text("0")
            _ip("addr", "add", f"{CLI4}/24", "dev", self.nettap)
            _ip("-6", "addr", "add", f"{CLI6}/64", "dev", self.nettap, "nodad")
            self.dev = DeviceModel(host=self.host_port, net=self.net_port, seed=45).start()
            g = self.guest
            g.run(f"nanobpfctl dev attach eth0 key {KEY_FILE}", timeout=60)
            g.run("echo 0 > /proc/sys/net/ipv6/conf/nbpf0/accept_dad; echo 0 > /proc/sys/net/ipv6/conf/nbpf0/disable_ipv6; "
                  "ip link set nbpf0 up; "
                  f"ip addr add {SRV4}/24 dev nbpf0; ip -6 addr add {SRV6}/64 dev nbpf0")
        except BaseException:
            self.close()
            raise

    def serve(self, port, cid_len, key_update_every, log):
        serve(self.guest, port, cid_len, key_update_every, log)

    def close(self):
        if self.guest:
            self.guest.close()
        if self.dev:
            self.dev.stop()
        for p in (self.host_port, self.net_port):
            if p:
                p.close()
        subprocess.run(["ip", "link", "del", self.tap], capture_output=True)


@pytest.fixture(scope="module")
def rig(quinn_initramfs, tmp_path_factory):
    r = QuinnRig(tmp_path_factory.mktemp("quinn-guest"), quinn_initramfs)
    yield r
    r.close()


# ---------------------------------------------------------------- the wire, opened independently
def _packets(datagram, short_cid_len):
    """(offset, is_long) of each QUIC packet of a datagram (a short header is the last)."""
    off = 0
    while off < len(datagram):
        if datagram[off] & 0x80:
            info = protection.header_info(datagram[off:], short_cid_len)
            yield off, True
            off += info.end
        else:
            yield off, False
            return


class Direction:
    """The 1-RTT packets of one direction, opened with the key log's secret of that side."""

    def __init__(self, secret, cid_len):
        self.gens = key_generations(secret, 64)
        self.cid_len, self.gen, self.largest = cid_len, 0, -1
        self.opened, self.first_of_gen, self.plain = 0, {}, []

    def open(self, packet, index):
        for g in (self.gen, self.gen + 1, self.gen - 1):
            if g < 0:
                continue
            try:
                u = protection.unprotect(packet, self.gens[g], self.largest, self.cid_len)
            except protection.TagMismatch:
                continue
            if u.key_phase != g % 2:
                continue
            self.largest = max(self.largest, u.pn)
            self.gen = max(self.gen, g)
            self.first_of_gen.setdefault(g, index)
            self.opened += 1
            self.plain.append(u.plain[u.header_len:])
            return
        raise AssertionError(f"frame {index}: a 1-RTT packet of {len(packet)} bytes opens with none of the key "
                             f"generations {self.gen - 1}..{self.gen + 1} of the key log")


def check_wire(frames, keylog, srv_ip, port, cli_cid_len, srv_cid_len):
    """Open every 1-RTT packet between the client and the server on `port`; returns the two Directions."""
    conns = parse_keylog(keylog)
    assert len(conns) == 1, f"{len(conns)} connections in the key log"
    secrets = next(iter(conns.values()))
    down = Direction(secrets["SERVER_TRAFFIC_SECRET_0"], cli_cid_len)     # server -> client: the device sealed
    up = Direction(secrets["CLIENT_TRAFFIC_SECRET_0"], srv_cid_len)
    pattern = {BLOCK[i:i + WINDOW] for i in range(0, len(BLOCK) - WINDOW)}
    leaked = 0
    for index, (outgoing, frame) in enumerate(frames):
        u = parse_udp(frame)
        if u is None or port not in (u.sport, u.dport) or srv_ip not in (u.src, u.dst):
            continue
        from_server = u.sport == port
        d = down if from_server else up
        for off, long in _packets(u.payload, d.cid_len):
            if not long:
                d.open(u.payload[off:], index)
        if from_server:
            p = u.payload
            leaked += any(p[i:i + WINDOW] in pattern for i in range(len(p) - WINDOW))
    assert leaked == 0, f"{leaked} datagrams from the server carry the transfer's plaintext on the wire"
    seen = sum(any(p[i:i + WINDOW] in pattern for i in range(0, len(p) - WINDOW)) for p in down.plain)
    assert seen > 0, "no opened packet carries the pattern: the plaintext search would see nothing"
    return down, up


def _json_lines(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def quic_stat(dev, index):
    """The QUIC program's quic_stats[index] in the model, summed over its CPUs."""
    with dev.lock:
        return DeviceModel._quic_stat(dev._prog[0], index) or 0 if dev._prog else 0


@pytest.mark.parametrize("case", [
    dict(name="ipv4-cid8", host=SRV4, port=PORT_A, srv_cid=8, cli_cid=8, size=2_000_000),
    dict(name="ipv6-cid0-cid20", host=SRV6, port=PORT_B, srv_cid=20, cli_cid=0, size=2_000_000),
], ids=lambda c: c["name"])
def test_quinn_transfer_through_driver(rig, certs, case, tmp_path):
    dev = rig.dev
    before = dev.stats()
    sealed0, opened0 = (quic_stat(dev, abi.NANOBPF_QUIC_STAT_SEALED), quic_stat(dev, abi.NANOBPF_QUIC_STAT_OPENED))
    log = f"/tmp/srv-{case['port']}.log"
    rig.serve(case["port"], case["srv_cid"], key_update_every=100, log=log)
    keylog = tmp_path / "keylog.txt"
    sniff = Sniffer(rig.nettap)
    sniff.start()
    try:
        r = subprocess.run([str(QUINN), "get", "--host", case["host"], "--port", str(case["port"]),
                            "--size", str(case["size"]), "--cert-dir", str(certs), "--cid-len",
                            str(case["cli_cid"]), "--keylog", str(keylog), "--key-update-every", "37"],
                           capture_output=True, text=True, timeout=600)
    finally:
        frames = sniff.stop()
    srv_text = rig.guest.run(f"sleep 1; cat {log}")
    # what the network side saw and the key log, kept for a look at a failure (tshark -o tls.keylog_file:...)
    write_pcap(tmp_path / "net.pcap", [f for _, f in frames])
    assert r.returncode == 0, f"client failed ({r.returncode}):\n{r.stdout}\n{r.stderr}\nserver:\n{srv_text}"
    client = _json_lines(r.stdout)[-1]
    assert client.get("ok") is True and client.get("bytes") == case["size"], client

    # the server: offloaded, packets sealed and opened by the device, nothing unsealable
    reports = [x for x in _json_lines(srv_text) if "bytes" in x]
    assert reports, f"no report from the server:\n{srv_text}"
    rep = reports[-1]
    assert rep["bytes"] == case["size"] and rep.get("offloaded"), rep
    off = rep["offload"]
    assert off.get("tx_device", 0) > 0 and off.get("rx_device", 0) > 0, off
    assert off.get("unsealable", 0) == 0, off

    # the device model did the sealing and opening
    after = dev.stats()
    sealed = quic_stat(dev, abi.NANOBPF_QUIC_STAT_SEALED) - sealed0
    opened = quic_stat(dev, abi.NANOBPF_QUIC_STAT_OPENED) - opened0
    assert sealed >= off["tx_device"] * 0.9 and opened > 0, (sealed, opened, off)
    assert after["decrypted"] - before["decrypted"] == opened

    # the wire, opened independently with the key log
    down, up = check_wire(frames, keylog.read_text(), case["host"], case["port"], case["cli_cid"], case["srv_cid"])
    assert down.opened >= sealed, (down.opened, sealed)
    gens = max(down.first_of_gen), max(up.first_of_gen)
    assert min(gens) >= 2, f"key generations used: server {gens[0] + 1}, client {gens[1] + 1}; server {off}, client {client}"
    # who started each update: the side whose packet of the new generation came first
    started = {"server": 0, "client": 0}
    for g in range(1, min(gens) + 1):
        started["server" if down.first_of_gen[g] < up.first_of_gen[g] else "client"] += 1
    assert started["server"] and started["client"], f"key updates started: {started}"
    print(f"{case['name']}: {case['size']} B, {down.opened} packets from the server sealed by the device, "
          f"{opened} opened for it, generations {gens}, updates started {started}, "
          f"client {client.get('mbit_s')} Mbit/s")
    rig.guest.assert_log_clean()


# ---------------------------------------------------------------- the Verilator DPU (make test-long)
# xdp_quic_hw's load through the driver: verified on the simulated core 0, minutes of simulation (longer
# when the machine is busy): the driver's retransmission stretched so that it waits, up to half an hour
RTL_RETRY_LOAD = "retry_ms=20000 retry_max_ms=600000"


class RtlQuinnRig(RtlRig):
    """test_driver.py's RTL rig (the guest's TAP relayed to the RTL DPU's host port, one core), with the
    DPU's network TAP as the client's interface, xdp_quic_hw loaded through the driver first; the
    server's prepare() then finds it attached."""

    def __init__(self, workdir, initrd):
        super().__init__(workdir, initrd, seed=45)
        try:
            self.net.close()             # the kernel's own interface from now on: the client's
            self.rtl.net = self.net = None
            self.nettap = self.rtl.net_if
            _ip("addr", "add", f"{CLI4}/24", "dev", self.nettap)
            g = self.guest
            set_retry(g, RTL_RETRY_LOAD)
            g.run(f"nanobpfctl dev attach eth0 key {KEY_FILE}", timeout=600)
            t = time.monotonic()
            g.run("nanobpfctl prog load /xdp_quic_hw.nbpf", timeout=3600)
            print(f"xdp_quic_hw verified and compiled on the simulated core 0 in {time.monotonic() - t:.0f} s")
            set_retry(g, RTL_RETRY)
            g.run(f"ip link set nbpf0 up; ip addr add {SRV4}/24 dev nbpf0")
        except BaseException:
            self.close()
            raise

    def serve(self, port, cid_len, key_update_every, log):
        serve(self.guest, port, cid_len, key_update_every, log)


@pytest.mark.long
def test_quinn_through_rtl_dpu(quinn_initramfs, certs, tmp_path):
    (tmp_path / "guest").mkdir()
    rig = RtlQuinnRig(tmp_path / "guest", quinn_initramfs)
    try:
        log = "/tmp/srv-rtl.log"
        rig.serve(PORT_A, 8, key_update_every=25, log=log)
        keylog = tmp_path / "keylog.txt"
        sniff = Sniffer(rig.nettap)
        sniff.start()
        size = 100_000
        t0 = time.monotonic()
        try:
            r = subprocess.run([str(QUINN), "get", "--host", SRV4, "--port", str(PORT_A), "--size", str(size),
                                "--cert-dir", str(certs), "--cid-len", "8", "--keylog", str(keylog),
                                "--key-update-every", "12"], capture_output=True, text=True, timeout=1800)
        finally:
            frames = sniff.stop()
        seconds = time.monotonic() - t0
        write_pcap(tmp_path / "net.pcap", [f for _, f in frames])
        srv_text = rig.guest.run(f"sleep 5; cat {log}")
        assert r.returncode == 0, f"client failed ({r.returncode}):\n{r.stdout}\n{r.stderr}\nserver:\n{srv_text}"
        client = _json_lines(r.stdout)[-1]
        assert client.get("ok") is True and client.get("bytes") == size, client
        reports = [x for x in _json_lines(srv_text) if "bytes" in x]
        assert reports and reports[-1]["bytes"] == size and reports[-1].get("offloaded"), srv_text
        off, dev = reports[-1]["offload"], reports[-1].get("device", {})
        assert off.get("tx_device", 0) > 0 and off.get("rx_device", 0) > 0 and off.get("unsealable", 0) == 0, off
        # the device's own counts (its STATS and quic_stats, read by the server through the driver)
        assert dev.get("quic_sealed", 0) >= off["tx_device"] and dev.get("quic_opened", 0) >= off["rx_device"], dev
        down, up = check_wire(frames, keylog.read_text(), SRV4, PORT_A, 8, 8)
        assert down.opened >= off["tx_device"], (down.opened, off)
        gens = max(down.first_of_gen), max(up.first_of_gen)
        assert min(gens) >= 1, f"key generations used: server {gens[0] + 1}, client {gens[1] + 1}"
        print(f"RTL DPU: {size} B in {seconds:.0f} s, {off['tx_device']} packets sealed and {off['rx_device']} opened "
              f"by the device, {down.opened} opened here with the key log, generations {gens}")
        rig.guest.assert_log_clean()
    finally:
        rig.close()
