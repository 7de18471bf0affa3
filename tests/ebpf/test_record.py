"""Verification records (firmware/ebpf/record.c): the build host verifies a firmware's built-in program
and the device applies the record instead of verifying again. Applying one must leave the program as
verifying it would (same runs, interpreter and JIT), and anything but the record of that very image is
refused. Needs `make firmware ebpf-tools` (the images are the dpu firmware's)."""
import struct
import subprocess

import pytest

from nanobpf import BUILD
from nanobpf.pcap import udp_frame

RUN = BUILD / "ebpf/host/nanobpf-run"
IMAGES = {p: BUILD / f"firmware/bpf/xdp_{p}.nbpf" for p in ("wire", "quic_hw")}
HEAD = 24  # "NBVR", version, image CRC-32, image size, instructions, functions


def run(*args):
    return subprocess.run([str(RUN), *map(str, args)], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    d = tmp_path_factory.mktemp("records")
    out = {}
    for name, image in IMAGES.items():
        r = run("--image", image, "--write-record", d / f"{name}.nbvr")
        assert r.returncode == 0 and r.stdout.startswith("recorded:"), r.stderr
        out[name] = d / f"{name}.nbvr"
    return out


@pytest.mark.parametrize("name", list(IMAGES))
@pytest.mark.parametrize("jit", [False, True])
def test_a_record_runs_like_verifying(records, name, jit):
    frames = [udp_frame(b"hello" * 20, "10.0.0.1", "10.0.0.2", 5000, 7),
              udp_frame(b"\x40" + bytes(40), "2001:db8::1", "2001:db8::2", 50000, 443)]
    for f in frames:
        mode = ["--jit"] if jit else []
        verified = run(*mode, "--image", IMAGES[name], f.hex())
        recorded = run(*mode, "--image", IMAGES[name], "--record", records[name], f.hex())
        assert verified.returncode == recorded.returncode == 0, (verified.stderr, recorded.stderr)
        assert verified.stdout == recorded.stdout


def test_check_with_a_record(records):
    r = run("--image", IMAGES["quic_hw"], "--record", records["quic_hw"], "--check")
    assert r.returncode == 0 and "from the verification record" in r.stdout


def tampered(blob, how):
    b = bytearray(blob)
    n_funcs = struct.unpack_from("<I", b, 20)[0]
    insns = HEAD + 8 * n_funcs
    n = struct.unpack_from("<I", b, 16)[0]
    if how == "magic":
        b[0] ^= 1
    elif how == "version":
        b[4] = 9
    elif how == "crc":
        b[8] ^= 1
    elif how == "imm":                      # an instruction the verifier never changes: a jump's target
        for i in range(n):
            if b[insns + 8 * i] == 0x05:    # ja
                b[insns + 8 * i + 2] ^= 1
                break
    elif how == "ctx_elsewhere":            # a context load pointed at another field of the runtime context
        for i in range(n):
            code, off = b[insns + 8 * i], struct.unpack_from("<h", b, insns + 8 * i + 2)[0]
            if code == 0x79 and off == 8:   # ldxdw off 8: the verifier's rewrite of xdp_md.data_end
                struct.pack_into("<h", b, insns + 8 * i + 2, 24)   # data_hard_start: in bounds, not that field
                break
        else:
            raise AssertionError("no data_end load in the record")
    elif how == "flags":
        b[insns + 8 * n] = 0x80
    elif how == "truncated":
        del b[-1]
    elif how == "function":
        struct.pack_into("<I", b, HEAD + 4, 8)  # stack depth not a multiple of 16
    elif how == "no_functions":
        struct.pack_into("<I", b, 20, 0)
    return bytes(b)


@pytest.mark.parametrize("how,message", [
    ("magic", "no NBVR header"), ("version", "version 9"), ("crc", "made for another image"),
    ("imm", "instruction differs"), ("ctx_elsewhere", "instruction differs"), ("flags", "unknown instruction flags"), ("truncated", "not what its counts say"),
    ("function", "bad function 0"), ("no_functions", "0 functions")])
def test_a_damaged_record_is_refused(records, tmp_path, how, message):
    bad = tmp_path / "bad.nbvr"
    bad.write_bytes(tampered(records["quic_hw"].read_bytes(), how))
    r = run("--image", IMAGES["quic_hw"], "--record", bad, "--check")
    assert r.returncode == 1 and message in r.stderr, r.stderr


def test_another_images_record_is_refused(records):
    r = run("--image", IMAGES["wire"], "--record", records["quic_hw"], "--check")
    assert r.returncode == 1 and "made for another image" in r.stderr


def test_usage_errors(records, tmp_path):
    assert run("--record", records["wire"], "--check").returncode == 2
    assert run("--image", IMAGES["wire"], "--write-record", tmp_path / "x", "--check").returncode == 2
    r = run("--image", IMAGES["wire"], "--record", tmp_path / "missing")
    assert r.returncode == 2 and "missing" in r.stderr
