"""AXI interconnect (nanobpf.soc.AxiInterconnect, 2 managers, the SoC's regions) against models:
INCR/WRAP/FIXED bursts, narrow strobes, DECERR/SLVERR, AXI atomics, exclusive accesses, and two
managers at once. Slaves are RAM models with random stalls and latency; a test-side copy of memory
is the scoreboard. Run: make test-block BLOCK=interconnect."""
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from nanobpf.soc import REGIONS

from interconnect_model import FIXED, INCR, WRAP, atomic, beat_addrs

OKAY, EXOKAY, SLVERR, DECERR = 0, 1, 2, 3
# slave i serves region i (SocMap.regions order: regions marked `detached` are not on the bus)
REGION_LIST = [r for r in REGIONS.values() if "detached" not in r.attrs]
ERR_BYTES = 0x100  # the slave models refuse the last ERR_BYTES of each region
RAM = REGIONS["main_mem"]
# the first address after a region that no region covers
UNMAPPED = min(r.base + r.size for r in REGION_LIST
               if not any(o.base <= r.base + r.size < o.base + o.size for o in REGION_LIST))


def sig(dut, name):
    return getattr(dut, name)


class Slave:
    """RAM model behind one BusPort: random ready, 1-3 cycle answers, errors in its last ERR_BYTES."""

    def __init__(self, dut, index, mem, rng):
        self.p = f"io_slaves_{index}_"
        self.dut, self.region, self.mem, self.rng = dut, REGION_LIST[index], mem, rng
        self.requests = 0

    def s(self, n):
        return sig(self.dut, self.p + n)

    async def run(self):
        clk = self.dut.clock
        self.s("resp_valid").value = 0
        while True:
            ready = self.rng.random() < 0.7
            self.s("req_ready").value = int(ready)
            await ReadOnly()
            fire = ready and self.s("req_valid").value == 1
            if fire:
                addr = int(self.s("req_bits_addr").value)
                write = bool(self.s("req_bits_write").value)
                wdata, wstrb = int(self.s("req_bits_wdata").value), int(self.s("req_bits_wstrb").value)
            await RisingEdge(clk)
            if not fire:
                continue
            self.requests += 1
            self.s("req_ready").value = 0
            for _ in range(self.rng.randrange(3)):
                await RisingEdge(clk)
            assert self.region.base <= addr < self.region.base + self.region.size, f"misrouted 0x{addr:x}"
            err = addr >= self.region.base + self.region.size - ERR_BYTES
            word = addr & ~7
            if write and not err:
                for b in range(8):
                    if wstrb >> b & 1:
                        self.mem[word + b] = wdata >> (8 * b) & 0xFF
            self.s("resp_bits_rdata").value = sum(self.mem.get(word + b, 0) << (8 * b) for b in range(8))
            self.s("resp_bits_err").value = int(err)
            self.s("resp_valid").value = 1
            await RisingEdge(clk)
            self.s("resp_valid").value = 0


class Manager:
    """AXI4 manager on port `index` (Chisel names io_masters_<i>_<ch>_{valid,ready,bits_*})."""

    def __init__(self, dut, index, rng):
        self.dut, self.p, self.rng = dut, f"io_masters_{index}_", rng
        for ch in ("aw", "w", "ar"):
            self.s(f"{ch}_valid").value = 0
        self.s("b_ready").value = 0
        self.s("r_ready").value = 0

    def s(self, n):
        return sig(self.dut, self.p + n)

    async def send(self, ch, **bits):
        for k, v in bits.items():
            self.s(f"{ch}_bits_{k}").value = v
        self.s(f"{ch}_valid").value = 1
        while True:
            await ReadOnly()
            ready = self.s(f"{ch}_ready").value == 1
            await RisingEdge(self.dut.clock)
            if ready:
                break
        self.s(f"{ch}_valid").value = 0

    async def receive(self, ch, fields, ready_prob=0.8):
        while True:
            self.s(f"{ch}_ready").value = int(self.rng.random() < ready_prob)
            await ReadOnly()
            got = self.s(f"{ch}_valid").value == 1 and self.s(f"{ch}_ready").value == 1
            vals = {f: int(self.s(f"{ch}_bits_{f}").value) for f in fields} if got else None
            await RisingEdge(self.dut.clock)
            if got:
                self.s(f"{ch}_ready").value = 0
                return vals

    async def write(self, addr, beats, size=3, burst=INCR, lock=0, atop=0, tid=1):
        """beats: list of (data, strb). Returns the B response (and the R beat for atomic loads)."""
        async def w_beats():
            for i, (data, strb) in enumerate(beats):
                await self.send("w", data=data, strb=strb, last=int(i == len(beats) - 1))
        # Half the writes offer their first W beat with the AW, as CVA6 does (the interconnect may take
        # both in one cycle), half only after the AW was taken.
        with_aw = self.rng.random() < 0.5
        ws = cocotb.start_soon(w_beats()) if with_aw else None
        await self.send("aw", id=tid, addr=addr, len=len(beats) - 1, size=size, burst=burst, lock=lock,
                        cache=0, prot=0, atop=atop)
        await (ws if with_aw else w_beats())
        if atop >> 5:  # AtomicLoad/Swap/Compare also answer on R, one beat per W beat
            async def r_beats():
                beats = []
                for i in range(len(beats_in)):
                    r = await self.receive("r", ("id", "data", "resp", "last"))
                    assert r["id"] == tid and r["last"] == int(i == len(beats_in) - 1), f"R beat {i}: {r}"
                    beats.append(r)
                return beats
            beats_in = beats
            rs = cocotb.start_soon(r_beats())
            b = await self.receive("b", ("id", "resp"))
            rs = await rs
            return b["resp"], rs[0] if len(rs) == 1 else rs
        b = await self.receive("b", ("id", "resp"))
        assert b["id"] == tid
        return b["resp"], None

    async def read(self, addr, length=0, size=3, burst=INCR, lock=0, tid=2):
        await self.send("ar", id=tid, addr=addr, len=length, size=size, burst=burst, lock=lock, cache=0, prot=0)
        beats = []
        for i in range(length + 1):
            r = await self.receive("r", ("id", "data", "resp", "last"))
            assert r["id"] == tid and r["last"] == int(i == length), f"beat {i}: {r}"
            beats.append((r["data"], r["resp"]))
        return beats


class Bench:
    def __init__(self, dut):
        self.dut = dut
        self.rng = random.Random(int(os.environ.get("XBAR_SEED", "1")))
        self.mem = {}  # what the slaves hold
        self.expect = {}  # what they should hold (the scoreboard)
        self.errors = 0

    async def start(self):
        d = self.dut
        cocotb.start_soon(Clock(d.clock, 10, unit="ns").start())
        self.slaves = [Slave(d, i, self.mem, self.rng) for i in range(len(REGION_LIST))]
        self.m = [Manager(d, 0, self.rng), Manager(d, 1, self.rng)]
        d.reset.value = 1
        for _ in range(3):
            await RisingEdge(d.clock)
        d.reset.value = 0
        for s in self.slaves:
            cocotb.start_soon(s.run())
        cocotb.start_soon(self.count_errors())

    async def count_errors(self):
        while True:
            await RisingEdge(self.dut.clock)
            if self.dut.io_error_valid.value:
                self.errors += 1
                self.dut._log.info("interconnect error: manager %d %s 0x%x", int(self.dut.io_error_bits_master.value),
                                   "write" if self.dut.io_error_bits_write.value else "read",
                                   int(self.dut.io_error_bits_addr.value))

    def word(self, addr):
        return sum(self.expect.get((addr & ~7) + b, 0) << (8 * b) for b in range(8))

    def store(self, addr, data, strb):
        for b in range(8):
            if strb >> b & 1:
                self.expect[(addr & ~7) + b] = data >> (8 * b) & 0xFF

    async def check_read(self, m, addr, length=0, size=3, burst=INCR):
        beats = await self.m[m].read(addr, length, size, burst)
        for a, (data, resp) in zip(beat_addrs(addr, length, size, burst), beats):
            assert resp == OKAY, f"read 0x{a:x}: resp {resp}"
            lanes = sum(0xFF << (8 * b) for b in range(8) if (a & 7) <= b < (a & 7) + (1 << size)) if size < 3 else ~0
            assert data & lanes == self.word(a) & lanes, f"read 0x{a:x}: 0x{data:x} != 0x{self.word(a):x}"


@cocotb.test()
async def bursts_and_strobes(dut):
    b = Bench(dut)
    await b.start()
    for burst, length, addr in ((INCR, 7, RAM.base + 0x40), (WRAP, 3, RAM.base + 0x110), (INCR, 0, RAM.base + 8)):
        beats = [(b.rng.getrandbits(64), 0xFF) for _ in range(length + 1)]
        resp, _ = await b.m[0].write(addr, beats, burst=burst)
        assert resp == OKAY
        for a, (data, strb) in zip(beat_addrs(addr, length, 3, burst), beats):
            b.store(a, data, strb)
        await b.check_read(1, addr, length, burst=burst)
        await b.check_read(0, addr & ~0x3F, 7)  # the surrounding 64 bytes, INCR
    # FIXED: four beats to one word, the last one wins; reading it four times.
    beats = [(b.rng.getrandbits(64), 0xFF) for _ in range(4)]
    assert (await b.m[0].write(RAM.base + 0x200, beats, burst=FIXED))[0] == OKAY
    b.store(RAM.base + 0x200, *beats[-1])
    await b.check_read(0, RAM.base + 0x200, 3, burst=FIXED)
    # Narrow writes: one byte, a halfword, a word, with their lane strobes.
    for size, off in ((0, 3), (1, 6), (2, 4)):
        a = RAM.base + 0x300 + off
        strb = ((1 << (1 << size)) - 1) << (a & 7)
        data = b.rng.getrandbits(64)
        assert (await b.m[1].write(a, [(data, strb)], size=size))[0] == OKAY
        b.store(a, data, strb)
        await b.check_read(0, a, 0, size=size)
    assert b.errors == 0


@cocotb.test()
async def errors_are_answered_and_reported(dut):
    b = Bench(dut)
    await b.start()
    beats = await b.m[0].read(UNMAPPED, 3)
    assert [r for _, r in beats] == [DECERR] * 4
    assert (await b.m[1].write(UNMAPPED, [(1, 0xFF), (2, 0xFF)]))[0] == DECERR
    refused = RAM.base + RAM.size - 8
    assert (await b.m[0].write(refused, [(5, 0xFF)]))[0] == SLVERR
    assert [r for _, r in await b.m[0].read(refused)] == [SLVERR]
    assert b.errors == 4 + 2 + 1 + 1
    await b.check_read(1, RAM.base, 1)  # still working


@cocotb.test()
async def atomics(dut):
    b = Bench(dut)
    await b.start()
    addr = RAM.base + 0x400
    ops = [(f"load-{n}", 0b100000 | i) for i, n in enumerate("add clr eor set smax smin umax umin".split())]
    ops += [("swap", 0b110000), ("store-add", 0b010000), ("store-umax", 0b010110)]
    for atop_op, atop in ops:
        for size, lane in ((3, 0), (2, 0), (2, 4)):
            init = b.rng.getrandbits(64)
            await b.m[0].write(addr, [(init, 0xFF)])
            b.store(addr, init, 0xFF)
            operand = b.rng.getrandbits(64)
            strb = 0xFF if size == 3 else 0xF << lane
            resp, r = await b.m[1].write(addr + lane, [(operand, strb)], size=size, atop=atop)
            assert resp == OKAY, (atop_op, size, lane)
            old = (init >> (8 * lane)) & ((1 << (8 << size)) - 1)
            new = atomic(atop, size, old, operand >> (8 * lane))
            if atop >> 5:
                assert (r["data"] >> (8 * lane)) & ((1 << (8 << size)) - 1) == old, (atop_op, size, lane)
            else:
                assert r is None
            b.store(addr, new << (8 * lane), strb)
            await b.check_read(0, addr)
    # AtomicCompare is not supported: SLVERR on both R and B, memory untouched.
    resp, r = await b.m[0].write(addr, [(1, 0xFF)], atop=0b110001)
    assert resp == SLVERR and r["resp"] == SLVERR
    await b.check_read(0, addr)
    # Neither are atomic bursts (a 16-byte AtomicCompare): every W beat is taken, every R beat and B
    # say SLVERR, and the manager's next plain write is not confused by leftover beats.
    resp, rs = await b.m[1].write(addr, [(1, 0xFF), (2, 0xFF)], atop=0b110001)
    assert resp == SLVERR and [r["resp"] for r in rs] == [SLVERR, SLVERR]
    resp, r = await b.m[0].write(addr, [(3, 0xFF), (4, 0xFF)], atop=0b010000)  # AtomicStore burst: B only
    assert resp == SLVERR and r is None
    assert (await b.m[1].write(addr, [(0x1234, 0xFF)]))[0] == OKAY
    b.store(addr, 0x1234, 0xFF)
    await b.check_read(0, addr)
    assert b.errors == 3


@cocotb.test()
async def exclusive_accesses(dut):
    b = Bench(dut)
    await b.start()
    a = RAM.base + 0x500
    m0, m1 = b.m
    assert (await m0.write(a, [(11, 0xFF)], lock=1))[0] == OKAY, "exclusive write without reservation must fail"
    await b.check_read(0, a)  # unchanged
    (data, resp), = await m0.read(a, lock=1)
    assert resp == EXOKAY
    assert (await m0.write(a, [(12, 0xFF)], lock=1))[0] == EXOKAY
    b.store(a, 12, 0xFF)
    await b.check_read(1, a)
    (data, resp), = await m0.read(a, lock=1)
    (_, resp1), = await m1.read(a, lock=1)  # both hold a reservation
    assert resp == resp1 == EXOKAY
    for other in (a - 8, a + 8):  # writes to neighbouring granules leave the reservations alone
        assert (await m1.write(other, [(5, 0xFF)]))[0] == OKAY
        b.store(other, 5, 0xFF)
    assert (await m0.write(a, [(21, 0xFF)], lock=1))[0] == EXOKAY  # m0's held; success clears the granule
    b.store(a, 21, 0xFF)
    assert (await m1.write(a, [(22, 0xFF)], lock=1))[0] == OKAY  # m1's went with m0's write
    await b.check_read(0, a)
    (data, resp), = await m0.read(a, lock=1)
    (_, resp1), = await m1.read(a, lock=1)
    assert (await m1.write(a + 4, [(7 << 32, 0xF0)]))[0] == OKAY  # plain write to the granule clears both
    b.store(a + 4, 7 << 32, 0xF0)
    assert (await m0.write(a, [(13, 0xFF)], lock=1))[0] == OKAY
    assert (await m1.write(a, [(14, 0xFF)], lock=1))[0] == OKAY
    await b.check_read(0, a)


@cocotb.test()
async def every_region_is_routed_to_its_slave(dut):
    b = Bench(dut)
    await b.start()
    for i, region in enumerate(REGION_LIST):
        before = [s.requests for s in b.slaves]
        for a in (region.base, region.base + region.size - ERR_BYTES - 8):  # first and last usable word
            data = b.rng.getrandbits(64)
            assert (await b.m[i % 2].write(a, [(data, 0xFF)]))[0] == OKAY
            b.store(a, data, 0xFF)
            await b.check_read(1 - i % 2, a)
        after = [s.requests for s in b.slaves]
        assert [y - x for x, y in zip(before, after)] == [4 if j == i else 0 for j in range(len(REGION_LIST))]
    assert b.errors == 0


@cocotb.test()
async def two_managers_at_once(dut):
    b = Bench(dut)
    await b.start()

    async def traffic(m, base):
        rng = random.Random(m)
        for _ in range(40):
            a = base + 8 * rng.randrange(32)
            n = rng.randrange(4)
            beats = [(rng.getrandbits(64), rng.getrandbits(8)) for _ in range(n + 1)]
            assert (await b.m[m].write(a, beats))[0] == OKAY
            for addr, (d, s) in zip(beat_addrs(a, n, 3, INCR), beats):
                b.store(addr, d, s)
            await b.check_read(m, a, n)

    t0 = cocotb.start_soon(traffic(0, RAM.base + 0x1000))
    t1 = cocotb.start_soon(traffic(1, RAM.base + 0x2000))
    await t0
    await t1
    assert b.errors == 0
    assert sum(s.requests for s in b.slaves) > 0


def test_interconnect():
    from nanobpf.blocksim import run_block
    run_block("interconnect", "m2", "AxiInterconnect", "test_interconnect", os.path.dirname(__file__),
              extra_env={"XBAR_SEED": "1"})
