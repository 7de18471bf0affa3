"""NanoBPF eBPF benchmark: cycles on the CVA6 model for the same workloads as native code (riscv64 gcc
-O2), through the JIT and through the interpreter (firmware/apps/ebpf_bench), and the JIT's RV64
instructions per eBPF instruction by class (nanobpf-run --stats on the same images); then QUIC packet
protection (firmware/apps/quic_bench: sw/ebpf/bench/bench_quic.c sealed and opened at 64, 512 and
1200-byte payloads) with cycles per packet and per byte and the line rate one core reaches at 50 and
100 MHz.

Writes ebpf.md/.json/.png and quic.md/.json/.png into --out. Simulated cycles are the figure of merit.
Needs the 1-core model, the firmware and the host tools (`make bench` builds them).
"""
import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from nanobpf import BUILD, sim

GOAL_JIT_VS_NATIVE = 1.2
IMAGES = ["bench_parse", "bench_hash", "xdp_device_test"]
CLASSES = ["ld", "ldx", "st", "stx", "alu", "jmp", "jmp32", "alu64"]
_BENCH = re.compile(r"BENCH workload=(?P<w>\w+) (?P<rest>.*)")


def parse_bench(lines):
    cycles, meta = {}, {}
    for line in lines:
        m = _BENCH.match(line)
        if not m:
            continue
        kv = dict(item.split("=", 1) for item in m["rest"].split())
        if "mode" in kv:
            cycles[(m["w"], kv["mode"])] = int(kv["cycles"])
            meta.setdefault(m["w"], {})["frames"] = int(kv["frames"])
        else:
            meta.setdefault(m["w"], {}).update({k: int(v) for k, v in kv.items()})
    return cycles, meta


def jit_stats(image, flags):
    run = BUILD / "ebpf/host/nanobpf-run"
    p = subprocess.run([str(run), "--image", str(image), "--stats", *flags], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"nanobpf-bench-ebpf: {run} --stats on {image} failed: {p.stderr.strip()}")
    out = {}
    for line in p.stdout.splitlines()[1:]:
        f = line.split()
        if f[0] == "total_bytes":
            out["bytes"] = int(f[1])
        else:
            out[f[0]] = (int(f[1]), int(f[2]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--max-cycles", type=int, default=40_000_000)
    ap.add_argument("--quic-max-cycles", type=int, default=600_000_000)
    ap.add_argument("--only-quic", action="store_true", help="run only the QUIC benchmark")
    ap.add_argument("--quic-log", metavar="FILE",
                    help="read a saved run of quic_bench (the simulator's output, with its exit summary) instead "
                         "of running it")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if not a.only_quic:
        bench_workloads(a, out)
    bench_quic(a, out)


# QUIC: frame bytes on the wire around a payload of n bytes: Ethernet (14) + IPv4 (20) + UDP (8) + short
# header (1 + 8 + 4) + tag (16), plus preamble, SFD, FCS and inter-frame gap (24) for the line rate
QUIC_OVERHEAD, WIRE_EXTRA = 14 + 20 + 8 + 13 + 16, 24


_VECTOR = re.compile(r"(?P<ok>ok  |FAIL) xdp_quic (?P<name>.+): action (?P<a>-?\d+) \(expected (?P<e>\d+)\), "
                     r"(?P<len>\d+) bytes, (?P<c>\d+) cycles")


def parse_quic(lines):
    meta, rows, xdp = {}, [], {"vectors": []}
    for line in lines:
        v = _VECTOR.match(line)
        if v:
            xdp["vectors"].append({"name": v["name"], "ok": v["ok"] == "ok  ", "cycles": int(v["c"])})
        m = _BENCH.match(line)
        if m and m["w"] == "xdp_quic":
            xdp.update({k: int(x) for k, x in (item.split("=", 1) for item in m["rest"].split())})
        if not m or m["w"] != "quic":
            continue
        kv = dict(item.split("=", 1) for item in m["rest"].split())
        if "mode" in kv:
            rows.append({"size": int(kv["size"]), "mode": kv["mode"], "seal_cycles": int(kv["seal_cycles"]),
                         "open_cycles": int(kv["open_cycles"])})
        else:
            meta.update({k: int(v) for k, v in kv.items()})
    return meta, rows, xdp


def bench_quic(a, out):
    if a.quic_log:
        try:
            text = Path(a.quic_log).read_text()
        except OSError as e:
            sys.exit(f"nanobpf-bench-ebpf: {a.quic_log}: {e.strerror}")
        r = sim.parse(0 if "quic_bench: PASS" in text else 1, text)
    else:
        print("[bench] quic_bench on the 1-core model (about 300M cycles: verification on the core, the "
              "interpreter at 1200 bytes) ...", flush=True)
        r = sim.run(1, "quic_bench", max_cycles=a.quic_max_cycles, timeout=7200)
    if r.returncode != 0:
        sys.exit(f"nanobpf-bench-ebpf: quic_bench failed ({r.verdict}):\n{r.output[-3000:]}")
    meta, rows, xdp = parse_quic(r.lines(0))
    native = {(x["size"], op): x[f"{op}_cycles"] for x in rows if x["mode"] == "native" for op in ("seal", "open")}
    for x in rows:
        n = x["size"]
        wire_bits = 8 * (n + QUIC_OVERHEAD + WIRE_EXTRA)
        for op in ("seal", "open"):
            c = x[f"{op}_cycles"]
            x[f"{op}_cycles_per_byte"] = c / n
            x[f"{op}_vs_native"] = c / native[(n, op)]
            for mhz in (50, 100):
                x[f"{op}_mbps_{mhz}mhz"] = mhz * 1e6 / c * wire_bits / 1e6
    md = ["# QUIC packet protection on CVA6 (one core)", "",
          "sw/ebpf/bench/bench_quic.c: the per-packet work of xdp_quic.c's open and seal (both AES-128 keys "
          "expanded, GHASH table, header-protection mask, AES-128-GCM over the payload, tag) on a 1-RTT "
          "packet with an 8-byte CID and a 4-byte packet number; one C source compiled by clang -target bpf "
          "(JIT, interpreter) and riscv64 gcc -O2 (native). Cycles per packet on the 1-core SoC model (second, "
          "warm pass); every mode seals to the native bytes and opens them back. Line rate: frames of "
          f"payload + {QUIC_OVERHEAD} bytes (+{WIRE_EXTRA} on the wire) one core handles per second.", "",
          f"Program: {meta.get('insns')} eBPF insns; verification on the core: {meta.get('verify_cycles')} cycles "
          f"({meta.get('verify_insns')} insns explored); JIT: {meta.get('jit_cycles')} cycles, "
          f"{meta.get('jit_bytes')} bytes.", "",
          "| payload | mode | seal cycles | open cycles | seal cycles/B | open cycles/B | vs native (open) "
          "| open Mbit/s @50 MHz | open Mbit/s @100 MHz | seal Mbit/s @100 MHz |",
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in rows:
        md.append(f"| {x['size']} | {x['mode']} | {x['seal_cycles']} | {x['open_cycles']} "
                  f"| {x['seal_cycles_per_byte']:.1f} | {x['open_cycles_per_byte']:.1f} | {x['open_vs_native']:.2f}x "
                  f"| {x['open_mbps_50mhz']:.3g} | {x['open_mbps_100mhz']:.3g} | {x['seal_mbps_100mhz']:.3g} |")
    md.append("")
    if xdp["vectors"]:
        md += [f"The whole protection program (sw/ebpf/quic/xdp_quic.c, {xdp.get('insns')} eBPF insns) on the core: "
               f"verification {xdp.get('verify_cycles')} cycles ({xdp.get('verify_insns')} insns explored), JIT "
               f"{xdp.get('jit_cycles')} cycles, {xdp.get('jit_bytes')} bytes of code; RFC 9001 Appendix A "
               "through the JIT (bit-exact output required):", "", "| vector | result | cycles |", "|---|---|---:|"]
        md += [f"| {v['name']} | {'ok' if v['ok'] else 'FAIL'} | {v['cycles']} |" for v in xdp["vectors"]]
        md.append("")
    (out / "quic.md").write_text("\n".join(md))
    (out / "quic.json").write_text(json.dumps({"meta": meta, "rows": rows, "xdp_quic": xdp}, indent=2) + "\n")
    plot_quic(rows, out / "quic.png")
    print("\n".join(md))
    print(f"[bench] wrote {out / 'quic.md'}, {out / 'quic.json'}, {out / 'quic.png'}")


def plot_quic(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for mode in ("native", "jit", "interp"):
        xs = [x for x in rows if x["mode"] == mode]
        ax1.plot([x["size"] for x in xs], [x["open_cycles_per_byte"] for x in xs], "o-", label=f"{mode} open")
        ax1.plot([x["size"] for x in xs], [x["seal_cycles_per_byte"] for x in xs], "x--", label=f"{mode} seal")
        ax2.plot([x["size"] for x in xs], [x["open_mbps_100mhz"] for x in xs], "o-", label=mode)
    ax1.set(xlabel="payload bytes", ylabel="cycles per payload byte (log)", yscale="log",
            title="AES-128-GCM + header protection on CVA6")
    ax2.set(xlabel="payload bytes", ylabel="Mbit/s per core at 100 MHz (log)", yscale="log", title="open, one core")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def bench_workloads(a, out):
    print("[bench] ebpf_bench on the 1-core model ...", flush=True)
    r = sim.run(1, "ebpf_bench", max_cycles=a.max_cycles)
    if r.returncode != 0:
        sys.exit(f"nanobpf-bench-ebpf: ebpf_bench failed ({r.verdict}):\n{r.output[-3000:]}")
    cycles, meta = parse_bench(r.lines(0))
    workloads = sorted(meta)
    rows = []
    for w in workloads:
        n = meta[w]["frames"]
        nat, jit, rvc, itp = (cycles[(w, m)] for m in ("native", "jit", "jit_rvc", "interp"))
        rows.append({"workload": w, "frames": n, "insns": meta[w]["insns"],
                     "native_cycles_per_frame": nat / n, "jit_cycles_per_frame": jit / n,
                     "jit_rvc_cycles_per_frame": rvc / n, "jit_rvc_vs_native": rvc / nat,
                     "rvc_jit_bytes": meta[w]["rvc_jit_bytes"],
                     "interp_cycles_per_frame": itp / n, "jit_vs_native": jit / nat, "interp_vs_jit": itp / jit,
                     "verify_cycles": meta[w]["verify_cycles"], "jit_cycles": meta[w]["jit_cycles"],
                     "jit_bytes": meta[w]["jit_bytes"]})
    stats = {}
    for img in IMAGES:
        path = BUILD / f"firmware/bpf/{img}.nbpf"
        stats[img] = {"rv64imac": jit_stats(path, []), "rvc": jit_stats(path, ["--rvc"]),
                      "rvc+zba+zbb": jit_stats(path, ["--rvc", "--zba", "--zbb"])}

    md = ["# eBPF on CVA6: JIT vs interpreter vs native", "",
          "Cycles per frame on the 1-core SoC model (8 frames of 8 kinds, warm second pass), same C source "
          "compiled by clang -target bpf (JIT, interpreter) and by riscv64 gcc -O2 (native). "
          f"Goal: JIT within {GOAL_JIT_VS_NATIVE}x of native.", "",
          "| workload | eBPF insns | native | JIT | JIT (RVC) | interpreter | JIT / native | JIT (RVC) / native | interpreter / JIT | verify (cycles) | JIT compile (cycles) | JIT bytes (RVC) |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in rows:
        md.append(f"| {x['workload']} | {x['insns']} | {x['native_cycles_per_frame']:.0f} | {x['jit_cycles_per_frame']:.0f} "
                  f"| {x['jit_rvc_cycles_per_frame']:.0f} | {x['interp_cycles_per_frame']:.0f} | {x['jit_vs_native']:.2f}x "
                  f"| {x['jit_rvc_vs_native']:.2f}x | {x['interp_vs_jit']:.1f}x "
                  f"| {x['verify_cycles']} | {x['jit_cycles']} | {x['jit_bytes']} ({x['rvc_jit_bytes']}) |")
    md += ["", "## RV64 instructions emitted per eBPF instruction, by class", "",
           "| program | flags | " + " | ".join(CLASSES) + " | code bytes |", "|---|---|" + "---:|" * (len(CLASSES) + 1)]
    for img, by_flags in stats.items():
        for flags, s in by_flags.items():
            cells = [f"{s[c][1] / s[c][0]:.2f} ({s[c][0]})" if c in s else "-" for c in CLASSES]
            md.append(f"| {img} | {flags} | " + " | ".join(cells) + f" | {s['bytes']} |")
    md += ["", "Cells: RV64 instructions per eBPF instruction (eBPF instructions of that class). "
           "Prologue/epilogue count in the bytes only.", ""]
    (out / "ebpf.md").write_text("\n".join(md))
    (out / "ebpf.json").write_text(json.dumps({"workloads": rows, "jit_stats": stats}, indent=2) + "\n")
    plot(rows, stats, out / "ebpf.png")
    print("\n".join(md))
    print(f"[bench] wrote {out / 'ebpf.md'}, {out / 'ebpf.json'}, {out / 'ebpf.png'}")


def plot(rows, stats, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    modes = [("native", "native_cycles_per_frame"), ("JIT", "jit_cycles_per_frame"),
             ("JIT (RVC)", "jit_rvc_cycles_per_frame"), ("interpreter", "interp_cycles_per_frame")]
    width = 0.2
    for i, (label, key) in enumerate(modes):
        ax1.bar([j + i * width for j in range(len(rows))], [x[key] for x in rows], width, label=label)
    ax1.set_xticks([j + 1.5 * width for j in range(len(rows))], [x["workload"] for x in rows])
    ax1.set(ylabel="cycles per frame (log)", title="CVA6 cycles per frame", yscale="log")
    ax1.legend()
    s = stats["xdp_device_test"]["rv64imac"]
    present = [c for c in CLASSES if c in s]
    ax2.bar(present, [s[c][1] / s[c][0] for c in present])
    ax2.set(ylabel="RV64 insns per eBPF insn", title="JIT expansion by class (xdp_device_test, RV64IMAC)")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
