"""Egress of the packet path (nanobpf.datapath.Egress) against what each completion asks for: the frame
read from packet memory at any byte offset and length, the host link's shim left out (egress_shim
strip: frame bytes 12..15) or the DECRYPTED shim put in after the MAC addresses (decrypted), the
route, the checksum and length flags; completions it cannot do (too short or long for the shim operation, outside
the slot, shim operation 3, no route) refused as bad; every slot freed once. Random grants of the
memory port and random back-pressure from the deparser. Run: make test-block BLOCK=egress."""
import os
import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

import nanobpf_ctrl_defs as D
from nanobpf.models.pisa import Pisa
from nanobpf.models.pktpath import comp_word
from nanobpf.soc import DATAPATH, ENUMS
from busport import PERIOD_NS
from pisa_common import StreamSink
from nanobpf_ebpf_defs import NANOBPF_XDP_PASS as XDP_PASS, NANOBPF_XDP_REDIRECT as XDP_REDIRECT

SLOTS, W = 16, 8  # the block's build (egress-w8: PktParams(slots = 16), 64-bit words)
SLOT_BYTES, MAX_FRAME = DATAPATH["slot_bytes"], Pisa().max_frame
HOST, NET = 1, 3  # logical ports
SHIM = ENUMS["egress_shim"]
ACTION = ENUMS["pisa_action"]
DECRYPTED = bytes([D.SHIM_ETHERTYPE >> 8, D.SHIM_ETHERTYPE & 0xFF, D.NANOBPF_SHIM_F_DECRYPTED, 0])


def expected(frame, op):
    """The frame as the egress must send it, or None when the completion is bad."""
    n = len(frame)
    if op == SHIM["keep"]:
        return frame
    if op == SHIM["strip"]:
        return frame[:12] + frame[16:] if n >= 18 else None
    if op == SHIM["decrypted"]:
        return frame[:12] + DECRYPTED + frame[12:] if n + 4 <= MAX_FRAME else None
    return None  # no such operation


def completions(rng, n):
    """(slot, offset, length, shim op, ingress lport, action, redirect port, fix_csum, fix_len): mostly good ones
    at every alignment, some at the limits and some bad."""
    out = []
    for i in range(n):
        slot = i % SLOTS
        off = rng.choice([256, 252, 260, rng.randrange(0, 512)])
        length = rng.choice([14, 17, 18, 19, 60, 64, 65, rng.randrange(14, 200), rng.randrange(200, MAX_FRAME + 1),
                             MAX_FRAME - 4, MAX_FRAME - 3, MAX_FRAME])
        op = rng.choice([SHIM["keep"]] * 3 + [SHIM["strip"]] * 3 + [SHIM["decrypted"]] * 3 + [3])
        if rng.random() < 0.03:
            off = SLOT_BYTES - length + rng.choice([0, 1])  # at the slot's end, or one past it
        if rng.random() < 0.02:
            length = rng.choice([0, 13, MAX_FRAME + 1])
        lport = rng.choice([HOST, NET])
        action = rng.choice([XDP_PASS] * 4 + [XDP_REDIRECT])
        port = rng.choice([HOST, NET, 0])
        out.append((slot, off, length, op, lport, action, port, rng.random() < 0.5, rng.random() < 0.5))
    return out


def route(lport, action, port):
    if action == XDP_PASS:
        return ACTION["to_network"] if lport == HOST else ACTION["to_host"]
    return ACTION["to_host"] if port == HOST else ACTION["to_network"] if port == NET else ACTION["drop"]


class Memory:
    """Packet memory behind the egress's stream port: a granted read's word comes the next cycle."""

    def __init__(self, dut, rng, grant_prob):
        self.dut, self.rng, self.grant_prob = dut, rng, grant_prob
        self.bytes = bytearray(rng.randbytes(SLOTS * SLOT_BYTES))

    async def run(self):
        d = self.dut
        while True:
            d.io_readGrant.value = int(self.rng.random() < self.grant_prob)
            await ReadOnly()
            addr = int(d.io_readAddr_bits.value) if d.io_readAddr_valid.value == 1 and d.io_readGrant.value == 1 else None
            await RisingEdge(d.clock)
            if addr is not None:
                d.io_readData.value = int.from_bytes(self.bytes[addr * W:addr * W + W], "little")


async def run(dut, seed, n, grant_prob, ready_prob):
    rng = random.Random(seed)
    d = dut
    from cocotb.clock import Clock
    cocotb.start_soon(Clock(d.clock, PERIOD_NS, unit="ns").start())
    d.reset.value = 1
    d.io_rel_valid.value = 0
    d.io_readGrant.value = 0
    d.io_readData.value = 0
    d.io_hostLport.value = HOST
    d.io_netLport.value = NET
    for _ in range(4):
        await RisingEdge(d.clock)
    d.reset.value = 0
    mem = Memory(d, rng, grant_prob)
    cocotb.start_soon(mem.run())
    sink = StreamSink(d, "io_out", W, fields=("user_action", "user_fixCsum", "user_fixLen"), rng=random.Random(seed + 1), ready_prob=ready_prob)
    cocotb.start_soon(sink.run())
    freed, bad = [], 0

    async def watch():
        nonlocal bad
        while True:
            await ReadOnly()
            if d.io_free_valid.value == 1:
                freed.append(int(d.io_free_bits.value))
            bad += int(d.io_bad.value)
            await RisingEdge(d.clock)
    cocotb.start_soon(watch())

    want, want_bad, slots = [], 0, []
    for slot, off, length, op, lport, action, port, fix, fix_len in completions(rng, n):
        frame = bytes(mem.bytes[slot * SLOT_BYTES + off:slot * SLOT_BYTES + off + length])
        r = route(lport, action, port)
        out = expected(frame, op) if 14 <= length <= MAX_FRAME and off + length <= SLOT_BYTES and r != ACTION["drop"] else None
        if out is None:
            want_bad += 1
        else:
            want.append((out, {"user_action": r, "user_fixCsum": int(fix), "user_fixLen": int(fix_len)}))
        slots.append(slot)
        d.io_rel_bits_word.value = comp_word(slot=slot, action=action, fix_csum=int(fix), fix_len=int(fix_len), len=length, offset=off, port=port, shim=op)
        d.io_rel_bits_lport.value = lport
        d.io_rel_valid.value = 1
        while True:
            await ReadOnly()
            taken = d.io_rel_ready.value == 1
            await RisingEdge(d.clock)
            if taken:
                break
        d.io_rel_valid.value = 0
        for _ in range(rng.choice([0, 0, 0, 1, 5])):
            await RisingEdge(d.clock)
    for _ in range(20000):
        if len(sink.frames) >= len(want) and len(freed) >= len(slots):
            break
        await RisingEdge(d.clock)
    got = [(f, side) for f, side, _, _ in sink.frames]
    assert len(got) == len(want), f"{len(got)} frames out, {len(want)} expected"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"frame {i}:\n got  {g[1]} {g[0].hex()}\n want {w[1]} {w[0].hex()}"
    assert bad == want_bad, f"{bad} completions refused, {want_bad} expected"
    assert freed == slots, "every slot freed once, in order"
    return want


@cocotb.test()
async def every_alignment_and_shim_operation(dut):
    want = await run(dut, int(os.environ.get("EGRESS_SEED", "1")), 400, 0.6, 0.7)
    assert len(want) > 200


@cocotb.test()
async def full_rate(dut):
    """Grants and the deparser always ready: the egress still leaves nothing out."""
    await run(dut, 2, 150, 1.0, 1.0)


def test_egress():
    from nanobpf.blocksim import run_block
    run_block("egress", "w8", "Egress", "test_egress", os.path.dirname(__file__))
