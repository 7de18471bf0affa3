"""PISA parser (nanobpf.pisa.Capture + Parser, as the ingress builds it: stepping over the host link's
shim) against the model's parse(): header fields, every error flag, a frame to seal's shim (seal,
sealCidLen) and the peer's address id of a UDP packet, for random traffic (frames to seal behind the
shim among them), malformed frames and a QUIC frame cut at every length.
Run: make test-block BLOCK=pisa_parser."""
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from nanobpf.models.pisa import parse
from pisa_common import StreamSource, Traffic

W = 8
FLAGS = {"tooLong": "too_long", "trunc": "truncated", "badHdr": "bad_ip_hdr", "badLen": "bad_ip_len",
         "badCsum": "bad_ip_csum", "badUdp": "bad_udp_len"}


async def collect(dut, out):
    while True:
        await ReadOnly()
        if dut.io_out_valid.value == 1:
            g = {k: int(getattr(dut, f"io_out_bits_{k}").value) for k in
                 ("length", "user", "vlans", "l3off", "isV4", "isV6", "l4off", "udp", "profilePort", "ulen", "drop",
                  "ctrl", "shim", "seal")}
            g["sealCidLen"] = int(dut.io_out_bits_sealCidLen.value) if g["seal"] else None
            g["addr"] = int(dut.io_addr.value).to_bytes(20, "little")
            g["bad"] = {v for k, v in FLAGS.items() if getattr(dut, f"io_out_bits_{k}").value == 1}
            out.append(g)
        await RisingEdge(dut.clock)


def expected(frame, port):
    p = parse(frame, 1522, step_shim=True, ingress=True)
    e = {"length": len(frame), "user": port, "vlans": p.vlans, "l3off": p.l3off, "isV4": int(p.ipver == 4),
         "isV6": int(p.ipver == 6), "l4off": p.l4off, "udp": int(p.udp), "drop": p.drop, "bad": p.bad,
         "ctrl": int(p.ctrl), "shim": int(p.shim), "seal": int(p.seal),
         "sealCidLen": p.seal_cid_len if p.seal else None, "addr": p.addr}
    if p.udp:
        e.update(profilePort=p.profile_port, ulen=p.ulen)
    return e


async def run(dut, frames, idle=0.0):
    cocotb.start_soon(Clock(dut.clock, 10, unit="ns").start())
    dut.reset.value = 1
    src = StreamSource(dut, "io_in", W, random.Random(5), idle)
    for _ in range(3):
        await RisingEdge(dut.clock)
    dut.reset.value = 0
    out = []
    cocotb.start_soon(collect(dut, out))
    for f, port in frames:
        await src.send(f, **{"": port})
    for _ in range(10):
        await RisingEdge(dut.clock)
    assert len(out) == len(frames), f"{len(out)} results for {len(frames)} frames"
    for i, ((f, port), got) in enumerate(zip(frames, out)):
        want = expected(f, port)
        if not want["udp"]:
            got.pop("profilePort"), got.pop("ulen")
            got.pop("addr"), want.pop("addr")  # the address id is the key of UDP (QUIC) packets only
        assert got == want, f"frame {i} ({len(f)} bytes {f[:64].hex()}): RTL {got} model {want}"


@cocotb.test()
async def random_traffic_and_damage(dut):
    rng = random.Random(int(os.environ.get("PISA_SEED", "1")))
    t = Traffic(rng, [rng.randbytes(8) for _ in range(4)])
    frames = []
    for _ in range(300):
        f, port = t.frame()
        frames.append((t.malformed(f) if rng.random() < 0.4 else f, port))
    # frames to seal among them, parsed behind their shim and (damaged) passed on unparsed
    shims = [p for p in (parse(f, 1522, step_shim=True, ingress=True) for f, _ in frames) if p.stepped]
    assert sum(p.udp for p in shims) >= 5 and sum(not p.udp for p in shims) >= 5, len(shims)
    await run(dut, frames, idle=0.1)


@cocotb.test()
async def every_truncation_point(dut):
    rng = random.Random(2)
    t = Traffic(rng, [])
    frames = []
    for size in (90, 130):
        for _ in range(3):
            f, port = t.frame(size)
            frames += [(f[:n], port) for n in range(1, len(f) + 1)]
    await run(dut, frames)


def test_pisa_parser():
    from nanobpf.blocksim import run_block
    run_block("pisa_parser", "w8", "ParserBlock", "test_pisa_parser", os.path.dirname(__file__))
