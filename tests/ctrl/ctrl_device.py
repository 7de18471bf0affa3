"""One device fixture for the control-protocol tests: the reference model (nanobpf.devmodel over in-memory
links) or the RTL DPU (nanobpf.rtldev: nanobpf-sim running firmware/apps/dpu, dpu-ctrl, on TAPs). A
test written against `Dev` sees only what a host sees (frames on its host and network ports), so the
same assertions hold for both; where the device may not match the model, the test says so.

Helpers: Raw (hand-made requests), FaultyPort (loss, duplication, reordering on the host's side of
the link, both directions), keys_for, map_req, load_raw, the stand-in program image (xdp_ctrl_test.c),
the events program image (xdp_events_test.c).
"""
import os
import platform
import shutil
import struct
import subprocess
from collections import deque
from pathlib import Path

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
import pytest

from nanobpf import BUILD, ctrl
from nanobpf.ctrl import KeyId, MemoryLink
from nanobpf.devmodel import DeviceModel
from nanobpf.faults import LinkFaults
from nanobpf.ebpf import device

ROOT = Path(__file__).resolve().parents[2]
M = D
# The simulated DPU answers slowly (about 100k cycles/s; a program commit takes 1-2 M cycles): retry
# slowly so that a test does not drown it in retransmissions (they would be answered from the cache).
RTL_RETRY = dict(retry_ms=1500, retry_max_ms=12000, retries=6)
MODEL_RETRY = dict(retry_ms=20, retry_max_ms=640, retries=9)


def rtl_available():
    from nanobpf.rtldev import available
    return available(cores=1, firmware="dpu-ctrl")


class Dev:
    """A device under test: .host and .net ports (the host's ends), .kind, .retry (Client timing)."""

    def __init__(self, kind, cores=1):
        self.kind = kind
        if kind == "model":
            self._links = MemoryLink(), MemoryLink()
            # with PISA, as the RTL DPU: what it parses reaches the program, it drops what it drops
            self.model = DeviceModel(self._links[0].b, self._links[1].b, seed=11, pisa=True).start()
            self.host, self.net = self._links[0].a, self._links[1].a
            self.retry = MODEL_RETRY
        else:
            from nanobpf.rtldev import RtlDevice
            self.rtl = RtlDevice(cores=cores).start()
            self.host, self.net = self.rtl.host, self.rtl.net
            self.retry = RTL_RETRY
        self.answer_s = 0.3 if kind == "model" else 3.0  # how long "no answer" is waited for

    def stop(self):
        if self.kind == "model":
            self.model.stop()
            for link in self._links:
                link.close()
        else:
            return self.rtl.stop()


def device_params(rtl_long=False):
    """The model and the RTL DPU; rtl_long: the RTL run in make test-long only (minutes of simulation)."""
    ok, why = rtl_available()
    marks = [pytest.mark.skipif(not ok, reason=why)] + ([pytest.mark.long] if rtl_long else [])
    return ["model", pytest.param("rtl", marks=marks)]


@pytest.fixture(params=device_params())
def dev(request):
    if not device.available()[0]:
        pytest.skip(device.available()[1])
    d = Dev(request.param)
    yield d
    rc = d.stop()
    if request.param == "rtl":
        assert rc == 0, "\n".join(d.rtl.lines[-30:])


class Raw:
    """Hand-made requests on the host port, for the device's refusals."""

    def __init__(self, port, answer_s=2.0):
        self.port, self.seq, self.epoch, self.answer_s = port, 100, 0, answer_s

    def frame(self, type_, body=b"", seq=None, epoch=None, version=D.VERSION, flags=0, key=None, nonce=None):
        """A request frame (the next sequence number unless seq), protected under key (default: the
        device key; a response's flags need a nonce)."""
        if seq is None:
            self.seq = (self.seq + 1) & 0xFFFFFFFF
            seq = self.seq
        if flags & D.NANOBPF_CTRL_F_RESPONSE and nonce is None:
            nonce = bytes(D.NANOBPF_CTRL_NONCE_LEN)
        return ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, type_, seq, self.epoch if epoch is None else epoch,
                          body, flags=flags, version=version, key=key, nonce=nonce)

    def send(self, type_, body=b"", seq=None, epoch=None, version=D.VERSION, flags=0):
        f = self.frame(type_, body, seq, epoch, version, flags)
        self.port.send(f)
        return D.unpack("ctrl_hdr", f, 14)["seq"]

    def answer(self, timeout=None):
        """The next control frame from the device (other frames are skipped), or None."""
        timeout = 60.0 if timeout is None else timeout
        while True:
            raw = self.port.recv(timeout)
            if raw is None:
                return None
            f = ctrl.parse(raw)
            if f is not None:
                return f

    def ask(self, type_, body=b"", timeout=None, **kw):
        """Send a request and return its response (responses to other requests are skipped); timeout:
        seconds to wait for each control frame (answer's)."""
        seq = self.send(type_, body, **kw)
        while True:
            f = self.answer(timeout)
            assert f is not None, f"no answer to message type {type_} (seq {seq})"
            if (f.hdr["seq"], f.hdr["type"]) == (seq, type_):
                return f

    def hello(self):
        f = self.ask(M.NANOBPF_CTRL_MSG_HELLO, D.pack("hello_req", ver_min=1, ver_max=D.VERSION))
        assert f.hdr["status"] == M.NANOBPF_CTRL_ST_OK
        self.epoch = f.hdr["epoch"]
        return f

    def stats(self):
        f = self.ask(M.NANOBPF_CTRL_MSG_STATS)
        assert status(f) == "ok"
        return stats_of(f.body)


def stats_of(body):
    size = D.STRUCTS["stat_entry"][0].size
    out = {}
    for off in range(0, len(body), size):
        e = D.unpack("stat_entry", body[off:off + size])
        out[D.STAT_NAMES[e["id"]]] = e["value"]
    return out


class FaultyPort(ctrl.Port):
    """The host's end of the link with control frames lost, duplicated and held back behind the next
    one, in both directions, from a seeded RNG (nanobpf.faults: the device model's set_faults, on the
    host's side, so that it applies to any device)."""

    def __init__(self, port, seed, loss=0.0, dup=0.0, reorder=0.0):
        self.port, self.name = port, f"faulty-{port.name}"
        self.faults = LinkFaults(seed=seed)
        self.faults.set(loss, dup, reorder)
        self.inbox = deque()

    def clean(self):
        self.faults.set()

    def fileno(self):
        return self.port.fileno()

    def send(self, frame):
        for f in self.faults.through("out", frame):
            self.port.send(f)

    def recv(self, timeout=None):
        import time
        end = None if timeout is None else time.monotonic() + timeout
        while not self.inbox:
            left = None if end is None else max(0.0, end - time.monotonic())
            raw = self.port.recv(left)
            if raw is None:
                return None
            self.inbox.extend(self.faults.through("in", raw))
        return self.inbox.popleft()


def status(f):
    return D.STATUS_NAMES[f.hdr["status"]]


def keys_for(cid, phase=0, fill=1, nxt=False, flags=None):
    """A struct nanobpf_quic_keys for cid (bytes, or a KeyId; bytes distinct per fill)."""
    k = bytes((fill * 7 + i) & 0xFF for i in range(32))
    iv = bytes((fill * 5 + i) & 0xFF for i in range(24))
    hp = bytes((fill * 3 + i) & 0xFF for i in range(16))
    n = cid.cid_len if isinstance(cid, KeyId) else len(cid)
    return struct.pack(abi.STRUCTS["quic_keys"].fmt, phase, int(nxt) if flags is None else flags, n, 0, k, iv, hp, b"")


def shown(keys):
    """A struct nanobpf_quic_keys as MAP_LOOKUP of the key table answers it: key phase, flags and CID
    length; the keys, IVs and header-protection key zeroed (they never leave the device)."""
    phase, flags, n, res, *_ = struct.unpack(abi.STRUCTS["quic_keys"].fmt, keys)
    return struct.pack(abi.STRUCTS["quic_keys"].fmt, phase, flags, n, res, bytes(32), bytes(24), bytes(16), b"")


def map_req(name, key=b"", value=b"", flags=0, **kw):
    return D.pack("map_req", name=name, flags=flags, key_len=len(key), value_len=len(value), **kw) + key + value


def load_raw(r, image, name="xdp_ctrl_test", crc=None, chunk=D.NANOBPF_CTRL_CHUNK):
    meta = D.pack("prog_begin", total=len(image), crc32=ctrl.crc32(image) if crc is None else crc, name=name)
    assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_BEGIN, meta)) == "ok"
    for off in range(0, len(image), chunk):
        assert status(r.ask(M.NANOBPF_CTRL_MSG_PROG_CHUNK, D.pack("prog_chunk", offset=off) + image[off:off + chunk])) == "ok"
    # the commit verifies and compiles the program on the simulated control core: some millions of
    # cycles, minutes of wall time on a loaded 2-core machine (the simulation runs at ~20-35K cycles/s)
    return r.ask(M.NANOBPF_CTRL_MSG_PROG_COMMIT, meta, timeout=600)


_images = {}


def clang_image(name):
    """tests/ctrl/NAME.c built with clang and made a device image by nanobpf.ebpf.loader (once per run)."""
    if name not in _images:
        if not shutil.which("clang"):
            pytest.skip("clang is not installed")
        from nanobpf.ebpf.loader import load
        out = BUILD / "test/ctrl"
        out.mkdir(parents=True, exist_ok=True)
        obj = out / f"{name}-{os.getpid()}.o"
        subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-Wall", "-Werror",
                        f"-I/usr/include/{platform.machine()}-linux-gnu", f"-I{BUILD / 'generated/include'}",
                        "-c", str(ROOT / f"tests/ctrl/{name}.c"), "-o", str(obj)], check=True)
        _images[name] = load(obj).to_bytes()
        obj.unlink()
    return _images[name]


def stand_in_image():
    """xdp_ctrl_test.c (the QUIC maps, no crypto, behaviour chosen by test_mode[0]) as a device image."""
    return clang_image("xdp_ctrl_test")


def events_image():
    """xdp_events_test.c (a perf event and a ring buffer record per frame, written as for Linux)."""
    return clang_image("xdp_events_test")
