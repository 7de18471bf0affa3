"""NanoBPF AEAD engine benchmark: cycles per request, per 16-byte block and Gbit/s at 125 MHz of the
AES-128-GCM engine RTL (sim/cocotb/aead/bench_aead.py, Verilator, cycle-accurate) for each build
variant (AES rounds per cycle x GHASH bits per cycle), then yosys synth_xilinx LUT/FF/BRAM/DSP of
each variant (nanobpf-synth-estimate). Writes aead.md/.json/.png into --out.

Goal (issue 7): at least 2 Gbit/s of AEAD at 125 MHz (1G full duplex with headroom), area reported.
Needs the emitted blocks (`make hw-blocks`).
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path
from nanobpf import ROOT
import nanobpf_ebpf_defs as abi

VARIANTS = ["r1g8", "r2g32", "r3g32", "r5g64", "r10g128"]
DEFAULT = "r2g32"  # the SoC's build (AeadParams())
CLOCK_HZ = 125e6
GOAL_GBPS = 2.0


def run_sim(variant, out_json):
    from nanobpf.blocksim import run_block
    run_block("aead", variant, "AeadBlock", "bench_aead", str(ROOT / "sim/cocotb/aead"),
              extra_env={"AEAD_BENCH_OUT": str(out_json)})
    return json.loads(Path(out_json).read_text())


def rtl_digest(rtl):
    import hashlib
    h = hashlib.sha256()
    for f in sorted((rtl / "filelist.f").read_text().split()):
        h.update(f.encode() + (rtl / f).read_bytes())
    return h.hexdigest()


def synth(variant):
    """yosys of one variant; reused when the RTL is byte for byte the one synthesised before."""
    sdir = ROOT / "build/synth" / f"aead-{variant}"
    rtl = ROOT / "build/hw/blocks" / f"aead-{variant}"
    digest, cached = rtl_digest(rtl), sdir / "rtl.sha256"
    if cached.exists() and cached.read_text().strip() == digest and (sdir / "depth.json").exists():
        print(f"[bench-aead] {variant}: RTL unchanged since the last synthesis, reusing {sdir}", flush=True)
    else:
        run_yosys(variant, sdir)
        cached.write_text(digest + "\n")
    u = json.loads((sdir / "utilisation.json").read_text())
    u["depth"] = json.loads((sdir / "depth.json").read_text())["logic_depth_cells"]
    return u


def run_yosys(variant, sdir):
    print(f"[bench-aead] {variant}: yosys synth_xilinx (a few minutes)", flush=True)
    subprocess.run([sys.executable, "-m", "nanobpf.board.synth_estimate", "--chisel",
                    str(ROOT / "build/hw/blocks" / f"aead-{variant}"), "--top", "AeadBlock", "--depth", "--out", str(sdir)],
                   check=True, stdout=subprocess.DEVNULL)


def gbps(payload, cycles):
    return 8 * payload / cycles * CLOCK_HZ / 1e9


def summarise(variant, r):
    rows = {x["payload"]: x for x in r["rows"]}
    big, small = rows[2048], rows[64]
    per_block = (big["seal"] - small["seal"]) / ((2048 - 64) / 16)
    b = r["batch"]
    return {"variant": variant, "rounds_per_cycle": r["params"]["rounds_per_cycle"],
            "ghash_bits": r["params"]["ghash_bits"], "rows": r["rows"], "cycles_per_block": per_block,
            "batch_cycles_per_request": b["busy_cycles"] / b["requests"],
            "batch_gbps": gbps(b["payload"], b["busy_cycles"] / b["requests"])}


def table(results):
    o = ["# AEAD engine benchmark", "",
         "AES-128-GCM engine RTL (Verilator), memory port always ready, 21-byte QUIC header as AAD, "
         "payload at an unaligned address. Cycles from the request leaving the queue to its completion "
         "(key fetch, H and E(K, J0), AAD, payload, length block, tag). Gbit/s of payload at 125 MHz.", "",
         "| variant (AES rounds/cycle, GHASH bits/cycle) | payload B | seal cycles | open cycles | seal Gbit/s | "
         "open Gbit/s | hp_mask cycles |", "|---|---:|---:|---:|---:|---:|---:|"]
    for s in results:
        for x in s["rows"]:
            o.append(f"| {s['variant']} ({s['rounds_per_cycle']}, {s['ghash_bits']}) | {x['payload']} | {x['seal']} | "
                     f"{x['open']} | {gbps(x['payload'], x['seal']):.2f} | {gbps(x['payload'], x['open']):.2f} | "
                     f"{x['hp_mask']} |")
    o += ["", "| variant | cycles per 16-byte block (marginal) | back-to-back 1200 B seals: cycles per request | "
          "Gbit/s | LUT | FF | BRAM36 | DSP | logic depth |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in results:
        u = s.get("synth") or {}
        o.append(f"| {s['variant']} | {s['cycles_per_block']:.2f} | {s['batch_cycles_per_request']:.1f} | "
                 f"{s['batch_gbps']:.2f} | {u.get('LUT', '-')} | {u.get('FF', '-')} | {u.get('BRAM36', '-')} | "
                 f"{u.get('DSP', '-')} | {u.get('depth', '-')} |")
    default = next(s for s in results if s["variant"] == DEFAULT)
    met = default["batch_gbps"] >= GOAL_GBPS
    o += ["", f"Goal >= {GOAL_GBPS} Gbit/s at 125 MHz (default build {DEFAULT}, 1200-byte packets back to back): "
          f"**{'met' if met else 'NOT met'}** ({default['batch_gbps']:.2f} Gbit/s). BRAM: the key table storage "
          f"({abi.KEYTABLE['SLOTS']} slots x {abi.STRUCTS['quic_keys'].size} bytes); the packet memory is outside "
          "the block. LUT: the AES S-boxes kept apart (as the board's estimate does, docs/board.md). From 3 rounds per cycle up the one "
          "memory port (two word reads and two word writes per block) limits the payload to 4 cycles a block, "
          "not AES or GHASH. Logic depth: cells on the longest "
          "register-to-register path (yosys `ltp`, LUT/MUXF/CARRY4 each one), an upper bound on LUT levels; "
          "125 MHz timing is not verified (no Vivado)."]
    return "\n".join(o) + "\n"


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for s in results:
        xs = [x["payload"] for x in s["rows"]]
        a.plot(xs, [gbps(x["payload"], x["seal"]) for x in s["rows"]], "o-", label=s["variant"])
    a.axhline(GOAL_GBPS, color="grey", ls="--", label="goal")
    a.set(xlabel="payload bytes", ylabel="Gbit/s at 125 MHz (seal)", title="throughput per packet size")
    a.legend(fontsize=8)
    luts = [(s.get("synth") or {}).get("LUT") for s in results]
    if all(luts):
        b.scatter(luts, [s["batch_gbps"] for s in results])
        for s, l in zip(results, luts):
            b.annotate(s["variant"], (l, s["batch_gbps"]))
        b.axhline(GOAL_GBPS, color="grey", ls="--")
        b.set(xlabel="LUT (yosys synth_xilinx)", ylabel="Gbit/s, 1200 B back to back", title="area vs throughput")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, metavar="DIR", help="where aead.md/.json/.png go")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated build variants (default %(default)s)")
    ap.add_argument("--no-synth", action="store_true", help="skip the yosys utilisation")
    a = ap.parse_args(argv)
    variants = [v for v in a.variants.split(",") if v]
    bad = [v for v in variants if v not in VARIANTS]
    if bad or DEFAULT not in variants:
        ap.error(f"variants must be among {','.join(VARIANTS)} and include {DEFAULT} (the default build)")
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for v in variants:
        print(f"[bench-aead] {v}: simulating seal/open/hp_mask per size and a back-to-back batch", flush=True)
        s = summarise(v, run_sim(v, out / f"aead-{v}.raw.json"))
        if not a.no_synth:
            s["synth"] = synth(v)
        results.append(s)
    (out / "aead.json").write_text(json.dumps(results, indent=1) + "\n")
    text = table(results)
    (out / "aead.md").write_text(text)
    plot(results, out / "aead.png")
    print(text)
    print(f"[bench-aead] wrote {out}/aead.md, aead.json, aead.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
