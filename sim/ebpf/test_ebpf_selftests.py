"""The eBPF runtime's C test programs: the JIT self-test (hand-written cases and sweeps against the
interpreter, under qemu-riscv64 with and without RVC/Zba/Zbb), the verifier's host tests and its
soundness fuzzer (ASan/UBSan), and the differential fuzzer (interpreter vs JIT on random valid programs). Needs `make ebpf-tools`."""
import os
import subprocess

import pytest

from nanobpf import BUILD, ROOT

FUZZ = BUILD / "ebpf/rv64/nanobpf-fuzz"


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, **kw)
    return p.returncode, p.stdout + p.stderr


def test_jit_selftest():
    rc, out = run(["sh", "firmware/ebpf/tests/run_jit_selftest.sh", str(BUILD / "ebpf/jit-selftest")])
    assert rc == 0, out
    assert out.count("PASSED") == 4, out


def test_verifier_unit_tests():
    rc, out = run(["sh", "firmware/ebpf/tests/run_verifier_tests.sh"])
    assert rc == 0, out[-4000:]


def test_verifier_soundness_fuzz():
    """Random XDP programs; every accepted one runs under ASan on frames of 0..96 bytes ending exactly
    at data_end: an accepted program that touches memory outside the frame or map value fails."""
    rc, out = run(["sh", "firmware/ebpf/tests/run_verifier_tests.sh", "--fuzz", "20000", "11"])
    assert rc == 0, out[-4000:]
    assert "fuzz: 20000 programs" in out, out[-2000:]


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
