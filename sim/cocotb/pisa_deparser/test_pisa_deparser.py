"""PISA deparser (nanobpf.pisa.Deparser with its register block) against the model's egress():
IPv4 header and UDP checksums recomputed after payload changes (IPv4 and IPv6, also behind the host
link's shim), IP and UDP lengths set from the frame's end (fix_len: datagrams grown or cut at their
end, as a seal's tag or an open's), the egress logical port's VLAN tag inserted (in front of one
the frame carries: the ingress took the outer tag off), egress port, drops (a host-link shim towards the network too:
tx_shim) and counters, under random back-pressure.
Run: make test-block BLOCK=pisa_deparser."""
import os
import random

import cocotb
from cocotb.triggers import ClockCycles

from nanobpf import ctrl
from nanobpf.models.pisa import ACTION, COUNTER, Pisa
from nanobpf.soc import REGIONS
from busport import BusPortDriver, start
from pisa_common import Regs, StreamSink, StreamSource, Traffic

W = 8


async def bench(dut, ready_prob):
    bus = BusPortDriver(dut, REGIONS["pisa"].base, await start(dut))
    model = Pisa()
    regs = Regs(bus, model)
    sink = StreamSink(dut, "io_out", W, fields=("port",), rng=random.Random(3), ready_prob=ready_prob)
    cocotb.start_soon(sink.run())
    return regs, model, sink


def damage_payload(rng, frame):
    """What a core does to a packet: change bytes past the headers (checksums become stale)."""
    f = bytearray(frame)
    for _ in range(4):
        if len(f) > 100:
            f[rng.randrange(100, len(f))] ^= 0xFF
    return bytes(f)


def add_shim(rng, frame):
    """The host link's shim after the MAC addresses (a frame the device opened for the host carries
    it): the deparser finds the headers behind it for the checksums; towards the network it drops the
    frame (tx_shim)."""
    return ctrl.add_shim(frame, rng.choice([1, 2]), rng.randrange(21))


async def run(dut, frames, lport_cfgs, ready_prob, rng):
    regs, model, sink = await bench(dut, ready_prob)
    await regs.put("roles", host_lport=1, network_lport=3)
    for lp, cfg in lport_cfgs.items():
        await regs.put("lport_cfg", lp, **cfg)
    src = StreamSource(dut, "io_in", W, rng, idle=0.05)
    want = []
    for f, action, fix, fix_len in frames:
        await src.send(f, action=action, fixCsum=fix, fixLen=fix_len)
        r = model.egress(f, action, fix, fix_len)
        if r:
            want.append(r)
    for _ in range(3000):
        if len(sink.frames) >= len(want):
            break
        await cocotb.triggers.RisingEdge(dut.clock)
    # frames the deparser drops leave no frame to wait for: the last ones (a jumbo frame is consumed
    # beat by beat) may still be going through when the last frame out has arrived, so wait until the
    # deparser has counted every frame, sent or dropped
    for _ in range(100):
        done = await regs.read("counter", COUNTER["tx_frames"]) + await regs.read("counter", COUNTER["tx_dropped"])
        if done >= len(frames):
            break
        await ClockCycles(dut.clock, 50)
    for _ in range(50):
        await cocotb.triggers.RisingEdge(dut.clock)
    got = [(f, side["port"]) for f, side, _, _ in sink.frames]
    assert len(got) == len(want), f"{len(got)} frames out, model {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"frame {i}: RTL port {g[1]} {g[0].hex()}\n model port {w[1]} {w[0].hex()}"
    await regs.check_counters()
    return regs


@cocotb.test()
async def checksums_and_vlans(dut):
    rng = random.Random(int(os.environ.get("PISA_SEED", "1")))
    t = Traffic(rng, [rng.randbytes(8)])
    frames = []
    for _ in range(250):
        f, _ = t.frame()
        if rng.random() < 0.6:
            f = damage_payload(rng, f)
        if rng.random() < 0.15:
            f = t.malformed(f)
        if rng.random() < 0.25:
            f = add_shim(rng, f)
        elif rng.random() < 0.1:   # behind a VLAN tag (a one-arm host VLAN's order)
            f = f[:12] + b"\x81\x00" + rng.randrange(4096).to_bytes(2, "big") + ctrl.add_shim(f, rng.choice([1, 2]))[12:16] + f[12:]
        fix_len = rng.random() < 0.35
        if fix_len:   # the datagram grown or cut at its end (a seal's tag, an open's), its lengths stale
            f = f + rng.randbytes(16) if rng.random() < 0.5 or len(f) < 80 else f[:-rng.choice([16, 1, 40])]
        action = rng.choice([ACTION["to_host"]] * 4 + [ACTION["to_network"]] * 4 + [ACTION["drop"], ACTION["to_cores"]])
        frames.append((f, action, rng.random() < 0.8, fix_len))
    cfgs = {1: dict(egress_port=2, egress_tagged=1, egress_vid=0x123), 3: dict(egress_port=1, egress_tagged=0)}
    regs = await run(dut, frames, cfgs, 0.7, rng)
    # shims towards the network were among them, and dropped (the counters agreed with the model above)
    assert await regs.read("counter", COUNTER["tx_shim"]) > 0


@cocotb.test()
async def insert_tag_full_rate(dut):
    """Every frame gains a tag (frames with a tag of their own, too): the output needs one more beat per
    frame; nothing is lost."""
    rng = random.Random(7)
    t = Traffic(rng, [])
    frames = []
    for _ in range(60):
        f, _ = t.frame(rng.choice([64, 65, 71, 72, 1518]))
        frames.append((f, ACTION["to_network"], True, rng.random() < 0.5))
    cfgs = {3: dict(egress_port=3, egress_tagged=1, egress_vid=4095), 1: dict(egress_port=0, egress_tagged=1, egress_vid=1)}
    await run(dut, frames, cfgs, 1.0, rng)


def test_pisa_deparser():
    from nanobpf.blocksim import run_block
    run_block("pisa_deparser", "w8", "DeparserBlock", "test_pisa_deparser", os.path.dirname(__file__))
