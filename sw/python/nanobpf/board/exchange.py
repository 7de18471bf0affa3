"""A QUIC exchange through the board simulated from its pins (make board-sim; docs/board.md, "The board
in simulation").

The simulated board (build/sim/board-<board>-<cores>/nanobpf-board-sim, make board-sim-model: the
board's top with its image, the DPU, from the RGMII pins to the DDR3) is cabled to a TAP device on this
machine, and the host sits on it as in one-arm mode on a real board: the host link on board.toml's [dpu]
host_vid and the network link on net_vid, each seen as a VLAN sub-interface shows it (untagged;
nanobpf.ctrl.VlanPort, since this machine's kernel has no 802.1Q module). Then:

1. a control session on the host VLAN (nanobpf.ctrl.Client: HELLO, then the QUIC workload's keys with
   KEY_ADD and its settings with MAP_UPDATE and TABLE_SET, as a host installs them);
2. frames that must be dropped and counted: on the host VLAN a control request under another key and an
   authentic one altered (ctrl_auth_fail, no answer) and an authentic one replayed (STALE_SEQ, not
   applied again: ctrl_stale); on the network VLAN an authentic and a forged one (ctrl_foreign); untagged
   a data frame and an authentic control frame, and a frame on another VLAN (no_lport);
3. the QUIC workload (nanobpf.quic.workload: connections with CIDs of 0 to 20 bytes, IPv4 and IPv6),
   its plaintext with the ENCRYPT shim from the host VLAN and its protected packets from the network
   VLAN;
4. STATS on the host VLAN.
Every frame out must be what the reference protection gives (the workload's expectations) and what
the device model (nanobpf.devmodel with its PISA stage, the same program and settings) sends, byte for
byte (up to the Ethernet padding a short frame gets on the wire), in order per direction; the
counters must add up (frames in = frames out + drops by reason).

Needs root (a TAP device) and the model (make board-sim-model).

    nanobpf-board-exchange [--board genesys2] [--cores 2] [--packets 4] [--connections 6]
Exit 0 when everything matched, 1 when something did not (the report says what), 2 on bad usage or a
missing model.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from nanobpf import BUILD, ctrl, wire
from nanobpf.board import facts

PROG = "nanobpf-board-exchange"
QUIC_IMAGE = BUILD / "firmware/bpf/xdp_quic_hw.nbpf"
MIN_FRAME = 60   # Ethernet, without FCS: a shorter frame is padded on the wire


def model_path(board, cores):
    return BUILD / "sim" / f"board-{board}-{cores}" / "nanobpf-board-sim"


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def _quiet(ifname):
    try:   # IPv6 off before the link is up: the kernel sends nothing of its own onto the link
        with open(f"/proc/sys/net/ipv6/conf/{ifname}/disable_ipv6", "w") as f:
            f.write("1")
    except OSError:
        pass


class BoardSimError(RuntimeError):
    pass


class BoardSim:
    """The simulated board on a TAP device (created here, removed at stop); the host's two links are the
    VLANs host_vid and net_vid on it (`port(vid)`)."""

    def __init__(self, binary, host_vid, net_vid, tap=None, max_cycles=2_000_000_000, ready_timeout=1800.0, log=None,
                 mbps=1000):
        n = os.getpid() % 100000
        self.binary, self.host_vid, self.net_vid = Path(binary), host_vid, net_vid
        self.tap = tap or f"nbb{n}"
        self.max_cycles, self.ready_timeout, self.log, self.mbps = max_cycles, ready_timeout, log, mbps
        self.lines: list[str] = []
        self.proc = None
        self.returncode = None
        self._ready = threading.Event()

    def start(self):
        if not self.binary.exists():
            raise BoardSimError(f"{self.binary} not found: run `make board-sim-model`")
        self._remove_links()
        _ip("tuntap", "add", "dev", self.tap, "mode", "tap")
        _quiet(self.tap)
        _ip("link", "set", self.tap, "up")
        cmd = [str(self.binary), "--tap", self.tap, "--max-cycles", str(self.max_cycles), "--mbps", str(self.mbps)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._reader, name="board-console", daemon=True).start()
        t0 = time.monotonic()
        while not self._ready.wait(30):
            if self.log:
                self.log(f"[{PROG}] booting: {time.monotonic() - t0:.0f} s ...")
            if time.monotonic() - t0 > self.ready_timeout:
                break
        if not self._ready.is_set() or self.proc.poll() is not None:
            out = "\n".join(self.lines[-20:])
            self.stop()
            raise BoardSimError(f"the simulated board did not print 'dpu: ready' in {self.ready_timeout:.0f} s:\n{out}")
        return self

    def _reader(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.lines.append(line)
            if self.log:
                self.log(line)
            if line.startswith("[uart]") and "dpu: ready" in line:
                self._ready.set()
        self._ready.set()

    def stop(self, timeout=60.0):
        if self.proc is not None and self.returncode is None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.returncode = self.proc.returncode
            time.sleep(0.2)
        self._remove_links()
        return self.returncode

    def _remove_links(self):
        _ip("link", "del", self.tap, check=False)

    def port(self, vid):
        """The link on VLAN `vid` (None: untagged frames) as the host sees it."""
        return ctrl.VlanPort(self.tap, vid)

    def uart(self):
        """The console lines so far (without the [uart] prefix)."""
        return [l[len("[uart] "):] for l in self.lines if l.startswith("[uart] ")]

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def on_the_wire(frame, tagged=True):
    """The frame as it arrives through a VLAN sub-interface after crossing the wire: padded to the
    Ethernet minimum with its tag, and the tag then taken off by the kernel."""
    least = MIN_FRAME - (4 if tagged else 0)
    return bytes(frame) + bytes(max(0, least - len(frame)))


@dataclass
class Report:
    ok: bool = True
    lines: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    def check(self, cond, what):
        self.lines.append(("ok    " if cond else "WRONG ") + what)
        self.ok &= bool(cond)
        return cond


def _collect(port, want, timeout):
    """Frames from `port` until `want` of them (control answers left out) or `timeout` seconds of quiet."""
    got = []
    end = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < end:
        f = port.recv(min(5.0, max(0.0, end - time.monotonic())))
        if f is None:
            continue
        if not wire._is_ctrl_answer(f):
            got.append(bytes(f))
            end = time.monotonic() + timeout
    return got


class _Recording:
    """A port that keeps the frames sent through it (what a capture on the host's link would hold)."""

    def __init__(self, port):
        self.port, self.sent = port, []

    def send(self, frame):
        self.sent.append(bytes(frame))
        self.port.send(frame)

    def recv(self, timeout=None):
        return self.port.recv(timeout)


def _answer_to(port, frame, timeout):
    """The authentic response to the request `frame` (same seq, type and nonce), or None."""
    req = ctrl.parse(frame)
    end = time.monotonic() + timeout
    while (left := end - time.monotonic()) > 0:
        raw = port.recv(left)
        if raw is None:
            return None
        try:
            f = ctrl.parse(raw)
        except ValueError:
            continue
        if f is not None and f.nonce == req.nonce and (f.hdr["seq"], f.hdr["type"]) == (req.hdr["seq"], req.hdr["type"]):
            return f
    return None


def exchange(sim: BoardSim, connections=6, packets=4, timeout=600.0) -> Report:
    """Steps 1-4 of the module's description on a started BoardSim; the report of what matched."""
    import nanobpf_ctrl_defs as D
    from nanobpf.pcap import udp_frame
    from nanobpf.quic.workload import workload
    r = Report()
    w = workload(seed=1, connections=connections, packets=packets)
    retry = dict(retry_ms=3000, retry_max_ms=20000)
    ports = [sim.port(v) for v in (sim.host_vid, sim.host_vid, sim.net_vid, sim.net_vid, None)]
    host_ctrl, host_data, net_data, net_raw, bare = ports
    try:
        recorded = _Recording(host_ctrl)
        client = ctrl.Client(recorded, **retry)
        t0 = time.monotonic()
        client.hello()
        r.check(True, f"HELLO on the host VLAN {sim.host_vid}: epoch {client.epoch} ({time.monotonic() - t0:.1f} s)")
        t0 = time.monotonic()
        wire._apply_boot(client, w.boot)
        import nanobpf_ebpf_defs as abi
        keys = sum(1 for name, _, _ in w.boot if name == abi.KEYTABLE_MAP_NAME)
        r.check(True, f"{len(w.boot)} settings installed over the control channel, {keys} of them KEY_ADD "
                      f"({time.monotonic() - t0:.1f} s)")
        # what must be dropped and counted: on the host VLAN forged, altered and replayed control frames
        from nanobpf import ctrlkey
        first_add = next(f for f in recorded.sent if ctrl.parse(f).hdr["type"] == D.NANOBPF_CTRL_MSG_KEY_ADD)
        forged = ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, D.NANOBPF_CTRL_MSG_KEY_FLUSH, client.seq + 10, client.epoch,
                            key=ctrlkey.DeviceKey(os.urandom(16)))
        altered = first_add[:-20] + bytes([first_add[-20] ^ 0x80]) + first_add[-19:]    # a byte of the keys
        for f in (forged, altered, first_add):
            host_ctrl.send(f)
        replayed = _answer_to(host_ctrl, first_add, 120.0)     # the device answers in order: the two above got none
        # a replay is answered from the replay cache while it holds the request, refused (STALE_SEQ) after
        from_cache = replayed is not None and replayed.hdr["flags"] & D.NANOBPF_CTRL_F_REPLAY
        r.check(replayed is not None and (from_cache or replayed.hdr["status"] == D.NANOBPF_CTRL_ST_STALE_SEQ),
                f"host VLAN: a control request under another key and an altered one got no answer, the first KEY_ADD "
                f"replayed got {D.STATUS_NAMES.get(replayed.hdr['status']) if replayed else 'no answer'}"
                f"{' from the replay cache' if from_cache else ''}")
        applied_before = client.seq        # requests of this session so far, each applied once
        # on the network's VLAN (authentic or not), untagged, on another VLAN
        hello = ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, D.NANOBPF_CTRL_MSG_HELLO, 1, 0, b"")
        net_raw.send(hello)
        net_raw.send(forged)
        bare.send(hello)
        stray = udp_frame(b"stray" * 12, "192.0.2.9", "192.0.2.1", 443, 9)
        bare.send(stray)
        bare.send(stray[:12] + b"\x81\x00" + (4000 if sim.net_vid != 4000 and sim.host_vid != 4000 else 4001).to_bytes(2, "big")
                  + stray[12:])
        # the exchange, interleaved as a server's and its clients' packets would be
        t0 = time.monotonic()
        for i in range(max(len(w.host), len(w.net))):
            if i < len(w.host):
                host_data.send(w.host[i])
            if i < len(w.net):
                net_data.send(w.net[i])
        got_net = _collect(net_data, len(w.expect_net), timeout)
        got_host = _collect(host_data, len(w.expect_host), 10.0 if len(got_net) == len(w.expect_net) else timeout)
        secs = time.monotonic() - t0
        r.stats = client.stats()
    finally:
        for p in ports:
            p.close()
    ref = wire.run_model(QUIC_IMAGE, w.host, w.net, boot=w.boot)
    ref_host = [on_the_wire(f) for _, f in ref.out[wire.HOST] if not wire._is_ctrl_answer(f)]
    ref_net = [on_the_wire(f) for _, f in ref.out[wire.NET]]
    want_host, want_net = [on_the_wire(f) for f in w.expect_host], [on_the_wire(f) for f in w.expect_net]
    r.check(got_net == want_net, f"network VLAN {sim.net_vid}: {len(got_net)} sealed frames out of {len(w.host)} from the host, "
                                 f"{sum(a == b for a, b in zip(got_net, want_net))} equal to the reference protection's, in order")
    r.check(got_host == want_host, f"host VLAN {sim.host_vid}: {len(got_host)} opened frames out of {len(w.net)} from the network, "
                                   f"{sum(a == b for a, b in zip(got_host, want_host))} equal to the reference protection's, in order")
    r.check(got_net == ref_net and got_host == ref_host, "the device model sent the same frames on both links")
    s = r.stats
    r.check(s.get("ctrl_auth_fail") == 2 and s.get("ctrl_applied") == applied_before and s.get("keys") == keys,
            f"host VLAN: the forged and the altered control frames dropped (ctrl_auth_fail {s.get('ctrl_auth_fail')}), "
            f"the replay not applied again (ctrl_applied {s.get('ctrl_applied')} of {applied_before} requests, "
            f"ctrl_replayed {s.get('ctrl_replayed')}, ctrl_stale {s.get('ctrl_stale')}), keys {s.get('keys')} of {keys}")
    r.check(s.get("ctrl_foreign") == 2, f"the control frames on the network VLAN were dropped: ctrl_foreign {s.get('ctrl_foreign')}")
    r.check(s.get("no_lport") == 3, f"the untagged frames and the other VLAN's were dropped: no_lport {s.get('no_lport')}")
    r.check(s.get("encrypt_req") == len(w.host) and s.get("net_tx") == len(w.host) and s.get("decrypted") == len(w.net),
            f"STATS: encrypt_req {s.get('encrypt_req')}, net_tx {s.get('net_tx')}, decrypted {s.get('decrypted')}, "
            f"host_tx {s.get('host_tx')}, xdp_drop {s.get('xdp_drop')}, keys {s.get('keys')}")
    r.lines.append(f"      the exchange took {secs:.1f} s of this machine's time")
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0],
                                 epilog="Needs root (a TAP device) and the simulated board "
                                        "(make board-sim-model BOARD_CORES=N). Exit 0: everything matched; 1: something "
                                        "did not; 2: bad usage, no model, or the board did not boot.")
    ap.add_argument("--board", default=facts.DEFAULT_BOARD, help="the board (default: %(default)s)")
    ap.add_argument("--cores", type=int, help="the model's core count (default: the board's default_cores)")
    ap.add_argument("--connections", type=int, default=6, help="QUIC connections (default 6: CIDs of 0 to 20 bytes, IPv4 and IPv6)")
    ap.add_argument("--packets", type=int, default=4, help="1-RTT packets each way per connection (default 4)")
    ap.add_argument("--mbps", type=int, default=1000, help="the rate the link partner sends at, 1..1000 Mbit/s "
                    "(default 1000: frames back to back, as the host queued them)")
    ap.add_argument("--model", metavar="FILE", help="the simulated board (default: build/sim/board-BOARD-CORES/nanobpf-board-sim)")
    ap.add_argument("--quiet", action="store_true", help="print only the report")
    a = ap.parse_args(argv)
    try:
        board = facts.load(a.board)
    except facts.BoardFactsError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    if a.connections < 1 or a.packets < 1:
        ap.error("--connections and --packets must be at least 1")
    if not 1 <= a.mbps <= 1000:
        ap.error("--mbps: 1..1000")
    if os.geteuid() != 0:
        print(f"{PROG}: needs root (a TAP device)", file=sys.stderr)
        return 2
    cores = a.cores or board.default_cores
    binary = Path(a.model) if a.model else model_path(board.name, cores)
    log = (lambda line: None) if a.quiet else (lambda line: print(line, flush=True))
    sim = BoardSim(binary, board.dpu.host_vid, board.dpu.net_vid, log=log, mbps=a.mbps)
    try:
        sim.start()
    except BoardSimError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    try:
        report = exchange(sim, a.connections, a.packets)
    finally:
        sim.stop()
    summary = [l for l in sim.lines if l.startswith("nanobpf-board-sim:")] if a.quiet else []
    print(f"{PROG}: {board.description}, {cores} core(s), host VLAN {board.dpu.host_vid}, network VLAN {board.dpu.net_vid}")
    for line in report.lines + summary:
        print(line)
    print(f"{PROG}: {'PASS' if report.ok else 'FAIL'}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
