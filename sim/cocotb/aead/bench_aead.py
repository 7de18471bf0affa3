"""Benchmark workload of the AEAD engine (driven by nanobpf-bench-aead): seal and open of
one QUIC-like packet (21-byte header as AAD) per payload size with the memory port always ready,
then a back-to-back batch from every core. Each result is checked against the model; engine cycles
come from the completion's `cycles` field and the busy_cycles counter. Writes AEAD_BENCH_OUT (JSON)."""
import json
import os
import random

import cocotb

from nanobpf.models import aead
from nanobpf.soc import ENUMS
from test_aead import Bench

SIZES = [16, 64, 512, 1200, 2048]
HDR = 21


@cocotb.test()
async def bench(dut):
    b = Bench(dut, random.Random(9), stall=0.0)
    await b.start()
    rng = b.rng
    await b.set_keys(5, aead.keys_value(rng.randbytes(16), rng.randbytes(12), rng.randbytes(16)))
    rows = []
    for size in SIZES:
        at = 0x1000 + 5  # header and payload unaligned (the payload starts 2 bytes into a word), as in frames
        b.mem[at:at + HDR + size] = rng.randbytes(HDR + size)
        row = {"payload": size}
        pn = rng.randrange(1 << 30)
        for op in ("seal", "open"):
            c = await b.run(0, aead.Request(op, 5, at, HDR, at + HDR, size, pn=pn, id=size))
            assert aead.STATUS_NAME[c["status"]] == "ok"
            row[op] = c["cycles"]
        c = await b.run(0, aead.Request("hp_mask", 5, aad_addr=at + 5, data_addr=0x9000))
        row["hp_mask"] = c["cycles"]
        rows.append(row)
    # back to back: every core fills its queue with 1200-byte seals; busy cycles per request
    cores, per_core = b.params["cores"], b.params["per_core"]
    await b.write("counter_clear", 1)
    n = 0
    model = bytearray(b.mem)
    for core in range(cores):
        for i in range(per_core):
            at = 0x100 + (n % 16) * 0x1000
            req = aead.Request("seal", 5, at, HDR, at + HDR, 1200, pn=n, id=n)
            aead.execute(model, b.keytable, req)
            assert await b.submit(core, req)
            n += 1
    for core in range(cores):
        for i in range(per_core):
            assert aead.STATUS_NAME[(await b.complete(core))["status"]] == "ok"
    assert b.mem == model
    busy = await b.read("counter", ENUMS["aead_counter"]["busy_cycles"])
    blocks = await b.read("counter", ENUMS["aead_counter"]["blocks"])
    out = {"rows": rows, "batch": {"requests": n, "payload": 1200, "busy_cycles": busy, "aes_blocks": blocks},
           "params": b.params}
    with open(os.environ["AEAD_BENCH_OUT"], "w") as f:
        json.dump(out, f, indent=1)
