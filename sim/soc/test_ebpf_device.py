"""eBPF on the CVA6 model: a clang-compiled XDP program loaded, verified and JIT-compiled on the device,
run over frames by the interpreter and the JIT (firmware/apps/ebpf_xdp); and the benchmark workloads
agreeing between native code, interpreter and JIT (firmware/apps/ebpf_bench); QUIC packet protection
sealed and opened the same way by all three (firmware/apps/quic_bench, quick build).

Needs `make test-prereqs` (the 1-core model and the firmware). The benchmark workloads and QUIC runs
take minutes of simulation: make test-long runs them (the JIT's code is checked against the interpreter
under qemu-riscv64 in tests/ebpf, and the QUIC program on the cores in sim/soc/test_datapath.py)."""
import re

import pytest

from nanobpf import sim


def test_xdp_program_on_cva6():
    r = sim.run(1, "ebpf_xdp", max_cycles=20_000_000)
    out = r.lines(0)
    assert r.returncode == 0 and r.bus_errors == 0, r.output
    assert out[-1] == "ebpf_xdp: PASS", r.output
    assert not [line for line in out if line.startswith("FAIL")], r.output
    # the program's own bpf_printk line, through trace_printk to the core's console
    assert any(re.fullmatch(r"xdp_device_test: first packet, \d+ bytes", line) for line in out), r.output
    loaded = next(line for line in out if line.startswith("loaded xdp_device_test:"))
    assert re.search(r", 2 subprograms, JIT \d+ bytes", loaded), loaded  # main + udp_offset, JIT-compiled
    assert sum(line.startswith("ok   jit") for line in out) == 8
    assert sum(line.startswith("ok   interp") for line in out) == 8


@pytest.mark.long
def test_bench_workloads_agree_on_cva6():
    r = sim.run(1, "ebpf_bench", max_cycles=40_000_000)
    assert r.returncode == 0 and r.bus_errors == 0, r.output
    assert r.lines(0)[-1] == "ebpf_bench: PASS", r.output
    modes = {(m["w"], m["mode"]) for m in (re.match(r"BENCH workload=(?P<w>\w+) mode=(?P<mode>\w+)", line)
                                           for line in r.lines(0)) if m}
    assert modes == {(w, m) for w in ("parse", "hash") for m in ("native", "interp", "jit", "jit_rvc")}


@pytest.mark.long
def test_quic_protection_on_cva6():
    """bench_quic (AES-128-GCM and header protection, sw/ebpf/bench/bench_quic.c) verified and
    JIT-compiled on the core, then sealed and opened natively, by the JIT and by the interpreter: the
    same sealed bytes everywhere, the plaintext back, a forged tag dropped (quic_bench-quick). Then
    bench_quic_hw, the same work through the device helpers with keys from the key table: on the
    AEAD engine (frame in packet memory) and in software (frame in main memory), the same bytes."""
    r = sim.run(1, "quic_bench-quick", max_cycles=60_000_000, timeout=1800)
    assert r.returncode == 0 and r.bus_errors == 0, r.output
    out = r.lines(0)
    assert out[-1] == "quic_bench: PASS", r.output
    assert not [line for line in out if line.startswith("FAIL")], r.output
    runs = {(m["size"], m["mode"]) for m in (re.match(r"BENCH workload=quic size=(?P<size>\d+) mode=(?P<mode>\w+)", line)
                                             for line in out) if m}
    assert runs == {(s, m) for s in ("64", "200") for m in ("native", "interp", "jit")}
    # the same work through the device helpers (bench_quic_hw): on the AEAD engine from packet memory,
    # in software from main memory; each sealed to native bench_quic's bytes and opened back
    hw = {(m["size"], m["mode"]) for m in (re.match(r"BENCH workload=quic_hw size=(?P<size>\d+) mode=(?P<mode>\w+)", line)
                                           for line in out) if m}
    assert hw == {(s, m) for s in ("64", "200") for m in ("jit_engine", "jit_aead_sw")}
