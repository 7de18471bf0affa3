"""The quinn offload crate's own tests (sw/quic-offload, `cargo test`; docs/offload.md "quinn on the offload").

Key derivation against RFC 9001, loopback transfers without a device, and the offload against the
crate's in-process fake device (sealing and opening with the key table values by the device's rules),
with the build `make quinn` makes (same target directory, flags and lock file, so nothing is built
twice). Runs as one pytest test; cargo's output is shown when it fails.
"""
import os
import re
import shutil
import subprocess

import pytest

from nanobpf import BUILD, ROOT

CRATE = ROOT / "sw/quic-offload"


def test_cargo_test():
    if shutil.which("cargo") is None:
        pytest.fail("cargo is missing (make quinn says how to get it)")
    env = dict(os.environ, NANOBPF_GEN=str(BUILD / "generated"), NANOBPF_HOST=str(BUILD / "host"),
               CARGO_TARGET_DIR=str(BUILD / "rust"), RUSTFLAGS="-C target-feature=+crt-static")
    r = subprocess.run(["cargo", "test", "--release", "--locked", "--target", "x86_64-unknown-linux-gnu"],
                       cwd=CRATE, env=env, capture_output=True, text=True, timeout=1800)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    passed = sum(int(n) for n in re.findall(r"test result: ok\. (\d+) passed", out))
    assert passed >= 20, f"only {passed} crate tests ran:\n{out[-3000:]}"
