"""NanoBPF PISA pipeline benchmark: throughput and latency of the RTL (sim/cocotb/pisa/bench_pisa.py,
Verilator, cycle-accurate) for back-to-back frames of each size, to the host through the deparser and
to the cores; then the yosys synth_xilinx utilisation and logic depth of the pipeline
(nanobpf-synth-estimate --depth). Writes pisa.md/.json/.png into --out.

Goal (issue 5): one beat per cycle with zero bubbles at every size; fits 125 MHz on Kintex-7 with a
low logic depth. Needs the emitted blocks (`make hw-blocks`).
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path
from nanobpf import ROOT



def run_sim(variant, beat, frames, out_json):
    from nanobpf.blocksim import run_block
    run_block("pisa", variant, "Pisa", "bench_pisa", str(ROOT / "sim/cocotb/pisa"),
              extra_env={"PISA_BEAT": str(beat), "PISA_BENCH_FRAMES": str(frames), "PISA_BENCH_OUT": str(out_json)})
    return json.loads(Path(out_json).read_text())


def table(rows, synth):
    o = ["# PISA pipeline benchmark", "",
         "Back-to-back frames of one size at full input rate, output always ready; cycles of the RTL "
         "(Verilator). Latency: cycles from the frame's first / last beat taken at the input to its first "
         "beat taken at the output (store and forward: metadata is ready after the last beat).", "",
         "| width | path | frame B | beats/frame | in beats/cycle | out beats/cycle | frames/cycle (ideal) | "
         "bubbles | latency first->first | latency last->first |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        o.append(f"| {8 * r['beat']} bit | {r['path']} | {r['size']} | {r['beats_per_frame']} | "
                 f"{r['in_beats_per_cycle']:.3f} | {r['out_beats_per_cycle']:.3f} | "
                 f"{r['frames_per_cycle']:.4f} ({r['ideal_frames_per_cycle']:.4f}) | {r['bubbles']} | "
                 f"{r['latency_first_beat']:.0f} | {r['latency_last_beat']:.0f} |")
    full = all(r["out_beats_per_cycle"] > 0.999 and r["bubbles"] == 0 for r in rows)
    o += ["", f"Goal one beat per cycle, zero bubbles, every size: **{'met' if full else 'NOT met'}**."]
    if synth:
        o += ["", synth]
    return "\n".join(o) + "\n"


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for beat in sorted({r["beat"] for r in rows}):
        for p in ("to_host", "to_cores"):
            rs = [r for r in rows if r["beat"] == beat and r["path"] == p]
            a.plot([r["size"] for r in rs], [r["out_beats_per_cycle"] for r in rs], "o-", label=f"{8 * beat} bit {p}")
            b.plot([r["size"] for r in rs], [r["latency_last_beat"] for r in rs], "o-", label=f"{8 * beat} bit {p}")
    a.set(xlabel="frame bytes", ylabel="output beats / cycle", ylim=(0, 1.1), title="throughput")
    b.set(xlabel="frame bytes", ylabel="cycles", title="latency: last beat in -> first beat out")
    a.legend(fontsize=8)
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, metavar="DIR", help="where pisa.md/.json/.png go")
    ap.add_argument("--frames", type=int, default=100, help="frames per size (default %(default)s)")
    ap.add_argument("--no-synth", action="store_true", help="skip the yosys utilisation and logic depth")
    a = ap.parse_args(argv)
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for variant, beat in (("w8", 8), ("w16", 16)):
        print(f"[bench-pisa] {8 * beat}-bit pipeline: {a.frames} frames per size", flush=True)
        for r in run_sim(variant, beat, a.frames, out / f"pisa-{variant}.raw.json"):
            rows.append(dict(r, beat=beat))
    synth = None
    if not a.no_synth:
        sdir = ROOT / "build/synth/pisa-w8"
        print("[bench-pisa] yosys synth_xilinx of the 64-bit pipeline (a few minutes)", flush=True)
        subprocess.run([sys.executable, "-m", "nanobpf.board.synth_estimate", "--chisel",
                        str(ROOT / "build/hw/blocks/pisa-w8"), "--top", "Pisa", "--depth", "--out", str(sdir)], check=True)
        synth = (sdir / "utilisation.md").read_text().strip()
    (out / "pisa.json").write_text(json.dumps({"rows": rows, "synth": synth}, indent=1) + "\n")
    text = table(rows, synth)
    (out / "pisa.md").write_text(text)
    plot(rows, out / "pisa.png")
    print(text)
    print(f"[bench-pisa] wrote {out}/pisa.md, pisa.json, pisa.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
