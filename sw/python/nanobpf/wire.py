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
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

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
            workdir=None):
    """Run the frames through the `cores`-core simulated DPU with `firmware` (dpu-<program>)."""
    with tempfile.TemporaryDirectory(prefix="nanobpf-wire-") as tmp:
        d = Path(workdir or tmp)
        d.mkdir(parents=True, exist_ok=True)
        files = {k: d / f"{k}.pcap" for k in ("host-in", "net-in", "host-out", "net-out")}
        write_pcap(files["host-in"], host)
        write_pcap(files["net-in"], net)
        args = ["--host-in", files["host-in"], "--net-in", files["net-in"], "--host-out", files["host-out"],
                "--net-out", files["net-out"], "--drain-cycles", str(drain_cycles)]
        if gbps:
            args += ["--gbps", str(gbps)]
        r = sim.run(cores, firmware, max_cycles=max_cycles, args=[str(a) for a in args], timeout=timeout)
        out = {p: [f for _, f in read_pcap(files[f"{p}-out"])] if files[f"{p}-out"].exists() else []
               for p in (HOST, NET)}
    return WireRun(out=out, counters=parse_counters(r.lines(0)), result=r, sent={HOST: len(host), NET: len(net)})


def run_model(image, host, net, cores=4):
    """Run the frames through the device model with the program image attached, in the simulator's
    arrival order, one frame at a time."""
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
            except Exception as e:  # reported below, with the device still polled meanwhile
                errors.append(e)
        t = threading.Thread(target=load)
        t.start()
        while t.is_alive():
            dev.poll(0.02)
        t.join()
        if errors:
            raise errors[0]
        while hl.a.recv(0.01) is not None:   # control answers still queued
            pass
        before = Counter(dev.counters)
        out = {HOST: [], NET: []}
        for origin, frame in arrival_order(host, net):
            (hl.a if origin == HOST else nl.a).send(frame)
            dev.poll(1.0)
            for port, link in ((HOST, hl.a), (NET, nl.a)):
                while (f := link.recv(0.0)) is not None:
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
