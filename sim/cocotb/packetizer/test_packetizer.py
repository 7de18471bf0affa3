"""Packetization buffer (nanobpf.reasm.Packetizer) against the model (nanobpf.models.packetizer): host GSO
batches of 1..64 segments with scapy-built IPv4/IPv6 (+ 0..2 VLAN tags, IPv4 options) / UDP / QUIC
short header templates, every output frame compared byte for byte with its side band (info, bad) and
the counter events; malformed batches (each header rule, cut header or template, short and long
payloads) mixed with good ones; random back-pressure and idle input cycles; a slow output (payload
FIFO full, batches waiting for a header/template slot); output rate at full speed (> 0.98 beats/cycle).
Run: make test-block BLOCK=packetizer (PKTZ_SEED=n for another seed)."""
import os
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge
from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, Raw

from nanobpf.models.packetizer import COUNTERS, MAX_FRAME, MAX_TEMPLATE, gso_batch, packetize, template_offsets
from nanobpf.soc import unpack_layout
from pisa_common import StreamSink, StreamSource

W = int(os.environ.get("PKTZ_W", "8"))
SEED = int(os.environ.get("PKTZ_SEED", "1"))
SIDE = ("info_lport", "info_quic", "info_connValid", "info_connSlot", "info_hash", "info_gso", "bad")
EVENTS = {"gso_batches": "io_count_batches", "gso_segments": "io_count_segments", "gso_bad": "io_count_bad"}


class InPort:
    """io.in is a bare Beat (io_in_bits_data...); StreamSource drives <prefix>_bits_beat_*."""

    def __init__(self, dut):
        self._dut = dut

    def __getattr__(self, name):
        return getattr(self._dut, name.replace("io_in_bits_beat_", "io_in_bits_"))


async def count_events(dut, counts):
    """Adds up the one-cycle io_count_* pulses."""
    while True:
        await RisingEdge(dut.clock)
        await ReadOnly()
        for k, s in EVENTS.items():
            counts[k] += int(getattr(dut, s).value)


def template(rng, v6=None, tags=None, pn_len=None, dcid_len=None, opt_words=None, extra=0):
    """Ethernet [/ 802.1Q x tags] / IPv4 (maybe with options) or IPv6 / UDP / QUIC short header (first
    byte 0x40 | pn_len - 1, DCID, packet number) [+ extra bytes]; returns (bytes, pn_len, dcid_len)."""
    v6 = rng.random() < 0.4 if v6 is None else v6
    tags = rng.choice([0, 0, 1, 2]) if tags is None else tags
    pn_len = pn_len or rng.randint(1, 4)
    dcid_len = rng.choice([8, 8, 0, 4, 20]) if dcid_len is None else dcid_len
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    for _ in range(tags):
        eth = eth / Dot1Q(vlan=rng.randrange(1, 4095), prio=rng.randrange(8))
    ip = IPv6(src="2001:db8::1", dst="2001:db8::2", hlim=64) if v6 else \
        IP(src="192.0.2.1", dst="198.51.100.2", id=rng.randrange(65536),
           options=b"\x01" * (4 * (rng.choice([0, 0, 0, 1, 5, 10]) if opt_words is None else opt_words)))
    quic = bytes([0x40 | (pn_len - 1)]) + rng.randbytes(dcid_len) + rng.randbytes(pn_len) + rng.randbytes(extra)
    return bytes(eth / ip / UDP(sport=rng.randrange(1024, 65536), dport=443) / Raw(quic)), pn_len, dcid_len


def batch(rng, n, size, tmpl=None, **fields):
    """A batch with the payload of n segments of `size` bytes (the last one 1..size) and the gso_hdr
    fields random unless given (segs = n unless given)."""
    t, pn_len, dcid_len = tmpl or template(rng)
    total = (n - 1) * size + rng.randint(1, size)
    args = dict(pn=rng.randrange(1 << 32), pn_len=pn_len, ip_id=rng.randrange(65536), lport=rng.randrange(4),
                conn_slot=rng.randrange(65536), conn_valid=rng.randrange(2), dcid_len=dcid_len, segs=n)
    args.update(fields)
    return gso_batch(t, rng.randbytes(total), size, **args)


def small_size(rng, segs):
    """A segment size from 1..300, smaller for many segments (keeps the run short)."""
    size = rng.choice([rng.randint(1, 16), rng.randint(1, 300)])
    return max(1, min(size, 6000 // segs))


def side(h, bad):
    return dict(info_lport=h["lport"], info_quic=1, info_connValid=h["conn_valid"], info_connSlot=h["conn_slot"],
                info_hash=h["conn_slot"], info_gso=1, bad=int(bad))


async def run(dut, batches, ready_prob=0.7, idle=0.1, seed=0):
    """Sends the batches, checks every frame, its side band and the counters against the model;
    returns the sink (frames with the times of their first and last beats)."""
    rng = random.Random(SEED * 1000 + seed)
    cocotb.start_soon(Clock(dut.clock, 10, unit="ns").start())
    dut.reset.value = 1
    dut.io_in_valid.value = 0
    for _ in range(4):
        await RisingEdge(dut.clock)
    dut.reset.value = 0
    sink = StreamSink(dut, "io_out", W, fields=SIDE, rng=random.Random(rng.random()), ready_prob=ready_prob)
    counts = dict.fromkeys(COUNTERS, 0)
    cocotb.start_soon(sink.run())
    cocotb.start_soon(count_events(dut, counts))
    want, want_counts = [], dict.fromkeys(COUNTERS, 0)
    for bi, b in enumerate(batches):
        frames, c = packetize(b, MAX_FRAME)
        h = unpack_layout("gso_hdr", int.from_bytes(b[:16].ljust(16, b"\0"), "little"))
        want += [(bi, f, side(h, bad)) for f, bad in frames]
        for k in COUNTERS:
            want_counts[k] += c[k]
    src = StreamSource(InPort(dut), "io_in", W, rng, idle=idle)
    for b in batches:
        await src.send(b)
    for _ in range(20000):
        if len(sink.frames) >= len(want):
            break
        await RisingEdge(dut.clock)
    for _ in range(50):
        await RisingEdge(dut.clock)
    got = sink.frames
    for i, ((f, s, _, _), (bi, wf, ws)) in enumerate(zip(got, want)):
        assert (f, s) == (wf, ws), \
            f"frame {i} (batch {bi}):\n RTL   {s} {f.hex()}\n model {ws} {wf.hex()}"
    assert len(got) == len(want), f"{len(got)} frames out, model {len(want)}"
    assert counts == want_counts, f"counter events: RTL {counts}, model {want_counts}"
    dut._log.info(f"{len(batches)} batches, {len(want)} frames ({sum(s['bad'] for _, _, s in want)} bad), "
                  f"counters {counts}")
    return sink


@cocotb.test()
async def segment_counts(dut):
    """1, 2, 63, 64 and random segment counts, small segments, back-pressure and idle input."""
    rng = random.Random(SEED)
    batches = []
    for segs in [1, 2, 63, 64, 1, 64] + [rng.randint(1, 64) for _ in range(34)]:
        batches.append(batch(rng, segs, small_size(rng, segs)))
    await run(dut, batches, seed=1)


@cocotb.test()
async def large_segments(dut):
    """Segments of 1200..1400 bytes, and the largest frame (template + segment = max_frame)."""
    rng = random.Random(SEED + 1)
    batches = [batch(rng, rng.randint(1, 4), rng.randint(1200, 1400)) for _ in range(5)]
    t = template(rng)
    batches.append(batch(rng, 3, MAX_FRAME - len(t[0]), tmpl=t))
    await run(dut, batches, ready_prob=0.8, idle=0.05, seed=2)


def malformed(rng):
    """(what, batch) for each refusal rule and payload length error."""
    t, pn_len, dcid_len = tmpl = template(rng)
    l3, l4, pn_off = template_offsets(t, dcid_len)
    good = dict(tmpl=tmpl)
    ver = bytearray(t)
    ver[l3] = rng.choice([0, 5, 7, 15]) << 4 | (t[l3] & 15)
    cases = [
        ("segs 0", batch(rng, 2, 20, segs=0, **good)),
        ("segs > 64", batch(rng, 3, 20, segs=rng.randint(65, 127), **good)),
        ("seg_size 0", gso_batch(t, bytes(40), 0, 0, pn_len, 0, segs=2, dcid_len=dcid_len)),
        ("hdr_len > 192", batch(rng, 2, 20, hdr_len=rng.randint(193, 255), **good)),
        ("hdr_len < l4_off + 8", batch(rng, 2, 20, hdr_len=l4 + 7, pn_off=l4, pn_len=1, **good)),
        ("l4_off == l3_off", batch(rng, 2, 20, l4_off=l3, **good)),
        ("l4_off < l3_off", batch(rng, 2, 20, l4_off=l3 - 1, **good)),
        ("pn past the template", batch(rng, 2, 20, pn_off=len(t) - pn_len + 1, **good)),
        ("template + segment > max_frame", batch(rng, 1, MAX_FRAME - len(t) + 1, **good)),
        ("IP version", batch(rng, 2, 20, tmpl=(bytes(ver), pn_len, dcid_len))),
        ("empty frame", b""),
        ("header cut", batch(rng, 2, 20, **good)[:rng.randint(1, 15)]),
        ("header only", batch(rng, 2, 20, **good)[:16]),
        ("template cut", batch(rng, 2, 20, **good)[:16 + rng.randrange(len(t))]),
        ("no payload", batch(rng, 2, 20, **good)[:16 + len(t)]),
    ]
    b = batch(rng, 6, 37, **good)
    cases += [
        ("cut inside segment 3", b[:16 + len(t) + 3 * 37 + rng.randint(1, 36)]),
        ("cut after segment 3", b[:16 + len(t) + 4 * 37]),
        ("cut inside segment 0", b[:16 + len(t) + rng.randint(1, 36)]),
        ("last segment missing", b[:16 + len(t) + 5 * 37]),
        ("one byte too many", gso_batch(t, rng.randbytes(201), 50, 1, pn_len, 2, segs=4, dcid_len=dcid_len)),
        ("whole segments too many", batch(rng, 5, 30, segs=3, **good)),
        ("one byte, two segments", batch(rng, 1, 1, segs=2, **good)),
    ]
    return cases


@cocotb.test()
async def malformed_batches(dut):
    """Each refusal rule, cut headers and templates, short and long payloads, each followed by a good
    batch (the block must recover); the largest template (192 bytes) too."""
    rng = random.Random(SEED + 2)
    batches = []
    for _ in range(3):
        for what, b in malformed(rng):
            assert packetize(b)[1]["gso_bad"] == 1, f"{what}: the model finds nothing wrong"
            batches.append(b)
            segs = rng.choice([1, 2, 5])
            batches.append(batch(rng, segs, small_size(rng, segs)))
    big = dict(v6=False, tags=2, dcid_len=20, opt_words=10, pn_len=4)
    t192 = template(rng, **big, extra=MAX_TEMPLATE - len(template(rng, **big)[0]))
    assert len(t192[0]) == MAX_TEMPLATE
    batches.append(batch(rng, 3, 100, tmpl=t192))
    await run(dut, batches, ready_prob=0.6, idle=0.2, seed=3)


@cocotb.test()
async def slow_output(dut):
    """Large and tiny batches in turn under heavy back-pressure: the payload FIFO fills, and a batch
    waits for the header/template slot of the batch before the previous one."""
    rng = random.Random(SEED + 4)
    batches = []
    for _ in range(6):
        batches.append(batch(rng, rng.randint(2, 4), rng.randint(1000, 1400)))
        batches += [batch(rng, 1, rng.randint(1, 40)) for _ in range(rng.randint(1, 3))]
    await run(dut, batches, ready_prob=0.3, idle=0.0, seed=5)


@cocotb.test()
async def full_rate(dut):
    """No back-pressure, no idle input: output beats per cycle over batches of large segments."""
    rng = random.Random(SEED + 3)
    batches = [batch(rng, 8, 1400, tmpl=template(rng, v6=v6)) for v6 in (False, True)]
    sink = await run(dut, batches, ready_prob=1.0, idle=0.0, seed=4)
    beats = sum(-(-len(f) // W) for f, _, _, _ in sink.frames)
    cycles = (sink.frames[-1][3] - sink.frames[0][2]) // 10 + 1
    dut._log.info(f"full rate: {beats} beats in {cycles} cycles = {beats / cycles:.3f} beats/cycle")
    assert beats / cycles > 0.98, f"output rate {beats / cycles:.3f} beats/cycle"


def test_packetizer():
    from nanobpf.blocksim import run_block
    run_block("packetizer", "w8", "PacketizerBlock", "test_packetizer", os.path.dirname(__file__))


@pytest.mark.long   # not the SoC's width (64-bit beats): make test-long
def test_packetizer_w16():
    from nanobpf.blocksim import run_block
    run_block("packetizer", "w16", "PacketizerBlock", "test_packetizer", os.path.dirname(__file__), {"PKTZ_W": "16"})
