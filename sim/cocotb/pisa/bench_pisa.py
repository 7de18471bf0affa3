"""Cycle-level benchmark of the whole PISA pipeline (run by nanobpf-bench-pisa, not by
pytest): back-to-back frames of one size at full rate, to the host (through the deparser) and to the
cores; beats/cycle in and out, frames/cycle, bubbles, and latency from the first
and the last beat in to the first beat out. Writes JSON to $PISA_BENCH_OUT."""
import json
import os

import cocotb
from cocotb.triggers import RisingEdge

from busport import BusPortDriver, start
from nanobpf.soc import REGIONS
from pisa_common import QUIC_PORT, SHORT_CID, Regs, StreamSink, StreamSource, model_for, program_default
from scapy.all import IP, UDP, Dot1Q, Ether, Raw

PERIOD = 10


def frame_of(size, vid, cid=None):
    body = (bytes([0x40]) + cid) if cid else b"\x01"
    pkt = Ether() / Dot1Q(vlan=vid) / IP(src="192.0.2.1", dst="198.51.100.2") / UDP(sport=5000, dport=QUIC_PORT) / Raw(body)
    raw = bytes(pkt)
    return bytes(Ether(raw) / Raw(bytes(size - len(raw)))) if size > len(raw) else raw


@cocotb.test()
async def bench(dut):
    w = int(os.environ.get("PISA_BEAT", "8"))
    n = int(os.environ.get("PISA_BENCH_FRAMES", "200"))
    sizes = [int(s) for s in os.environ.get("PISA_BENCH_SIZES", "64,128,256,512,1024,1518").split(",")]
    dut.io_fromCores_valid.value = 0
    bus = BusPortDriver(dut, REGIONS["pisa"].base, await start(dut))
    regs = Regs(bus, await model_for(bus, w))
    await program_default(regs)
    cid = bytes(range(1, SHORT_CID + 1))
    await regs.cid("insert", cid, slot=5)
    results = []
    for path, port_out in (("to_host", "io_out"), ("to_cores", "io_toCores")):
        for size in sizes:
            # network VLAN 20 -> host: bypass through the deparser (tag rewritten, same length)
            f = frame_of(size, 20, cid if path == "to_cores" else None)
            sink = StreamSink(dut, port_out, w)
            other = StreamSink(dut, "io_out" if port_out == "io_toCores" else "io_toCores", w)
            t_sink = cocotb.start_soon(sink.run())
            t_other = cocotb.start_soon(other.run())
            src = StreamSource(dut, "io_in", w)
            for _ in range(n):
                await src.send(f, **{"": 0})
            for _ in range(20000):
                if len(sink.frames) >= n:
                    break
                await RisingEdge(dut.clock)
            t_sink.cancel()
            t_other.cancel()
            assert len(sink.frames) == n, f"{path} {size}: {len(sink.frames)} of {n} frames out"
            beats = (len(f) + w - 1) // w
            in_cycles = (src.times[-1][1] - src.times[0][0]) / PERIOD + 1
            out_cycles = (sink.frames[-1][3] - sink.frames[0][2]) / PERIOD + 1
            out_beats = sum((len(x[0]) + w - 1) // w for x in sink.frames)
            lat_first = [(o[2] - i[0]) / PERIOD for i, o in zip(src.times, sink.frames)]
            lat_last = [(o[2] - i[1]) / PERIOD for i, o in zip(src.times, sink.frames)]
            results.append(dict(path=path, size=size, frames=n, beats_per_frame=beats,
                                in_beats_per_cycle=n * beats / in_cycles,
                                out_beats_per_cycle=out_beats / out_cycles,
                                frames_per_cycle=n / out_cycles, ideal_frames_per_cycle=1 / beats,
                                bubbles=sink.stalls_inside,
                                latency_first_beat=min(lat_first), latency_last_beat=min(lat_last),
                                latency_last_beat_max=max(lat_last)))
            dut._log.info("%s", results[-1])
            for _ in range(50):
                await RisingEdge(dut.clock)
    with open(os.environ["PISA_BENCH_OUT"], "w") as fh:
        json.dump(results, fh, indent=1)
