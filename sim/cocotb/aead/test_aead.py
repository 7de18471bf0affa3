"""AES-128-GCM engine (nanobpf.aead.AeadBlock: registers, key table storage, engine) against the
reference model nanobpf.models.aead, with a packet memory model on the engine's port that stalls at random.

Checked: the NIST GCM test cases for AES-128 (empty plaintext and AAD, non-multiple-of-16 lengths);
RFC 9001 Appendix A client and server Initial packets sealed and opened, and their header protection
masks; random requests of every op from several cores back to back (random alignments, lengths,
slots, key phases, tampered tags, bad requests; seal_hp with random headers, so random packet number
lengths and headers or samples that do not fit) with memory byte-exact to the model after each
completion and one completion per request with the model's status; per-core limits refused and
counted; counters; the header-protection masker beside the engine (core_hp_*) against the model, while
the engine works. Run: make test-block BLOCK=aead."""
import os
import random

import cocotb
import pytest
from cocotb.triggers import Lock, ReadOnly, RisingEdge

import nanobpf_ebpf_defs as abi
from nanobpf.models import aead
from nanobpf.quic import vectors
from nanobpf.soc import ENUMS, REGIONS, reg_offset, unpack, unpack_layout
from busport import BusPortDriver, start

MEM_BYTES = 1 << 16


class Bench:
    def __init__(self, dut, rng, stall=0.0):
        self.dut, self.rng, self.stall = dut, rng, stall
        self.mem = bytearray(MEM_BYTES)
        self.keytable = bytearray(REGIONS["keytable"].size)
        self.writes = self.reads = 0
        self.lock = Lock()  # one bus access at a time when several coroutines play cores

    async def start(self):
        d = self.dut
        d.io_keys_req_valid.value = 0
        d.io_mem_req_ready.value = 0
        d.io_mem_rdata.value = 0
        t0 = await start(d)
        self.bus = BusPortDriver(d, REGIONS["aead"].base, t0)
        self.keys = BusPortDriver(d, REGIONS["keytable"].base, t0, prefix="io_keys")
        cocotb.start_soon(self.memory())
        self.params = unpack("aead", "params", await self.read("params"))

    async def memory(self):
        """Packet memory: one access per cycle when ready; a read answers in the next cycle."""
        d, rng = self.dut, self.rng
        while True:
            ready = int(rng.random() >= self.stall)
            d.io_mem_req_ready.value = ready
            await ReadOnly()
            fire = ready and int(d.io_mem_req_valid.value)
            if fire:
                addr = int(d.io_mem_req_bits_addr.value) * 8
                write = int(d.io_mem_req_bits_write.value)
                wdata, strb = int(d.io_mem_req_bits_wdata.value), int(d.io_mem_req_bits_strb.value)
            await RisingEdge(d.clock)
            if fire and write:
                for b in range(8):
                    if strb >> b & 1:
                        self.mem[addr + b] = wdata >> 8 * b & 0xFF
                self.writes += 1
            elif fire:
                d.io_mem_rdata.value = int.from_bytes(self.mem[addr:addr + 8], "little")
                self.reads += 1

    async def reg(self, name, index=0, write=None, wstrb=0xFF):
        async with self.lock:
            rdata, err, _, _ = await self.bus.access(reg_offset("aead", name, index), write is not None, write or 0, wstrb)
        return rdata, err

    async def read(self, name, index=0):
        rdata, err = await self.reg(name, index)
        assert not err, f"reading aead.{name}[{index}] failed"
        return rdata

    async def write(self, name, value, index=0):
        _, err = await self.reg(name, index, value)
        assert not err, f"writing aead.{name}[{index}] failed"

    async def set_keys(self, slot, value):
        """Write a key table value over the bus, as the control core does."""
        assert len(value) == aead.KEY_STRIDE
        base = slot * aead.KEY_STRIDE
        self.keytable[base:base + len(value)] = value
        for w in range(0, len(value), 8):
            _, err, _, _ = await self.keys.access(base + w, True, int.from_bytes(value[w:w + 8], "little"))
            assert not err

    async def submit(self, core, req):
        await self.write("core_ctl", req.ctl_word(), core)
        await self.write("core_addr", req.addr_word(), core)
        _, err = await self.reg("core_pn", core, req.pn)
        return not err

    async def complete(self, core, timeout=20000):
        for _ in range(timeout):
            word = await self.read("core_comp", core)
            c = aead.comp_fields(word)
            if c["valid"]:
                return c
        raise AssertionError(f"core {core}: no completion in {timeout} polls")

    async def run(self, core, req):
        """Submit one request, wait for it; check memory and status against the model."""
        want_mem = bytearray(self.mem)
        want = aead.execute(want_mem, self.keytable, req)
        assert await self.submit(core, req), "submit refused"
        c = await self.complete(core)
        assert c["id"] == req.id
        assert aead.STATUS_NAME[c["status"]] == want, f"{req}: status {aead.STATUS_NAME[c['status']]}, model {want}"
        if self.mem != want_mem:
            diff = [i for i in range(MEM_BYTES) if self.mem[i] != want_mem[i]]
            raise AssertionError(f"{req}: {len(diff)} bytes differ from the model, first at {diff[0]:#x}")
        return c


def h(x):
    return bytes.fromhex(x)


@cocotb.test()
async def nist_vectors(dut):
    b = Bench(dut, random.Random(1), stall=0.2)
    await b.start()
    for n, (key, iv, p, a, c, t) in enumerate(aead.NIST_GCM):
        key, iv, p, a, c, t = map(h, (key, iv, p, a, c, t))
        slot = 7 + n
        await b.set_keys(slot, aead.keys_value(key, iv, bytes(16)))
        aad_at, data_at = 0x100 + 3 * n, 0x1005 + 5 * n  # unaligned on purpose
        b.mem[aad_at:aad_at + len(a)] = a
        b.mem[data_at:data_at + len(p)] = p
        req = aead.Request("seal", slot, aad_at, len(a), data_at, len(p), pn=0, id=n)
        await b.run(0, req)
        assert b.mem[data_at:data_at + len(p) + 16] == c + t, f"test case {n + 1}: wrong ciphertext or tag"
        req.op = "open"
        cmp = await b.run(1, req)
        assert aead.STATUS_NAME[cmp["status"]] == "ok" and b.mem[data_at:data_at + len(p)] == p
        b.mem[data_at + len(p) + n] ^= 0x80  # a tag bit
        cmp = await b.run(0, req)
        assert aead.STATUS_NAME[cmp["status"]] == "tag_mismatch"
    assert await b.read("counter", aead_counter("tag_mismatch")) == len(aead.NIST_GCM)


def aead_counter(name):
    return ENUMS["aead_counter"][name]


@cocotb.test()
async def rfc9001_initial_packets(dut):
    b = Bench(dut, random.Random(2), stall=0.3)
    await b.start()
    for n, (k, hdr, pay, protected) in enumerate([
            (vectors.CLIENT_KEYS, vectors.A2_HEADER, vectors.A2_CRYPTO + bytes(1162 - len(vectors.A2_CRYPTO)),
             vectors.A2_PROTECTED),
            (vectors.SERVER_KEYS, vectors.A3_HEADER, vectors.A3_PAYLOAD, vectors.A3_PROTECTED)]):
        slot = 300 + n
        await b.set_keys(slot, aead.keys_value(k.key, k.iv, k.hp))
        at = 0x2000 + 2 * n + 1
        b.mem[at:at + len(hdr) + len(pay)] = hdr + pay
        pn = int.from_bytes(hdr[-(hdr[0] & 3) - 1:], "big")
        await b.run(1, aead.Request("seal", slot, at, len(hdr), at + len(hdr), len(pay), pn=pn, id=n))
        assert b.mem[at + len(hdr):at + len(hdr) + len(pay) + 16] == protected[len(hdr):]
        # header protection: the sample starts 4 bytes after the packet number offset
        pn_off = len(hdr) - (hdr[0] & 3) - 1
        sample = at + pn_off + 4
        await b.run(0, aead.Request("hp_mask", slot, aad_addr=sample, data_addr=0x8000 + n, id=10 + n))
        mask = bytes(b.mem[0x8000 + n:0x8005 + n])
        assert protected[0] == hdr[0] ^ (mask[0] & 0x0F)
        assert protected[pn_off:len(hdr)] == bytes(x ^ y for x, y in zip(hdr[pn_off:], mask[1:]))
        await b.run(1, aead.Request("open", slot, at, len(hdr), at + len(hdr), len(pay), pn=pn, id=20 + n))
        assert b.mem[at:at + len(hdr) + len(pay)] == hdr + pay
        # seal_hp: one request makes the RFC's protected packet, header protection included
        await b.run(0, aead.Request("seal_hp", slot, at, len(hdr), at + len(hdr), len(pay), pn=pn, id=30 + n))
        assert b.mem[at:at + len(protected)] == protected


async def random_requests(b, rng, count, cores, per_core):
    """Requests from every core, several outstanding per core; the engine serves them in submit
    order, so the model applies them in that order."""
    slots = rng.sample(range(abi.NANOBPF_KEYTABLE_SLOTS), 12)
    for s in slots:
        nxt = rng.random() < 0.6
        await b.set_keys(s, aead.keys_value(rng.randbytes(16), rng.randbytes(12), rng.randbytes(16),
                                            rng.randbytes(16) if nxt else None, rng.randbytes(12) if nxt else None))
    b.mem[:] = rng.randbytes(MEM_BYTES)
    model = bytearray(b.mem)
    pending = {c: [] for c in range(cores)}  # core -> [(req, status)]
    done = 0
    for n in range(count):
        core = rng.randrange(cores)
        if len(pending[core]) >= per_core:
            done += await collect(b, core, pending, model)
        # A window of its own per request in flight: at most cores * per_core <= 16 are (the engine
        # is in order, so when request n + 16 is submitted request n has completed).
        assert cores * per_core <= 16
        base = (n % 16) * 0x1000
        op = rng.choice(["seal", "seal", "open", "open", "hp_mask", "seal_hp", "seal_hp"])
        data_len = rng.choice([0, 1, 15, 16, 17, rng.randrange(1, 300), rng.randrange(300, 2049)])
        aad_len = rng.choice([0, 1, 13, 16, 21, rng.randrange(256)])
        aad_at = base + rng.randrange(64)
        req = aead.Request(op, rng.choice(slots), aad_at, aad_len, aad_at + aad_len + rng.choice([0, 0, 3]),
                           data_len, pn=rng.randrange(1 << 62), next_phase=rng.random() < 0.3, id=n)
        if op == "hp_mask":
            req.data_addr, req.data_len = base + 0xF00 + rng.randrange(8), 0
        r = rng.random()
        if r < 0.03:
            req.slot = abi.NANOBPF_KEYTABLE_SLOTS + rng.randrange(100)  # bad_request
        elif r < 0.06:
            req.data_len = 2049 + rng.randrange(100)  # bad_length
        elif r < 0.08:
            req.data_addr = MEM_BYTES - rng.randrange(1, 40)  # bad_length: tag past the end
            req.data_len = 30
        if op == "open" and req.data_len <= 2048 and rng.random() < 0.5:
            # a valid packet to open: seal it in the model first, maybe tamper with it
            scratch = bytearray(model)
            req.op = "seal"
            aead.execute(scratch, b.keytable, req)
            req.op = "open"
            lo, hi = req.data_addr, req.data_addr + req.data_len + 16
            if hi <= MEM_BYTES:
                if rng.random() < 0.3:
                    scratch[rng.randrange(lo, hi)] ^= 1 << rng.randrange(8)
                model[lo:hi] = scratch[lo:hi]
                b.mem[lo:hi] = scratch[lo:hi]
        status = aead.execute(model, b.keytable, req)
        assert await b.submit(core, req), "submit refused"
        pending[core].append((req, status))
    for core in range(cores):
        while pending[core]:
            done += await collect(b, core, pending, model)
    assert b.mem == model, "memory differs from the model"
    return done


async def collect(b, core, pending, model):
    req, status = pending[core].pop(0)
    c = await b.complete(core)
    assert c["id"] == req.id & 0xFFFF, f"core {core}: completion {c['id']} for request {req.id}"
    got = aead.STATUS_NAME[c["status"]]
    assert got == status, f"{req}: status {got}, model {status}"
    return 1


@cocotb.test()
async def random_back_to_back(dut):
    b = Bench(dut, random.Random(int(os.environ.get("AEAD_SEED", "3"))), stall=0.25)
    await b.start()
    cores, per_core = b.params["cores"], b.params["per_core"]
    await b.write("counter_clear", 1)
    n = int(os.environ.get("AEAD_RANDOM", "120"))
    done = await random_requests(b, b.rng, n, cores, per_core)
    assert done == n
    assert await b.read("counter", aead_counter("requests")) == n
    ok = await b.read("counter", aead_counter("ok"))
    bad = await b.read("counter", aead_counter("tag_mismatch")) + await b.read("counter", aead_counter("errors"))
    assert ok + bad == n
    dut._log.info(f"{n} requests: {ok} ok, {bad} mismatches or refusals; {b.reads} reads, {b.writes} writes")


@cocotb.test()
async def limits_and_registers(dut):
    b = Bench(dut, random.Random(4))
    await b.start()
    p = b.params
    assert p["key_slots"] == abi.NANOBPF_KEYTABLE_SLOTS and p["max_data"] == 2048
    await b.set_keys(1, aead.keys_value(bytes(16), bytes(12), bytes(16)))
    assert await b.read("core_comp", 0) == 0  # nothing to pop
    # fill core 0 with long requests; one more is refused and counted, nothing else changes
    req = aead.Request("seal", 1, 0, 0, 0x100, 2048)
    for i in range(p["per_core"]):
        req.id = i
        assert await b.submit(0, req)
    assert await b.read("core_outstanding", 0) == p["per_core"]
    assert not await b.submit(0, req)
    assert await b.read("counter", aead_counter("refused")) == 1
    for i in range(p["per_core"]):
        assert (await b.complete(0))["id"] == i
    assert await b.read("core_outstanding", 0) == 0
    # core_pn takes whole 64-bit writes only; ctl/addr read back
    _, err = await b.reg("core_pn", 0, 5, wstrb=0x0F)
    assert err
    await b.write("core_ctl", 0x1234_5678_9ABC_DEF0 & ~0x3, 1)
    assert await b.read("core_ctl", 1) == 0x1234_5678_9ABC_DEF0 & ~0x3
    # key table: beyond the last slot is an error
    _, err, _, _ = await b.keys.access(abi.NANOBPF_KEYTABLE_SLOTS * aead.KEY_STRIDE, True, 1)
    assert err
    _, err, _, _ = await b.keys.access(aead.KEY_STRIDE + 8, False)
    assert not err


async def hp_mask_beside(b, core, slot, sample):
    """One mask from the masker beside the engine (core_hp_*): its 5 bytes, byte 0 first."""
    await b.write("core_hp_sample0", int.from_bytes(sample[:8], "little"), core)
    await b.write("core_hp_sample1", int.from_bytes(sample[8:], "little"), core)
    _, err = await b.reg("core_hp_slot", core, slot, wstrb=0x0F)
    assert not err
    for polls in range(200):
        word = unpack_layout("hp_mask", await b.read("core_hp_mask", core))
        if word["valid"]:
            return word["mask"].to_bytes(5, "little"), polls
    raise AssertionError(f"core {core}: no mask in 200 polls")


@cocotb.test()
async def hp_masks_beside_the_engine(dut):
    """The header-protection masker: every core's masks equal the model's (RFC 9001 5.4.3: the first
    5 bytes of AES-ECB(hp key, sample)), also while the engine serves whole packets from every core
    and fetches their keys through the same key table port; a new request supersedes the one before;
    a slot past the storage is refused; the mask register is read-only."""
    b = Bench(dut, random.Random(5), stall=0.25)
    await b.start()
    cores = b.params["cores"]
    rng = b.rng
    slots = rng.sample(range(abi.NANOBPF_KEYTABLE_SLOTS), 6)
    for s in slots:
        await b.set_keys(s, aead.keys_value(rng.randbytes(16), rng.randbytes(12), rng.randbytes(16)))
    b.mem[:] = rng.randbytes(MEM_BYTES)

    def hp_key(slot):
        f = slot * aead.KEY_STRIDE + {name: off for name, off, _ in aead.KEYS.fields}["hp"]
        return bytes(b.keytable[f:f + 16])

    # RFC 9001 A.2: the client Initial's sample (protected packet bytes 22..37) masks to 437b9aec36
    await b.set_keys(7, aead.keys_value(bytes(16), bytes(12), vectors.CLIENT_KEYS.hp))
    mask, _ = await hp_mask_beside(b, 0, 7, vectors.A2_PROTECTED[22:38])
    assert mask == bytes.fromhex("437b9aec36")

    async def masks(core, n):
        for _ in range(n):
            slot, sample = rng.choice(slots), rng.randbytes(16)
            mask, _ = await hp_mask_beside(b, core, slot, sample)
            assert mask == aead.aes_block(hp_key(slot), sample)[:5], f"core {core} slot {slot}"

    async def packets(core, n):
        for i in range(n):
            req = aead.Request("seal", rng.choice(slots), 0x100 * core, 20, 0x2000 + 0x1000 * core, rng.randrange(16, 600), id=i)
            assert await b.submit(core, req)
            c = await b.complete(core)
            assert c["id"] == i and aead.STATUS_NAME[c["status"]] == "ok"

    workers = [cocotb.start_soon(packets(0, 6))] + [cocotb.start_soon(masks(c, 12)) for c in range(cores)]
    for w in workers:
        await w
    # superseded: a second request before the first is read gives the second's mask only
    s1, s2 = rng.randbytes(16), rng.randbytes(16)
    await b.write("core_hp_sample0", int.from_bytes(s1[:8], "little"), 0)
    await b.write("core_hp_sample1", int.from_bytes(s1[8:], "little"), 0)
    await b.reg("core_hp_slot", 0, slots[0], wstrb=0x0F)
    mask, _ = await hp_mask_beside(b, 0, slots[1], s2)
    assert mask == aead.aes_block(hp_key(slots[1]), s2)[:5]
    # a 32-bit slot write as a core makes it (the data in both halves of the bus word)
    s3 = rng.randbytes(16)
    await b.write("core_hp_sample0", int.from_bytes(s3[:8], "little"), 1 % cores)
    await b.write("core_hp_sample1", int.from_bytes(s3[8:], "little"), 1 % cores)
    _, err = await b.reg("core_hp_slot", 1 % cores, slots[2] | slots[2] << 32, wstrb=0x0F)
    assert not err
    for _ in range(100):
        word = unpack_layout("hp_mask", await b.read("core_hp_mask", 1 % cores))
        if word["valid"]:
            break
    assert word["valid"] and not word["refused"] and word["mask"].to_bytes(5, "little") == aead.aes_block(hp_key(slots[2]), s3)[:5]
    # refusals: a slot past the storage (its older mask no longer shown), a write to the mask, a narrow
    # sample write
    _, err = await b.reg("core_hp_slot", 0, abi.NANOBPF_KEYTABLE_SLOTS, wstrb=0x0F)
    assert err
    word = unpack_layout("hp_mask", await b.read("core_hp_mask", 0))
    assert word["valid"] and word["refused"] and word["mask"] == 0
    _, err = await b.reg("core_hp_mask", 0, 1)
    assert err
    _, err = await b.reg("core_hp_sample0", 0, 1, wstrb=0x0F)
    assert err


# r1g8 (the small build with 2 cores) is not the SoC's engine: make test-long
@pytest.mark.parametrize("variant", ["r2g32", pytest.param("r1g8", marks=pytest.mark.long), pytest.param("r3g32", marks=pytest.mark.long)])
def test_aead(variant):
    from nanobpf.blocksim import run_block
    run_block("aead", variant, "AeadBlock", "test_aead", os.path.dirname(__file__))
