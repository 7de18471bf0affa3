"""Data-driven eBPF program tests: every tests/ebpf/programs/*.test is assembled, run by nanobpf-run
with the interpreter and with the RV64 JIT (under qemu-riscv64), and r0 compared with the expected
result; plus the nanobpf-run command-line contract.

A .test file has sections (nanobpf.ebpf.asm.parse_test):
    -- asm      the program (or -- raw: instruction bytes in hex)
    -- mem      optional memory contents in hex (r1 points at it, r2 holds its length)
    -- result   expected r0                    or
    -- error    a substring of the error message, exit status 1 (raw mode; run with the interpreter only,
                since the JIT does not bounds-check unverified programs)

NANOBPF_RUN overrides the host nanobpf-run binary (default build/ebpf/host/nanobpf-run); the JIT cases use
its --jit, which runs build/ebpf/rv64/nanobpf-run under qemu-riscv64 (NANOBPF_RUN_RV64 overrides it).
"""
import os
import subprocess
from pathlib import Path

import pytest

from nanobpf import ROOT
from nanobpf.ebpf.asm import assemble, parse_test

PROGRAMS = ROOT / "tests/ebpf/programs"
HOST_RUN = Path(os.environ.get("NANOBPF_RUN", ROOT / "build/ebpf/host/nanobpf-run"))
RV64_RUN = Path(os.environ.get("NANOBPF_RUN_RV64", ROOT / "build/ebpf/rv64/nanobpf-run"))
TIMEOUT = 30

# Ways of running a program: id suffix -> nanobpf-run options.
MODES = {
    "interp": [],
    "jit": ["--jit"],
    "jit-rvc": ["--jit", "--rvc"],
    "jit-rvc-zba-zbb": ["--jit", "--rvc", "--zba", "--zbb"],
}


def _load(path):
    t = parse_test(path.read_text())
    if "raw" in t:
        prog = t["raw"]
    elif "asm" in t:
        prog = assemble(t["asm"])
    else:
        raise AssertionError(f"{path.name}: no -- asm or -- raw section")
    if ("result" in t) == ("error" in t):
        raise AssertionError(f"{path.name}: needs exactly one of -- result and -- error")
    return t, prog


def _cases():
    files = sorted(PROGRAMS.glob("*.test"))
    out = []
    for f in files:
        is_fault = "\n-- error" in "\n" + f.read_text()
        for mode in MODES:
            if is_fault and mode != "interp":
                continue  # the JIT does not bounds-check raw (unverified) programs
            out.append(pytest.param(f, mode, id=f"{f.stem}-{mode}"))
    return out


def _need_tools(mode):
    if not HOST_RUN.exists():
        pytest.fail(f"{HOST_RUN} does not exist: run `make ebpf-tools`")
    if mode != "interp" and not RV64_RUN.exists():
        pytest.fail(f"{RV64_RUN} does not exist (the RV64 JIT build run under qemu-riscv64): run `make ebpf-tools`")


def run_tool(args, stdin, env=None):
    return subprocess.run([str(HOST_RUN), *args], input=stdin, capture_output=True, text=True,
                          timeout=TIMEOUT, env=env)


def test_program_files_exist():
    assert len(list(PROGRAMS.glob("*.test"))) >= 80


@pytest.mark.parametrize("path,mode", _cases())
def test_program(path, mode):
    t, prog = _load(path)
    _need_tools(mode)
    args = list(MODES[mode])
    if t.get("mem"):
        args.append(t["mem"].hex())
    env = dict(os.environ, NANOBPF_RUN_RV64=str(RV64_RUN))
    p = run_tool(args, prog.hex(" "), env)
    where = f"{path.name} ({mode}): rc={p.returncode} stdout={p.stdout.strip()!r} stderr={p.stderr.strip()!r}"
    if "error" in t:
        want = t["error"].strip()
        # rc 1: faulted while running, or refused before running (e.g. a truncated ld_imm64)
        assert p.returncode == 1, f"expected an error containing {want!r}; {where}"
        assert p.stderr.startswith("nanobpf-run: ") and want in p.stderr, f"expected an error containing {want!r}; {where}"
        return
    assert p.returncode == 0, where
    got = int(p.stdout.strip(), 16)
    assert got == t["result"], f"r0 = {got:#x}, expected {t['result']:#x}; {where}"


# ---- nanobpf-run command-line contract ----
EXIT_42 = "b7 00 00 00 2a 00 00 00 95 00 00 00 00 00 00 00"


def test_cli_help():
    _need_tools("interp")
    for opt in ("--help", "-h"):
        p = run_tool([opt], "")
        assert p.returncode == 0, p.stderr
        text = p.stdout.lower()
        assert "r0" in text and "hex" in text and "standard input" in text, p.stdout
        assert "--jit" in p.stdout


def test_cli_runs_and_prints_r0_in_hex():
    _need_tools("interp")
    p = run_tool([], EXIT_42)
    assert (p.returncode, p.stdout.strip()) == (0, "2a"), p.stderr


def test_cli_memory_argument_sets_r1_r2():
    _need_tools("interp")
    # ldxb r0, [r1+2]; add r0, r2; exit  -> 0x33 + 4
    prog = assemble("ldxb r0, [r1+2]\nadd r0, r2\nexit").hex(" ")
    p = run_tool(["11223344"], prog)
    assert (p.returncode, p.stdout.strip()) == (0, f"{0x33 + 4:x}"), p.stderr


def test_cli_bad_hex_on_stdin():
    _need_tools("interp")
    p = run_tool([], "b7 00 00 00 2a 00 00 zz 95 00 00 00 00 00 00 00")
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stderr


def test_cli_odd_hex_digit_count():
    _need_tools("interp")
    p = run_tool([], EXIT_42 + " 0")
    assert p.returncode == 2, (p.stdout, p.stderr)


def test_cli_program_not_a_multiple_of_8():
    _need_tools("interp")
    p = run_tool([], "b7 00 00 00 2a 00 00")
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "7 bytes" in p.stderr


def test_cli_empty_program():
    _need_tools("interp")
    p = run_tool([], "")
    assert p.returncode == 2, (p.stdout, p.stderr)


def test_cli_bad_memory_hex():
    _need_tools("interp")
    p = run_tool(["12xy"], EXIT_42)
    assert p.returncode == 2, (p.stdout, p.stderr)


def test_cli_unknown_option():
    _need_tools("interp")
    p = run_tool(["--no-such-option"], EXIT_42)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "--no-such-option" in p.stderr


def test_cli_fault_exits_1():
    _need_tools("interp")
    p = run_tool([], "71 10 00 00 00 00 00 00 95 00 00 00 00 00 00 00")  # ldxb r0, [r1+0] without memory
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert p.stderr.startswith("nanobpf-run: fault: ")
    assert p.stdout == ""


# ---- one program, every runner (issue 21) ----
def _env():
    return dict(os.environ, NANOBPF_RUN_RV64=str(RV64_RUN))


@pytest.mark.parametrize("mode", ["interp", "jit"])
def test_cli_verified_run_returns_minus_one(mode):
    """A verified run returns r0 = -1 as -1, with the interpreter as with the JIT (the interpreter's
    fault status is not a return value it could be confused with)."""
    _need_tools(mode)
    p = run_tool([*MODES[mode], "--verify", "00" * 14], assemble("mov r0, -1\nexit").hex(" "), _env())
    assert (p.returncode, p.stdout.strip()) == (0, "ffffffffffffffff"), p.stderr


# mov r0, 0; callx (0x8d) with imm 7 (the id of get_prandom_u32); exit
CALLX = "b7 00 00 00 00 00 00 00 8d 00 00 00 07 00 00 00 95 00 00 00 00 00 00 00"


@pytest.mark.parametrize("args", [[], ["--jit"], ["--verify"], ["--jit", "--verify"]],
                         ids=["interp", "jit", "verify", "jit-verify"])
def test_cli_callx_refused_everywhere(args):
    """callx is no opcode of the runtime: the verifier refuses it, the interpreter faults on it in raw mode
    and the JIT refuses to compile it (it used to run as a call of helper `imm`)."""
    _need_tools("jit" if "--jit" in args else "interp")
    p = run_tool(args, CALLX, _env())
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "insn 1: unknown opcode 0x8d" in p.stderr, p.stderr
    assert p.stdout == ""
