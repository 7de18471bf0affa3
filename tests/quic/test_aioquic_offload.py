"""aioquic on the DPU (nanobpf.quic.offload) end to end, in network namespaces (nanobpf.netbed): a server
host with the offload, the DPU in front of it, an unmodified aioquic client on the network side.

Against the device model (make test): transfers over IPv4 and IPv6 with several CID lengths on each
side (zero-length included), key updates by either end, checked for
- payload integrity (SHA-256 at the client: an unmodified aioquic, so every packet the device sealed
  was protected correctly);
- the device did the protection: the program counted every 1-RTT packet the server's offload sent as
  sealed and the packets it delivered as opened, and the server's aioquic opened none in software once
  the offload was on;
- nothing leaves unprotected: every 1-RTT packet from the server on the client's wire opens with the
  server's keys (from the client's key log), no 16-byte run of the payload appears in clear;
- keys installed and removed: the device's key table is empty after the connection closed.
Against the Verilator DPU (make test too; short): one transfer with a key update.
"""
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nanobpf import rtldev
from nanobpf.netbed import CLI_IP, CLI_IP6, SRV_IP, SRV_IP6, Testbed
from nanobpf.pcap import parse_udp, read_pcap
from nanobpf.quic import PacketKeys, TagMismatch, next_secret, parse_keylog, unprotect
from nanobpf.quic.transfer import BLOCK, PORTS

PY = sys.executable
ROOT = Path(__file__).resolve().parents[2]

needs_root = pytest.mark.skipif(not Path("/proc/self/ns/net").exists() or __import__("os").geteuid() != 0,
                                reason="needs root (network namespaces)")


class Server:
    """The transfer server with the offload in the bed's server namespace; its JSON report lines."""

    def __init__(self, bed, cert_dir, cid_len=8, key_update=False, retry_ms=None):
        args = [PY, "-m", "nanobpf.quic.transfer", "serve", "--cert-dir", str(cert_dir), "--dpu", bed.dpu_host_if,
                "--cid-len", str(cid_len)] + (["--key-update"] if key_update else [])
        if retry_ms:
            args += ["--dpu-retry-ms", str(retry_ms)]
        self.proc = bed.popen("srv", args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for x in self.proc.stdout:
            if x.startswith("{"):
                self.lines.append(json.loads(x))

    def wait_report(self, proto, timeout):
        """The offload's report of a `proto` connection (sent when it has ended: closing takes 3 PTOs)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(x.get("proto") == proto and "dpu" in x for x in self.lines):
                return
            time.sleep(0.2)

    def wait_ready(self, bed, timeout):
        end = time.monotonic() + timeout
        probe = "import socket,sys; s=socket.create_connection((sys.argv[1], %d), timeout=1); s.close()" % PORTS["tcp"]
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server ended: {self.proc.stderr.read()[-3000:]}")
            if bed.run("cli", [PY, "-c", probe, SRV_IP], check=False).returncode == 0:
                return
            time.sleep(0.5)
        raise RuntimeError("server not ready")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(10)
        self.stderr = self.proc.stderr.read()
        return self.lines


def fetch(bed, srv, tmp_path, host, size, client_cid=8, key_update=False, timeout=120, report_timeout=30):
    """One quic-offload transfer, the client's wire recorded: (result, pcap, keylog)."""
    pcap, keylog = tmp_path / "cli.pcap", tmp_path / "keylog.txt"
    sniffer = bed.popen("cli", [PY, "-m", "nanobpf.netbed", "sniff", "--if", "eth0", "--out", str(pcap)])
    ready = Path(str(pcap) + ".ready")
    for _ in range(100):
        if ready.exists():
            break
        time.sleep(0.1)
    try:
        r = bed.run("cli", [PY, "-m", "nanobpf.quic.transfer", "get", "--proto", "quic-offload", "--host", host,
                            "--size", str(size), "--cert-dir", str(tmp_path), "--cid-len", str(client_cid),
                            "--keylog", str(keylog)] + (["--key-update"] if key_update else []), timeout=timeout)
        got = json.loads(r.stdout)
        srv.wait_report("quic-offload", report_timeout)
    finally:
        sniffer.terminate()
        sniffer.wait(30)
    return got, pcap, keylog


def server_keys(keylog_path):
    conns = list(parse_keylog(Path(keylog_path).read_text()).values())
    assert len(conns) == 1, "one connection per key log"
    secret = conns[0]["SERVER_TRAFFIC_SECRET_0"]
    first = PacketKeys.from_secret(secret)
    gens = [first]
    for _ in range(3):
        secret = next_secret(secret)
        gens.append(PacketKeys.from_secret(secret, hp=first.hp))
    return gens


def check_wire(pcap, keylog, client_cid_len):
    """Every 1-RTT packet the server sent opens with one of its key generations; nothing in clear."""
    gens = server_keys(keylog)
    windows = {BLOCK[i:i + 16] for i in range(0, len(BLOCK) - 16, 16)}
    largest, opened, used = -1, 0, set()
    for _, frame in read_pcap(pcap):
        info = parse_udp(frame)
        if info is None or info.sport != PORTS["quic-offload"]:
            continue
        p = info.payload
        for i in range(len(p) - 16):
            assert p[i:i + 16] not in windows, "payload bytes in clear on the network"
        if p[0] & 0x80:
            continue                                # Initial/Handshake: aioquic protected those
        for g, keys in enumerate(gens):
            try:
                u = unprotect(p, keys, largest, short_cid_len=client_cid_len)
            except TagMismatch:
                continue
            largest, opened = max(largest, u.pn), opened + 1
            used.add(g)
            break
        else:
            raise AssertionError(f"a 1-RTT packet from the server on the wire opens with none of its keys: {p[:24].hex()}")
    return opened, used


@pytest.fixture(scope="module")
def model_bed(tmp_path_factory):
    work = tmp_path_factory.mktemp("bed")
    with Testbed(dpu="model", workdir=work) as bed:
        yield bed


# (server CID length, client CID length, IPv6, who updates keys). aioquic cannot use zero-length CIDs
# (it issues NEW_CONNECTION_ID frames of length 0, a protocol violation its peer refuses): the device's
# address-keyed entries are tested with hand-made traffic (tests/ctrl, tests/ebpf), not here.
SHAPES = [
    pytest.param(8, 8, False, "client", id="v4-cid8-8-client-update"),
    pytest.param(20, 4, True, "server", id="v6-cid20-4-server-update"),
    pytest.param(5, 20, False, "both", id="v4-cid5-20-both-update"),
    pytest.param(4, 12, True, "none", id="v6-cid4-12"),
]


@needs_root
@pytest.mark.parametrize("server_cid, client_cid, v6, update", SHAPES)
def test_offloaded_transfer(model_bed, tmp_path, server_cid, client_cid, v6, update):
    bed, size = model_bed, 400_000
    srv = Server(bed, tmp_path, cid_len=server_cid, key_update=update in ("server", "both"))
    try:
        srv.wait_ready(bed, 60)
        got, pcap, keylog = fetch(bed, srv, tmp_path, SRV_IP6 if v6 else SRV_IP, size, client_cid,
                                  update in ("client", "both"))
    finally:
        lines = srv.stop()
    assert got["ok"] and got["bytes"] == size, got
    ends = [x for x in lines if x.get("proto") == "quic-offload" and "cpu_s" in x]
    reports = [x for x in lines if x.get("proto") == "quic-offload" and "dpu" in x]
    assert len(ends) == 1 and ends[0]["offloaded"], (lines, srv.stderr[-3000:])
    dpu, dev = reports[0]["dpu"], reports[0]["device"]
    # the device did the protection
    assert dpu["tx_device"] > size // 1500 and dpu["rx_device"] > 0, dpu
    assert dev["quic_sealed"] >= dpu["tx_device"] * 9 // 10, (dpu, dev)       # the model may drop a few on overflow
    assert dev["quic_opened"] >= dpu["rx_device"] and dev["decrypted"] >= dpu["rx_device"], (dpu, dev)
    assert dev["encrypt_unsealed"] == 0 and dev["encrypt_no_prog"] == 0 and dev["bad_shim"] == 0, dev
    assert dpu.get("unsealable", 0) == 0, dpu
    # software opened only what came before the offload (handshake-time 1-RTT packets)
    assert dpu.get("rx_software", 0) <= 4, dpu
    if update != "none":
        assert dpu["key_updates"] >= 1, dpu
    # keys installed and removed
    assert dpu["key_add"] >= 2 and dpu["key_del"] == dpu["key_add"], dpu
    assert dev["keys"] == dpu.get("device_keys_at_start", 0), dev
    # on the network: protected, and with the keys of each phase used
    opened, gens = check_wire(pcap, keylog, client_cid)
    assert opened >= dpu["tx_device"] * 9 // 10, (opened, dpu)
    if update != "none":
        assert len(gens) >= 2, gens


@needs_root
def test_software_path_untouched(model_bed, tmp_path):
    """QUIC on the port the DPU does not offload, TCP and TLS: same bytes through the same DPU."""
    srv = Server(model_bed, tmp_path)
    try:
        srv.wait_ready(model_bed, 60)
        for proto in ("quic", "tls", "tcp"):
            r = model_bed.run("cli", [PY, "-m", "nanobpf.quic.transfer", "get", "--proto", proto, "--host", SRV_IP,
                                      "--size", "200000", "--cert-dir", str(tmp_path)], timeout=120)
            assert json.loads(r.stdout)["ok"], r.stdout
    finally:
        lines = srv.stop()
    assert {x["proto"] for x in lines if "cpu_s" in x} == {"quic", "tls", "tcp"}, lines
    assert not any(x.get("offloaded") for x in lines), lines     # the other port is not offloaded


RTL_OK, RTL_WHY = rtldev.available(1, "dpu-quic_hw")


@needs_root
@pytest.mark.skipif(not RTL_OK, reason=RTL_WHY)
def test_offloaded_transfer_through_the_verilator_dpu(tmp_path):
    """One short aioquic transfer through the RTL DPU (1 core, xdp_quic_hw on the AEAD engine), with a
    key update by the client."""
    size = 30_000
    with Testbed(dpu="rtl", workdir=tmp_path / "bed") as bed:
        srv = Server(bed, tmp_path, cid_len=8, retry_ms=2000)
        try:
            srv.wait_ready(bed, 600)
            got, pcap, keylog = fetch(bed, srv, tmp_path, SRV_IP, size, key_update=True, timeout=1200,
                                      report_timeout=300)
        finally:
            lines = srv.stop()
    assert got["ok"] and got["bytes"] == size, got
    reports = [x for x in lines if "dpu" in x]
    assert reports, (lines, srv.stderr[-3000:])
    dpu, dev = reports[0]["dpu"], reports[0]["device"]
    print(f"through the Verilator DPU: client {got}\noffload {dpu}\ndevice {dev}")
    assert dpu["tx_device"] > 0 and dpu["rx_device"] > 0 and dpu["key_updates"] >= 1, dpu
    assert dev["quic_sealed"] >= 1 and dev["quic_opened"] >= 1 and dev["encrypt_unsealed"] == 0, dev
    assert dpu["key_del"] == dpu["key_add"] and dev["keys"] == dpu.get("device_keys_at_start", 0), (dpu, dev)
    opened, gens = check_wire(pcap, keylog, 8)
    assert opened >= dpu["tx_device"] and len(gens) >= 2, (opened, gens, dpu)
