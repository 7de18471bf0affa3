"""The verifier on real clang-compiled programs, through the loader and nanobpf-run --check:
tests/ebpf/verifier/reject_*.c must be refused and accept_*.c, the examples, the benchmark
workloads and the device test program accepted. Where the host kernel lets us load XDP programs
(root, `ip link set dev lo xdpgeneric`), Linux's verifier decides the same objects and must agree,
apart from the differences listed in LINUX_DIFFERS; programs that call NanoBPF device helpers
(DEVICE_ONLY) must be refused by Linux for the unknown helper or for reading PISA's parse result (the
context fields past struct xdp_md). A source's `/* clang: OPTIONS */` line
adds clang options (clang_options.py: -mcpu=v3). Needs `make ebpf-tools`."""
import os
import platform
import re
import shutil
import subprocess
import sys

import pytest

import nanobpf_ebpf_defs as abi
from clang_options import clang_options
from nanobpf import BUILD, ROOT, command

RUN = BUILD / "ebpf/host/nanobpf-run"
LOAD = command("nanobpf-load")
CORPUS = sorted((ROOT / "tests/ebpf/verifier").glob("*.c"))
REAL = (sorted((ROOT / "sw/ebpf/examples").glob("*.c")) + sorted((ROOT / "sw/ebpf/bench").glob("*.c"))
        + [ROOT / "tests/ebpf/device/xdp_device_test.c", ROOT / "sw/ebpf/quic/xdp_quic_classify.c",
           ROOT / "sw/ebpf/quic/xdp_quic.c", ROOT / "sw/ebpf/quic/xdp_quic_hw.c"]
        + sorted((ROOT / "tests/ebpf/runtime/verifier_corpus").glob("*.c")))
# Privileged Linux (CAP_PERFMON) lets programs read uninitialised stack; the device never does.
LINUX_DIFFERS = {"reject_uninitialised_key": "privileged Linux allows uninitialised stack reads",
                 "reject_xdp_store_bytes_uninit": "privileged Linux allows uninitialised stack reads",
                 "reject_keys_global_arg_writable": "Linux has no read-only key table",
                 "reject_global_func_const_write": "Linux does not read const in a global function's prototype",
                 "reject_tail_call_in_subprog": "the device keeps tail calls in a program's own function"}
# Programs calling the device helpers (vendor ids, docs/ebpf-abi.md): Linux has none of them.
DEVICE_ONLY = {"xdp_quic_hw", "accept_quic_helpers", "bench_quic_hw"}
# Why the device refuses these (a substring of its message); the others only need the instruction.
REASONS = {"reject_helper_keys_global_arg": "R1 type=mem expected=map_value of the key table nanobpf_quic_keys",
           "reject_keys_global_arg_writable": "the key table nanobpf_quic_keys is read-only for programs, and "
                                              "argument 1 of the global function",
           "reject_global_func_const_write": "points to read-only memory (a const argument",
           "reject_devmap_write": "the devmap tx_port is read-only for programs (the host sets its ports)",
           "reject_devmap_update": "helper map_update_elem: the devmap tx_port is read-only for programs",
           "reject_redirect_map_array": "helper redirect_map: map ports is not a DEVMAP or DEVMAP_HASH",
           "reject_csum_diff_null_with_size": "R1 is NULL but R2 may be 4 bytes",
           **dict.fromkeys(["reject_jmp32_low_half_beyond", "reject_jmp32_signed_beyond", "reject_jset_bits_beyond",
                            "reject_loop_countdown_beyond"], "invalid access to map value, value_size=64 off=64 size=1"),
           "reject_loop_u32_unbounded": "program too complex",
           "reject_spin_lock_not_released": "bpf_spin_unlock is missing",
           "reject_spin_lock_helper_held": "function calls are not allowed while holding a lock",
           "reject_spin_lock_direct_access": "bpf_spin_lock cannot be accessed directly by load/store",
           "reject_spin_lock_two_locks": "Locking two bpf_spin_locks are not allowed",
           "reject_loop_callback_returns_2": "At callback return the register R0 has value [2, 2]",
           "reject_loop_pointer_left_in_context": "invalid mem access 'scalar'",
           "reject_loop_index_unchecked": "pointer arithmetic with unbounded scalar",
           "reject_meta_no_bounds_check": "invalid access to packet",
           "reject_meta_bound_by_data_end": "invalid access to packet",
           "reject_meta_after_adjust_head": "invalid mem access 'scalar'",
           "reject_ctx_moved_deref": "dereference of modified ctx ptr",
           "reject_ptr_and": "pointer arithmetic with and operator prohibited",
           "reject_tail_call_in_subprog": "bpf_tail_call from a subprogram or global function is not supported",
           "reject_prog_array_lookup": "map jmp_table is a prog array: only bpf_tail_call takes it",
           "reject_ringbuf_not_released": "Unreleased reference",
           "reject_ringbuf_use_after_submit": "invalid mem access 'scalar'",
           "reject_ringbuf_unchecked": "invalid mem access 'mem_or_null'",
           "reject_ringbuf_beyond_record": "invalid access to memory, mem_size=8 off=8 size=8"}


def build(src, tmp_path):
    obj, img = tmp_path / (src.stem + ".o"), tmp_path / (src.stem + ".nbpf")
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", *clang_options(src),
                    f"-I/usr/include/{platform.machine()}-linux-gnu", f"-I{ROOT}/sw/ebpf/include",
                    f"-I{BUILD}/generated/include", "-c", str(src), "-o", str(obj)], check=True)
    p = subprocess.run([LOAD, str(obj), "-o", str(img)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return obj, img


def device_verdict(img):
    assert RUN.exists(), f"{RUN} is not built: run `make ebpf-tools`"
    p = subprocess.run([str(RUN), "--image", str(img), "--check", "00" * 64], capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode == 0, (p.stdout + p.stderr).strip()


def expected(src):
    return not src.stem.startswith("reject_")


@pytest.mark.parametrize("src", CORPUS + REAL, ids=lambda s: s.stem)
def test_device_verifier_decision(src, tmp_path):
    _, img = build(src, tmp_path)
    ok, msg = device_verdict(img)
    assert ok == expected(src), msg
    if not ok:
        assert "nanobpf-run: verifier: insn " in msg, msg  # the rejection names the instruction
        assert REASONS.get(src.stem, "") in msg, msg


@pytest.fixture(scope="module")
def dev():
    """A veth interface of this test process (pytest-xdist workers must not share one; the host
    kernel may lack the dummy driver)."""
    name = f"nbv{os.getpid() % 100000}"
    subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name", f"nbp{os.getpid() % 100000}"],
                   capture_output=True)
    yield name
    subprocess.run(["ip", "link", "del", name], capture_output=True)


def linux_verdict(obj, dev):
    p = subprocess.run(["ip", "link", "set", "dev", dev, "xdpgeneric", "obj", str(obj), "sec", "xdp"],
                       capture_output=True, text=True)
    subprocess.run(["ip", "link", "set", "dev", dev, "xdpgeneric", "off"], capture_output=True)
    return p.returncode == 0, p.stderr


def linux_usable(tmp_path, dev):
    if os.geteuid() != 0 or not shutil.which("ip"):
        return "needs root and iproute2"
    obj, _ = build(ROOT / "sw/ebpf/examples/xdp_pass.c", tmp_path)
    ok, err = linux_verdict(obj, dev)
    return None if ok else f"the host kernel does not load XDP programs here: {err.strip()[-200:]}"


def nanobpf_only_refusal(err):
    """Whether Linux refused a program for what only NanoBPF has: a device helper (an unknown helper id)
    or a read of the context fields past struct xdp_md (PISA's parse result, nanobpf_xdp_ctx.l3_off on)."""
    if "invalid func unknown#" in err:
        return True
    m = re.search(r"invalid bpf_context access off=(\d+)", err)
    return bool(m) and int(m.group(1)) >= dict((f[0], f[1]) for f in abi.STRUCTS["xdp_ctx"].fields)["l3_off"]


@pytest.mark.parametrize("src", CORPUS + REAL, ids=lambda s: s.stem)
def test_linux_verifier_agrees(src, tmp_path, dev):
    why = linux_usable(tmp_path, dev)
    if why:
        pytest.skip(why)
    obj, img = build(src, tmp_path)
    linux_ok, linux_err = linux_verdict(obj, dev)
    ours, msg = device_verdict(img)
    if src.stem in LINUX_DIFFERS:
        assert not ours and linux_ok, (LINUX_DIFFERS[src.stem], msg)
    elif src.stem in DEVICE_ONLY:
        assert ours, msg
        assert not linux_ok and nanobpf_only_refusal(linux_err), linux_err[-1500:]
    else:
        assert ours == linux_ok, f"device: {msg}\nlinux: {linux_err[-1500:]}"
