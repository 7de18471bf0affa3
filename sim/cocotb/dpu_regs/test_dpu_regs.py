"""DPU register block (nanobpf.soc.DpuRegs) against its model: identity, console, sim_end, mailboxes,
error responses, and a seeded random mix of accesses. Run: make test-block BLOCK=dpu_regs."""
import os
import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge
import pytest

from nanobpf.soc import REGIONS, REGS, reg_offset

from busport import BusPortDriver, start
from dpu_regs_model import DpuRegsModel


def events(d):
    """Console and sim_end pulses while a request is on the bus."""
    seen = []
    if d.io_console_valid.value:
        seen.append(("console", int(d.io_console_bits_core.value), int(d.io_console_bits_char.value)))
    if d.io_simEnd_valid.value:
        seen.append(("sim_end", int(d.io_simEnd_bits.value)))
    return seen


class Bench:
    def __init__(self, dut):
        self.dut = dut
        self.n = int(os.environ["DPU_CORES"])
        self.model = DpuRegsModel(self.n)
        self.bus = None

    async def reset(self):
        self.bus = BusPortDriver(self.dut, REGIONS["dpu"].base, await start(self.dut))

    async def access(self, offset, write=False, wdata=0, wstrb=0xFF):
        rdata, err, fired, seen = await self.bus.access(offset, write, wdata, wstrb, sample=events)
        return (rdata, err, seen), self.model.access(offset, write, wdata, wstrb, self.bus.cycles_at(fired))

    async def check(self, offset, write=False, wdata=0, wstrb=0xFF):
        (rdata, err, events), (m_rdata, m_err, m_events) = await self.access(offset, write, wdata, wstrb)
        what = f"{'write' if write else 'read'} 0x{offset:03x} wdata=0x{wdata:x} wstrb=0x{wstrb:02x}"
        assert err == m_err, f"{what}: err {err}, model {m_err}"
        if not write and m_rdata is not None:
            assert rdata == m_rdata, f"{what}: rdata 0x{rdata:x}, model 0x{m_rdata:x}"
        assert events == m_events, f"{what}: events {events}, model {m_events}"
        return rdata


def offset_of(name, index=0):
    return reg_offset("dpu", name, index)


@cocotb.test()
async def identity_and_counters(dut):
    b = Bench(dut)
    await b.reset()
    assert await b.check(offset_of("id")) == REGS[("dpu", "id")].reset
    assert await b.check(offset_of("num_cores")) == b.n
    c1 = await b.check(offset_of("cycle"))
    c2 = await b.check(offset_of("cycle"))
    assert c2 > c1
    await b.check(offset_of("id"), write=True, wdata=1)  # read-only: error, value unchanged
    await b.check(offset_of("id"))


@cocotb.test()
async def console_and_sim_end(dut):
    b = Bench(dut)
    await b.reset()
    for core in range(b.n):
        for ch in f"hart {core}\n".encode():
            await b.check(offset_of("console", core), write=True, wdata=ch)
    await b.check(offset_of("console", 0), write=True, wdata=ord("x"), wstrb=0xFE)  # byte 0 not enabled
    await b.check(offset_of("sim_end"), write=True, wdata=0x1A5)  # code is bits 7:0
    await b.check(offset_of("mailbox", REGS[("dpu", "mailbox")].count))  # past the last register: error


@cocotb.test()
async def random_accesses_against_model(dut):
    b = Bench(dut)
    await b.reset()
    rng = random.Random(int(os.environ.get("DPU_SEED", "1")))
    known = sorted({g.offset + i * g.stride for g in b.model.regs.values() for i in range(g.count)})
    for _ in range(400):
        offset = rng.choice(known) if rng.random() < 0.9 else rng.randrange(0, REGIONS["dpu"].size, 8)
        write = rng.random() < 0.5
        await b.check(offset, write, rng.getrandbits(64), rng.getrandbits(8) if write else 0xFF)


async def uart_decode(dut, div, out, stop):
    """Decodes 8N1 on io_board_uartTx, sampling each bit in its middle; checks every stop bit."""
    line = dut.io_board_uartTx
    while not stop():
        await RisingEdge(dut.clock)
        if int(line.value):
            continue
        await ClockCycles(dut.clock, div // 2)
        assert int(line.value) == 0, "UART: start bit too short"
        byte = 0
        for bit in range(8):
            await ClockCycles(dut.clock, div)
            byte |= int(line.value) << bit
        await ClockCycles(dut.clock, div)
        assert int(line.value) == 1, f"UART: framing error after 0x{byte:02x}"
        out.append(byte)


@cocotb.test()
async def uart_console(dut):
    """Bytes written to uart_tx leave on the line at the programmed bit time; a full FIFO drops (and
    counts) what is written to it, never corrupts what it holds."""
    b = Bench(dut)
    await b.reset()
    assert await b.check(offset_of("uart_div")) == REGS[("dpu", "uart_div")].reset
    assert int(dut.io_board_uartTx.value) == 1, "UART line not idle after reset"
    status = lambda v: (v & 1, v >> 1 & 1, v >> 16)  # full, idle, dropped
    assert status(await b.check(offset_of("uart_status"))) == (0, 1, 0)
    await b.check(offset_of("uart_tx"))  # write-only: reading is an error
    got, done = [], [False]
    # 1: a message at the reset bit time
    cocotb.start_soon(uart_decode(dut, 16, got, lambda: done[0]))
    msg = b"NanoBPF on the UART\r\n"
    for ch in msg:
        await b.check(offset_of("uart_tx"), write=True, wdata=ch)
    while not status(await b.check(offset_of("uart_status")))[1]:
        await ClockCycles(dut.clock, 50)
    await ClockCycles(dut.clock, 40)
    assert bytes(got) == msg, f"UART sent {bytes(got)!r}"
    # 2: overflow at a short bit time: written faster than sent
    done[0] = True
    await ClockCycles(dut.clock, 40)
    await b.check(offset_of("uart_div"), write=True, wdata=2, wstrb=0x03)  # below 4: acts as 4
    got2, done2 = [], [False]
    cocotb.start_soon(uart_decode(dut, 4, got2, lambda: done2[0]))
    sent = [i & 0xFF for i in range(400)]
    saw_full = False
    for v in sent:
        await b.check(offset_of("uart_tx"), write=True, wdata=v)
    for _ in range(100):
        full, idle, dropped = status(await b.check(offset_of("uart_status")))
        saw_full |= bool(full)
        if idle:
            break
        await ClockCycles(dut.clock, 500)
    await ClockCycles(dut.clock, 40)
    assert dropped > 0 and len(got2) + dropped == len(sent), f"{len(got2)} sent + {dropped} dropped != {len(sent)}"
    assert got2[:256] == sent[:256], "the first 256 bytes (the FIFO) must all be sent, in order"
    it = iter(sent)
    assert all(x in it for x in got2), "the UART sent bytes out of order"


@pytest.mark.parametrize("cores", [1, 4])
def test_dpu_regs(cores):
    from nanobpf.blocksim import run_block
    run_block("dpu_regs", f"c{cores}", "DpuRegs", "test_dpu_regs", os.path.dirname(__file__),
              extra_env={"DPU_CORES": str(cores), "DPU_SEED": str(cores)})
