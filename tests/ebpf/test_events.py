"""Events to the host from an XDP program written as for Linux (tests/ctrl/xdp_events_test.c: per frame a
perf event with the frame behind 8 bytes of metadata, BPF_F_CURRENT_CPU | len << 32, and a ring buffer
record of 16 or 256 frame bytes into a 4096-byte ring) on the device's interpreter, its JIT (RV64 under
qemu-riscv64) and the host kernel (BPF_PROG_TEST_RUN; the records read with libbpf's ring_buffer and
perf_buffer through ctypes). Every backend must hand back the same records in the same order, drop the
ring buffer records that find the ring full (-EAGAIN to the program) at the same frame, and keep the
perf records whole. Linux pads a perf record so that its size plus 4 is a multiple of 8: compared on
the bytes the program wrote. The device counts its drops (EVENTS' lost); Linux's ring buffer does not.
Needs `make ebpf-tools`; Linux is skipped where the process cannot load BPF programs."""
import ctypes
import platform
import struct
import subprocess

import pytest

import nanobpf_ebpf_defs as abi
from nanobpf import BUILD, ROOT
from nanobpf.ebpf import device
from nanobpf.pcap import udp_frame

SOURCE = ROOT / "tests/ctrl/xdp_events_test.c"
RING = 4096                                   # rb's max_entries in xdp_events_test.c
SMALL = [64, 90, 128]                         # frames: ring buffer records of 16 bytes
BIG = [300] * 20                              # and of 256 (264 in the ring with the header): 15 fit


def frames(sizes, tag):
    return [udp_frame(bytes((tag + k + i) & 0xFF for i in range(n - 42)), "192.0.2.1", "192.0.2.2", 4433, 443)
            for k, n in enumerate(sizes)]


@pytest.fixture(scope="module")
def obj(tmp_path_factory):
    out = tmp_path_factory.mktemp("events") / "xdp_events_test.o"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-Wall", "-Werror",
                    f"-I/usr/include/{platform.machine()}-linux-gnu", "-c", str(SOURCE), "-o", str(out)], check=True)
    return out


# ---------------------------------------------------------------- the backends
class Device:
    """The device runtime: nanobpf-run --batch, records drained with its events command."""

    def __init__(self, obj, jit):
        ok, why = device.available(jit)
        if not ok:
            pytest.skip(why)
        self.x = device.DeviceXdp(obj, jit=jit)

    def run(self, frame):
        return self.x.run(frame, ingress_ifindex=abi.NANOBPF_IFINDEX_NET)[0]

    def drain(self, name):
        """(records [(index, bytes)], lost)"""
        lost, pending, records = self.x.events(name)
        assert pending == 0
        return records, lost

    def last_rc(self):
        return struct.unpack("<qq", self.x.map_lookup("last_rc", bytes(4)))

    def close(self):
        self.x.close()


_RB_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
_PB_SAMPLE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32)
_PB_LOST = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64)


def _linux_lib():
    """libbpf with the ring buffer's prototypes, or a skip where this process cannot load programs."""
    from nanobpf.ebpf import linux
    ok, why = linux.available()
    if not ok:
        pytest.skip(why)
    from nanobpf.ebpf.loader import _lib
    lib = _lib()
    lib.ring_buffer__new.restype, lib.ring_buffer__new.argtypes = ctypes.c_void_p, [
        ctypes.c_int, _RB_CB, ctypes.c_void_p, ctypes.c_void_p]
    lib.ring_buffer__consume.restype, lib.ring_buffer__consume.argtypes = ctypes.c_int, [ctypes.c_void_p]
    lib.ring_buffer__free.restype, lib.ring_buffer__free.argtypes = None, [ctypes.c_void_p]
    return lib


class Linux:
    """The host kernel: the object loaded by libbpf (LinuxXdp); the ring buffer read with
    ring_buffer__new/consume, the perf event array with perf_buffer__new/consume (libbpf opens a perf
    buffer per CPU and puts it in the map, as a Linux application does)."""

    def __init__(self, obj):
        from nanobpf.ebpf import linux
        self.lib = lib = _linux_lib()
        lib.perf_buffer__new.restype, lib.perf_buffer__new.argtypes = ctypes.c_void_p, [
            ctypes.c_int, ctypes.c_size_t, _PB_SAMPLE, _PB_LOST, ctypes.c_void_p, ctypes.c_void_p]
        lib.perf_buffer__consume.restype, lib.perf_buffer__consume.argtypes = ctypes.c_int, [ctypes.c_void_p]
        lib.perf_buffer__free.restype, lib.perf_buffer__free.argtypes = None, [ctypes.c_void_p]
        self.x = linux.LinuxXdp(obj)
        self.got = {"rb": [], "events": []}
        self.lost = 0
        # the callbacks are kept referenced while libbpf holds them
        self._rb_cb = _RB_CB(lambda ctx, data, size: self.got["rb"].append((0, ctypes.string_at(data, size))) or 0)
        self._pb_cb = _PB_SAMPLE(lambda ctx, cpu, data, size: self.got["events"].append(
            (cpu, ctypes.string_at(data, size))))
        self._lost_cb = _PB_LOST(self._on_lost)
        self.rb = lib.ring_buffer__new(self.x.map_info("rb").fd, self._rb_cb, None, None)
        self.pb = lib.perf_buffer__new(self.x.map_info("events").fd, 8, self._pb_cb, self._lost_cb, None, None)
        assert self.rb and self.pb, "libbpf could not set up the ring buffer or the perf buffers"

    def _on_lost(self, ctx, cpu, count):
        self.lost += count

    def run(self, frame):
        return self.x.run(frame)[0]

    def drain(self, name):
        if name == "rb":
            assert self.lib.ring_buffer__consume(self.rb) >= 0
        else:
            assert self.lib.perf_buffer__consume(self.pb) >= 0
        records, self.got[name] = self.got[name], []
        lost, self.lost = (self.lost, 0) if name == "events" else (0, 0)   # a ring buffer counts nothing
        return records, lost

    def last_rc(self):
        return struct.unpack("<qq", self.x.map_lookup("last_rc", bytes(4)))

    def close(self):
        self.lib.ring_buffer__free(self.rb)
        self.lib.perf_buffer__free(self.pb)
        self.x.close()


BACKENDS = {"interp": lambda o: Device(o, jit=False), "jit": lambda o: Device(o, jit=True), "linux": Linux}


def exchange(backend):
    """What a backend hands back: small frames (drained), then big ones that fill the ring."""
    small, big = frames(SMALL, 1), frames(BIG, 50)
    out = {}
    assert [backend.run(f) for f in small] == [abi.NANOBPF_XDP_DROP] * len(small)
    out["small"] = (backend.drain("rb"), backend.drain("events"), backend.last_rc())
    assert [backend.run(f) for f in big] == [abi.NANOBPF_XDP_DROP] * len(big)
    out["big"] = (backend.drain("rb"), backend.drain("events"), backend.last_rc())
    return small, big, out


def unpad(records, want):
    """Linux perf records cut to the expected lengths, after checking the padding Linux adds is that."""
    out = []
    for (index, data), (_, w) in zip(records, want):
        assert len(data) == ((len(w) + 4 + 7) & ~7) - 4 and data[len(w):] == bytes(len(data) - len(w)), \
            f"a {len(w)}-byte perf record came back as {len(data)} bytes"
        out.append((index, data[:len(w)]))
    return out


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_backend(obj, name):
    """Each backend against what the frames make: the records in frame order, the ring keeping the
    first 15 big records and refusing the rest (-EAGAIN), the perf records each the frame's first 8
    bytes and the frame (all fit: 16 KiB ring on the device, 8 pages per CPU here on Linux)."""
    b = BACKENDS[name](obj)
    try:
        small, big, out = exchange(b)
    finally:
        b.close()
    (rb, rb_lost), (perf, perf_lost), rc = out["small"]
    assert [d for _, d in rb] == [f[:16] for f in small] and rc == (0, 0)
    want = [(0, f[:8] + f) for f in small]
    assert perf_lost == 0 and [d for _, d in (unpad(perf, want) if name == "linux" else perf)] == [d for _, d in want]
    (rb, rb_lost), (perf, perf_lost), rc = out["big"]
    fit = RING // (abi.NANOBPF_EVENT_REC_HDR + 256)
    assert [d for _, d in rb] == [f[:256] for f in big[:fit]]
    assert rc == (-abi.NANOBPF_EAGAIN, 0)                          # the last record did not fit; perf did
    if name != "linux":                                           # the device counts what it dropped
        assert rb_lost == len(big) - fit and all(i == 0 for i, _ in rb + perf)
    want = [(0, f[:8] + f) for f in big]
    assert perf_lost == 0 and [d for _, d in (unpad(perf, want) if name == "linux" else perf)] == [d for _, d in want]


def test_backends_agree(obj):
    """The same records, drops and helper results from the interpreter, the JIT and Linux (Linux's perf
    padding taken off; the record index is each machine's CPU and not compared)."""
    seen = {}
    for name, make in BACKENDS.items():
        try:
            b = make(obj)
        except pytest.skip.Exception:
            continue
        try:
            small, big, out = exchange(b)
        finally:
            b.close()
        if name == "linux":
            for k, frames_ in (("small", small), ("big", big)):
                (rb, _), (perf, pl), rc = out[k]
                out[k] = ((rb, 0), (unpad(perf, [(0, f[:8] + f) for f in frames_]), pl), rc)
        seen[name] = {k: ([d for _, d in rb], [d for _, d in perf], rc) for k, ((rb, _), (perf, _), rc) in out.items()}
    if len(seen) < 2:
        pytest.skip(f"only {', '.join(seen) or 'no backend'} available")
    first = next(iter(seen))
    for name, got in seen.items():
        assert got == seen[first], f"{name} differs from {first}"


# ---------------------------------------------------------------- bpf_ringbuf_reserve/submit/discard
RESERVE = ROOT / "tests/ebpf/compat/xdp_ringbuf_reserve.c"
EVENT = 16                                    # struct event; 24 bytes in the ring with the header


@pytest.fixture(scope="module")
def reserve_obj(tmp_path_factory):
    out = tmp_path_factory.mktemp("reserve") / "xdp_ringbuf_reserve.o"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-Wall", "-Werror",
                    f"-I/usr/include/{platform.machine()}-linux-gnu", "-c", str(RESERVE), "-o", str(out)], check=True)
    return out


def counts(x):
    """The program's counts array (no room, discarded, bad flags not refused)."""
    return [struct.unpack("<Q", x.map_lookup("counts", struct.pack("<I", k)))[0] for k in range(3)]


class ReserveDevice(Device):
    def counts(self):
        return counts(self.x)


class ReserveLinux(Linux):
    def __init__(self, obj):
        from nanobpf.ebpf import linux
        self.lib = lib = _linux_lib()
        self.x = linux.LinuxXdp(obj)
        self.got = {"rb": []}
        self._rb_cb = _RB_CB(lambda ctx, data, size: self.got["rb"].append((0, ctypes.string_at(data, size))) or 0)
        self.rb = lib.ring_buffer__new(self.x.map_info("rb").fd, self._rb_cb, None, None)
        assert self.rb, "libbpf could not set up the ring buffer"
        self.lost = 0

    def counts(self):
        return counts(self.x)

    def close(self):
        self.lib.ring_buffer__free(self.rb)
        self.x.close()


RESERVE_BACKENDS = {"interp": lambda o: ReserveDevice(o, jit=False), "jit": lambda o: ReserveDevice(o, jit=True),
                    "linux": ReserveLinux}


def reserve_exchange(b):
    """Frames of even and odd lengths (drained), then 200 of even length that fill the ring, then 10 more
    after a drain (on the device the ring's end is given up to keep a record contiguous)."""
    first = frames([64, 65, 90, 91, 128], 3)
    fill, after = frames([64 + 2 * (k % 5) for k in range(200)], 9), frames([70] * 10, 20)
    out = []
    for batch in (first, fill, after):
        actions = [b.run(f) for f in batch]
        out.append((actions, [d for _, d in b.drain("rb")[0]], b.counts()))
    return (first, fill, after), out


def event(f):
    return struct.pack("<II", len(f), 0) + f[:8]


@pytest.mark.parametrize("name", sorted(RESERVE_BACKENDS))
def test_ringbuf_reserve_backend(reserve_obj, name):
    """Records in reservation order, odd-length frames discarded (the host never sees them), the ring
    full after 4096 // 24 = 170 records (the rest find no room), bad flags always NULL."""
    b = RESERVE_BACKENDS[name](reserve_obj)
    try:
        (first, fill, after), out = reserve_exchange(b)
    finally:
        b.close()
    fit = 4096 // (abi.NANOBPF_EVENT_REC_HDR + EVENT)
    (a1, r1, c1), (a2, r2, c2), (a3, r3, c3) = out
    assert a1 == [abi.NANOBPF_XDP_PASS if len(f) % 2 == 0 else abi.NANOBPF_XDP_DROP for f in first]
    assert r1 == [event(f) for f in first if len(f) % 2 == 0] and c1 == [0, 2, 0]
    assert r2 == [event(f) for f in fill[:fit]] and c2 == [200 - fit, 2, 0]
    assert r3 == [event(f) for f in after] and c3 == [200 - fit, 2, 0]


def test_ringbuf_reserve_backends_agree(reserve_obj):
    seen = {}
    for name, make in RESERVE_BACKENDS.items():
        try:
            b = make(reserve_obj)
        except pytest.skip.Exception:
            continue
        try:
            seen[name] = reserve_exchange(b)[1]
        finally:
            b.close()
    if len(seen) < 2:
        pytest.skip(f"only {', '.join(seen) or 'no backend'} available")
    first = next(iter(seen))
    for name, got in seen.items():
        assert got == seen[first], f"{name} differs from {first}"
