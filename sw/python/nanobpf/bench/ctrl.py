"""NanoBPF control-plane benchmark: what each control message costs core 0 of the RTL DPU.

Runs the Verilator DPU with the dpu-ctrl firmware (no built-in program) on TAP devices
(nanobpf.rtldev), talks to it with the host algorithm (nanobpf.ctrl.Client): HELLO, STATS, KEY_ADD,
KEY_UPDATE, KEY_DEL, TABLE_SET, MAP_LOOKUP/UPDATE, and PROG_COMMIT of each program given (loaded in
1024-byte chunks, CRC-checked, verified and JIT-compiled on core 0). The cycles are the firmware's own
count (from the request's first byte read to its response written; PROG_COMMIT also split into CRC,
load, verify, JIT and attach), printed at the end of the run. Writes ctrl.md/.json/.png into --out.
Needs root (TAP devices), `make sim firmware`. Simulated cycles are the figures; the wall-clock time
of a run says only how long the simulation took.
"""
import argparse
import json
import re
import struct
import sys
import time
from pathlib import Path


import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi

from nanobpf import BUILD, ctrl
from nanobpf.ctrl import OPEN, SEAL, Client, key_id
from nanobpf.board import facts
from nanobpf.rtldev import RtlDevice

CLOCK_HZ = facts.load(facts.DEFAULT_BOARD).clocks.core_hz  # the board's core clock (board.toml): cycles -> time
_COMMIT = re.compile(r"dpu: PROG_COMMIT (\S+): (\d+) instructions \((\d+) explored\), CRC (\d+) cycles, load (\d+), "
                     r"verify (\d+) \(static (\d+), explore (\d+); (\d+) states, (\d+) bytes at peak\), "
                     r"JIT (\d+) \((\d+) bytes\), attach (\d+)")
_COMMIT_FIELDS = ("program", "insns", "explored", "crc", "load", "verify", "verify_static", "verify_explore", "states",
                  "state_bytes", "jit", "jit_bytes", "attach")


def keys(cid, fill):
    k = bytes((fill * 7 + i) & 0xFF for i in range(72))
    return struct.pack(abi.STRUCTS["quic_keys"].fmt, 0, 0, cid.cid_len, 0, k[:32], k[32:56], k[56:72], b"")


def run(cores, programs, log, echo=None):
    with RtlDevice(cores=cores, log=echo) as dev:
        # a program commit takes the simulation minutes: retransmissions wait long (they would be
        # answered from the replay cache anyway)
        host = Client(dev.host, retry_ms=3000, retry_max_ms=120_000, retries=30)
        t0 = time.monotonic()
        host.hello()
        for _ in range(4):
            host.stats()
        kids = [key_id(bytes([i + 1]) * (1 + i % 20), dir=OPEN if i % 2 else SEAL) for i in range(16)]
        for i, kid in enumerate(kids):
            host.key_add(kid, keys(kid, i))
        for i, kid in enumerate(kids[:8]):
            host.key_update(kid, keys(kid, 100 + i))
        for kid in kids[8:]:
            host.key_del(kid)
        host.table_set(D.NANOBPF_CTRL_TABLE_PROFILE, 0, 1 | (1 << 1) | (443 << 8))
        host.table_set(D.NANOBPF_CTRL_TABLE_PROFILE, 1, 1 | (1 << 1) | (4433 << 8))
        for path in programs:
            image = Path(path).read_bytes()
            name = Path(path).stem
            log(f"[bench-ctrl] PROG_COMMIT {name} ({len(image)} bytes): verified and compiled on core 0 ...")
            host.prog_load(image, name)
            try:                                          # MAP_NEXT/MAP_LOOKUP over the key table map
                host.map_keys(abi.KEYTABLE_MAP_NAME)
            except ctrl.CtrlError:                        # the program has none
                pass
        wall = time.monotonic() - t0
    commits = [dict(zip(_COMMIT_FIELDS, [m[1]] + [int(x) for x in m.groups()[1:]]))
               for m in (_COMMIT.search(line) for line in dev.lines) if m]
    return dict(cores=cores, costs=dev.ctrl_costs, commits=commits, wall_s=wall, returncode=dev.returncode)


def table(res):
    o = ["# Control plane on core 0: cycles per message", "",
         f"The RTL DPU ({res['cores']} core(s), dpu-ctrl firmware) answering the host algorithm "
         "(nanobpf.ctrl.Client) over TAPs. Cycles counted by core 0 from reading the request to writing "
         f"its response; time at the board's {CLOCK_HZ // 1_000_000} MHz. `n`: messages of that type "
         "(the client's retransmissions, answered from the replay cache, are not among them).", "",
         f"| message | n | mean cycles | max cycles | mean time at {CLOCK_HZ // 1_000_000} MHz |", "|---|---:|---:|---:|---:|"]
    for name, c in res["costs"].items():
        o.append(f"| {name.upper()} | {c['n']} | {c['cycles']:,} | {c['max']:,} | {_t(c['cycles'])} |")
    if res["commits"]:
        o += ["", "PROG_COMMIT, step by step (cycles):", "",
              "| program | insns | explored | CRC | load | verify | of which static passes | verify / explored insn "
              f"| states stored | state bytes at peak | JIT | JIT bytes | attach | total at {CLOCK_HZ // 1_000_000} MHz |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for c in res["commits"]:
            total = c["crc"] + c["load"] + c["verify"] + c["jit"] + c["attach"]
            o.append(f"| {c['program']} | {c['insns']} | {c['explored']:,} | {c['crc']:,} | {c['load']:,} | "
                     f"{c['verify']:,} | {c['verify_static']:,} | {c['verify'] // max(1, c['explored']):,} | "
                     f"{c['states']:,} | {c['state_bytes']:,} | {c['jit']:,} | {c['jit_bytes']:,} | "
                     f"{c['attach']:,} | {_t(total)} |")
    o += ["", f"Simulation wall time {res['wall_s']:.0f} s."]
    return "\n".join(o) + "\n"


def _t(cycles):
    s = cycles / CLOCK_HZ
    return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def plot(res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(res["costs"])
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.bar([n.upper() for n in names], [res["costs"][n]["cycles"] for n in names])
    ax.set_yscale("log")
    ax.set(ylabel="core 0 cycles (mean)", title="control messages on the RTL DPU's core 0")
    ax.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    fig.savefig(path)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="nanobpf-bench-ctrl", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=BUILD / "bench", help="output folder (default build/bench)")
    ap.add_argument("--cores", type=int, default=1, help="cores of the simulated DPU (default 1)")
    ap.add_argument("--program", action="append", default=None, metavar="IMAGE",
                    help="program image to load (repeatable; default build/firmware/bpf/xdp_wire.nbpf)")
    ap.add_argument("--quic", action="store_true",
                    help="also load xdp_quic_hw (its verification on core 0 takes the simulation about 8 minutes)")
    ap.add_argument("-v", "--verbose", action="store_true", help="echo the simulation's console")
    a = ap.parse_args(argv)
    programs = a.program or [str(BUILD / "firmware/bpf/xdp_wire.nbpf")]
    if a.quic:
        programs.append(str(BUILD / "firmware/bpf/xdp_quic_hw.nbpf"))
    for p in programs:
        if not Path(p).exists():
            ap.error(f"{p}: no such image (make firmware)")
    log = lambda m: print(m, flush=True)
    res = run(a.cores, programs, log, echo=log if a.verbose else None)
    if res["returncode"] != 0:
        print(f"nanobpf-bench-ctrl: the simulation ended with code {res['returncode']}", file=sys.stderr)
        return 1
    a.out.mkdir(parents=True, exist_ok=True)
    md = table(res)
    (a.out / "ctrl.md").write_text(md)
    (a.out / "ctrl.json").write_text(json.dumps(res, indent=1) + "\n")
    plot(res, a.out / "ctrl.png")
    print(md, end="")
    print(f"[bench-ctrl] wrote {a.out}/ctrl.md, ctrl.json, ctrl.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
