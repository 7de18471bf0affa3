"""Core select (nanobpf.coresel.CoreSelect inside Dispatch) against nanobpf.models.pktpath.CoreSelect:
every decision and every hold for JBSQ(n), SJBSQ(n), RSS and round robin, bounds 0..9, random
service times with stalled cores, bogus completions refused, outstanding counts never above the
limit. Run: make test-block BLOCK=coresel."""
import os
import random

import cocotb

from dispatch_common import DispatchBench, clock

QUEUES = int(os.environ.get("DISPATCH_QUEUES", "4"))
SLOTS = int(os.environ.get("DISPATCH_SLOTS", "64"))


async def run(dut, policy, bound, seed, packets=400, stall=0.02, bad=0.0, skew=False, arrival=0.4):
    rng = random.Random(seed)
    b = DispatchBench(dut, QUEUES, SLOTS, rng, policy=policy, bound=bound)
    await b.start()
    b.service = lambda core: rng.randint(200, 600) if rng.random() < stall else rng.randint(1, 40)
    b.bad_comp_prob = bad
    b.out_ready = 0.7
    conns = (lambda r: 0 if r.random() < 0.6 else r.randrange(64)) if skew else (lambda r: r.randrange(64))
    await b.run(packets, arrival_prob=arrival, conns=conns)
    assert b.sent == b.released == packets
    dut._log.info(f"{policy}({bound}): {packets} packets in {b.cycle} cycles, {b.holds} hold cycles, "
                  f"max outstanding {b.max_out}, {b.bad} bogus completions refused")
    return b


@cocotb.test()
async def jbsq(dut):
    clock(dut)
    for bound in (4, 1, 2):
        b = await run(dut, "jbsq", bound, seed=bound)
        assert b.holds > 0, "the load never filled every core: the bound was not exercised"
    await run(dut, "sjbsq", 2, seed=4, skew=True)  # a heavy connection spills to the next cores


@cocotb.test()
async def sjbsq_affinity(dut):
    clock(dut)
    """At moderate load a connection stays on its home core (every decision is also checked
    against the model, and against `home has room -> home`, in the bench)."""
    b = await run(dut, "sjbsq", 4, seed=5, arrival=0.1)
    homes = sum(1 for _, h, core in b.dispatch_log if core == h % QUEUES)
    assert homes > 0.5 * len(b.dispatch_log), f"only {homes} of {len(b.dispatch_log)} packets on their home core"


@cocotb.test()
async def baselines(dut):
    clock(dut)
    await run(dut, "rss", 4, seed=6, skew=True)
    await run(dut, "rr", 4, seed=7)


@cocotb.test()
async def bounds_clamped(dut):
    clock(dut)
    await run(dut, "jbsq", 0, seed=8, packets=150)  # 0 acts as 1
    await run(dut, "sjbsq", 9, seed=9, packets=150)  # above the queue depth: the depth


@cocotb.test()
async def bogus_completions(dut):
    clock(dut)
    b = await run(dut, "jbsq", 4, seed=10, bad=0.1)
    assert b.bad > 0


def test_coresel_q4():
    from nanobpf.blocksim import run_block
    run_block("dispatch", "q4", "Dispatch", "test_coresel", os.path.dirname(__file__),
              {"DISPATCH_QUEUES": "4", "DISPATCH_SLOTS": "64"})


def test_coresel_q3():
    from nanobpf.blocksim import run_block
    run_block("dispatch", "q3", "Dispatch", "test_coresel", os.path.dirname(__file__),
              {"DISPATCH_QUEUES": "3", "DISPATCH_SLOTS": "32"})
