"""hw/vsrc/cva6/bht_lutram.sv, CVA6's branch history table in distributed RAM, against a Python model of
CVA6 4.2's flip-flop table (core/frontend/bht.sv): random updates and predictions every cycle, on few
rows so that counters saturate both ways and reads follow writes closely (a read in the cycle of an
update sees the old entry); updates in debug mode change nothing; flush_i and reset keep the table
(the documented difference: distributed RAM is not cleared)."""
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from nanobpf import ROOT

ENTRIES = 64  # the test bench's NR_ENTRIES: 32 rows of 2 (RVC: two 16-bit slots a 32-bit fetch)
ROWS = ENTRIES // 2
CYCLES = 20000


def row_col(pc):
    """CVA6's index of a fetch address: bit 1 picks the slot, the bits above it the row."""
    return (pc >> 2) % ROWS, (pc >> 1) & 1


@cocotb.test()
async def test_matches_the_flip_flop_table(dut):
    rng = random.Random(43)
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    for s in ("flush_i", "debug_mode_i", "vpc_i", "upd_valid", "upd_pc", "upd_taken"):
        getattr(dut, s).value = 0
    dut.rst_ni.value = 0
    await Timer(25, unit="ns")
    dut.rst_ni.value = 1
    await RisingEdge(dut.clk_i)
    model = {}  # (row, col) -> counter; absent: not valid (as after configuration)
    seen = {"valid": 0, "taken": 0, "saturated": 0, "debug": 0}
    base = 0x8000_0000
    for cycle in range(CYCLES):
        rows = rng.sample(range(ROWS), 3)
        pcs = [base + 4 * (r + ROWS * rng.randrange(4)) + 2 * rng.randrange(2) for r in rows]
        upd = rng.random() < 0.8
        upd_pc, taken, debug = rng.choice(pcs), rng.random() < (0.8 if cycle % 2000 < 1000 else 0.2), rng.random() < 0.05
        vpc = rng.choice(pcs) & ~3  # a fetch block: both slots predicted
        dut.upd_valid.value, dut.upd_pc.value, dut.upd_taken.value = int(upd), upd_pc, int(taken)
        dut.debug_mode_i.value = int(debug)
        dut.vpc_i.value = vpc
        dut.flush_i.value = int(rng.random() < 0.01)
        dut.rst_ni.value = int(rng.random() >= 0.002)
        await ReadOnly()
        r = row_col(vpc)[0]
        for col in range(2):
            want = model.get((r, col))
            valid, took = (int(dut.pred_valid.value) >> col) & 1, (int(dut.pred_taken.value) >> col) & 1
            assert valid == (want is not None), f"cycle {cycle}: row {r} slot {col} valid {valid}, want {want is not None}"
            if want is not None:
                assert took == (want >> 1), f"cycle {cycle}: row {r} slot {col} taken {took}, counter {want}"
                seen["valid"] += 1
                seen["taken"] += took
        await RisingEdge(dut.clk_i)
        if upd and not debug:
            c = model.get(row_col(upd_pc), 0)
            model[row_col(upd_pc)] = min(c + 1, 3) if taken else max(c - 1, 0)
            seen["saturated"] += c in (0, 3)
        seen["debug"] += upd and debug
    assert all(v > 100 for v in seen.values()), seen
    assert seen["taken"] < seen["valid"], seen


def test_cva6_bht():
    from nanobpf.blocksim import run_block
    from nanobpf.rtl_files import cva6_root
    cva6 = cva6_root()
    run_block("cva6_bht", "lutram", "bht_tb", "test_cva6_bht", __file__.rsplit("/", 1)[0], rtl_blocks=[],
              extra_sources=[ROOT / "hw/vsrc/cva6_config_pkg.sv", cva6 / "core/include/riscv_pkg.sv",
                             cva6 / "corev_apu/riscv-dbg/src/dm_pkg.sv", ROOT / "build/generated/cva6/ariane_pkg.sv",
                             cva6 / "common/submodules/common_cells/src/unread.sv", ROOT / "hw/vsrc/cva6/bht_lutram.sv",
                             ROOT / "sim/cocotb/cva6_bht/bht_tb.sv"])
