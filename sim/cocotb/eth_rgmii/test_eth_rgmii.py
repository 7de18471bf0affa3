"""cocotb tests of the Genesys2 Ethernet path end to end (docs/board.md): RGMII pins ->
nanobpf_rgmii_phy (IDELAYE2, IDDR, ODDR: the behavioural models of boards/genesys2/sim/xilinx7_models.sv)
-> EthMac -> EthEcho (the link self-test) -> EthMac -> nanobpf_rgmii_phy -> RGMII pins, against
cocotbext-eth's RGMII source and sink (1 Gbit/s: DDR nibbles, RX_CTL/TX_CTL = DV, DV xor ER) and a
Python model of what must come back and of the MAC's counters.

The RGMII receive clock runs 250 ppm slower than the 125 MHz datapath clock, so the MAC's clock
crossing is exercised; the transmit clock is the datapath clock 2 ns (90 degrees) later, as on the
board. Every test checks each frame on the wire (preamble, bytes, FCS, TX_ER) and all counters.
ETH_RGMII_QUICK=1 runs fewer frame lengths and frames.
"""
import logging
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, First, Timer
from cocotb.utils import get_sim_steps, get_sim_time
from cocotbext.eth import GmiiFrame, RgmiiSink, RgmiiSource

from nanobpf import ROOT
from nanobpf.models.ethmac import rx_verdict, wire_frame
from nanobpf.soc import ENUMS

COUNTERS = ENUMS["eth_counter"]
TX_PS = 8000      # clk_tx, 125 MHz
TX90_PS = 2000    # clk_tx90: clk_tx delayed by 90 degrees
RXC_PS = 8002     # the PHY's receive clock, 250 ppm slow
REF_PS = 5000     # clk_ref, 200 MHz
PREAMBLE = b"\x55" * 7 + b"\xd5"
QUICK = bool(os.environ.get("ETH_RGMII_QUICK"))


def echoed(frame):
    """What EthEcho sends back: destination and source MAC addresses swapped, the rest as is."""
    return frame[6:12] + frame[0:6] + frame[12:]


class EchoModel:
    """What must come back out of the PHY for each frame sent in, and the counters that follow."""

    def __init__(self):
        self.c = {k: 0 for k in COUNTERS}
        self.tx_out = []  # frames (without preamble and FCS) expected on the transmit pins, in order
        self.enable = True

    def rx(self, wire, error=False):
        """`wire`: the bytes after the SFD, FCS included; `error`: RX_ER during the frame."""
        verdict = rx_verdict(wire, error)
        self.c[verdict] += 1
        if verdict == "rx_frames":
            frame = bytes(wire[:-4])
            self.c["rx_bytes"] += len(frame)
            if self.enable:  # at least 60 bytes: no padding on the way back
                self.tx_out.append(echoed(frame))
                self.c["tx_frames"] += 1
                self.c["tx_bytes"] += len(frame)
        return verdict == "rx_frames"


class Tb:
    def __init__(self, dut, tx_timing=False):
        self.dut = dut
        self.txc_start = None  # sim time (ps) of TXC's first rising edge
        self.tx_margin = None  # closest TXD/TX_CTL change to a TXC edge (ps), when tx_timing
        cocotb.start_soon(Clock(dut.clk_tx, TX_PS, unit="ps").start())
        cocotb.start_soon(self._start_tx90())
        cocotb.start_soon(Clock(dut.clk_ref, REF_PS, unit="ps").start())
        cocotb.start_soon(Clock(dut.rgmii_rxc, RXC_PS, unit="ps").start())
        # 1 Gbit/s: no mii_select, the models stay in RGMII DDR mode
        self.src = RgmiiSource(dut.rgmii_rxd, dut.rgmii_rx_ctl, dut.rgmii_rxc)
        self.sink = RgmiiSink(dut.rgmii_txd, dut.rgmii_tx_ctl, dut.rgmii_txc)
        for m in (self.src, self.sink):  # not a log line per frame: the checks name the frame
            m.log.setLevel(logging.WARNING)
        self.model = EchoModel()
        self.got = []  # frames taken from the sink so far (GmiiFrame, preamble and FCS included)
        if tx_timing:  # a coroutine per transmit data change: only where it is checked
            cocotb.start_soon(self.tx_timing_monitor())

    async def _start_tx90(self):
        await Timer(TX90_PS, unit="ps")
        self.txc_start = round(get_sim_time("ps"))
        Clock(self.dut.clk_tx90, TX_PS, unit="ps").start()

    async def tx_timing_monitor(self):
        """The transmit clock comes from the 90-degree clock: every change of TXD/TX_CTL must fall
        between TXC edges (sink and PHY sample on both edges), not on one. Keeps the smallest distance
        from a change to the nearest TXC edge, whose times follow from the clock's start. The first
        20000 changes (about 10 KB of frames) are enough: the phase relation is fixed, and watching every one
        would slow the test several times over."""
        d, half = self.dut, TX_PS // 2
        for _ in range(20000):
            await First(d.rgmii_txd.value_change, d.rgmii_tx_ctl.value_change)
            off = (round(get_sim_time("ps")) - self.txc_start) % half
            m = min(off, half - off)
            self.tx_margin = m if self.tx_margin is None else min(self.tx_margin, m)

    async def reset(self, enable=True):
        d = self.dut
        self.set_enable(enable)
        d.arst.value = 1
        await ClockCycles(d.clk_tx, 10)
        d.arst.value = 0
        await ClockCycles(d.clk_tx, 10)
        assert self.counters() == self.model.c, f"counters after reset: {self.counters()}"

    def set_enable(self, enable):
        self.dut.echo_enable.value = int(enable)
        self.model.enable = enable

    def counters(self):
        v = int(self.dut.counters.value)
        return {k: (v >> (32 * i)) & 0xFFFFFFFF for k, i in COUNTERS.items()}

    async def send(self, wire, error_at=None):
        """`wire` (FCS included) after preamble and SFD into the PHY; RX_ER on byte `error_at` of it."""
        f = GmiiFrame.from_raw_payload(wire)
        if error_at is not None:
            f.error = [0] * len(f.data)
            f.error[len(PREAMBLE) + error_at] = 1
        self.model.rx(wire, error=error_at is not None)
        await self.src.send(f)

    async def settle(self, quiet_cycles=3000, stall_cycles=20_000):
        """Wait until the source has sent everything and the frames the model expects are out (or none
        came out for `stall_cycles`); then `quiet_cycles` more (longer than a maximum frame's
        turnaround) so a stray frame would show up."""
        await self.src.wait()
        seen, still = self.sink.count(), 0
        while len(self.got) + self.sink.count() < len(self.model.tx_out) and still < stall_cycles:
            await ClockCycles(self.dut.clk_tx, 100)
            still = 0 if self.sink.count() != seen else still + 100
            seen = self.sink.count()
        await ClockCycles(self.dut.clk_tx, quiet_cycles)
        while not self.sink.empty():
            self.got.append(self.sink.recv_nowait())

    def check(self, what):
        exp = self.model.tx_out
        assert len(self.got) == len(exp), f"{what}: {len(self.got)} frames out of the PHY, expected {len(exp)}"
        for i, (g, e) in enumerate(zip(self.got, exp)):
            data = bytes(g.data)
            assert data[:8] == PREAMBLE, f"{what}: frame {i}: preamble+SFD {data[:8].hex()}"
            assert g.error is None, f"{what}: frame {i}: TX_ER asserted"
            assert g.check_fcs(), f"{what}: frame {i}: bad FCS"
            got = bytes(g.get_payload())
            if got != e:
                diff = next((j for j, (a, b) in enumerate(zip(got, e)) if a != b), min(len(got), len(e)))
                raise AssertionError(f"{what}: frame {i} differs ({len(got)} vs {len(e)} bytes, first "
                                     f"difference at byte {diff}): got {got[:16].hex()}..., expected {e[:16].hex()}...")
        assert self.counters() == self.model.c, f"{what}: counters {self.counters()}, model {self.model.c}"

    def gaps(self):
        """Idle byte times on the transmit pins between consecutive frames taken so far (RgmiiSink
        stamps a frame at the falling TXC edge of its first byte and of the first idle byte after it)."""
        period = get_sim_steps(TX_PS, "ps")
        out = []
        for a, b in zip(self.got, self.got[1:]):
            n, r = divmod(b.sim_time_start - a.sim_time_end, period)
            assert r == 0, f"frame start {b.sim_time_start} not a whole number of TXC periods after {a.sim_time_end}"
            out.append(int(n))
        return out


def lengths():
    """Frame lengths (without FCS): minimum to maximum, every one near both ends, a spread between."""
    if QUICK:
        return [60, 61, 63, 64, 65, 100, 127, 128, 129, 333, 512, 777, 1000, 1234, 1500, 1513, 1514, 1517, 1518]
    return sorted(set(list(range(60, 80)) + list(range(80, 1514, 11)) + list(range(1510, 1519))))


@cocotb.test()
async def rgmii_echo_lengths(dut):
    """Good frames of many lengths (60..1518 bytes without FCS) in at line rate: each comes back out
    of the PHY with its MAC addresses swapped and every other byte unchanged, FCS recomputed; rx/tx
    frame and byte counters as the model; transmit data changes half-way between TXC edges."""
    tb = Tb(dut, tx_timing=True)
    await tb.reset()
    rng = random.Random(31)
    for n in lengths():
        await tb.send(wire_frame(bytes(rng.getrandbits(8) for _ in range(n))))
    await tb.settle()
    tb.check("echo lengths")
    assert tb.model.c["rx_frames"] == len(lengths())
    # RGMII v2.0 with the clock delayed by the sender: data stable 1.0 ns before and 0.8 ns after each edge
    assert tb.tx_margin is not None and tb.tx_margin >= 1000, \
        f"TXD/TX_CTL change {tb.tx_margin} ps from a TXC edge (the models have no delays: 2000 expected)"
    dut._log.info("TXD/TX_CTL changes at least %d ps from a TXC edge", tb.tx_margin)


@cocotb.test()
async def rgmii_damaged(dut):
    """Bad FCS, runts, RX_ER (RX_CTL = DV xor ER on the falling edge) and oversized frames
    among good ones: only the good frames come back, each bad one dropped and counted once."""
    tb = Tb(dut)
    await tb.reset()
    rng = random.Random(32)
    kinds = ["good", "good", "good", "fcs", "runt", "rxer", "oversize"]
    for i in range(40 if QUICK else 120):
        kind = kinds[i % len(kinds)] if i < len(kinds) else rng.choice(kinds)
        if kind == "runt":
            n = rng.randint(0, 59)
        elif kind == "oversize":
            n = rng.randint(1519, 1530)
        else:
            n = rng.choice([rng.randint(60, 200), rng.randint(60, 1518)])
        wire = bytearray(wire_frame(bytes(rng.getrandbits(8) for _ in range(n))))
        if kind == "fcs":
            j = rng.randrange(len(wire))
            wire[j] ^= 1 << rng.randrange(8)
        await tb.send(bytes(wire), error_at=rng.randrange(len(wire)) if kind == "rxer" else None)
    await tb.settle()
    for k in ("rx_fcs_err", "rx_runt", "rx_phy_err", "rx_oversize"):
        assert tb.model.c[k] > 0, f"the test sent no frame for {k}"
    tb.check("damaged")


@cocotb.test()
async def rgmii_echo_disabled(dut):
    """With echo_enable low every good frame is received and counted, and nothing comes back; with it
    high again the next frames are echoed."""
    tb = Tb(dut)
    await tb.reset(enable=False)
    rng = random.Random(33)
    for i in range(20):
        n = rng.randint(60, 1518) if i % 2 else 60
        await tb.send(wire_frame(bytes(rng.getrandbits(8) for _ in range(n))))
    await tb.send(wire_frame(bytes(30)))  # a runt, counted as such
    await tb.settle()
    tb.check("echo disabled")
    assert tb.model.c["rx_frames"] == 20 and tb.model.c["tx_frames"] == 0
    tb.set_enable(True)
    for n in (60, 1518, 200):
        await tb.send(wire_frame(bytes(rng.getrandbits(8) for _ in range(n))))
    await tb.settle()
    tb.check("echo enabled again")
    assert tb.model.c["tx_frames"] == 3


@cocotb.test()
async def rgmii_line_rate(dut):
    """Frames back to back at line rate (12-byte gap): a maximum-size frame, then frames no longer
    than it. While the long frame goes out the next ones queue up, so from then on the transmit side
    has a frame ready whenever it may start one: every frame must leave exactly 12 idle byte times
    after the previous one, none lost (no overflow), bytes and counters as the model."""
    tb = Tb(dut)
    await tb.reset()
    rng = random.Random(34)
    n_short = 40 if QUICK else 120
    sizes = [1518] + [60] * (n_short // 2) + [rng.randint(60, 1400) for _ in range(n_short - n_short // 2)]
    for n in sizes:
        await tb.send(wire_frame(bytes(rng.getrandbits(8) for _ in range(n))))
    await tb.settle()
    tb.check("line rate")
    assert tb.model.c["rx_overflow"] == 0 and tb.counters()["rx_overflow"] == 0
    gaps = tb.gaps()
    assert len(gaps) == len(sizes) - 1
    assert all(g == 12 for g in gaps), f"inter-frame gaps on TX (byte times): {sorted(set(gaps))}, first {gaps[:10]}"


def test_eth_rgmii():
    from nanobpf.blocksim import run_block
    here = os.path.dirname(__file__)
    board = ROOT / "boards/genesys2"
    run_block("eth_rgmii", "w8", "rgmii_link_tb", "test_eth_rgmii", here,
              rtl_blocks=["eth_mac-w8", "eth_echo-w8"],
              extra_sources=[board / "sim/xilinx7_models.sv", board / "rtl/nanobpf_reset_sync.sv",
                             board / "rtl/nanobpf_rgmii_phy.sv", os.path.join(here, "rgmii_link_tb.sv")])
