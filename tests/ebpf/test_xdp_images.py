"""Interpreter and JIT agree on real XDP programs: every accepted image (examples, benchmark workloads,
the device test program, the verifier's accept corpus) runs over a set of frames through the
interpreter (host) and the JIT (RV64 under qemu-riscv64, plain and RVC), with the frame at an aligned
and at a misaligned address (the JIT's packet accesses must not assume alignment: CVA6 traps on
misaligned loads). The action printed must be the same everywhere. Needs `make ebpf-tools`."""
import subprocess
import sys

import pytest
from scapy.all import ARP, IP, TCP, UDP, Dot1Q, Ether, IPv6

from clang_options import clang_options
from nanobpf import BUILD, ROOT

RUN = BUILD / "ebpf/host/nanobpf-run"
SOURCES = (sorted((ROOT / "sw/ebpf/examples").glob("*.c")) + sorted((ROOT / "sw/ebpf/bench").glob("*.c"))
           + [ROOT / "tests/ebpf/device/xdp_device_test.c", ROOT / "sw/ebpf/quic/xdp_quic_classify.c"]
        + sorted((ROOT / "tests/ebpf/runtime/verifier_corpus").glob("*.c"))
           + sorted((ROOT / "tests/ebpf/verifier").glob("accept_*.c")))
# Their action is made of addresses (a pointer returned, the distance of two objects), which differ
# between the host's interpreter and the JIT under qemu: accepted, not comparable.
ADDRESS_DEPENDENT = {"accept_ptr_returned", "accept_ptr_difference"}
SOURCES = [s for s in SOURCES if s.stem not in ADDRESS_DEPENDENT]


def frames():
    short = bytes([0x41]) + bytes(range(1, 9)) + b"\x00" * 40
    out = [
        Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=50000, dport=443) / short,
        Ether() / IP(src="10.0.0.1", dst="10.0.0.2", ihl=6, options=b"\x01\x01\x01\x00") / UDP(dport=4433) / short,
        Ether() / Dot1Q(vlan=42) / IP() / UDP(dport=53) / (b"d" * 30),
        Ether() / IPv6() / UDP(dport=443) / (bytes([0xc3, 0, 0, 0, 1]) + b"\x00" * 60),
        Ether() / IP() / TCP(dport=80) / (b"t" * 40),
        Ether() / ARP(),
    ]
    raw = [bytes(f) for f in out]
    raw.append(raw[0][:30])  # truncated IPv4
    raw.append(raw[0][:14])  # Ethernet only
    return [r.hex() for r in raw]


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("images")
    out = {}
    for src in SOURCES:
        obj, img = d / (src.stem + ".o"), d / (src.stem + ".nbpf")
        subprocess.run(["clang", "-O2", "-g", "-target", "bpf", *clang_options(src), "-I/usr/include/x86_64-linux-gnu",
                        f"-I{ROOT}/sw/ebpf/include", f"-I{BUILD}/generated/include", "-c", str(src), "-o",
                        str(obj)], check=True)
        subprocess.run([sys.executable, "-m", "nanobpf.ebpf.cli", str(obj), "-o", str(img)], check=True)
        out[src.stem] = img
    return out


def action(img, frame, *opts):
    p = subprocess.run([str(RUN), "--image", str(img), *opts, frame], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip().splitlines()[-1]  # trace_printk lines come first


@pytest.mark.parametrize("name", [s.stem for s in SOURCES])
def test_interpreter_and_jit_agree(images, name):
    assert RUN.exists(), f"{RUN} is not built: run `make ebpf-tools`"
    for frame in frames():
        want = action(images[name], frame)
        assert want in {"0", "1", "2", "3", "4"}, want
        for headroom in ("256", "257", "258"):
            for opts in ([], ["--jit"], ["--jit", "--rvc"]):
                got = action(images[name], frame, "--headroom", headroom, *opts)
                assert got == want, (name, frame, headroom, opts)
