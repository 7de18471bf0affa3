"""NanoBPF DPU benchmark: frames wire to wire through the cycle-accurate model of the SoC (nanobpf-sim
with its Ethernet ports and the data-plane firmware), for several frame sizes and core counts: packets
per second and Gbit/s at the core clock, wire-to-wire latency p50/p99 (cycles from a frame's first
beat in to its last beat out), and core cycles per packet in the program. Writes dpu.md/.json/.png
into --out.

Default workload: `dpu-wire` (tests/ebpf/device/xdp_wire.c: every frame passed onwards), frames
offered back to back on the network port, so what comes out is the datapath's saturation rate with a
light program. `--quic` adds QUIC protection (`dpu-quic_hw`: xdp_quic_hw with the AEAD engine as
helper): one connection, packets of 80..1500 bytes each way through the 4-core DPU (JBSQ), and at
1200 bytes also 1 core and SJBSQ; per packet, the program's cycles for seal and open and how many of
them the core waited for the engine, and warm (the steady state: what a run with twice the packets
adds, see warm_rate). Every run's output is checked against the reference protection.
Needs `make sim CORES=1` and `CORES=4` and `make firmware`.
"""
import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path


from nanobpf import wire
from nanobpf.pcap import udp_frame
from nanobpf.soc import CORE_CLOCK_HZ

SIZES = [64, 256, 512, 1200, 1500]     # Ethernet frame bytes (no FCS)
CORES = [1, 4]                          # SoC cores: 1 = core 0 does everything; 4 = 3 data cores


def frames(size, n):
    """n distinct UDP frames of `size` bytes from the network (xdp_wire passes them to the host)."""
    pay = size - 42
    return [udp_frame(i.to_bytes(4, "big") + bytes(pay - 4), "10.0.0.2", "10.0.0.1", 1000 + i % 50000, 443) for i in range(n)]


def measure(cores, firmware, host, net, tmp):
    times = Path(tmp) / "rx_times.txt"
    d = Path(tmp) / f"{firmware}-{cores}"
    dev = wire.run_sim(cores, firmware, host, net, workdir=d, max_cycles=200_000_000, timeout=3600,
                       extra_args=["--rx-times", str(times)])
    if dev.result.returncode != 0:
        raise SystemExit(f"nanobpf-bench-dpu: {firmware} on {cores} core(s) failed:\n{dev.result.output}")
    rx = {}
    lines = [tuple(int(x) for x in ln.split()) for ln in times.read_text().splitlines() if ln.strip()]
    for port, idx, cyc in lines:
        rx[(port, idx)] = cyc
    # match each output frame to its input by content (xdp_wire passes frames unchanged)
    from nanobpf.pcap import read_pcap
    import nanobpf_soc as soc
    ins = {f: rx[(soc.DATAPATH["net_port"], i)] for i, f in enumerate(net)}
    ns_per_cycle = 1e9 / CORE_CLOCK_HZ
    lat = []
    outs = read_pcap(d / "host-out.pcap")
    for ts, f in outs:
        if f in ins:
            lat.append(round(ts * 1e9 / ns_per_cycle) - ins[f])
    first_in = min(rx.values())
    last_out = round(outs[-1][0] * 1e9 / ns_per_cycle) if outs else first_in
    span = max(1, last_out - first_in)
    cores_stats = [v for k, v in dev.counters.items() if k.startswith("core") and v["packets"]]
    npk = max(1, sum(c["packets"] for c in cores_stats))
    prog = sum(c["cycles"] for c in cores_stats) / npk
    busy = sum(c["busy"] for c in cores_stats) / npk
    pps = len(outs) / (span / CORE_CLOCK_HZ)
    return dict(cores=cores, firmware=firmware, frames_in=len(net) + len(host), frames_out=len(outs),
                dropped_full=dev.counters["pkt"]["drop_full"], span_cycles=span, pps=pps,
                gbps=pps * (len(outs[0][1]) if outs else 0) * 8 / 1e9,
                lat_p50=statistics.median(lat) if lat else 0,
                lat_p99=sorted(lat)[int(0.99 * (len(lat) - 1))] if lat else 0,
                prog_cycles=prog, busy_cycles=busy)


QUIC_SIZES = [80, 256, 512, 1200, 1500]   # protected frame bytes; an 8-byte CID's packet needs 71 at least
QUIC_FRAMES = 16                           # packets each way per run


def measure_quic(cores, firmware, policy, size, tmp, gbps=0.0, packets=QUIC_FRAMES):
    """dpu-quic_hw on one connection (IPv4, 8-byte server CID, zero-length client CID) with `packets`
    packets each way, every protected frame `size` bytes: open (network -> host) and seal (host ->
    network). Output frames are matched to their input by position (the reorder keeps arrival order
    per ingress port; the run checks that every byte is the reference's, gaps for dropped frames).
    gbps: each input port paced at that rate (0: back to back, the DPU saturated). Besides the row,
    "totals" holds the cores' sums (for warm_rate) and "pps_second_half" the rate over the later half
    of the frames out."""
    from nanobpf.quic.workload import workload
    import nanobpf_soc as soc
    w = workload(seed=1, connections=1, packets=packets, frame_size=size)
    d = Path(tmp) / f"{firmware}-{cores}-{size}-{gbps}-{packets}"
    times = d / "bench-rx-times.txt"          # runs go on in parallel: each its own files
    dev = wire.run_sim(cores, firmware, w.host, w.net, workdir=d, max_cycles=200_000_000, timeout=3600, gbps=gbps,
                       extra_args=["--rx-times", str(times)])
    # every frame out must be the reference's, in order; a frame the device dropped (counted) is reported
    def in_order(got, want):
        it = iter(want)
        return all(any(g == x for x in it) for g in got)
    if dev.result.returncode != 0 or not in_order(dev.out["host"], w.expect_host) or not in_order(dev.out["net"], w.expect_net):
        raise SystemExit(f"nanobpf-bench-dpu: {firmware} on {cores} core(s), {size}-byte frames: wrong output\n"
                         f"{dev.result.output}")
    dropped = len(w.expect_host) + len(w.expect_net) - len(dev.out["host"]) - len(dev.out["net"])
    from nanobpf.pcap import read_pcap
    rx = {(p, i): c for p, i, c in (tuple(int(x) for x in ln.split()) for ln in times.read_text().splitlines() if ln.strip())}
    cyc = 1e-9 * CORE_CLOCK_HZ
    lat, last, outs = [], 0, []
    for in_port, out_name, want in ((soc.DATAPATH["net_port"], "host", w.expect_host),
                                    (soc.DATAPATH["host_port"], "net", w.expect_net)):
        k = 0
        for ts, f in read_pcap(d / f"{out_name}-out.pcap"):
            while want[k] != f:          # skip the dropped ones: latency of the frames that went through
                k += 1
            out_cycle = round(ts * 1e9 * cyc)
            lat.append(out_cycle - rx[(in_port, k)])
            last = max(last, out_cycle)
            outs.append(out_cycle)
            k += 1
    outs.sort()
    half = len(outs) // 2
    span = max(1, last - min(rx.values()))
    cs = [v for k, v in dev.counters.items() if k.startswith("core") and v["packets"]]
    tot = {k: sum(c[k] for c in cs) for k in ("packets", "busy", "cycles", "host_packets", "host_cycles", "host_engine",
                                              "net_packets", "net_cycles", "net_engine")}
    n_out = len(dev.out["host"]) + len(dev.out["net"])
    pps = n_out / (span / CORE_CLOCK_HZ)
    return dict(firmware=firmware, cores=cores, policy=policy, size=size, load=f"{gbps:g} Gbit/s per port" if gbps else "saturated",
                frames_in=len(w.host) + len(w.net),
                frames_out=n_out, dropped=dropped, pps=pps, gbps=pps * size * 8 / 1e9, lat_p50=statistics.median(lat),
                lat_p99=sorted(lat)[int(0.99 * (len(lat) - 1))],
                seal_cycles=tot["host_cycles"] / max(1, tot["host_packets"]),
                seal_engine=tot["host_engine"] / max(1, tot["host_packets"]),
                open_cycles=tot["net_cycles"] / max(1, tot["net_packets"]),
                open_engine=tot["net_engine"] / max(1, tot["net_packets"]),
                firmware_cycles=(tot["busy"] - tot["cycles"]) / max(1, tot["packets"]), totals=tot,
                pps_second_half=(len(outs) - half) / (max(1, outs[-1] - outs[half - 1]) / CORE_CLOCK_HZ) if half else 0.0)


def warm_rate(short, long):
    """Per packet in the steady state: the cycles the longer run (more packets each way) took beyond
    the shorter one's, per packet beyond its packets, for seal, open and the firmware around the
    program. What both runs share - each core's first packets, which fetch the code into a cold
    instruction cache (the 16 KB cache holds less than the JIT code and the firmware's hot path), and
    the boot - cancels out. Packets/s: the longer run's rate over its later half of frames out."""
    a, b = short["totals"], long["totals"]
    def per(cyc, pk):
        n = b[pk] - a[pk]
        return (b[cyc] - a[cyc]) / n if n > 0 else float("nan")
    return dict(warm_seal=per("host_cycles", "host_packets"), warm_open=per("net_cycles", "net_packets"),
                warm_firmware=((b["busy"] - b["cycles"]) - (a["busy"] - a["cycles"])) / max(1, b["packets"] - a["packets"]),
                warm_pps=long["pps_second_half"], warm_packets=long["frames_out"])


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    quic = [r for r in rows if r["firmware"] != "dpu-wire"]
    fig, ax = plt.subplots(1, 3 if quic else 2, figsize=(15 if quic else 10, 4))
    for cores in sorted({r["cores"] for r in rows if r["firmware"] == "dpu-wire"}):
        rs = [r for r in rows if r["cores"] == cores and r["firmware"] == "dpu-wire"]
        ax[0].plot([r["size"] for r in rs], [r["gbps"] for r in rs], marker="o", label=f"dpu-wire, {cores} core(s)")
        ax[1].plot([r["size"] for r in rs], [r["lat_p99"] for r in rs], marker="o", label=f"dpu-wire, {cores} core(s)")
    if quic:
        sweep = [r for r in quic if r["cores"] == 4 and r["policy"] == "jbsq" and r.get("load", "saturated") == "saturated"]
        ax[0].plot([r["size"] for r in sweep], [r["gbps"] for r in sweep], marker="s", label="dpu-quic_hw, 4 cores, JBSQ")
        ax[1].plot([r["size"] for r in sweep], [r["lat_p99"] for r in sweep], marker="s", label="dpu-quic_hw, 4 cores, JBSQ")
        xs = range(len(sweep))
        ax[2].bar([x - 0.2 for x in xs], [r["seal_cycles"] for r in sweep], 0.4, label="seal: program")
        ax[2].bar([x - 0.2 for x in xs], [r["seal_engine"] for r in sweep], 0.4, label="of which AEAD engine")
        ax[2].bar([x + 0.2 for x in xs], [r["open_cycles"] for r in sweep], 0.4, label="open: program")
        ax[2].bar([x + 0.2 for x in xs], [r["open_engine"] for r in sweep], 0.4, label="of which AEAD engine")
        if all("warm_seal" in r for r in sweep):
            ax[2].plot([x - 0.2 for x in xs], [r["warm_seal"] for r in sweep], "kv", label="seal, warm (steady state)")
            ax[2].plot([x + 0.2 for x in xs], [r["warm_open"] for r in sweep], "k^", label="open, warm (steady state)")
        ax[2].axhline(1500, color="k", linestyle=":", label="goal at 1200 B")
        ax[2].set_xticks(list(xs), [str(r["size"]) for r in sweep])
        ax[2].set_xlabel("protected frame bytes"), ax[2].set_ylabel("core cycles per packet"), ax[2].legend(fontsize=7)
    ax[0].set_xlabel("frame bytes"), ax[0].set_ylabel(f"Gbit/s at {CORE_CLOCK_HZ / 1e6:.0f} MHz"), ax[0].legend(fontsize=7)
    ax[1].set_xlabel("frame bytes"), ax[1].set_ylabel("p99 latency, cycles"), ax[1].legend(fontsize=7)
    fig.suptitle("DPU wire to wire (cycle-accurate model)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, metavar="DIR", help="where dpu.md/.json/.png go")
    ap.add_argument("--frames", type=int, default=64, help="frames per run (default 64)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="frame sizes, comma separated")
    ap.add_argument("--cores", default=",".join(map(str, CORES)), help="SoC core counts, comma separated")
    ap.add_argument("--jobs", type=int, default=2, help="QUIC runs at once (default 2: one per host core here)")
    ap.add_argument("--no-wire", action="store_true", help="skip the dpu-wire runs")
    ap.add_argument("--quic", action="store_true", help="also QUIC protection with dpu-quic_hw (7 runs and 7 with twice the packets for the warm columns, about 35 minutes)")
    ap.add_argument("--quic-sizes", default=",".join(map(str, QUIC_SIZES)),
                    help="QUIC frame sizes on the 4-core DPU, comma separated (the 1-core and SJBSQ runs come with 1200)")
    ap.add_argument("--no-quic-extra", action="store_true", help="without the 1-core and SJBSQ runs at 1200 bytes")
    ap.add_argument("--half-load", action="store_true",
                    help="also each 4-core JBSQ QUIC size at half the rate it reached saturated (latency under load)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="nanobpf-bench-dpu-") as tmp:
        for cores in ([] if a.no_wire else map(int, a.cores.split(","))):
            for size in map(int, a.sizes.split(",")):
                print(f"[bench-dpu] dpu-wire, {cores} core(s), {a.frames} frames of {size} bytes", flush=True)
                r = measure(cores, "dpu-wire", [], frames(size, a.frames), tmp)
                r["size"] = size
                rows.append(r)
        if a.quic:
            sizes = [int(z) for z in a.quic_sizes.split(",")]
            runs = [(4, "dpu-quic_hw", "jbsq", z) for z in sizes]
            if 1200 in sizes and not a.no_quic_extra:
                runs += [(1, "dpu-quic_hw", "-", 1200), (4, "dpu-quic_hw_sjbsq", "sjbsq", 1200)]
            print(f"[bench-dpu] QUIC: {len(runs)} runs, {a.jobs} at a time (a few minutes each: core 0 JIT-compiles "
                  f"xdp_quic_hw first)", flush=True)
            from concurrent.futures import ProcessPoolExecutor
            with ProcessPoolExecutor(max_workers=a.jobs) as pool:
                futs = [pool.submit(measure_quic, *r, tmp) for r in runs]
                # the same with twice the packets: the steady state is what the second run adds (warm_rate)
                longer = [pool.submit(measure_quic, *r, tmp, 0.0, 2 * QUIC_FRAMES) for r in runs]
                for (cores, fw, policy, size), fut, fut2 in zip(runs, futs, longer):
                    row = fut.result()
                    row.update(warm_rate(row, fut2.result()))
                    rows.append(row)
                    print(f"[bench-dpu] QUIC done: {fw}, {cores} core(s), {size} bytes", flush=True)
                if a.half_load:
                    # each port offered half of what the two ports together got through, per port
                    half = [(r["cores"], r["firmware"], r["policy"], r["size"], tmp, 0.5 * r["pps"] / 2 * r["size"] * 8 / 1e9)
                            for r in rows if r["firmware"] == "dpu-quic_hw" and r["cores"] == 4 and r["load"] == "saturated"]
                    futs = [pool.submit(measure_quic, *h) for h in half]
                    for h, fut in zip(half, futs):
                        rows.append(fut.result())
                        print(f"[bench-dpu] QUIC done at half load: {h[3]} bytes", flush=True)
    for r in rows:
        r.pop("totals", None)
    (out / "dpu.json").write_text(json.dumps(rows, indent=1))
    md = ["| firmware | cores | frame B | frames in/out | dropped (no slot) | packets/s | Gbit/s | latency p50 | p99 (cycles) "
          "| core cycles/packet: program | firmware around it |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["firmware"] == "dpu-wire":
            md.append(f"| {r['firmware']} | {r['cores']} | {r['size']} | {r['frames_in']}/{r['frames_out']} | {r['dropped_full']} | "
                      f"{r['pps']:,.0f} | {r['gbps']:.2f} | {r['lat_p50']:.0f} | {r['lat_p99']:.0f} | {r['prog_cycles']:.0f} | "
                      f"{r['busy_cycles'] - r['prog_cycles']:.0f} |")
    quic = [r for r in rows if r["firmware"] != "dpu-wire"]
    if quic:
        md += ["", "| firmware | cores | select | load | frame B | frames in/out | packets/s | Gbit/s | latency p50 | p99 (cycles) "
               "| seal: program cycles/packet | of which engine | open: program | of which engine | firmware around | dropped "
               "| warm: seal | open | firmware around | packets/s |",
               "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in quic:
            warm = (f"{r['warm_seal']:.0f} | {r['warm_open']:.0f} | {r['warm_firmware']:.0f} | {r['warm_pps']:,.0f}"
                    if "warm_seal" in r else "- | - | - | -")
            md.append(f"| {r['firmware']} | {r['cores']} | {r['policy']} | {r['load']} | {r['size']} | {r['frames_in']}/{r['frames_out']} | "
                      f"{r['pps']:,.0f} | {r['gbps']:.2f} | {r['lat_p50']:.0f} | {r['lat_p99']:.0f} | {r['seal_cycles']:.0f} | "
                      f"{r['seal_engine']:.0f} | {r['open_cycles']:.0f} | {r['open_engine']:.0f} | {r['firmware_cycles']:.0f} | "
                      f"{r['dropped']} | {warm} |")
    (out / "dpu.md").write_text("\n".join(md) + "\n")
    plot(rows, out / "dpu.png")
    print("\n".join(md))
    print(f"[bench-dpu] wrote {out}/dpu.md, dpu.json, dpu.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
