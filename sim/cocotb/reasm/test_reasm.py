"""Reassembly buffer (nanobpf.reasm.Reasm + PacketMem, 16 slots) against nanobpf.models.pktpath.Reasm:
every descriptor (slot, length, ports, connection, sequence, hash) and every frame byte read back
from packet memory; exhaustion drops and counts without touching slots in use, and the buffer
recovers when slots come back; frames marked bad or longer than a slot are dropped without using a
slot. Run: make test-block BLOCK=reasm."""
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from nanobpf.models.pktpath import Reasm, desc_fields

W, SLOTS, SLOT_BYTES, HEADROOM = 8, 16, 2048, 256


class Bench:
    def __init__(self, dut, rng):
        self.dut, self.rng = dut, rng
        self.model = Reasm(SLOTS, SLOT_BYTES, HEADROOM)
        self.descs = []  # (desc word, hash) in order
        self.counts = {"rx_frames": 0, "rx_drop_full": 0, "rx_drop_bad": 0}
        self.desc_ready = 1.0

    async def start(self):
        d = self.dut
        Clock(d.clock, 10, unit="ns").start()
        d.reset.value = 1
        d.io_in_valid.value = 0
        d.io_free_valid.value = 0
        d.io_readAddr_valid.value = 0
        d.io_desc_ready.value = 0
        for _ in range(3):
            await RisingEdge(d.clock)
        d.reset.value = 0
        cocotb.start_soon(self.monitor())

    async def monitor(self):
        d = self.dut
        while True:
            d.io_desc_ready.value = int(self.rng.random() < self.desc_ready)
            await ReadOnly()
            if d.io_desc_valid.value == 1 and d.io_desc_ready.value == 1:
                self.descs.append((int(d.io_desc_bits_desc.value), int(d.io_desc_bits_hash.value)))
            self.counts["rx_frames"] += int(d.io_rxFrame.value)
            self.counts["rx_drop_full"] += int(d.io_dropFull.value)
            self.counts["rx_drop_bad"] += int(d.io_dropBad.value)
            await RisingEdge(d.clock)

    async def send(self, frame, bad=False, idle=0.1, **info):
        d, rng = self.dut, self.rng
        chunks = [frame[i:i + W] for i in range(0, len(frame), W)]
        want = self.model.frame(frame, bad=bad, hash_=info.get("hash", 0),
                                **{k: v for k, v in info.items() if k != "hash"})
        for i, c in enumerate(chunks):
            while rng.random() < idle:
                d.io_in_valid.value = 0
                await RisingEdge(d.clock)
            d.io_in_valid.value = 1
            d.io_in_bits_beat_data.value = int.from_bytes(c.ljust(W, b"\0"), "little")
            d.io_in_bits_beat_keep.value = (1 << len(c)) - 1
            d.io_in_bits_beat_last.value = int(i == len(chunks) - 1)
            d.io_in_bits_bad.value = int(bad and i == len(chunks) - 1)
            if i == 0:
                for k, sig in (("lport", "lport"), ("quic", "quic"), ("conn_valid", "connValid"),
                               ("conn_slot", "connSlot"), ("hash", "hash"), ("gso", "gso")):
                    getattr(d, f"io_in_bits_info_{sig}").value = info.get(k, 0)
            else:  # info is taken on the first beat only
                d.io_in_bits_info_lport.value = rng.randrange(4)
            await ReadOnly()
            assert d.io_in_ready.value == 1, "the buffer held its input"
            await RisingEdge(d.clock)
        d.io_in_valid.value = 0
        return want

    async def settle(self, n=4):
        for _ in range(n):
            await RisingEdge(self.dut.clock)

    async def read_frame(self, slot, length):
        d, out = self.dut, b""
        base = slot * SLOT_BYTES // W + HEADROOM // W
        for i in range((length + W - 1) // W):
            d.io_readAddr_valid.value = 1
            d.io_readAddr_bits.value = base + i
            await RisingEdge(d.clock)
            d.io_readAddr_valid.value = 0
            await ReadOnly()
            out += int(d.io_readData.value).to_bytes(W, "little")
            await RisingEdge(d.clock)
        return out[:length]

    async def free(self, slot):
        d = self.dut
        d.io_free_valid.value = 1
        d.io_free_bits.value = slot
        await RisingEdge(d.clock)
        d.io_free_valid.value = 0
        self.model.release(slot)

    async def check(self, sent):
        """Every expected descriptor arrived, equal to the model's, and its frame is in memory."""
        await self.settle(20)
        wants = [(w, f) for w, f in sent if w is not None]
        assert len(self.descs) == len(wants), f"{len(self.descs)} descriptors, model {len(wants)}"
        for (got, (want, frame)) in zip(self.descs, wants):
            assert got == want, f"descriptor {desc_fields(got[0])} hash {got[1]}, model {desc_fields(want[0])} hash {want[1]}"
            f = desc_fields(got[0])
            mem = await self.read_frame(f["slot"], f["len"])
            assert mem == frame, f"slot {f['slot']}: memory holds {mem.hex()}, sent {frame.hex()}"
        self.descs.clear()
        assert self.counts == self.model.counters, f"counters {self.counts}, model {self.model.counters}"
        assert int(self.dut.io_freeCount.value) == len(self.model.free)


def info(rng):
    return dict(lport=rng.randrange(4), quic=rng.randrange(3), conn_valid=rng.randrange(2),
                conn_slot=rng.randrange(1 << 16), hash=rng.randrange(1 << 16), gso=rng.randrange(2))


@cocotb.test()
async def frames_and_recycling(dut):
    rng = random.Random(int(os.environ.get("REASM_SEED", "1")))
    b = Bench(dut, rng)
    await b.start()
    b.desc_ready = 0.6
    for rnd in range(6):
        sent = []
        for _ in range(rng.randrange(1, SLOTS + 1)):
            n = rng.choice([14, 60, 64, 65, 127, 1514, 1522, rng.randrange(14, 1523)])
            frame = rng.randbytes(n)
            sent.append((await b.send(frame, **info(rng)), frame))
        await b.check(sent)
        for w, _ in sent:
            if w is not None:
                await b.free(desc_fields(w[0])["slot"])


@cocotb.test()
async def exhaustion_and_recovery(dut):
    rng = random.Random(2)
    b = Bench(dut, rng)
    await b.start()
    frames = [rng.randbytes(rng.randrange(60, 300)) for _ in range(SLOTS + 5)]
    sent = [(await b.send(f, idle=0, **info(rng)), f) for f in frames]  # back to back, no frees
    assert sum(w is None for w, _ in sent) == 5
    await b.check(sent)
    assert b.counts["rx_drop_full"] == 5 and int(dut.io_freeCount.value) == 0
    # Slots in use were never overwritten: every frame is still intact (check() read them back).
    for slot in (3, 7, 11):
        await b.free(slot)
    more = [rng.randbytes(200) for _ in range(4)]
    sent = [(await b.send(f, **info(rng)), f) for f in more]
    assert [desc_fields(w[0])["slot"] for w, _ in sent if w] == [3, 7, 11], "freed slots are reused in order"
    assert sent[-1][0] is None
    await b.check(sent)


@cocotb.test()
async def bad_and_oversized_frames(dut):
    rng = random.Random(3)
    b = Bench(dut, rng)
    await b.start()
    sent = []
    for i in range(30):
        kind = rng.choice(["good", "bad", "long"])
        frame = rng.randbytes(rng.randrange(1793, 2100) if kind == "long" else rng.randrange(14, 1522))
        sent.append((await b.send(frame, bad=(kind == "bad"), **info(rng)), frame))
    await b.check(sent)
    assert b.counts["rx_drop_bad"] > 5
    assert int(dut.io_freeCount.value) == SLOTS - b.counts["rx_frames"]


def test_reasm():
    from nanobpf.blocksim import run_block
    run_block("reasm", "w8", "ReasmBlock", "test_reasm", os.path.dirname(__file__))
