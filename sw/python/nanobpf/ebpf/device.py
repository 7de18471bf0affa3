"""The device's eBPF runtime as a test oracle: a program loaded, verified and run by the device code
(firmware/ebpf: the same loader, verifier, interpreter and RV64 JIT the cores run), driven through
`nanobpf-run --image IMG --batch -` (docs/ebpf.md). The interface mirrors nanobpf.ebpf.linux.LinuxXdp,
so one test can run the same frames through Linux and through the device and compare:

    with DeviceXdp("xdp_quic.o", jit=True) as d:        # or an image (.nbpf); jit under qemu-riscv64
        d.map_update("quic_config", b"\\0" * 4, value)
        action, frame = d.run(frame, ingress_ifindex=1)
        d.map_items("quic_stats"), d.map_by_suffix(".bss")

An object is made into an image by nanobpf.ebpf.loader.load (program=/section= choose the program,
map_sizes= sets max_entries as `nanobpf-load --map-size` does).

The host build of the runtime has one CPU: a per-CPU map entry has one value. Needs `make ebpf-tools`.
"""
import shutil
import struct
import subprocess
import tempfile
from collections import namedtuple
from pathlib import Path

import nanobpf_ebpf_defs as abi

from .. import BUILD
from .loader import load

RUN = BUILD / "ebpf/host/nanobpf-run"
RUN_RV64 = BUILD / "ebpf/rv64/nanobpf-run"
# the host runtime with libcrypto's AES-128(-GCM) (firmware/ebpf/aead_openssl.c): the device model's
# native data path (nanobpf-run --serve, nanobpf.devmodel fast=True)
RUN_FAST = BUILD / "ebpf/host-fast/nanobpf-run"

__all__ = ["DeviceError", "DeviceXdp", "available"]


class DeviceError(RuntimeError):
    """The runtime refused the program (verifier), a command, or stopped."""


PERCPU_MAP_TYPES = frozenset({abi.NANOBPF_MAP_TYPE_PERCPU_HASH, abi.NANOBPF_MAP_TYPE_PERCPU_ARRAY,
                              abi.NANOBPF_MAP_TYPE_LRU_PERCPU_HASH})


class MapInfo(namedtuple("MapInfo", "name type key_size value_size max_entries")):
    @property
    def percpu(self):
        return self.type in PERCPU_MAP_TYPES


def available(jit=False):
    """(True, "") when the runner (and for jit: its RV64 build and qemu-riscv64) exists, else (False, why)."""
    if not RUN.exists():
        return False, f"{RUN} is not built (make ebpf-tools)"
    if jit and not RUN_RV64.exists():
        return False, f"{RUN_RV64} is not built (make ebpf-tools)"
    if jit and not shutil.which("qemu-riscv64"):
        return False, "qemu-riscv64 is not installed"
    return True, ""


class DeviceXdp:
    """One XDP program in the device runtime (interpreter, or the JIT's RV64 code under qemu-riscv64)."""

    def __init__(self, path, program=None, jit=False, headroom=256, section=None, map_sizes=None, serve=None):
        """serve: (host fd, network fd or -1, up fd, max_frame, stats map) makes the runtime the device
        model's native data path too (nanobpf-run --serve with RUN_FAST; nanobpf.devmodel fast=True)."""
        ok, why = available(jit)
        if not ok:
            raise DeviceError(why)
        if serve is not None and (jit or not RUN_FAST.exists()):
            raise DeviceError("the native data path needs the interpreter and " +
                              (f"{RUN_FAST} (make ebpf-tools)" if not RUN_FAST.exists() else "no --jit"))
        self.path, self.jit = Path(path), jit
        self._tmp = None
        if self.path.suffix == ".o":
            self._tmp = tempfile.TemporaryDirectory(prefix="nanobpf-dev-")
            image = load(self.path, program, section=section, map_sizes=map_sizes)
            img_path = Path(self._tmp.name) / (self.path.stem + ".nbpf")
            img_path.write_bytes(image.to_bytes())
        else:
            from .loader import parse_image
            image = parse_image(self.path.read_bytes())
            img_path = self.path
        self.program = image.name
        self.programs = list(image.programs or [image.name])
        self._maps = {m.name: MapInfo(m.name, m.type, m.key_size, m.value_size, m.max_entries) for m in image.maps}
        args = [str(RUN_FAST if serve else RUN), "--image", str(img_path), "--batch", "-", "--headroom", str(headroom)]
        if jit:
            args.insert(1, "--jit")
        fds = ()
        if serve is not None:
            host_fd, net_fd, up_fd, max_frame, stats_map = serve
            fds = tuple(fd for fd in (host_fd, net_fd, up_fd) if fd >= 0)
            args += ["--serve", f"{host_fd},{net_fd},{up_fd}", "--max-frame", str(max_frame), "--stats-map", stats_map]
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, bufsize=1, pass_fds=fds)
        self.redirect_ifindex = 0

    def prog_value(self, name):
        """What a PROG_ARRAY entry holds to name program `name` of the image: its index (4 bytes)."""
        if name not in self.programs:
            raise ValueError(f"{self.path}: no program '{name}' in the image (programs: {', '.join(self.programs)})")
        return struct.pack("<I", self.programs.index(name))

    def close(self):
        if self._proc:
            try:
                self._proc.stdin.close()
            except BrokenPipeError:  # the runtime stopped first (e.g. the program was rejected)
                pass
            self._proc.wait(timeout=30)
            self._proc.stdout.close()
            self._proc.stderr.close()
            self._proc = None
        if self._tmp:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _command(self, line):
        if not self._proc:
            raise ValueError(f"{self.path}: closed")
        try:
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass
        reply = self._proc.stdout.readline()
        if not reply:
            self._proc.wait(timeout=30)
            err = self._proc.stderr.read().strip()
            raise DeviceError(f"{self.path}: the runtime stopped: {err or 'no message'}")
        reply = reply.rstrip("\n")
        if reply.startswith("error "):
            raise DeviceError(f"{self.path}: {reply[6:]}")
        return reply

    def resume(self):
        """--serve: read the ports again (after a frame went up to the model, or a handover)."""
        self._command("resume")

    def native_counters(self):
        """--serve: the native data path's counts as {device counter id: value}, and its egress drops."""
        values = [int(v) for v in self._command("counters").split()[1:]]
        return dict(enumerate(values[:-1])), values[-1]

    def info(self):
        """(instructions, maps) of the program; raises DeviceError if the runtime refused it (verifier)."""
        _, insns, maps = self._command("info").split(" ")
        return int(insns), int(maps)

    # ------------------------------------------------------------ maps
    def map_names(self):
        return list(self._maps)

    def map_by_suffix(self, suffix):
        """The one map name ending with suffix, e.g. ".bss" -> "prog.bss" (as LinuxXdp.map_by_suffix)."""
        found = [n for n in self._maps if n.endswith(suffix)]
        if len(found) != 1:
            raise KeyError(f"{self.path}: {len(found)} maps end with '{suffix}' (maps: {', '.join(self._maps)})")
        return found[0]

    def map_info(self, name):
        try:
            return self._maps[name]
        except KeyError:
            raise KeyError(f"{self.path}: no map '{name}' (maps: {', '.join(self._maps) or 'none'})") from None

    def map_update(self, name, key, value, flags=0):
        """Create or replace (flags: Linux BPF_ANY 0, BPF_NOEXIST 1, BPF_EXIST 2; a refusal raises
        DeviceError with the errno in its text); a per-CPU map gets the value for every CPU (or a
        one-element list)."""
        m = self.map_info(name)
        if m.percpu and not isinstance(value, (bytes, bytearray, memoryview)):
            (value,) = value
        self._command(f"update {name} {bytes(key).hex()} {bytes(value).hex()} {int(flags)}")

    def map_delete(self, name, key):
        """True if the entry existed and is gone, False if there was none; arrays raise DeviceError."""
        self.map_info(name)
        return self._command(f"delete {name} {bytes(key).hex()}") == "ok"

    def map_slot(self, name, key):
        """The hash slot of key in map name, or None without the entry."""
        self.map_info(name)
        reply = self._command(f"slot {name} {bytes(key).hex()}")
        return None if reply == "none" else int(reply.split()[1])

    def map_conn(self, name, key):
        """PISA's connection (the context field conn: 1 + the connection tag, the slot and its
        generation) of the key table entry key, or None without the entry."""
        self.map_info(name)
        reply = self._command(f"slot {name} {bytes(key).hex()}").split()
        if reply == ["none"]:
            return None
        if len(reply) != 4 or reply[2] != "conn":
            raise DeviceError(f"map {name} is not the key table: no connection for its entries")
        return int(reply[3])

    def map_next_key(self, name, key=None):
        """Linux BPF_MAP_GET_NEXT_KEY: the key after key (None or absent: the first), None after the last."""
        self.map_info(name)
        reply = self._command(f"next {name}" + ("" if key is None else f" {bytes(key).hex()}"))
        return None if reply == "none" else bytes.fromhex(reply.split(" ", 1)[1])

    def _lookup(self, name, key):
        reply = self._command(f"lookup {name} {bytes(key).hex()}")
        return None if reply == "none" else bytes.fromhex(reply.split(" ", 1)[1])

    def map_lookup(self, name, key):
        if self.map_info(name).percpu:
            raise TypeError(f"map '{name}' is per-CPU: use map_lookup_percpu")
        return self._lookup(name, key)

    def map_lookup_percpu(self, name, key):
        """The values of a per-CPU map entry: one (the host runtime has one CPU), or None."""
        if not self.map_info(name).percpu:
            raise TypeError(f"map '{name}' is not per-CPU: use map_lookup")
        v = self._lookup(name, key)
        return None if v is None else [v]

    def map_items(self, name):
        """[(key, value)] in the runtime's iteration order (map_next_key); a per-CPU map gives a list of
        per-CPU values (one) as value, as LinuxXdp.map_items."""
        m = self.map_info(name)
        items, key = [], None
        while len(items) < m.max_entries:
            key = self.map_next_key(name, key)
            if key is None:
                break
            v = self._lookup(name, key)
            if v is not None:
                items.append((key, [v] if m.percpu else v))
        return items

    def events(self, name, max=0, budget=None):
        """Drain an event map (RINGBUF, PERF_EVENT_ARRAY) as the device's EVENTS does: (lost, pending,
        [(index, data)]): the records dropped since the last drain, the records left, and the oldest
        records, at most max (0: no limit) and while their lengths plus NANOBPF_EVENT_REC_HDR each stay
        within budget bytes (None: no limit). Taken records are gone."""
        self.map_info(name)
        reply = self._command(f"events {name} {int(max)}" + ("" if budget is None else f" {int(budget)}"))
        fields = reply.split(" ")
        records = []
        for rec in fields[3:]:
            index, _, data = rec.partition(":")
            records.append((int(index), bytes.fromhex(data)))
        return int(fields[1]), int(fields[2]), records

    # ------------------------------------------------------------ running
    def run(self, frame, ingress_ifindex=0, parse=None, egress_csum=True):
        """Run the program once over frame: (action, output). The output starts at data_meta, as Linux's
        BPF_PROG_TEST_RUN returns it: the metadata the program added with bpf_xdp_adjust_meta (its length
        left in self.meta_len), then the frame. The port bpf_redirect chose is left in
        self.redirect_ifindex. parse: what PISA parsed, the six context fields past xdp_md (l3_off,
        l4_off, quic_off, pn_off, cid_len, conn: nanobpf.models.pisa.xdp_parse); None: all 0.
        self.csum_offload says whether the program called bpf_xdp_csum_offload (the device's egress
        recomputes the checksums), self.len_offload whether a device helper left the IP and UDP
        lengths to the egress too (pkt_comp.fix_len: set from the frame's end); with egress_csum the
        output has them recomputed as the deparser does (nanobpf.models.pisa.fix_frame_checksums), so
        it is the frame the device sends. The device model passes False and gives the flags to its own
        deparser model."""
        extra = "" if parse is None else " " + ",".join(str(int(v)) for v in parse)
        reply = self._command(f"run {ingress_ifindex} {bytes(frame).hex()}{extra}")
        _, action, out, redirect, meta_len, csum, lens = reply.split(" ")
        self.redirect_ifindex, self.meta_len = int(redirect), int(meta_len)
        self.csum_offload, self.len_offload = csum == "1", lens == "1"
        out = bytes.fromhex(out)
        if self.csum_offload and egress_csum:
            from nanobpf.models import pisa
            frame_out = bytearray(out[self.meta_len:])
            pisa.fix_frame_checksums(frame_out, self.len_offload)
            out = out[:self.meta_len] + bytes(frame_out)
        return int(action), out
