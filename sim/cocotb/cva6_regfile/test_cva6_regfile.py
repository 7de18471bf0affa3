"""hw/vsrc/cva6/ariane_regfile_lutram.sv, CVA6's integer register file in distributed RAM with a live
value table, against a Python model of CVA6's flip-flop file (ariane_regfile_ff.sv): random reads and
writes on both write ports every cycle, to few registers so that both ports often write the same one
in a cycle (the higher port wins) and reads follow writes closely; x0 always reads zero."""
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from nanobpf import ROOT

CYCLES = 20000


@cocotb.test()
async def test_matches_the_flip_flop_file(dut):
    rng = random.Random(25)
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    for s in ("we0", "we1", "waddr0", "waddr1", "wdata0", "wdata1", "raddr0", "raddr1"):
        getattr(dut, s).value = 0
    dut.rst_ni.value = 0
    await Timer(25, unit="ns")
    dut.rst_ni.value = 1
    await RisingEdge(dut.clk_i)
    # write every register once from port 0 (the banks have no reset; the flip-flop file's are zero)
    model = [0] * 32
    for r in range(32):
        dut.we0.value, dut.waddr0.value, dut.wdata0.value = 1, r, 0
        await RisingEdge(dut.clk_i)
    dut.we0.value = 0
    same = 0
    for _ in range(CYCLES):
        regs = rng.sample(range(32), 4)  # few registers per cycle: collisions and read-after-write
        w = [(rng.random() < 0.7, rng.choice(regs + [0]), rng.getrandbits(64)) for _ in range(2)]
        ra = [rng.choice(regs + [0]) for _ in range(2)]
        for p, (we, addr, data) in enumerate(w):
            getattr(dut, f"we{p}").value = int(we)
            getattr(dut, f"waddr{p}").value = addr
            getattr(dut, f"wdata{p}").value = data
        dut.raddr0.value, dut.raddr1.value = ra
        await ReadOnly()
        for p, a in enumerate(ra):
            got = int(getattr(dut, f"rdata{p}").value)
            want = 0 if a == 0 else model[a]
            assert got == want, f"x{a} read {got:#x} on port {p}, want {want:#x}"
        await RisingEdge(dut.clk_i)
        for we, addr, data in w:  # port 1 after port 0: it wins a shared address
            if we:
                model[addr] = data
        same += w[0][0] and w[1][0] and w[0][1] == w[1][1]
    assert same > 100, f"only {same} cycles wrote one register from both ports"


def test_cva6_regfile():
    from nanobpf.blocksim import run_block
    run_block("cva6_regfile", "lutram", "regfile_tb", "test_cva6_regfile", __file__.rsplit("/", 1)[0],
              rtl_blocks=[], extra_sources=[ROOT / "hw/vsrc/cva6/ariane_regfile_lutram.sv",
                                            ROOT / "sim/cocotb/cva6_regfile/regfile_tb.sv"])
