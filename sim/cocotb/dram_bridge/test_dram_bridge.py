"""nanobpf.dram.DramBridge in front of the real LiteDRAM simulation core (litedram_gen --sim, SDRAMPHYModel,
boards/genesys2/ddr3.yml `sim`): the SoC's 64-bit bus port in a 50 MHz core clock, LiteDRAM's 256-bit
AXI port in its 100 MHz user_clk.

Checked against a Python reference memory: an access before LiteDRAM's init_done waits for it; random
reads and writes with random byte strobes on every 64-bit lane of the 256-bit beat, back to back (the
next request the cycle after the answer), the first and the last DRAM word; addresses past the DRAM
(the bridge's window is twice the DRAM here) answered with err and zero data, without touching the DRAM;
AXI error responses (SLVERR forced onto LiteDRAM's B and R channels) answered with err, and never the
data of an errored read. Needs `make hw-blocks` and `make litedram` (both in `make test-prereqs`).
"""
import json
import os
import random
import re

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from nanobpf import BUILD, ROOT

BASE = 0x8000_0000  # SocMap.MainMem.base: the bridge's window starts there (EmitBlocks dram_bridge-sim)
WINDOW = 512 << 20  # EmitBlocks dram_bridge-sim windowBytes
CORE_NS, DRAM_NS = 20, 10  # 50 MHz core clock, 100 MHz LiteDRAM sys clock (ddr3.yml sys_clk_freq)
TIMEOUT_CYCLES = 2000
SIM_DIR = BUILD / "litedram/genesys2/sim"
RTL_DIR = BUILD / "hw/blocks/dram_bridge-sim"


def props():
    from nanobpf.litedram import read_properties
    return read_properties(SIM_DIR / "dram.properties")


class Bus:
    """One access at a time on io_bus_* (as the interconnect does), checking the protocol: ready
    while idle, exactly one resp pulse per request, ready low until it."""

    def __init__(self, dut):
        self.dut = dut
        self.cycles = []

    async def access(self, offset, write=False, wdata=0, wstrb=0xFF):
        """Call just after a rising edge of `clock`; returns just after one, the cycle after the answer,
        so the next access follows back to back."""
        d = self.dut
        d.io_bus_req_valid.value = 1
        d.io_bus_req_bits_addr.value = BASE + offset
        d.io_bus_req_bits_write.value = int(write)
        d.io_bus_req_bits_wdata.value = wdata
        d.io_bus_req_bits_wstrb.value = wstrb
        await ReadOnly()
        assert d.io_bus_req_ready.value == 1, "bridge not ready while idle"
        assert d.io_bus_resp_valid.value == 0, "an answer without a request (or one lasting two cycles)"
        await RisingEdge(d.clock)  # fires here
        d.io_bus_req_valid.value = 0
        n = 0
        while True:
            await ReadOnly()
            if d.io_bus_resp_valid.value == 1:
                break
            assert d.io_bus_req_ready.value == 0, "ready again before the answer"
            n += 1
            assert n < TIMEOUT_CYCLES, f"no answer to {'write' if write else 'read'} of {offset:#x} in {n} cycles"
            await RisingEdge(d.clock)
        rdata, err = int(d.io_bus_resp_bits_rdata.value), bool(d.io_bus_resp_bits_err.value)
        self.cycles.append(n + 1)
        await RisingEdge(d.clock)
        return rdata, err


class RefMem:
    """The DRAM as 64-bit words; bytes never written are unknown (None) and not compared."""

    def __init__(self):
        self.bytes = {}

    def write(self, offset, wdata, wstrb):
        for b in range(8):
            if wstrb >> b & 1:
                self.bytes[offset + b] = wdata >> (8 * b) & 0xFF

    def check(self, offset, rdata):
        for b in range(8):
            want = self.bytes.get(offset + b)
            got = rdata >> (8 * b) & 0xFF
            assert want is None or want == got, \
                f"read {offset:#x}: byte {b} is {got:#04x}, expected {want:#04x} (word {rdata:#018x})"


async def wb_write(dut, word_addr, value):
    dut.wb_adr.value = word_addr
    dut.wb_dat_w.value = value
    dut.wb_we.value = 1
    dut.wb_cyc.value = 1
    dut.wb_stb.value = 1
    for _ in range(100):
        await RisingEdge(dut.dram_clk)
        await ReadOnly()
        if dut.wb_ack.value == 1:
            break
    else:
        raise AssertionError("no wishbone ack from LiteDRAM's control port")
    await RisingEdge(dut.dram_clk)
    dut.wb_cyc.value = 0
    dut.wb_stb.value = 0
    dut.wb_we.value = 0


async def setup(dut):
    cocotb.start_soon(Clock(dut.clock, CORE_NS, unit="ns").start())
    cocotb.start_soon(Clock(dut.dram_clk, DRAM_NS, unit="ns").start())
    for s in ("io_bus_req_valid", "force_err", "wb_cyc", "wb_stb", "wb_we", "wb_adr", "wb_dat_w"):
        getattr(dut, s).value = 0
    dut.reset.value = 1
    for _ in range(8):
        await RisingEdge(dut.clock)
    dut.reset.value = 0
    for _ in range(4):
        await RisingEdge(dut.clock)


async def init_done(dut):
    csr = json.loads((SIM_DIR / "csr.json").read_text())
    await wb_write(dut, csr["csr_registers"]["ddrctrl_init_done"]["addr"] >> 2, 1)
    await ReadOnly()
    assert dut.init_done.value == 1 and dut.init_error.value == 0
    await RisingEdge(dut.clock)


@cocotb.test()
async def test_waits_for_init_then_random_accesses(dut):
    dram = int(props()["size_bytes"])
    await setup(dut)
    bus, ref = Bus(dut), RefMem()
    rng = random.Random(int(os.environ.get("DRAM_SEED", "25")))

    # Before init_done LiteDRAM holds its AXI port: the write waits, then completes.
    first = cocotb.start_soon(bus.access(0x40, write=True, wdata=0x1122334455667788, wstrb=0xFF))
    for _ in range(200):
        await RisingEdge(dut.clock)
    assert not first.done(), "an access was answered before LiteDRAM's init_done"
    await ReadOnly()
    assert dut.init_done.value == 0
    await RisingEdge(dut.dram_clk)
    await init_done(dut)
    await ReadOnly()
    assert not first.done() and dut.io_bus_req_ready.value == 0
    await RisingEdge(dut.clock)
    rdata, err = await first
    assert not err
    ref.write(0x40, 0x1122334455667788, 0xFF)

    # A few 32-byte beats (and the DRAM's first and last) so words are read back after other lanes change.
    beats = [0, dram - 32] + [rng.randrange(dram // 32) * 32 for _ in range(6)]
    n_ops = 400
    for i in range(n_ops):
        off = rng.choice(beats) + 8 * rng.randrange(4)
        if rng.random() < 0.5:
            wdata = rng.getrandbits(64)
            wstrb = rng.choice([0xFF, 0x00, 0x01, 0x80, rng.getrandbits(8)])
            _, err = await bus.access(off, write=True, wdata=wdata, wstrb=wstrb)
            assert not err, f"write {off:#x} answered err"
            ref.write(off, wdata, wstrb)
        else:
            rdata, err = await bus.access(off)
            assert not err, f"read {off:#x} answered err"
            ref.check(off, rdata)
    # every lane of every beat used, read back in full
    for b in beats:
        for lane in range(4):
            rdata, err = await bus.access(b + 8 * lane)
            assert not err
            ref.check(b + 8 * lane, rdata)
    # the last word of the DRAM, exactly
    _, err = await bus.access(dram - 8, write=True, wdata=0xDEADBEEF_0BADF00D)
    assert not err
    rdata, err = await bus.access(dram - 8)
    assert (rdata, err) == (0xDEADBEEF_0BADF00D, False)
    c = sorted(bus.cycles)
    dut._log.info(f"{len(c)} accesses: core cycles request to answer min {c[0]} median {c[len(c) // 2]} max {c[-1]}")


@cocotb.test()
async def test_errors_fail_closed(dut):
    dram = int(props()["size_bytes"])
    await setup(dut)
    await init_done(dut)
    bus = Bus(dut)
    _, err = await bus.access(0x100, write=True, wdata=0x0123456789ABCDEF)
    assert not err
    _, err = await bus.access(dram + 0x100, write=True, wdata=0xFFFF_FFFF_FFFF_FFFF)
    assert err, "a write past the DRAM was not refused"
    for off in (dram, dram + 0x100, WINDOW - 8):
        rdata, err = await bus.access(off)
        assert err and rdata == 0, f"read {off:#x} past the DRAM: err {err}, data {rdata:#x}"
    rdata, err = await bus.access(0x100)
    assert (rdata, err) == (0x0123456789ABCDEF, False), "the refused write reached the DRAM (aliasing)"

    # AXI error responses: an errored read never returns the data that is there
    dut.force_err.value = 1
    rdata, err = await bus.access(0x100)
    assert err and rdata == 0, f"AXI SLVERR on a read: err {err}, data {rdata:#x}"
    _, err = await bus.access(0x108, write=True, wdata=1)
    assert err, "AXI SLVERR on a write not answered err"
    dut.force_err.value = 0
    rdata, err = await bus.access(0x100)
    assert (rdata, err) == (0x0123456789ABCDEF, False), "the bridge did not recover after an AXI error"


def test_dram_bridge():
    from nanobpf.blocksim import run_block
    p_file = SIM_DIR / "dram.properties"
    if not p_file.exists():
        raise FileNotFoundError(f"{p_file} not found: run `make litedram BOARD=genesys2`")
    p = props()
    # The bridge was emitted for the sim core (EmitBlocks dram_bridge-sim): same address width and size.
    bridge = next(RTL_DIR.glob("DramBridge.sv"), None)
    if bridge is None:
        raise FileNotFoundError(f"{RTL_DIR}/DramBridge.sv not found: run `make hw-blocks`")
    m = re.search(r"output\s+\[(\d+):0\]\s+io_axi_ar_bits_addr", bridge.read_text())
    assert m and int(m.group(1)) + 1 == int(p["addr_bits"]), "DramBridge's AXI address width is not the sim core's"
    tb = ROOT / "sim/cocotb/dram_bridge/dram_bridge_tb.sv"
    assert f"localparam int A = {p['addr_bits']};" in tb.read_text()
    assert int(p["size_bytes"]) * 2 == WINDOW and int(p["sys_clk_hz"]) == 1_000_000_000 // DRAM_NS
    here = os.path.dirname(__file__)
    run_block("dram_bridge", "sim", "dram_bridge_tb", "test_dram_bridge", here,
              extra_sources=[SIM_DIR / "gateware/litedram_core.v", tb])
