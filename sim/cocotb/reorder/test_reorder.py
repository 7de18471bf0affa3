"""Reorder unit (nanobpf.reorder.Reorder inside Dispatch): completions in random order from the
cores, drops among them, back-pressure on the output; released completions must follow arrival
order within each order domain (per logical port, or per connection group where order_conn is set),
each exactly once, and nothing may be lost. A stalled core with the timeout set: its packet is
skipped and counted, released late when it completes; with the timeout off the stream waits.
Run: make test-block BLOCK=reorder."""
import os
import random

import cocotb

from dispatch_common import XDP_DROP, XDP_PASS, DispatchBench, clock

QUEUES, SLOTS = 4, 64


def bench(dut, seed, **kw):
    rng = random.Random(seed)
    b = DispatchBench(dut, QUEUES, SLOTS, rng, **kw)
    return b, rng


@cocotb.test()
async def random_order_with_drops(dut):
    clock(dut)
    b, rng = bench(dut, 1, policy="jbsq", bound=8)
    await b.start()
    b.service = lambda core: rng.choice([1, 2, 3, 50, 120, 400])  # wide spread: heavy reordering
    b.action = lambda: rng.choice([XDP_PASS, XDP_DROP])
    b.out_ready = 0.5
    await b.run(800, arrival_prob=0.5, lports=lambda r: r.randrange(4))
    assert b.drops > 100 and b.late == 0
    dut._log.info(f"{b.released} released in order ({b.drops} drops) in {b.cycle} cycles")


@cocotb.test()
async def per_connection_order(dut):
    """Ports 1 and 3 order per connection group; 0 and 2 per port."""
    clock(dut)
    b, rng = bench(dut, 2, policy="sjbsq", bound=4, order_conn=0b1010)
    await b.start()
    b.service = lambda core: rng.choice([1, 5, 80, 300])
    await b.run(600, arrival_prob=0.5, lports=lambda r: r.randrange(4),
                conns=lambda r: None if r.random() < 0.2 else r.randrange(16))
    used = {d for d, q in b.check.pending.items()} if b.check.pending else set()
    assert any(d >= 4 for d in used), "no packet went into a connection group"


@cocotb.test()
async def stuck_core_timeout(dut):
    """Core 2 takes 3000 cycles now and then; with a 500-cycle timeout the others keep flowing."""
    clock(dut)
    b, rng = bench(dut, 3, policy="jbsq", bound=4, timeout=500)
    await b.start()
    b.service = lambda core: 3000 if core == 2 and rng.random() < 0.05 else rng.randint(1, 30)
    await b.run(600, arrival_prob=0.2)
    assert b.late > 0, "no packet was skipped by the timeout"
    dut._log.info(f"{b.late} packets released late after the timeout")


@cocotb.test()
async def stuck_core_waits_without_timeout(dut):
    clock(dut)
    b, rng = bench(dut, 4, policy="jbsq", bound=4, timeout=0)
    await b.start()
    b.service = lambda core: 3000 if core == 1 and rng.random() < 0.05 else rng.randint(1, 30)
    await b.run(300, arrival_prob=0.2)
    assert b.late == 0


@cocotb.test()
async def completion_as_timeout_fires(dut):
    """Service times around the timeout, so some completions arrive in the very cycle their packet is
    skipped; slots are reused at once afterwards: a slot must never stay marked as skipped."""
    clock(dut)
    b, rng = bench(dut, 6, policy="jbsq", bound=4, timeout=40)
    await b.start()
    b.service = lambda core: rng.randint(30, 50)
    await b.run(400, arrival_prob=0.05)
    assert b.late > 0
    dut._log.info(f"{b.late} of 400 packets released late")


def test_reorder():
    from nanobpf.blocksim import run_block
    run_block("dispatch", "q4", "Dispatch", "test_reorder", os.path.dirname(__file__))
