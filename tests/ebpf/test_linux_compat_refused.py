"""XDP programs people run on Linux that the device cannot run (tests/ebpf/compat/refused/): each
uses one feature the device lacks - AF_XDP sockets (XSKMAP), CPUMAP, bpf_fib_lookup, kfuncs, a
PROG_ARRAY initialised in its declaration, map-in-map. nanobpf-load
must refuse each with a message that names the feature and says why, and Linux must load it (so the
refusal is the device's limit, not a broken program; skipped with the reason where this process
cannot load BPF programs). The programs the device runs: test_linux_compat.py."""
import platform
import subprocess
import sys

import pytest

from nanobpf import BUILD, ROOT
from nanobpf.ebpf import linux

REFUSED = ROOT / "tests/ebpf/compat/refused"
# program: words one of which the refusal must name (case-insensitive)
FEATURES = {
    "xdp_xsk_redirect": ("XSKMAP",),
    "xdp_cpumap_redirect": ("CPUMAP",),
    "xdp_fib_lookup": ("fib_lookup",),
    "xdp_kfunc_dynptr": ("kfunc",),
    "xdp_prog_array_init": ("initialised in its declaration",),
    "xdp_map_in_map": ("map-in-map",),
}
# objects with several XDP programs: the one to load
PROGRAM = {"xdp_prog_array_init": "xdp_root"}


def test_every_program_is_listed():
    assert sorted(p.stem for p in REFUSED.glob("*.c")) == sorted(FEATURES)


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    d = tmp_path_factory.mktemp("refused")
    out = {}
    for name in FEATURES:
        out[name] = d / f"{name}.o"
        subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-Wall", "-Werror",
                        f"-I/usr/include/{platform.machine()}-linux-gnu", f"-I{ROOT}/sw/ebpf/include",
                        f"-I{BUILD}/generated/include", "-c", str(REFUSED / f"{name}.c"), "-o", str(out[name])],
                       check=True)
    return out


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_device_refuses_with_the_feature_named(objects, tmp_path, name):
    img = tmp_path / f"{name}.nbpf"
    choose = ["-p", PROGRAM[name]] if name in PROGRAM else []
    p = subprocess.run([sys.executable, "-m", "nanobpf.ebpf.cli", str(objects[name]), *choose, "-o", str(img)],
                       capture_output=True, text=True)
    assert p.returncode == 1, f"nanobpf-load accepted {name} (status {p.returncode}): {p.stderr}"
    msg = p.stderr.strip()
    assert msg.startswith("nanobpf-load: error: "), msg
    assert any(w.lower() in msg.lower() for w in FEATURES[name]), f"the refusal does not name {FEATURES[name]}: {msg}"
    assert "not supported" in msg or "device" in msg, f"the refusal does not say why: {msg}"
    assert not img.exists()


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_linux_loads_it(objects, name):
    ok, why = linux.available()
    if not ok:
        pytest.skip(f"linux: {why}")
    frame = bytes.fromhex("020000000002020000000001") + b"\x08\x00" + bytes(46)
    with linux.LinuxXdp(objects[name], program=PROGRAM.get(name)) as x:
        action, _ = x.run(frame)
        assert 0 <= action <= 4, action
