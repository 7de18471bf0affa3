"""cocotb tests of the 1G Ethernet MAC (hw/src/main/scala/nanobpf/mac, docs/board.md) against
cocotbext-eth's GMII models and a Python reference model.

Receive: frames of every length, damaged frames of every kind (bad FCS, RX_ER, runts, fragments, bad
preamble, oversize) mixed with good ones, back-to-back at line rate; the receive clock runs 200 ppm
off the datapath clock so the clock crossing is exercised. Transmit: frames of every length from the
stream (padding, FCS), malformed and oversized frames refused, back-to-back frames at line rate.
Every test checks the frames delivered, packet by packet, and all counters.
"""
import os
import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.eth import GmiiFrame, GmiiSink, GmiiSource

from nanobpf.models.ethmac import MAX_FRAME, rx_verdict, wire_frame
from nanobpf.soc import ENUMS
from pisa_common import StreamSink, StreamSource

W = 8
COUNTERS = ENUMS["eth_counter"]
NET_PS = 8000
RX_PS = 8002  # +250 ppm


class MacModel:
    """What the MAC must do with each frame, and the counters that follow."""

    def __init__(self):
        self.c = {k: 0 for k in COUNTERS}
        self.rx_out, self.tx_out = [], []

    def rx(self, wire, error=False, preamble_ok=True):
        """`wire`: the bytes after the SFD, FCS included."""
        verdict = rx_verdict(wire, error or not preamble_ok)
        self.c[verdict] += 1
        if verdict == "rx_frames":
            self.rx_out.append(bytes(wire[:-4]))
            self.c["rx_bytes"] += len(wire) - 4
        return verdict == "rx_frames"

    def tx(self, frame):
        if not frame or len(frame) > MAX_FRAME - 4:
            self.c["tx_bad"] += 1
            return False
        padded = bytes(frame).ljust(60, b"\0")
        self.tx_out.append(padded)
        self.c["tx_frames"] += 1
        self.c["tx_bytes"] += len(padded)
        return True


class Tb:
    def __init__(self, dut, rx_ready=1.0, seed=1, tx=False):
        self.dut = dut
        cocotb.start_soon(Clock(dut.clock, NET_PS, unit="ps").start())
        cocotb.start_soon(Clock(dut.io_rxClock, RX_PS, unit="ps").start())
        self.gsrc = GmiiSource(dut.io_gmiiRx_rxd, dut.io_gmiiRx_rxEr, dut.io_gmiiRx_rxDv, dut.io_rxClock)
        self.gsink = GmiiSink(dut.io_gmiiTx_txd, dut.io_gmiiTx_txEr, dut.io_gmiiTx_txEn, dut.clock)
        self.src = StreamSource(dut, "io_tx", W, beat="_bits")
        self.sink = StreamSink(dut, "io_rx", W, beat="_bits", rng=random.Random(seed), ready_prob=rx_ready)
        self.model = MacModel()
        self.tx_bursts = []  # (cycle TX_EN rose, cycles it stayed high), from our own monitor
        if tx:  # a coroutine every cycle: only where the transmit side is checked
            cocotb.start_soon(self.tx_monitor())

    async def tx_monitor(self):
        """Counts TX_EN cycles per frame ourselves: GmiiSink does not record a frame's first byte."""
        cycle, start = 0, None
        while True:
            await RisingEdge(self.dut.clock)
            cycle += 1
            en = int(self.dut.io_gmiiTx_txEn.value)
            if en and start is None:
                start = cycle
            elif not en and start is not None:
                self.tx_bursts.append((start, cycle - start))
                start = None

    async def reset(self):
        d = self.dut
        d.reset.value = 1
        d.io_rxReset.value = 1
        await ClockCycles(d.clock, 5)
        d.reset.value = 0
        d.io_rxReset.value = 0
        await ClockCycles(d.clock, 5)
        cocotb.start_soon(self.sink.run())

    def counters(self):
        return {k: int(getattr(self.dut, f"io_counters_{i}").value) for k, i in COUNTERS.items()}

    async def rx_settle(self, n_frames, timeout_us=5000):
        """Wait until the GMII source is idle and `n_frames` have left the stream (or the time is up)."""
        while not self.gsrc.empty() or self.gsrc.idle() is False:
            await RisingEdge(self.dut.clock)
        for _ in range(timeout_us * 125):
            if len(self.sink.frames) >= n_frames:
                break
            await RisingEdge(self.dut.clock)
        await ClockCycles(self.dut.clock, 300)  # anything unexpected would show up by now

    def check(self, what):
        got = [f for f, _, _, _ in self.sink.frames]
        exp = self.model.rx_out
        assert len(got) == len(exp), f"{what}: {len(got)} frames out of the receiver, expected {len(exp)}"
        for i, (g, e) in enumerate(zip(got, exp)):
            assert g == e, f"{what}: received frame {i} differs ({len(g)} vs {len(e)} bytes)"
        assert self.counters() == self.model.c, f"{what}: counters {self.counters()}, model {self.model.c}"


def sizes():
    """Every length from 0 to past the maximum, or a spread of them when ETH_MAC_QUICK is set."""
    if os.environ.get("ETH_MAC_QUICK"):
        return sorted(set(list(range(0, 80)) + list(range(80, 1530, 37)) + [1514, 1517, 1518, 1519, 1520, 1530]))
    return list(range(0, 1531))


@cocotb.test()
async def rx_every_length(dut):
    """Frames of every length, one after another at the minimum gap: good ones delivered unchanged."""
    tb = Tb(dut)
    await tb.reset()
    rng = random.Random(11)
    for n in sizes():
        wire = wire_frame(bytes(rng.getrandbits(8) for _ in range(n)))
        tb.model.rx(wire)
        await tb.gsrc.send(GmiiFrame.from_raw_payload(wire))
    await tb.rx_settle(len(tb.model.rx_out))
    tb.check("every length")


@cocotb.test()
async def rx_damaged(dut):
    """Bad FCS, RX_ER, runts, fragments, bad preambles and oversized frames among good frames, with
    random back-pressure on the stream: only the good frames come out, each bad one is counted once."""
    tb = Tb(dut, rx_ready=0.7, seed=3)
    await tb.reset()
    rng = random.Random(12)
    for i in range(400):
        n = rng.choice([rng.randint(60, 200), rng.randint(60, 1518), rng.randint(1519, 1600), rng.randint(0, 59)])
        payload = bytes(rng.getrandbits(8) for _ in range(n))
        wire = bytearray(wire_frame(payload))
        kind = rng.choice(["good", "good", "good", "fcs", "rxer", "fragment", "preamble", "nosfd"])
        if kind == "fcs":
            j = rng.randrange(len(wire))
            wire[j] ^= 1 << rng.randrange(8)
            tb.model.rx(bytes(wire))
            await tb.gsrc.send(GmiiFrame.from_raw_payload(wire))
        elif kind == "rxer":
            f = GmiiFrame.from_raw_payload(wire)
            f.error = [0] * len(f.data)
            f.error[rng.randrange(8, len(f.data))] = 1
            tb.model.rx(bytes(wire), error=True)
            await tb.gsrc.send(f)
        elif kind == "fragment":  # preamble only
            tb.model.rx(b"", preamble_ok=True)
            await tb.gsrc.send(GmiiFrame(b"\x55" * rng.randint(1, 7)))
        elif kind == "preamble":  # a corrupted preamble byte
            data = bytearray(b"\x55" * 7 + b"\xd5" + wire)
            data[rng.randrange(0, 7)] = 0x5d
            tb.model.rx(bytes(wire), preamble_ok=False)
            await tb.gsrc.send(GmiiFrame(data))
        elif kind == "nosfd":
            tb.model.rx(bytes(wire), preamble_ok=False)
            await tb.gsrc.send(GmiiFrame(b"\x55" * 7 + b"\x5d" + wire))
        else:
            tb.model.rx(bytes(wire))
            await tb.gsrc.send(GmiiFrame.from_raw_payload(wire))
    await tb.rx_settle(len(tb.model.rx_out))
    assert tb.model.c["rx_phy_err"] and tb.model.c["rx_runt"] and tb.model.c["rx_fcs_err"] and tb.model.c["rx_oversize"]
    tb.check("damaged")


@cocotb.test()
async def rx_line_rate(dut):
    """Minimum-size frames back to back (12-byte gap, 8-byte preamble), the stream always ready:
    every frame delivered, nothing overflows."""
    tb = Tb(dut)
    await tb.reset()
    rng = random.Random(13)
    for i in range(300):
        n = 60 if i < 200 else rng.choice([60, 1514])
        wire = wire_frame(bytes(rng.getrandbits(8) for _ in range(n)))
        tb.model.rx(wire)
        tb.gsrc.send_nowait(GmiiFrame.from_raw_payload(wire))
    await tb.rx_settle(len(tb.model.rx_out))
    tb.check("line rate")
    assert tb.model.c["rx_overflow"] == 0


def tx_check(tb, what):
    got = []
    while not tb.gsink.empty():
        f = tb.gsink.recv_nowait()
        # the sink drops the first preamble byte; tx_bursts below checks the full length
        assert f.get_preamble() == bytearray(b"\x55" * 6 + b"\xd5"), f"{what}: bad preamble {f.get_preamble().hex()}"
        assert f.check_fcs(), f"{what}: bad FCS on a transmitted frame"
        assert f.error is None, f"{what}: TX_ER asserted"
        got.append(f)
    exp = tb.model.tx_out
    assert len(got) == len(exp), f"{what}: {len(got)} frames on the wire, expected {len(exp)}"
    for i, (g, e) in enumerate(zip(got, exp)):
        assert bytes(g.get_payload()) == e, f"{what}: transmitted frame {i} differs"
    lens = [n for _, n in tb.tx_bursts]
    assert lens == [8 + len(e) + 4 for e in exp], f"{what}: TX_EN lengths {lens[:8]}..., expected preamble+SFD+frame+FCS"
    assert tb.counters() == tb.model.c, f"{what}: counters {tb.counters()}, model {tb.model.c}"
    return got


async def tx_settle(tb, n):
    for _ in range(2_000_000):
        if tb.gsink.count() >= n and int(tb.dut.io_gmiiTx_txEn.value) == 0:
            break
        await RisingEdge(tb.dut.clock)
    await ClockCycles(tb.dut.clock, 300)


@cocotb.test()
async def tx_every_length(dut):
    """Frames of every length from the stream: short ones padded to 60 bytes, all with a good FCS;
    an empty frame and frames over 1518 bytes refused and counted."""
    tb = Tb(dut, tx=True)
    await tb.reset()
    rng = random.Random(21)
    for n in sizes():
        frame = bytes(rng.getrandbits(8) for _ in range(n))
        tb.model.tx(frame)
        await tb.src.send(frame)
    await tx_settle(tb, len(tb.model.tx_out))
    tx_check(tb, "tx every length")
    assert tb.model.c["tx_bad"] >= 2


@cocotb.test()
async def tx_malformed(dut):
    """Beats with gaps in keep (a partial beat before the last, a non-contiguous last beat) make the
    frame refused whole; the frames around it are sent."""
    tb = Tb(dut, tx=True)
    await tb.reset()
    d = dut
    rng = random.Random(22)

    async def beat(data, keep, last):
        d.io_tx_valid.value = 1
        d.io_tx_bits_data.value = int.from_bytes(data.ljust(W, b"\0"), "little")
        d.io_tx_bits_keep.value = keep
        d.io_tx_bits_last.value = last
        while True:
            await RisingEdge(d.clock)
            if int(d.io_tx_ready.value):
                break
        d.io_tx_valid.value = 0

    for i in range(30):
        good = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300)))
        tb.model.tx(good)
        await tb.src.send(good)
        if i % 2:
            await beat(b"\xaa" * 8, 0x0F, 0)  # partial beat inside the frame
            await beat(b"\xbb" * 8, 0xFF, 1)
        else:
            await beat(b"\xaa" * 8, 0xFF, 0)
            await beat(b"\xbb" * 8, 0x05, 1)  # keep with a gap
        tb.model.c["tx_bad"] += 1
    await tx_settle(tb, len(tb.model.tx_out))
    tx_check(tb, "tx malformed")


@cocotb.test()
async def tx_line_rate(dut):
    """Back-to-back frames from a stream that is always valid: on the wire every frame starts 12 byte
    times after the previous one ended (the inter-frame gap), minimum-size and full-size alike."""
    tb = Tb(dut, tx=True)
    await tb.reset()
    rng = random.Random(23)
    lengths = [60] * 100 + [1514] * 10 + [rng.randint(60, 1514) for _ in range(40)]

    async def feed():
        for n in lengths:
            frame = bytes(rng.getrandbits(8) for _ in range(n))
            tb.model.tx(frame)
            await tb.src.send(frame)
    await feed()
    await tx_settle(tb, len(lengths))
    frames = tx_check(tb, "tx line rate")
    gaps = [b[0] - (a[0] + a[1]) for a, b in zip(tb.tx_bursts, tb.tx_bursts[1:])]
    assert all(g == 12 for g in gaps), f"inter-frame gaps (byte times): {sorted(set(gaps))}"


def test_eth_mac():
    """make test: a spread of frame lengths (every one below 80, every 37th above, the limits)."""
    from nanobpf.blocksim import run_block
    run_block("eth_mac", "w8", "EthMac", "test_eth_mac", os.path.dirname(__file__), extra_env={"ETH_MAC_QUICK": "1"})


@pytest.mark.long
def test_eth_mac_every_length():
    """make test-long: every frame length from 0 to past the maximum, both ways (about 5 minutes)."""
    from nanobpf.blocksim import run_block
    run_block("eth_mac", "w8", "EthMac", "test_eth_mac", os.path.dirname(__file__))
