"""NanoBPF benchmarks: run each firmware program on the SoC model for each core count, write a table
(bench.md, bench.json) and a plot (bench.png).

Simulated cycles are the figure of merit (deterministic); the model's wall-clock speed is reported
alongside, for information only. Needs the models of every --cores value (`make bench` builds them).
"""
import argparse
import json
import sys
from pathlib import Path

from nanobpf import sim  # the venv's package (make bench runs this with the venv's python)

PROGRAMS = {
    "hello": "boot, wake-up, console and rendezvous of every core",
    "atomics": "AMO/LR-SC checks on core 0, then amoadd and LR/SC increments of shared counters on every core",
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--cores", default="1,2,4", help="comma-separated core counts (default: %(default)s)")
    ap.add_argument("--max-cycles", type=int, default=20_000_000)
    a = ap.parse_args(argv)
    cores = [int(c) for c in a.cores.split(",")]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    rows = []
    for prog in PROGRAMS:
        for n in cores:
            print(f"[bench] {prog} on {n} core(s) ...", flush=True)
            r = sim.run(n, prog, max_cycles=a.max_cycles)
            if r.returncode != 0:
                sys.exit(f"nanobpf-bench: {prog} on {n} core(s) failed ({r.verdict}):\n{r.output[-2000:]}")
            rows.append({"program": prog, "cores": n, "cycles": r.cycles, "wall_s": r.wall_s,
                         "soc_cycles_per_s": r.cycles_per_s, "core_cycles_per_s": r.cycles_per_s * n})

    md = ["# NanoBPF benchmarks", "",
          "Simulated SoC cycles from reset to sim_end (deterministic), and the Verilator model's speed "
          "on this machine (informational).", "",
          "| program | cores | SoC cycles | model speed (SoC cycles/s) | core-cycles/s |", "|---|---:|---:|---:|---:|"]
    for r in rows:
        md.append(f"| {r['program']} | {r['cores']} | {r['cycles']} | {r['soc_cycles_per_s']:.0f} "
                  f"| {r['core_cycles_per_s']:.0f} |")
    md += ["", *[f"- `{p}`: {d}" for p, d in PROGRAMS.items()], ""]
    (out / "bench.md").write_text("\n".join(md))
    (out / "bench.json").write_text(json.dumps(rows, indent=2) + "\n")
    plot(rows, out / "bench.png")
    print("\n".join(md))
    print(f"[bench] wrote {out / 'bench.md'}, {out / 'bench.json'}, {out / 'bench.png'}")


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for prog in PROGRAMS:
        pts = [r for r in rows if r["program"] == prog]
        ax1.plot([r["cores"] for r in pts], [r["cycles"] for r in pts], marker="o", label=prog)
        ax2.plot([r["cores"] for r in pts], [r["core_cycles_per_s"] / 1e3 for r in pts], marker="o", label=prog)
    ax1.set(xlabel="cores", ylabel="simulated SoC cycles (log)", title="Cycles to sim_end", yscale="log")
    ax2.set(xlabel="cores", ylabel="k core-cycles / s", title="Verilator model speed")
    ax2.set_ylim(bottom=0)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend()
        ax.set_xticks(sorted({r["cores"] for r in rows}))
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
