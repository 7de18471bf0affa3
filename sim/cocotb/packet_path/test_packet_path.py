"""Packet path (nanobpf.pktpath.PacketPath: reassembly buffer, packet memory, core select, per-core
queues behind registers, reorder unit), 2 worker queues and 16 slots. Frames come in; emulated cores
pop descriptors by reading core_desc and push completions to core_comp over the register bus; the
egress takes released packets, reads them from packet memory and frees their slots. Checked: every
frame that is not dropped leaves once, in arrival order per logical port, with its bytes intact; drops
free their slots; bogus completions are refused and counted; counters and registers agree with what
happened; all slots come back. Run: make test-block BLOCK=packet_path."""
import os
import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from scapy.all import IP, UDP, Ether, Raw

from nanobpf.models.packetizer import gso_batch, packetize
from nanobpf.models.pktpath import COUNTER, POLICY, comp_fields, comp_word, desc_fields
from nanobpf.soc import REGIONS, pack, reg_offset, unpack
from busport import BusPortDriver, start
from pisa_common import StreamSource

W, QUEUES, SLOTS, SLOT_BYTES, HEADROOM = 8, 2, 16, 2048, 256
from nanobpf_ebpf_defs import NANOBPF_XDP_DROP as XDP_DROP, NANOBPF_XDP_PASS as XDP_PASS, NANOBPF_XDP_TX as XDP_TX  # noqa: E402


class Bench:
    def __init__(self, dut, rng):
        self.dut, self.rng = dut, rng
        self.sent = {}  # seq -> (frame, lport, connection slot, parse result)
        self.check_meta = False  # seq = the source's frame number (no other source): slot_meta is checked
        self.egress = []  # (seq, lport, word)
        self.busy = False
        # free slots the source waits for before a frame: 2, because the frame before may still be
        # counted free (its last beat driven, not yet taken) and takes one when it ends
        self.min_free = 2

    async def start(self):
        d = self.dut
        d.io_in_valid.value = 0
        d.io_gso_valid.value = 0
        d.io_free_valid.value = 0
        d.io_readAddr_valid.value = 0
        d.io_egress_ready.value = 0
        self.bus = BusPortDriver(d, REGIONS["pkt"].base, await start(d))

    async def reg(self, name, index=0, write=None):
        rdata, err, _, _ = await self.bus.access(reg_offset("pkt", name, index), write is not None, write or 0)
        return rdata, err

    async def read(self, name, index=0):
        rdata, err = await self.reg(name, index)
        assert not err, f"reading pkt.{name}[{index}] failed"
        return rdata

    async def source(self, frames, idle=0.3):
        d, rng = self.dut, self.rng
        src = StreamSource(d, "io_in", W, rng, idle=idle)
        for n, (frame, lport) in enumerate(frames):
            while int(d.io_freeSlots.value) < self.min_free:  # never overrun the buffer: every frame gets a slot
                await RisingEdge(d.clock)
            conn, meta = rng.randrange(8), rng.getrandbits(32)
            self.sent[n] = (frame, lport, conn, meta)  # sequence numbers count accepted frames (none is dropped here)
            await src.send(frame, side={"_bits_info_lport": lport, "_bits_info_connValid": 1,
                                        "_bits_info_connSlot": conn, "_bits_info_meta": meta}, last_side={"_bits_bad": 0})

    async def egress_sink(self):
        """Takes released packets, reads them back from packet memory, frees the slot."""
        d, rng = self.dut, self.rng
        while True:
            d.io_egress_ready.value = int(rng.random() < 0.5)
            await ReadOnly()
            got = None
            if d.io_egress_valid.value == 1 and d.io_egress_ready.value == 1:
                got = (int(d.io_egress_bits_seq.value), int(d.io_egress_bits_lport.value), int(d.io_egress_bits_word.value))
            await RisingEdge(d.clock)
            if got:
                d.io_egress_ready.value = 0
                seq, lport, word = got
                f = comp_fields(word)
                slot, length = f["slot"], f["len"]
                data = b""
                for i in range((length + W - 1) // W):
                    d.io_readAddr_valid.value = 1
                    d.io_readAddr_bits.value = slot * SLOT_BYTES // W + HEADROOM // W + i
                    await RisingEdge(d.clock)
                    d.io_readAddr_valid.value = 0
                    await ReadOnly()
                    data += int(d.io_readData.value).to_bytes(W, "little")
                    await RisingEdge(d.clock)
                got = got + (data[:length],)
                d.io_free_valid.value = 1
                d.io_free_bits.value = slot
                await RisingEdge(d.clock)
                d.io_free_valid.value = 0
                self.egress.append(got)

    async def cores(self, total, bound, drop=True):
        """Both cores, polled in turn over the bus: pop, hold a few packets, complete in random order."""
        rng, held, done, bogus = self.rng, [[], []], 0, 0
        self.actions = {}
        for _ in range(20000):
            if done >= total:
                break
            core = rng.randrange(QUEUES)
            desc, err = await self.reg("core_desc", core)
            assert not err
            if desc:
                f = desc_fields(desc)
                # the frame's parse result (its side band at the reassembly) waits in slot_meta[slot]
                if self.check_meta:
                    got = await self.read("slot_meta", f["slot"])
                    assert got == self.sent[f["seq"]][3], f"slot {f['slot']} (seq {f['seq']}): slot_meta {got:#x}"
                held[core].append(f)
                assert len(held[core]) <= bound, f"core {core} holds {len(held[core])} > bound {bound}"
            if held[core] and (rng.random() < 0.4 or len(held[core]) == bound):
                f = held[core].pop(rng.randrange(len(held[core])))
                action = rng.choice([XDP_PASS, XDP_PASS, XDP_TX, XDP_DROP] if drop else [XDP_PASS, XDP_TX])
                self.actions[f["seq"]] = action
                _, err = await self.reg("core_comp", core, comp_word(slot=f["slot"], action=action, len=f["len"], offset=HEADROOM))
                assert not err
                done += 1
                if rng.random() < 0.05:  # a completion for a slot this core does not hold: discarded
                    # the other core's packets, or no slot at all (queued, unpopped slots are unknown here)
                    others = [h["slot"] for h in held[1 - core]] + list(range(SLOTS, 256))
                    await self.reg("core_comp", core, comp_word(slot=rng.choice(others), action=XDP_PASS))
                    bogus += 1
            outs = [await self.read("core_outstanding", i) for i in range(QUEUES)]
            assert all(o <= bound for o in outs), f"outstanding {outs} above bound {bound}"
        assert done >= total, f"only {done} of {total} packets reached the cores (counters: " + \
            str({k: await self.read("counter", i) for k, i in COUNTER.items()}) + ")"
        return bogus


@cocotb.test()
async def frames_through_cores_in_order(dut):
    rng = random.Random(int(os.environ.get("PKT_SEED", "1")))
    b = Bench(dut, rng)
    b.check_meta = True
    await b.start()
    params = unpack("pkt", "params", await b.read("params"))
    assert (params["queues"], params["slots"], params["slot_bytes"], params["headroom"]) == (QUEUES, SLOTS, SLOT_BYTES, HEADROOM)
    assert unpack("pkt", "sched", await b.read("sched")) == {"policy": POLICY["jbsq"], "bound": 4}
    bound = 2
    await b.reg("sched", write=pack("pkt", "sched", policy=POLICY["sjbsq"], bound=bound))
    await b.reg("reorder_timeout", write=1 << 20)  # far longer than any packet takes here: never fires
    await b.reg("order_conn", write=0b0010)  # port 1 in connection order, ports 0 and 3 in port order
    assert (await b.read("reorder_timeout"), await b.read("order_conn")) == (1 << 20, 0b0010)
    # Narrow accesses to the pop and push registers are refused and change nothing.
    base = reg_offset("pkt", "core_comp", 0)
    assert (await b.bus.access(base, True, comp_word(slot=0, action=XDP_PASS), wstrb=0x0F))[1]
    assert (await b.bus.access(reg_offset("pkt", "core_desc", 0) + 4))[1]
    # Registers of cores beyond this build read 0; read-only registers refuse writes.
    assert await b.reg("core_desc", 5) == (0, False)
    assert await b.reg("slot_meta", SLOTS) == (0, False) and (await b.reg("slot_meta", 0, write=1))[1]
    assert (await b.reg("free_slots", write=1))[1]
    frames = [(rng.randbytes(rng.randrange(60, 400)), rng.choice([0, 1, 3])) for _ in range(120)]
    cocotb.start_soon(b.egress_sink())
    cocotb.start_soon(b.source(frames))
    bogus = await b.cores(len(frames), bound)
    for _ in range(3000):
        await RisingEdge(dut.clock)
        if await b.read("free_slots") == SLOTS and len(b.egress) == sum(a != XDP_DROP for a in b.actions.values()):
            break
    for s, _, _, data in b.egress:
        assert data == b.sent[s][0], f"seq {s}: packet memory changed"
    # Every packet the cores did not drop left once, in arrival order per logical port.
    want = [s for s in sorted(b.actions) if b.actions[s] != XDP_DROP]
    assert sorted(s for s, _, _, _ in b.egress) == want, "egress lost or duplicated packets"
    for lport in (0, 3):  # port order
        seqs = [s for s, lp, _, _ in b.egress if lp == lport]
        assert seqs == sorted(seqs), f"port {lport} out of order: {seqs}"
        assert all(b.sent[s][1] == lport for s in seqs)
    for group in range(4):  # port 1: order per connection group (connection slot mod 4)
        seqs = [s for s, lp, _, _ in b.egress if lp == 1 and b.sent[s][2] % 4 == group]
        assert seqs == sorted(seqs), f"port 1 connection group {group} out of order: {seqs}"
    for s, _, word, _ in b.egress:
        assert comp_fields(word)["action"] == b.actions[s]
    counters = {k: await b.read("counter", i) for k, i in COUNTER.items()}
    drops = sum(a == XDP_DROP for a in b.actions.values())
    assert counters["rx_frames"] == counters["dispatched"] == counters["completions"] == counters["released"] == len(frames)
    assert counters["released_drop"] == drops and counters["bad_completions"] == bogus
    assert counters["timeouts"] == counters["late"] == 0
    assert sum([await b.read("core_dispatched", i) for i in range(QUEUES)]) == len(frames)
    assert [await b.read("core_outstanding", i) for i in range(QUEUES)] == [0, 0]
    assert await b.read("free_slots") == SLOTS
    await b.reg("counter_clear", write=1)
    assert await b.read("counter", COUNTER["released"]) == 0
    dut._log.info(f"{len(frames)} frames, {drops} dropped by the cores, {bogus} bogus completions refused, "
                  f"{counters['hold_cycles']} hold cycles")


@cocotb.test()
async def gso_batches_leave_in_order(dut):
    """Host GSO batches (lport 1) through the packetization buffer, the cores and the reorder unit,
    while frames from the pipeline (lport 0) share the buffer: each segment leaves once, in segment
    order, byte for byte the model's packet."""
    rng = random.Random(5)
    b = Bench(dut, rng)
    await b.start()
    quic = bytes([0x43]) + rng.randbytes(8) + rng.randbytes(4)
    tmpl = bytes(Ether() / IP(src="192.0.2.1", dst="198.51.100.2") / UDP(sport=4433, dport=443) / Raw(quic))
    want = []
    batches = []
    # The host sends a batch (<= 8 segments) only when every slot is free, the pipeline a frame only
    # when 9 are: together they never run out of slots (tail drops are the reasm test's business).
    b.min_free = 9
    for segs, size in ((5, 100), (1, 300), (8, 64)):
        payload = rng.randbytes((segs - 1) * size + rng.randint(1, size))
        batch = gso_batch(tmpl, payload, size, pn=0x1000 + len(want), pn_len=4, ip_id=7, lport=1, conn_slot=3)
        frames, counters = packetize(batch)
        assert not any(bad for _, bad in frames) and len(frames) == segs
        want += [f for f, _ in frames]
        batches.append(batch)
    frames_in = [(rng.randbytes(rng.randrange(60, 200)), 0) for _ in range(8)]
    cocotb.start_soon(b.egress_sink())
    cocotb.start_soon(b.source(frames_in, idle=0.5))

    gso = StreamSource(dut, "io_gso", W, rng, beat="_bits")

    async def host():
        for batch in batches:
            while int(dut.io_freeSlots.value) < SLOTS:
                await RisingEdge(dut.clock)
            await gso.send(batch)
    cocotb.start_soon(host())
    b.actions = {}
    await b.cores(len(want) + len(frames_in), 4, drop=False)
    for _ in range(3000):
        await RisingEdge(dut.clock)
        if len(b.egress) == len(want) + len(frames_in):
            break
    gso_out = [data for _, lport, _, data in b.egress if lport == 1]
    assert gso_out == want, f"{len(gso_out)} segments out, {len(want)} expected (or bytes differ)"
    assert sorted(data for _, lport, _, data in b.egress if lport == 0) == sorted(f for f, _ in frames_in)
    assert await b.read("counter", COUNTER["gso_batches"]) == len(batches)
    assert await b.read("counter", COUNTER["gso_segments"]) == len(want)
    assert await b.read("counter", COUNTER["gso_bad"]) == 0


def test_packet_path():
    from nanobpf.blocksim import run_block
    run_block("packet_path", "q2", "PacketPathBlock", "test_packet_path", os.path.dirname(__file__))
