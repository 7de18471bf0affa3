"""The evaluation of the design this project follows, reproduced on the netns test bench
(`make bench-paper`, docs/offload.md): two QUIC stacks with the DPU offload against themselves alone
and TCP: aioquic (Python) and quinn (Rust, `nanobpf-quinn`, whose AEAD is a real share of its cost).

1. Transfer throughput through the DPU, no bottleneck: 512 KB, 1 MB, 5 MB and 10 MB; QUIC with the
   offload, QUIC without (the same DPU forwards it untouched), TCP+TLS 1.3 and plain TCP; and the
   server's CPU time per byte for each (what the offload is meant to save).
2. Bandwidth share on a bottleneck (5 Mbit/s, 50 ms RTT, tbf + delay line) shared with a long-running
   iperf3 TCP flow: QUIC's share of the bytes delivered during its transfer, with and without offload.
3. The same bottleneck with the QUIC receive window (max_data, max_stream_data) at 13, 30 and 60 KB.

Each stack runs on a bench of its own (a device model each: one process owns a device's control
session), the variants of a stack interleaved run by run. The DPU is the device model with its native
data path (nanobpf-devmodel --fast, tens of thousands of frames/s: not the bottleneck); --slow-model
takes the Python one. The server's CPU time per byte is its process's own (getrusage over the
connection), so it does not depend on what else shares the machine's two cores with it (the client
and the model); from it, the throughput one host core would sustain: 8 / (ns per byte) Gbit/s.

Every configuration runs `runs` times; tables give medians and min..max, figures plot them
(paper-*.png), results.json keeps every run. Needs root (namespaces), `make firmware` (the program).

    python -m nanobpf.quic.paper --out build/bench/paper [--runs 5] [--quick]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from .. import BUILD, ctrlkey
from ..netbed import CLI_IP, SRV_IP, Bottleneck, Testbed
from .transfer import PORTS

PY = sys.executable
SIZES = [512_000, 1_000_000, 5_000_000, 10_000_000]
QUINN = BUILD / "rust/x86_64-unknown-linux-gnu/release/nanobpf-quinn"     # make quinn
PROGRAM = BUILD / "firmware/bpf/xdp_quic_hw.nbpf"                          # make firmware
QUINN_PORTS = {"quinn-offload": 4435, "quinn": 4436}
STACKS = {"aioquic": ["quic-offload", "quic", "tls", "tcp"], "quinn": ["quinn-offload", "quinn"]}
VARIANTS = STACKS["aioquic"] + STACKS["quinn"]
OFFLOAD_PAIRS = (("quic-offload", "quic"), ("quinn-offload", "quinn"))
SHARE_VARIANTS = {"aioquic": ("quic-offload", "quic"), "quinn": ("quinn-offload", "quinn")}
BUFFERS = [13_000, 30_000, 60_000]
SHARE_SIZE = 2_000_000
IPERF_PORT = 5201        # iperf3's default
CLASSES = (f"quic=udp:{PORTS['quic-offload']},{PORTS['quic']},{QUINN_PORTS['quinn-offload']},{QUINN_PORTS['quinn']}",
           f"iperf=tcp:{IPERF_PORT}",
           f"tcp=tcp:{PORTS['tls']},{PORTS['tcp']}")
PAPER = {   # the figures the paper reports, for the comparison in the tables
    "gain": {512_000: 0.06, 10_000_000: 0.13},
    "share": {"quic": 0.66, "quic-offload": 0.68},
}


class Server:
    def __init__(self, bed, cert_dir, cc="reno"):
        self.proc = bed.popen("srv", [PY, "-m", "nanobpf.quic.transfer", "serve", "--cert-dir", str(cert_dir),
                                      "--dpu", bed.dpu_host_if, "--cc", cc], stdout=subprocess.PIPE, text=True)
        self.lines = []
        import threading
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for x in self.proc.stdout:
            if x.startswith("{"):
                self.lines.append(json.loads(x))

    def wait_ready(self, bed, timeout=120):
        end = time.monotonic() + timeout
        probe = f"import socket,sys; socket.create_connection((sys.argv[1], {PORTS['tcp']}), timeout=1).close()"
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("the transfer server ended")
            if bed.run("cli", [PY, "-c", probe, SRV_IP], check=False).returncode == 0:
                return
            time.sleep(0.5)
        raise RuntimeError("the transfer server did not come up")

    def mark(self, variant):
        return len(self.lines)

    def cpu_report(self, proto, after, timeout=30):
        """The server's CPU report of the next `proto` connection that ended after index `after`."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for x in self.lines[after:]:
                if x.get("proto") == proto and "cpu_s" in x:
                    return x
            time.sleep(0.05)
        return None

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)


class QuinnServer:
    """nanobpf-quinn servers in the server's namespace: one through the DPU (the user-space path on the
    DPU link: the host kernel here cannot load nanobpf.ko), one without; the CPU report of each is its
    own process's."""

    def __init__(self, bed, cert_dir, cid_len=8):
        for f, how in ((QUINN, "make quinn"), (PROGRAM, "make firmware")):
            if not f.exists():
                raise FileNotFoundError(f"{f} is missing ({how})")
        self.procs, self.lines = {}, {}
        import threading
        for v, port in QUINN_PORTS.items():
            off = ["--offload", f"packet:{bed.dpu_host_if}", "--program", str(PROGRAM), "--key-file",
                   str(ctrlkey.key_path())] if v == "quinn-offload" else ["--offload", "none"]
            self.procs[v] = bed.popen("srv", [str(QUINN), "serve", "--listen", f"[::]:{port}", "--cert-dir", str(cert_dir),
                                             "--cid-len", str(cid_len)] + off, stdout=subprocess.PIPE, text=True)
            self.lines[v] = []
            threading.Thread(target=self._read, args=(v,), daemon=True).start()

    def _read(self, v):
        for x in self.procs[v].stdout:
            if x.startswith("{"):
                self.lines[v].append(json.loads(x))

    def wait_ready(self, bed, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for v, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"the {v} server ended ({p.returncode})")
            out = bed.run("srv", ["ss", "-Hnlu"], check=False).stdout
            if all(f":{port} " in out for port in QUINN_PORTS.values()):
                return
            time.sleep(0.2)
        raise RuntimeError("the quinn servers did not come up")

    def mark(self, variant):
        return len(self.lines[variant])

    def cpu_report(self, proto, after, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for x in self.lines[proto][after:]:
                if "cpu_s" in x:
                    return x
            time.sleep(0.05)
        return None

    def stop(self):
        for p in self.procs.values():
            p.terminate()
        for p in self.procs.values():
            p.wait(60)


def _get(bed, proto, size, cert_dir, buffer=None, timeout=900):
    if proto in QUINN_PORTS:
        argv = [str(QUINN), "get", "--host", SRV_IP, "--port", str(QUINN_PORTS[proto]), "--size", str(size),
                "--cert-dir", str(cert_dir)] + (["--window", str(buffer)] if buffer else [])
        r = bed.run("cli", argv, check=False, timeout=timeout)
        try:
            out = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return dict(proto=proto, ok=False, error=r.stderr[-500:])
        return dict(out, proto=proto)
    argv = [PY, "-m", "nanobpf.quic.transfer", "get", "--proto", proto, "--host", SRV_IP, "--size", str(size),
            "--cert-dir", str(cert_dir)] + (["--buffer", str(buffer)] if buffer else [])
    r = bed.run("cli", argv, check=False, timeout=timeout)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return dict(proto=proto, ok=False, error=r.stderr[-500:])


def _progress(msg):
    print(f"[bench-paper] {msg}", flush=True)


def _server(stack, bed, work, cc):
    srv = Server(bed, work, cc) if stack == "aioquic" else QuinnServer(bed, work)
    srv.wait_ready(bed)
    return srv


def throughput(work, runs, sizes, variants, cc="reno", fast=True):
    """Experiment 1: [{variant, size, run, mbit_s, cpu_ns_per_byte}], each stack on a bench of its own."""
    out = []
    total, done = runs * len(sizes) * len(variants), 0
    for stack, members in STACKS.items():
        mine = [v for v in variants if v in members]
        if not mine:
            continue
        with Testbed(dpu="model", workdir=work / f"bed1-{stack}", model_fast=fast) as bed:
            srv = _server(stack, bed, work, cc)
            for run in range(runs):
                for size in sizes:
                    for v in mine:      # interleaved, so slow drifts hit every variant alike
                        mark = srv.mark(v)
                        r = _get(bed, v, size, work)
                        rep = srv.cpu_report(v, mark)
                        done += 1
                        if not r.get("ok"):
                            _progress(f"{v} {size} run {run}: FAILED {r.get('error', r)}")
                            continue
                        row = dict(variant=v, size=size, run=run, seconds=r["seconds"],
                                   mbit_s=8 * size / r["seconds"] / 1e6,
                                   cpu_ns_per_byte=1e9 * rep["cpu_s"] / size if rep else None,
                                   offloaded=rep.get("offloaded") if rep else None)
                        if rep and isinstance(rep.get("offload"), dict):
                            row["offload"] = rep["offload"]
                        out.append(row)
                        _progress(f"[{done}/{total}] {v:13s} {size:>9,d} B: {row['mbit_s']:6.1f} Mbit/s, "
                                  f"{row['cpu_ns_per_byte'] or 0:7.1f} ns/B")
            srv.stop()
    return out


def _iperf_start(bed):
    bed.popen("cli", ["iperf3", "-s", "-1", "-p", str(IPERF_PORT)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return bed.popen("srv", ["iperf3", "-c", CLI_IP, "-p", str(IPERF_PORT), "-t", "86400", "-i", "0"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def share(work, runs, buffers, stacks=("aioquic", "quinn"), size=SHARE_SIZE, rate=5.0, rtt=50.0, cc="reno", fast=True):
    """Experiments 2 and 3: [{variant, buffer, run, share, mbit_s}] (buffer None: the stack's default)."""
    out = []
    total, done = runs * len(buffers) * 2 * len(stacks), 0
    for stack in stacks:
        variants = SHARE_VARIANTS[stack]
        with Testbed(dpu="model", bottleneck=Bottleneck(rate_mbit=rate, rtt_ms=rtt, classes=CLASSES),
                     workdir=work / f"bed2-{stack}", model_fast=fast) as bed:
            srv = _server(stack, bed, work, cc)
            iperf = _iperf_start(bed)
            time.sleep(5)                    # the TCP flow at its steady state
            for run in range(runs):
                for buf in buffers:
                    for v in variants:
                        c0 = bed.wire_counters() or {}
                        r = _get(bed, v, size, work, buffer=buf)
                        c1 = bed.wire_counters() or {}
                        done += 1
                        if not r.get("ok") or iperf.poll() is not None:
                            _progress(f"{v} buffer {buf} run {run}: FAILED {r.get('error', r)}")
                            continue
                        q, t = (c1.get(k, 0) - c0.get(k, 0) for k in ("quic", "iperf"))
                        row = dict(variant=v, buffer=buf, run=run, seconds=r["seconds"], mbit_s=8 * size / r["seconds"] / 1e6,
                                   share=q / (q + t) if q + t else None, iperf_mbit_s=8 * t / r["seconds"] / 1e6,
                                   drops=c1.get("dropped", 0) - c0.get("dropped", 0))
                        out.append(row)
                        _progress(f"[{done}/{total}] {v:13s} buffer {buf or 'default'}: share {row['share'] or 0:.2f}, "
                                  f"QUIC {row['mbit_s']:.2f} Mbit/s, TCP {row['iperf_mbit_s']:.2f} Mbit/s")
            iperf.terminate()
            srv.stop()
    return out


def crypto_cost(packets=20000, payload=1180):
    """What the offload takes off aioquic and what it adds, per byte of a 1-RTT packet, measured in
    this process (CPU time): aioquic's own AEAD + header protection (seal and open, OpenSSL through
    aioquic's C binding), and the offload's host path instead (the unprotected packet kept for the
    seal, the frame with the shim built; the send syscall itself, which both paths make, left out)."""
    import os
    from aioquic.quic.crypto import CryptoPair
    from aioquic.tls import CipherSuite
    from . import offload

    pair = CryptoPair()
    secret = bytes(range(32))
    for ctx in (pair.send, pair.recv):
        ctx.setup(cipher_suite=CipherSuite.AES_128_GCM_SHA256, secret=secret, version=1)
    header, body = bytes([0x41]) + os.urandom(8) + b"\x00\x01", os.urandom(payload)

    def per_byte(fn):
        t0 = time.process_time()
        for pn in range(packets):
            fn(pn)
        return 1e9 * (time.process_time() - t0) / (packets * (len(header) + payload))
    seal_ns = per_byte(lambda pn: pair.send.encrypt_packet(header, body, pn))
    packet = pair.send.encrypt_packet(header, body, 1)      # the number the header carries
    open_ns = per_byte(lambda pn: pair.recv.decrypt_packet(packet, 9, 1))

    class _Tx:
        def sendmsg(self, parts):
            pass
    dpu = offload.Dpu.__new__(offload.Dpu)
    dpu.tx, dpu.ip_id, dpu.counters = _Tx(), 0, __import__("collections").Counter()
    import ipaddress
    r = offload._Route(b"\x02" * 6, "10.77.0.1", "02:00:00:00:00:02", ipaddress.ip_address("10.77.0.2"))
    dpu.routes = {"10.77.0.2": r}
    pending = {}

    def host_path(pn):      # _OffloadPair.encrypt_packet, then the protocol's transmit() for that datagram
        out = header + body + offload._TAG_ROOM
        pending[(len(out), out[:offload.PENDING_KEY])] = 8
        cid_len = pending.pop((len(out), out[:offload.PENDING_KEY]))
        dpu._seal(memoryview(out)[:-offload.TAG_LEN], ("10.77.0.2", 50000), PORTS["quic-offload"], cid_len)
    host_ns = per_byte(host_path)
    out = dict(aioquic_seal_ns_per_byte=seal_ns, aioquic_open_ns_per_byte=open_ns,
               offload_host_path_ns_per_byte=host_ns, packet_bytes=len(header) + payload + 16)
    if QUINN.exists():      # quinn's (rustls with ring: AES-NI where the CPU has it), its own measurement
        r = subprocess.run([str(QUINN), "crypto-cost", "--packets", str(10 * packets)], capture_output=True, text=True)
        if r.returncode == 0:
            q = json.loads(r.stdout)
            out.update(quinn_seal_ns_per_byte=q["seal_ns_per_byte"], quinn_open_ns_per_byte=q["open_ns_per_byte"])
    return out


# ---------------------------------------------------------------- report
def _stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return dict(median=statistics.median(values), lo=min(values), hi=max(values), n=len(values))


def _fmt(s, spec=".1f"):
    return "-" if s is None else f"{s['median']:{spec}} ({s['lo']:{spec}}..{s['hi']:{spec}})"


def report(res, out):
    lines = ["# Paper evaluation on the netns bench", "",
             f"Run {res['date']}, {res['runs']} runs per configuration, aioquic's congestion control "
             f"{res.get('cc', 'reno')}; median (min..max). "
             f"The DPU is the reference device model (nanobpf.devmodel running xdp_quic_hw in the device's "
             f"eBPF runtime, {'its native data path' if res.get('fast_model', True) else 'its Python data path'}); "
             "aioquic and quinn each on a bench of their own; see docs/offload.md for the set-up and why the "
             "numbers differ from the paper's.", ""]
    t = res.get("throughput") or []
    if t:
        present = [v for v in VARIANTS if any(r["variant"] == v for r in t)]
        pairs = [(a, b) for a, b in OFFLOAD_PAIRS if a in present and b in present]
        lines += ["## 1. Throughput through the DPU (Mbit/s)", "",
                  "| size | " + " | ".join(present) + " | " + " | ".join(f"{a} vs {b}" for a, b in pairs) + " | paper |",
                  "|---|" + "---:|" * (len(present) + len(pairs) + 1)]
        for size in sorted({r["size"] for r in t}):
            cells, med = [], {}
            for v in present:
                st = _stats([r["mbit_s"] for r in t if r["size"] == size and r["variant"] == v])
                med[v] = st["median"] if st else None
                cells.append(_fmt(st))
            gains = [f"{med[a] / med[b] - 1:+.0%}" if med.get(a) and med.get(b) else "-" for a, b in pairs]
            paper = PAPER["gain"].get(size)
            lines.append(f"| {size / 1e6:g} MB | " + " | ".join(cells + gains) +
                         f" | {'-' if paper is None else f'+{paper:.0%}'} |")
        lines += ["", "Server CPU time per byte over the whole connection (ns/B), and from it the throughput one "
                  "host core would sustain (Mbit/s = 8000 / ns per byte, medians):", "",
                  "| size | " + " | ".join(present) + " | " + " | ".join(f"{a}: one-core gain" for a, _ in pairs) +
                  " | paper |", "|---|" + "---:|" * (len(present) + len(pairs) + 1)]
        for size in sorted({r["size"] for r in t}):
            cells, med = [], {}
            for v in present:
                st = _stats([r["cpu_ns_per_byte"] for r in t if r["size"] == size and r["variant"] == v])
                med[v] = st["median"] if st else None
                cells.append(_fmt(st) + (f" = {8000 / st['median']:,.0f}" if st and st["median"] else ""))
            # a CPU-bound server's throughput goes as 1 / (CPU per byte): the offload's gain there
            gains = [f"{med[b] / med[a] - 1:+.0%}" if med.get(a) and med.get(b) else "-" for a, b in pairs]
            paper = PAPER["gain"].get(size)
            lines.append(f"| {size / 1e6:g} MB | " + " | ".join(cells + gains) + f" | {'-' if paper is None else f'+{paper:.0%}'} |")
        lines += ["", "(The one-core gain is the offload's gain in the throughput a server bound by one core would "
                  "reach: CPU per byte without it over CPU per byte with it, minus one; the paper's figures are "
                  "its throughput gains.)", ""]
    c = res.get("crypto")
    if c:
        lines += ["## What the offload takes off the stacks (CPU per byte of a 1-RTT packet, measured in-process)", "",
                  f"| aioquic seals (AEAD + header protection) | aioquic opens | the offload's host path instead |",
                  "|---:|---:|---:|",
                  f"| {c['aioquic_seal_ns_per_byte']:.2f} ns/B | {c['aioquic_open_ns_per_byte']:.2f} ns/B | "
                  f"{c['offload_host_path_ns_per_byte']:.2f} ns/B |", "",
                  f"({c['packet_bytes']}-byte packets; the host path keeps the unprotected packet and builds the "
                  "frame with the ENCRYPT shim; the send syscall, made by both paths, is left out.)", ""]
        if "quinn_seal_ns_per_byte" in c:
            lines += [f"quinn (rustls with ring, `nanobpf-quinn crypto-cost`): seals {c['quinn_seal_ns_per_byte']:.2f} ns/B, "
                      f"opens {c['quinn_open_ns_per_byte']:.2f} ns/B; with the offload quinn leaves the packet as it "
                      "is and sends it (no host path of its own beyond the send).", ""]
    for key, title in (("share", "## 2. Bandwidth share against an iperf3 TCP flow (5 Mbit/s, 50 ms RTT)"),
                       ("buffers", "## 3. Bandwidth share by QUIC receive window")):
        rows = res.get(key) or []
        if not rows:
            continue
        lines += [title, "", "| QUIC window | variant | QUIC share | QUIC Mbit/s | TCP Mbit/s | bottleneck drops | paper |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for buf in sorted({r["buffer"] or 0 for r in rows}):
            for v in ("quic-offload", "quic", "quinn-offload", "quinn"):
                sel = [r for r in rows if (r["buffer"] or 0) == buf and r["variant"] == v]
                if not sel:
                    continue
                paper = PAPER["share"].get(v.replace("quinn", "quic")) if key == "share" else None
                lines.append(f"| {buf // 1000 if buf else 'default'}{' KB' if buf else ''} | {v} | "
                             f"{_fmt(_stats([r['share'] for r in sel]), '.2f')} | {_fmt(_stats([r['mbit_s'] for r in sel]), '.2f')} | "
                             f"{_fmt(_stats([r['iperf_mbit_s'] for r in sel]), '.2f')} | "
                             f"{_fmt(_stats([r['drops'] for r in sel]), '.0f')} | {'-' if paper is None else paper} |")
        lines.append("")
    (out / "paper.md").write_text("\n".join(lines) + "\n")
    _plots(res, out)
    return "\n".join(lines)


def _plots(res, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = res.get("throughput") or []
    if t:
        for key, ylabel, name in (("mbit_s", "throughput (Mbit/s)", "paper-throughput.png"),
                                  ("cpu_ns_per_byte", "server CPU time per byte (ns)", "paper-cpu.png")):
            sizes = sorted({r["size"] for r in t})
            present = [v for v in VARIANTS if any(r["variant"] == v for r in t)]
            fig, ax = plt.subplots(figsize=(9, 4.5))
            w = 0.8 / len(present)
            for i, v in enumerate(present):
                st = [_stats([r[key] for r in t if r["size"] == s and r["variant"] == v]) for s in sizes]
                xs = [j + i * w for j in range(len(sizes))]
                med = [s["median"] if s else 0 for s in st]
                err = [[(s["median"] - s["lo"]) if s else 0 for s in st], [(s["hi"] - s["median"]) if s else 0 for s in st]]
                ax.bar(xs, med, w, yerr=err, capsize=3, label=v)
            ax.set_xticks([j + 0.4 - w / 2 for j in range(len(sizes))], [f"{s / 1e6:g} MB" for s in sizes])
            ax.set_ylabel(ylabel)
            ax.set_title(f"Through the DPU (device model), median of {res['runs']} runs, min..max")
            ax.legend()
            fig.tight_layout()
            fig.savefig(out / name, dpi=100)
            plt.close(fig)
    for key, name, title in (("share", "paper-share.png", "QUIC's share against iperf3 TCP (5 Mbit/s, 50 ms)"),
                             ("buffers", "paper-buffers.png", "QUIC's share by receive window")):
        rows = res.get(key) or []
        if not rows:
            continue
        bufs = sorted({r["buffer"] or 0 for r in rows})
        fig, ax = plt.subplots(figsize=(8, 4))
        present = [v for v in ("quic-offload", "quic", "quinn-offload", "quinn") if any(r["variant"] == v for r in rows)]
        w = 0.8 / len(present)
        for i, v in enumerate(present):
            st = [_stats([r["share"] for r in rows if (r["buffer"] or 0) == b and r["variant"] == v]) for b in bufs]
            xs = [j + i * w for j in range(len(bufs))]
            med = [s["median"] if s else 0 for s in st]
            err = [[(s["median"] - s["lo"]) if s else 0 for s in st], [(s["hi"] - s["median"]) if s else 0 for s in st]]
            ax.bar(xs, med, w, yerr=err, capsize=3, label=v)
        ax.set_xticks([j + 0.4 - w / 2 for j in range(len(bufs))], [f"{b // 1000} KB" if b else "default" for b in bufs])
        ax.set_ylim(0, 1)
        ax.set_ylabel("share of delivered bytes")
        ax.set_title(title)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / name, dpi=100)
        plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="nanobpf-bench-paper", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/bench/paper", help="directory for paper.md, results.json and the PNGs")
    ap.add_argument("--runs", type=int, default=5, help="runs per configuration (default 5)")
    ap.add_argument("--quick", action="store_true", help="1 run, the two smallest sizes, one buffer: a smoke run")
    ap.add_argument("--cc", default="reno", choices=["reno", "cubic"], help="aioquic's congestion control at the "
                    "QUIC sender (default reno, aioquic's default; the iperf3 flow is Linux TCP's CUBIC)")
    ap.add_argument("--only", choices=["throughput", "share", "buffers"], action="append",
                    help="run only these experiments (repeatable)")
    ap.add_argument("--stack", choices=list(STACKS), action="append",
                    help="only this QUIC stack's variants (repeatable; default both: aioquic with TCP, quinn)")
    ap.add_argument("--slow-model", action="store_true",
                    help="the device model's Python data path instead of its native one (about 2,000 frames/s)")
    ap.add_argument("--report-only", action="store_true",
                    help="write paper.md and the PNGs again from OUT/results.json (the in-process crypto costs "
                         "measured again when missing), without running the bench")
    a = ap.parse_args(argv)
    if a.runs < 1:
        ap.error("--runs: at least 1")
    out = Path(a.out)
    if a.report_only:
        try:
            res = json.loads((out / "results.json").read_text())
        except (OSError, ValueError) as e:
            ap.error(f"--report-only: {out / 'results.json'}: {e}")
        if "quinn_seal_ns_per_byte" not in res.get("crypto", {}):
            res["crypto"] = dict(res.get("crypto", {}), **{k: v for k, v in crypto_cost().items() if k.startswith("quinn")})
            (out / "results.json").write_text(json.dumps(res, indent=1) + "\n")
        print(report(res, out))
        return 0
    out.mkdir(parents=True, exist_ok=True)
    runs = 1 if a.quick else a.runs
    sizes = SIZES[:2] if a.quick else SIZES
    buffers = BUFFERS[:1] if a.quick else BUFFERS
    only = set(a.only or ["throughput", "share", "buffers"])
    from .capture import self_signed
    self_signed(out)
    stacks = a.stack or list(STACKS)
    variants = [v for st in stacks for v in STACKS[st]]
    fast = not a.slow_model
    res = dict(date=time.strftime("%Y-%m-%d %H:%M"), runs=runs, cc=a.cc, fast_model=fast, stacks=stacks)
    t0 = time.monotonic()
    res["crypto"] = crypto_cost()
    if "throughput" in only:
        _progress(f"experiment 1: {runs} x {len(sizes)} sizes x {len(variants)} variants through the DPU model")
        res["throughput"] = throughput(out, runs, sizes, variants, a.cc, fast)
    if "share" in only:
        _progress(f"experiment 2: {runs} x {2 * len(stacks)} variants against iperf3 on 5 Mbit/s, 50 ms RTT")
        res["share"] = share(out, runs, [None], stacks, cc=a.cc, fast=fast)
    if "buffers" in only:
        _progress(f"experiment 3: {runs} x {len(buffers)} windows x {2 * len(stacks)} variants")
        res["buffers"] = share(out, runs, buffers, stacks, cc=a.cc, fast=fast)
    res["seconds"] = round(time.monotonic() - t0, 1)
    (out / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    print(report(res, out))
    _progress(f"done in {res['seconds']:.0f} s: {out}/paper.md, results.json, paper-*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
