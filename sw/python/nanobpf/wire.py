"""Wire to wire: the same frames through the simulated DPU (nanobpf-sim with its Ethernet ports, the
data-plane firmware firmware/apps/dpu) and through the reference device model (nanobpf.devmodel with
its PISA stage), and what each sent out of its host and network ports.

    host, net = [...], [...]                              # Ethernet frames (bytes)
    dev = run_sim(4, "dpu-wire", host, net)               # WireRun: frames per port, DPU counters
    ref = run_model(image, host, net)                     # ModelRun: frames per port with their origin
    assert not compare(dev, ref)

Order: the DPU keeps arrival order per ingress port (docs/packet-path.md), not across ports, so
`compare` checks each output port's frames as a whole and, within them, the order of the frames that
came from each ingress port.
"""
from __future__ import annotations

import re
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nanobpf_ctrl_defs as CTRL_DEFS

from . import ctrl, sim
from .pcap import read_pcap, write_pcap

HOST, NET = "host", "net"
_DPU_LINE = re.compile(r"DPU (\w+)((?: \w+=\d+)+)$")


@dataclass
class WireRun:
    """What the simulated DPU did: frames out of each port, the firmware's counters, the run."""
    out: dict                      # HOST/NET -> [bytes]
    counters: dict                 # "pisa", "pisa_drops", "pkt", "core0", ... -> {name: int}
    result: sim.SimResult
    sent: dict = field(default_factory=dict)
    rx_cycles: dict = field(default_factory=dict)   # HOST/NET -> [cycle each input frame's first beat went in]
    tx_cycles: dict = field(default_factory=dict)   # HOST/NET -> [cycle each output frame's last beat went out]

    def latencies(self):
        """Wire-to-wire cycles of each frame that went through (input port X's k-th frame is output
        port Y's k-th when every frame of X left by Y: the DPU keeps arrival order per ingress port),
        or [] when the frames cannot be matched so."""
        out = []
        for src, dst in ((NET, HOST), (HOST, NET)):
            ins, outs = self.rx_cycles.get(src, []), self.tx_cycles.get(dst, [])
            if len(ins) != len(outs):
                return []
            out += [b - a for a, b in zip(ins, outs)]
        return out


@dataclass
class ModelRun:
    """What the device model did: frames out of each port, each with the ingress port it came from."""
    out: dict                      # HOST/NET -> [(origin, bytes)]
    counters: Counter


def arrival_order(host, net):
    """The order nanobpf-sim offers frames without pacing: whole frames, round robin from the host port."""
    order, h, n = [], list(host), list(net)
    while h or n:
        if h:
            order.append((HOST, h.pop(0)))
        if n:
            order.append((NET, n.pop(0)))
    return order


def parse_counters(lines):
    """The firmware's `DPU <subject> key=value ...` lines as {subject: {key: value}} (core lines: coreN)."""
    out = {}
    for line in lines:
        m = _DPU_LINE.match(line)
        if not m:
            continue
        values = dict((k, int(v)) for k, v in (kv.split("=") for kv in m[2].split()))
        out[m[1]] = values
    return out


def run_sim(cores, firmware, host, net, max_cycles=50_000_000, gbps=0.0, drain_cycles=20_000, timeout=1800,
            workdir=None, extra_args=()):
    """Run the frames through the `cores`-core simulated DPU with `firmware` (dpu-<program>)."""
    with tempfile.TemporaryDirectory(prefix="nanobpf-wire-") as tmp:
        d = Path(workdir or tmp)
        d.mkdir(parents=True, exist_ok=True)
        files = {k: d / f"{k}.pcap" for k in ("host-in", "net-in", "host-out", "net-out")}
        write_pcap(files["host-in"], host)
        write_pcap(files["net-in"], net)
        times = d / "rx-times.txt"
        args = ["--host-in", files["host-in"], "--net-in", files["net-in"], "--host-out", files["host-out"],
                "--net-out", files["net-out"], "--drain-cycles", str(drain_cycles), "--rx-times", times]
        if gbps:
            args += ["--gbps", str(gbps)]
        args += list(extra_args)
        r = sim.run(cores, firmware, max_cycles=max_cycles, args=[str(a) for a in args], timeout=timeout)
        outs = {p: read_pcap(files[f"{p}-out"]) if files[f"{p}-out"].exists() else [] for p in (HOST, NET)}
        rx = _rx_times(times)
    from .soc import CORE_CLOCK_HZ
    return WireRun(out={p: [f for _, f in outs[p]] for p in outs}, counters=parse_counters(r.lines(0)), result=r,
                   sent={HOST: len(host), NET: len(net)}, rx_cycles=rx,
                   tx_cycles={p: [round(ts * CORE_CLOCK_HZ) for ts, _ in outs[p]] for p in outs})


def _rx_times(path):
    """nanobpf-sim --rx-times (lines "port index cycle") as HOST/NET -> [cycle] in input order."""
    import nanobpf_soc as soc
    names = {soc.DATAPATH["host_port"]: HOST, soc.DATAPATH["net_port"]: NET}
    out = {HOST: [], NET: []}
    if Path(path).exists():
        for ln in Path(path).read_text().splitlines():
            if ln.strip():
                port, _, cycle = (int(x) for x in ln.split())
                out[names[port]].append(cycle)
    return out


def _apply_boot(client, boot):
    """The firmware's boot configuration as the host would install it: key table entries with KEY_ADD,
    PISA table words (@table) with TABLE_SET, other maps with MAP_UPDATE."""
    import struct as _struct
    import nanobpf_ebpf_defs as abi
    for name, key, value in boot:
        if name == "@table":
            table, _, index, word = _struct.unpack(">BBHI", value)
            client.table_set(table, index, word)
            continue
        if name.startswith("@"):    # a device setting (core select): the model has no cores to choose
            continue
        if name == abi.KEYTABLE_MAP_NAME:
            cid_len, ident, direction, _ = _struct.unpack(abi.STRUCTS["quic_cid"].fmt, key)
            client.key_add(ctrl.KeyId(direction, cid_len, ident), value)
        else:
            client.map_update(name, key, value)


def _is_ctrl_answer(frame):
    try:
        f = ctrl.parse(frame)
    except ValueError:
        return False
    return f is not None and bool(f.hdr["flags"] & CTRL_DEFS.NANOBPF_CTRL_F_RESPONSE)


def run_model(image, host, net, cores=4, boot=()):
    """Run the frames through the device model with the program image attached (and the boot
    configuration's map entries installed), in the simulator's arrival order, one frame at a time."""
    from .devmodel import DeviceModel
    hl, nl = ctrl.MemoryLink(), ctrl.MemoryLink()
    dev = DeviceModel(hl.b, nl.b, cores=cores, seed=1, pisa=True)
    try:
        client = ctrl.Client(hl.a)
        errors = []

        def load():
            try:
                client.hello()
                client.prog_load(Path(image).read_bytes(), name=Path(image).stem)
                _apply_boot(client, boot)
            except Exception as e:  # reported below, with the device still polled meanwhile
                errors.append(e)
        t = threading.Thread(target=load)
        t.start()
        while t.is_alive():
            dev.poll(0.02)
        t.join()
        if errors:
            raise errors[0]
        # the client may have retransmitted under load: let the device answer everything, drop the answers
        idle_since = time.monotonic()
        while time.monotonic() - idle_since < 0.3:
            dev.poll(0.05)
            if hl.a.recv(0.0) is not None:
                idle_since = time.monotonic()
        before = Counter(dev.counters)
        out = {HOST: [], NET: []}
        for origin, frame in arrival_order(host, net):
            (hl.a if origin == HOST else nl.a).send(frame)
            dev.poll(1.0)
            for port, link in ((HOST, hl.a), (NET, nl.a)):
                while (f := link.recv(0.0)) is not None:
                    if port == HOST and _is_ctrl_answer(f):
                        continue        # a late answer to the loading client's retransmission
                    out[port].append((origin, f))
        return ModelRun(out=out, counters=Counter(dev.counters) - before)
    finally:
        dev.stop()
        hl.close()
        nl.close()


def compare(dev: WireRun, ref: ModelRun):
    """Differences between the simulated DPU and the model (empty: they agree)."""
    diffs = []
    for port in (HOST, NET):
        got, want = dev.out[port], ref.out[port]
        if Counter(got) != Counter(f for _, f in want):
            missing = Counter(f for _, f in want) - Counter(got)
            extra = Counter(got) - Counter(f for _, f in want)
            diffs.append(f"{port} port: {len(got)} frames out, the model {len(want)}; "
                         f"{sum(missing.values())} missing, {sum(extra.values())} not in the model"
                         + (f" (first missing: {next(iter(missing)).hex()})" if missing else "")
                         + (f" (first extra: {next(iter(extra)).hex()})" if extra else ""))
            continue
        for origin in (HOST, NET):
            seq = [f for o, f in want if o == origin]
            # the device's frames in the order they left, restricted to those the model has from `origin`
            pool = Counter(seq)
            mine = []
            for f in got:
                if pool[f]:
                    pool[f] -= 1
                    mine.append(f)
            if mine != seq:
                i = next(i for i, (a, b) in enumerate(zip(mine, seq)) if a != b)
                diffs.append(f"{port} port: frames from the {origin} port out of order at #{i}")
    return diffs


def builtin_workload(seed=1, n=32):
    """The demo's built-in frames: both ports, every way through the wire program (pass, drop, echo (TX),
    redirect, a tag removed), IPv4 and IPv6, 60..1514-byte frames, plus what the device must refuse
    (malformed frames, a host frame asking to be sealed that the program cannot seal, control frames
    and shims from the network)."""
    import random
    import nanobpf_ctrl_defs as D
    from .pcap import udp_frame
    rng = random.Random(seed)
    host, net = [], []
    for i in range(n):
        for side, out in ((HOST, host), (NET, net)):
            src, dst = ("10.0.0.1", "10.0.0.2") if side == HOST else ("10.0.0.2", "10.0.0.1")
            kind = ["pass", "pass", "v6", "drop", "echo", "redirect", "tag", "bad_csum", "seal", "ctrl"][i % 10]
            payload = bytes(rng.randrange(256) for _ in range(rng.choice([18, 200, 512, 1000, 1472])))
            dport = {"drop": 9, "echo": 7, "redirect": 19}.get(kind, 443)
            f = udp_frame(payload, "fd00::1", "fd00::2", 1000 + i, 443) if kind == "v6" else \
                udp_frame(payload, src, dst, 1000 + i, dport)
            if kind == "tag":
                f = f[:12] + b"\x88\xb7\x00\x01" + f[12:]
            elif kind == "bad_csum":
                f = f[:24] + bytes([f[24] ^ 0xFF]) + f[25:]
            elif kind == "seal":
                f = ctrl.add_shim(f, D.NANOBPF_SHIM_F_ENCRYPT, 8)
            elif kind == "ctrl" and side == NET:
                f = ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, D.NANOBPF_CTRL_MSG_HELLO, i + 1, 0, b"")
            out.append(f)
    return host, net


def summary(dev: WireRun, ref: ModelRun | None):
    """The demo's report: frames per port, what was dropped where and why, core cycles per packet."""
    c, r = dev.counters, dev.result
    lines = [f"frames in:  host {dev.sent[HOST]}, network {dev.sent[NET]}",
             f"frames out: host {len(dev.out[HOST])}, network {len(dev.out[NET])}"]
    drops = {k: v for k, v in c.get("pisa_drops", {}).items() if v}
    lines.append("dropped by the PISA parser: " + (", ".join(f"{k} {v}" for k, v in drops.items()) or "none"))
    cores = {k: v for k, v in c.items() if k.startswith("core")}
    fw = Counter()
    for v in cores.values():
        for k in ("drop", "aborted", "bad_shim", "encrypt_no_prog", "encrypt_unsealed", "ctrl_unanswered"):
            fw[k] += v.get(k, 0)
    lines.append("dropped by the cores: " + (", ".join(f"{k} {v}" for k, v in fw.items() if v) or "none"))
    pkt = c.get("pkt", {})
    lines.append(f"packet path: {pkt.get('dispatched', 0)} descriptors, {pkt.get('egress', 0)} frames back out, "
                 f"{pkt.get('drop_full', 0)} dropped for want of a slot, {pkt.get('free_slots', 0)} slots free at the end")
    sealed, opened = sum(v.get("sealed", 0) for v in cores.values()), sum(v.get("opened", 0) for v in cores.values())
    if sealed or opened:
        lines.append(f"QUIC: {opened} packets opened for the host, {sealed} sealed for the network")
    for name, v in sorted(cores.items()):
        n = v["packets"] or 1
        lines.append(f"{name}: {v['packets']} packets, {v['cycles'] / n:.0f} cycles per packet in the program"
                     + (f" ({v['engine'] / n:.0f} of them waiting for the AEAD engine)" if v.get("engine") else "")
                     + f", {v.get('busy', 0) / n:.0f} with the firmware"
                     + (f", {v['ctrl']} control frames" if v.get("ctrl") else ""))
    from .soc import CORE_CLOCK_HZ
    mhz = CORE_CLOCK_HZ / 1e6
    lat = sorted(dev.latencies())
    if lat:
        first = min(x for p in dev.rx_cycles.values() for x in p[:1])
        last = max(x for p in dev.tx_cycles.values() for x in p[-1:])
        nbytes = sum(len(f) for p in dev.out.values() for f in p)
        span = max(1, last - first) / CORE_CLOCK_HZ
        lines.append(f"wire to wire: latency p50 {lat[len(lat) // 2]} cycles ({lat[len(lat) // 2] / mhz:.1f} us), "
                     f"p99 {lat[int(0.99 * (len(lat) - 1))]} cycles; {sum(len(p) for p in dev.out.values()) / span:,.0f} "
                     f"packets/s, {nbytes * 8 / span / 1e9:.3f} Gbit/s at {mhz:.0f} MHz (first frame in to last out; "
                     f"what the input offered when it is paced)")
    lines.append(f"run: {r.cycles} cycles ({r.cycles / mhz / 1000:.2f} ms at {mhz:.0f} MHz), {r.wall_s:.1f} s of simulation")
    if ref is not None:
        diffs = compare(dev, ref)
        lines.append("against the device model: " + ("same frames out of each port, in order per ingress port"
                                                     if not diffs else "DIFFERENT: " + "; ".join(diffs)))
    return "\n".join(lines)


def main(argv=None):
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="nanobpf-wire", description="Frames through the simulated DPU (nanobpf-sim with "
                                 "the data-plane firmware) and the device model; prints what came out and checks "
                                 "they agree. Without --host-in/--net-in: the built-in workload.")
    from . import SOC_DEFAULT_CORES
    ap.add_argument("--cores", type=int, default=SOC_DEFAULT_CORES,
                    help="cores of the simulated SoC (make sim CORES=N; default %(default)s, the SoC's default)")
    ap.add_argument("--firmware", default="dpu-wire", help="data-plane firmware under build/firmware (default dpu-wire)")
    ap.add_argument("--image", help="the program image the firmware has built in, for the model "
                    "(default build/firmware/bpf/xdp_<name>.nbpf)")
    ap.add_argument("--host-in", help="pcap of frames into the host port")
    ap.add_argument("--net-in", help="pcap of frames into the network port")
    ap.add_argument("--out", help="directory for the input and output pcaps (default: a temporary one)")
    ap.add_argument("--no-model", action="store_true", help="do not run the device model")
    ap.add_argument("--max-cycles", type=int, default=50_000_000)
    ap.add_argument("--gbps", type=float, help="pace each input port at this many Gbit/s of the core clock (default: "
                    "back to back; with --quic 0.02, what the three data cores keep up with, so that no frame waits "
                    "for a packet-memory slot)")
    ap.add_argument("--quic", action="store_true", help="the QUIC demo instead: firmware dpu-quic_demo (xdp_quic_hw "
                    "and the keys of nanobpf.quic.demo) on its traffic (synthetic connections, the aioquic capture "
                    "made at build time, RFC 9001 A.2), checked against the reference protection and the model")
    a = ap.parse_args(argv)
    from . import BUILD
    expect = None
    boot = ()
    if a.quic:
        if a.host_in or a.net_in:
            ap.error("--quic brings its own traffic: no --host-in/--net-in")
        from .quic.demo import demo_traffic
        w = demo_traffic(BUILD / "firmware/bpf/quic_capture")
        host, net, boot, expect = w.host, w.net, w.boot, (w.expect_host, w.expect_net)
        if a.firmware == "dpu-wire":
            a.firmware = "dpu-quic_demo"
        a.image = a.image or str(BUILD / "firmware/bpf/xdp_quic_hw.nbpf")
        print("[wire] QUIC traffic: " + ", ".join(f"{k} {h} from the host + {n} from the network"
                                                  for k, (h, n) in w.parts.items())
              + ("" if "aioquic" in w.parts else " (no aioquic capture: it needs root when the firmware is built)"),
              flush=True)
    elif a.host_in or a.net_in:
        host = [f for _, f in read_pcap(a.host_in)] if a.host_in else []
        net = [f for _, f in read_pcap(a.net_in)] if a.net_in else []
    else:
        host, net = builtin_workload()
    image = Path(a.image) if a.image else BUILD / f"firmware/bpf/xdp_{a.firmware.removeprefix('dpu-')}.nbpf"
    print(f"[wire] {len(host)} + {len(net)} frames through the {a.cores}-core DPU ({a.firmware})", flush=True)
    try:
        gbps = a.gbps if a.gbps is not None else (0.02 if a.quic else 0.0)
        if gbps:
            print(f"[wire] each input port paced at {gbps * 1000:g} Mbit/s", flush=True)
        dev = run_sim(a.cores, a.firmware, host, net, max_cycles=a.max_cycles, workdir=a.out, gbps=gbps)
    except (FileNotFoundError, OSError) as e:
        print(f"nanobpf-wire: {e}", file=sys.stderr)
        return 2
    if dev.result.returncode != 0:
        print(dev.result.output, file=sys.stderr)
        print(f"nanobpf-wire: the simulation failed (exit code {dev.result.returncode})", file=sys.stderr)
        return 1
    ref = None
    if not a.no_model:
        print(f"[wire] the same frames through the device model ({image.name})", flush=True)
        ref = run_model(image, host, net, boot=boot)
    print(summary(dev, ref))
    bad = ref is not None and compare(dev, ref)
    if expect is not None:
        same = dev.out[HOST] == expect[0] and dev.out[NET] == expect[1]
        bad = bad or not same
        print("against the reference protection (nanobpf.quic): " + ("every frame out as expected, byte for byte"
              if same else f"DIFFERENT (host {len(dev.out[HOST])} of {len(expect[0])}, network {len(dev.out[NET])} of "
                           f"{len(expect[1])} frames)"))
    if a.out:
        print(f"pcaps: {a.out}/{{host,net}}-{{in,out}}.pcap")
    return 1 if bad else 0
