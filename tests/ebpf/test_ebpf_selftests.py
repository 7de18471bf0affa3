"""The eBPF runtime's C test programs: the JIT self-test (hand-written cases and sweeps against the
interpreter, under qemu-riscv64 with and without RVC/Zba/Zbb), the verifier's host tests and its
soundness fuzzer (ASan/UBSan), the map semantics and event ring tests, the sanitised runtime fuzzer in small (`make fuzz`: mutated images and
random programs), and the differential fuzzer (interpreter vs JIT on random valid programs). Needs
`make ebpf-tools`."""
import os
import platform
import subprocess
import sys

import pytest

from nanobpf import BUILD, ROOT

FUZZ = BUILD / "ebpf/rv64/nanobpf-fuzz"


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, **kw)
    return p.returncode, p.stdout + p.stderr


@pytest.mark.parametrize("variant", ["plain", "rvc", "zba-zbb", "rvc-zba-zbb"])
def test_jit_selftest(variant):
    rc, out = run(["sh", "tests/ebpf/runtime/run_jit_selftest.sh", str(BUILD / "ebpf/jit-selftest"), variant])
    assert rc == 0, out
    assert out.count("PASSED") == 1 and f"jit-selftest {variant}: PASSED" in out, out


def test_verifier_unit_tests():
    rc, out = run(["sh", "tests/ebpf/runtime/run_verifier_tests.sh"])
    assert rc == 0, out[-4000:]


def all_passed(out):
    """A C test program's summary: every test it ran passed, and it ran each one it printed."""
    import re
    m = re.search(r"^(\d+)/(\d+) tests passed$", out, re.M)
    return bool(m) and m.group(1) == m.group(2) and int(m.group(2)) == out.count("\nok   ") + out.startswith("ok   ")


def test_map_semantics():
    """LRU eviction, per-CPU hash copies, devmap entries, pinned maps, PROG_ARRAY elements and the tail
    call limit, bpf_csum_diff, bpf_xdp_adjust_meta's limits and the spin lock word updates keep
    (test_maps.c)."""
    rc, out = run(["sh", "tests/ebpf/runtime/run_verifier_tests.sh", "--maps"])
    assert rc == 0, out[-4000:]
    assert all_passed(out) and "prog_array_and_tail_call_limit" in out, out[-2000:]


def test_event_rings():
    """RINGBUF/PERF_EVENT_ARRAY rings (test_events.c): order across wraps, reserved records (order,
    discards, contiguous across wraps), a full ring dropping and
    counting, records above NANOBPF_EVENT_MAX, the helpers' flags and errors, the verifier's map/helper
    pairs, a writer waiting for the ring's lock, cores appending at once."""
    rc, out = run(["sh", "tests/ebpf/runtime/run_verifier_tests.sh", "--events"])
    assert rc == 0, out[-4000:]
    assert all_passed(out) and "reserved_records_in_order" in out, out[-2000:]


def _verified(out):
    """test_verifier --image output: {image: its lines}, without the state bytes (raw copies take more)."""
    import re
    blocks, name = {}, None
    for line in out.splitlines():
        f = line.split()
        if len(f) > 1 and f[0] in ("ok", "REJ"):
            name = f[1]
        if name:
            blocks.setdefault(name, []).append(re.sub(r"state bytes +[0-9]+", "", line))
    return blocks


def test_verifier_raw_pending_copies_change_nothing():
    """Pending branches are raw copies of the state while they take less than PENDING_RAW_MAX and encoded
    beyond it: all encoded (--no-raw-pending), the clang-built corpus and the QUIC programs get the same
    verdicts, explored instructions, stored and pruned states and stack depths."""
    rc, out = run(["sh", "tests/ebpf/runtime/run_verifier_tests.sh", "--corpus"])
    assert rc == 0, out[-4000:]
    imgs = sorted((BUILD / "ebpf/verifier-tests/corpus").glob("*.nbpf"))
    imgs += [p for p in (BUILD / f"firmware/bpf/{n}.nbpf" for n in ("xdp_quic", "xdp_quic_hw", "bench_quic"))
             if p.exists() and p.name not in {i.name for i in imgs}]
    tv = str(BUILD / "ebpf/verifier-tests/test_verifier")
    rc1, raw = run([tv, "--image", *map(str, imgs)])
    rc2, encoded = run([tv, "--no-raw-pending", "--image", *map(str, imgs)])
    assert rc1 == rc2 and len(_verified(raw)) == len(imgs), raw[-2000:]
    assert _verified(raw) == _verified(encoded)


def test_verifier_soundness_fuzz():
    """Random XDP programs; every accepted one runs under ASan on frames of 0..96 bytes ending exactly
    at data_end: an accepted program that touches memory outside the frame or map value fails."""
    rc, out = run(["sh", "tests/ebpf/runtime/run_verifier_tests.sh", "--fuzz", "20000", "11"])
    assert rc == 0, out[-4000:]
    assert "fuzz: 20000 programs" in out, out[-2000:]


def test_sanitised_fuzz_short(tmp_path):
    """`make fuzz` in small: the ASan+UBSan build of the loader, verifier and interpreter fed 20000
    executions (seed 5) of mutated device images (two clang-built examples and the harness's own images)
    and random programs, with no finding; and a sanitizer report (a planted use after free) ends a run
    with a finding, the input saved and a non-zero exit status."""
    rc, out = run(["make", "-s", "-C", "firmware/ebpf", f"O={BUILD}/ebpf", f"GEN={BUILD}/generated", "fuzz-build"])
    assert rc == 0, out[-4000:]
    seeds = []
    for src in ("xdp_parse", "xdp_keytable"):
        obj, img = tmp_path / f"{src}.o", tmp_path / f"{src}.nbpf"
        subprocess.run(["clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{platform.machine()}-linux-gnu",
                        f"-I{ROOT}/sw/ebpf/include", f"-I{BUILD}/generated/include", "-c",
                        str(ROOT / f"sw/ebpf/examples/{src}.c"), "-o", str(obj)], check=True)
        subprocess.run([sys.executable, "-m", "nanobpf.ebpf.cli", str(obj), "-o", str(img)], check=True)
        seeds.append(str(img))
    harness = str(BUILD / "ebpf/fuzz/fuzz_runtime")
    rc, out = run([harness, "--runs", "20000", "--seconds", "120", "--seed", "5", "--out", str(tmp_path), *seeds])
    assert rc == 0, out[-6000:]
    assert "fuzz: 20000 executions" in out and "; 0 findings" in out, out[-2000:]
    assert "(2 given: xdp_parse.nbpf, xdp_keytable.nbpf)" in out, out[-2000:]
    rc, out = run([harness, "--runs", "100", "--seed", "5", "--out", str(tmp_path), "--plant-bug", *seeds])
    assert rc != 0 and "heap-use-after-free" in out and "; 1 findings" in out, out[-4000:]
    saved = sorted(tmp_path.glob("finding-5-*.nbpf"))
    assert saved and "image saved to" in out, out[-2000:]
    rc, out = run([harness, "--replay", str(saved[0]), "--out", str(tmp_path)])  # the saved input replays
    assert "fuzz: 1 executions" in out, out[-2000:]


# (seed, count, length, flags, qemu cpu): every run is reproducible with the same arguments
FUZZ_RUNS = [
    (1, 4000, 64, [], "rv64,zba=false,zbb=false"),
    (100_000, 4000, 64, ["--rvc"], "rv64,zba=false,zbb=false"),
    (200_000, 4000, 64, ["--rvc", "--zba", "--zbb"], "rv64,zba=true,zbb=true"),
    (300_000, 600, 400, [], "rv64,zba=false,zbb=false"),
]


@pytest.mark.parametrize("seed,count,length,flags,cpu", FUZZ_RUNS,
                         ids=lambda v: "-".join(v) or "plain" if isinstance(v, list) else str(v))
def test_fuzz_interpreter_vs_jit(seed, count, length, flags, cpu):
    assert FUZZ.exists(), f"{FUZZ} is not built: run `make ebpf-tools`"
    rc, out = run(["qemu-riscv64", str(FUZZ), "--seed", str(seed), "--count", str(count), "--length", str(length),
                   *flags], env={**os.environ, "QEMU_CPU": cpu})
    assert rc == 0, out[-6000:]
    assert f"{count} programs" in out and "agree" in out, out
