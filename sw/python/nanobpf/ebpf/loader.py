"""Host-side eBPF loader: a clang BPF object (ELF) -> a NanoBPF device load image.

One file on purpose (about 1,100 lines): ELF sections, BTF, maps, relocations and the image layout
are one pass over one object; the sections of the file follow that pass.

    img = load("prog.o")                  # the object's only XDP program
    img = load("prog.o", program="name")  # one of several
    blob = img.to_bytes()                 # what the device's ebpf_image_load reads
    parse_image(blob) == img              # the reader, for tests and tools

Input: an object built by `clang -O2 -g -target bpf -c` from restricted C: XDP programs in sections
"xdp", "xdp/...", "xdp.frags"; BTF-defined maps in SEC(".maps"); globals in .rodata/.data/.bss (each
becomes a one-entry ARRAY map); bpf-to-bpf calls to .text functions. ELF sections, symbols and
relocations are read with pyelftools, BTF with libbpf (libbpf.so.1) through ctypes.

The image layout, map types, helper ids and the key table come from hw/defs/ebpf.toml through the
generated module nanobpf_ebpf_defs; nothing about the layout is written down here. Everything the
device does not support is refused with LoadError naming the section and instruction.
"""
import ctypes
import ctypes.util
import re
import struct
from collections import namedtuple
from dataclasses import dataclass, field
from pathlib import Path

import nanobpf_ebpf_defs as abi

__all__ = ["LoadError", "Insn", "Map", "Image", "Program", "load", "programs", "parse_image"]


class LoadError(Exception):
    """The object (or image) cannot become a device image; the message says where and why."""


# ---------------------------------------------------------------- instructions
class Insn(namedtuple("Insn", "code dst src off imm")):
    """One 8-byte eBPF instruction: code u8, dst (low nibble) / src (high nibble), off s16, imm s32."""
    __slots__ = ()
    _FMT = struct.Struct("<BBhi")

    @classmethod
    def unpack(cls, buf, i=0):
        code, regs, off, imm = cls._FMT.unpack_from(buf, 8 * i)
        return cls(code, regs & 0xf, regs >> 4, off, imm)

    def pack(self):
        return self._FMT.pack(self.code, (self.src << 4) | self.dst, self.off, self.imm)

    @property
    def cls(self):
        return self.code & 0x07


LD_IMM64 = 0x18          # BPF_LD | BPF_IMM | BPF_DW
CALL = 0x85              # BPF_JMP | BPF_CALL
CLS_LD, CLS_JMP = 0x00, 0x05
MODE_ABS, MODE_IND = 0x20, 0x40
PSEUDO_CALL, PSEUDO_KFUNC_CALL = 1, 2
PSEUDO_MAP_IDX, PSEUDO_MAP_IDX_VALUE = 5, 6   # RFC 9669 ld_imm64 src values used in the image
PSEUDO_FUNC = 4
# Linux helpers the device does not provide, and why (messages at load; any other unknown id gets a
# generic one).
_REFUSED_HELPERS = {
    69: "bpf_fib_lookup needs the kernel's routing and neighbour tables, which the device does not have; "
        "keep the forwarding decision in maps (a DEVMAP with bpf_redirect_map)",
}

# ELF relocation types of the BPF target (LLVM's ELFRelocs/BPF.def).
R_BPF_NONE, R_BPF_64_64, R_BPF_64_ABS64, R_BPF_64_ABS32, R_BPF_64_NODYLD32, R_BPF_64_32 = 0, 1, 2, 3, 4, 10
R_NAMES = {1: "R_BPF_64_64", 2: "R_BPF_64_ABS64", 3: "R_BPF_64_ABS32", 4: "R_BPF_64_NODYLD32", 10: "R_BPF_64_32"}

# Linux enum bpf_map_type, for messages about types the device lacks.
LINUX_MAP_TYPES = {
    0: "UNSPEC", 1: "HASH", 2: "ARRAY", 3: "PROG_ARRAY", 4: "PERF_EVENT_ARRAY", 5: "PERCPU_HASH",
    6: "PERCPU_ARRAY", 7: "STACK_TRACE", 8: "CGROUP_ARRAY", 9: "LRU_HASH", 10: "LRU_PERCPU_HASH",
    11: "LPM_TRIE", 12: "ARRAY_OF_MAPS", 13: "HASH_OF_MAPS", 14: "DEVMAP", 15: "SOCKMAP", 16: "CPUMAP",
    17: "XSKMAP", 18: "SOCKHASH", 19: "CGROUP_STORAGE", 20: "REUSEPORT_SOCKARRAY",
    21: "PERCPU_CGROUP_STORAGE", 22: "QUEUE", 23: "STACK", 24: "SK_STORAGE", 25: "DEVMAP_HASH",
    26: "STRUCT_OPS", 27: "RINGBUF", 28: "INODE_STORAGE", 29: "TASK_STORAGE", 30: "BLOOM_FILTER",
    31: "USER_RINGBUF", 32: "CGRP_STORAGE",
}
MAP_TYPE_NAMES = {v: k for k, v in abi.MAP_TYPE.items()}
HELPERS = {h["id"]: h for h in abi.HELPERS}


def map_type_name(t):
    return MAP_TYPE_NAMES.get(t) or LINUX_MAP_TYPES.get(t) or f"type {t}"


_linux_helper_names = None


def _linux_helper_name(hid):
    """Name of a Linux helper id from libbpf's bpf_helper_defs.h when installed (messages only)."""
    global _linux_helper_names
    if _linux_helper_names is None:
        _linux_helper_names = {}
        for p in (Path("/usr/include/bpf/bpf_helper_defs.h"), Path("/usr/local/include/bpf/bpf_helper_defs.h")):
            try:
                text = p.read_text()
            except OSError:
                continue
            for m in re.finditer(r"\(\*(bpf_\w+)\)\([^;]*?=\s*\(void \*\)\s*(\d+);", text):
                _linux_helper_names[int(m[2])] = m[1]
            break
    return _linux_helper_names.get(hid)


# ---------------------------------------------------------------- the image
def _codes(fmt):
    """struct format -> one code per field ('I', 'H', '32s', ...), matching Struct.fields."""
    return re.findall(r"\d*[a-zA-Z?]", fmt.lstrip("<>=!@"))


def _pack(sname, values):
    s = abi.STRUCTS[sname]
    out = []
    for (name, _off, _size), code in zip(s.fields, _codes(s.fmt), strict=True):
        v = values.get(name)
        if code.endswith("s"):
            v = v.encode() if isinstance(v, str) else (v or b"")
        else:
            v = v or 0
        out.append(v)
    blob = struct.pack(s.fmt, *out)
    assert len(blob) == s.size
    return blob


def _unpack(sname, buf, off):
    s = abi.STRUCTS[sname]
    return dict(zip((f[0] for f in s.fields), struct.unpack_from(s.fmt, buf, off)))


def _cstr(b):
    return b.split(b"\0", 1)[0].decode(errors="replace")


def _align8(n):
    return (n + 7) & ~7


@dataclass
class Map:
    """One map of the image. init: initial value of entry 0 (array maps from .rodata/.data), b"" = zero."""
    name: str
    type: int
    key_size: int
    value_size: int
    max_entries: int
    flags: int = 0
    init: bytes = b""
    source: str = field(default="", compare=False)  # ".maps", or the data section it came from
    pinning: int = 0                                 # NANOBPF_PIN_*
    spin_lock_off: int = 0                           # 1 + offset of the value's struct bpf_spin_lock, 0: none

    @property
    def type_name(self):
        return map_type_name(self.type)


FUNC_ARG_NAMES = {abi.NANOBPF_FUNC_ARG_NONE: "none", abi.NANOBPF_FUNC_ARG_SCALAR: "scalar",
                  abi.NANOBPF_FUNC_ARG_CTX: "ctx", abi.NANOBPF_FUNC_ARG_MEM: "mem",
                  abi.NANOBPF_FUNC_ARG_MEM_RO: "const mem"}
MEM_ARGS = (abi.NANOBPF_FUNC_ARG_MEM, abi.NANOBPF_FUNC_ARG_MEM_RO)


@dataclass
class GlobalFunc:
    """A global function (a C function that is not static): the device verifies it once on its own,
    for every caller, from its prototype: args are (kind, bytes) with kind NANOBPF_FUNC_ARG_*.
    program: another XDP program of the object, which bpf_tail_call may jump to (its PROG_ARRAY index is
    1 + its place among the image's programs; 0 is the attached program)."""
    start: int
    ret: int
    args: list
    program: bool = False

    def pack(self):
        kinds = [k for k, _ in self.args] + [0] * (5 - len(self.args))
        sizes = [n for _, n in self.args] + [0] * (5 - len(self.args))
        flags = abi.NANOBPF_FUNC_GLOBAL | (abi.NANOBPF_FUNC_PROGRAM if self.program else 0)
        return _pack("image_func", dict({"start": self.start, "flags": flags, "ret": self.ret,
                                         "n_args": len(self.args), "arg_type": bytes(kinds)},
                                        **{f"arg{k + 1}_size": sizes[k] for k in range(5)}))

    @classmethod
    def unpack(cls, buf, off):
        f = _unpack("image_func", buf, off)
        n = f["n_args"]
        program = f["flags"] == abi.NANOBPF_FUNC_GLOBAL | abi.NANOBPF_FUNC_PROGRAM
        if (f["flags"] != abi.NANOBPF_FUNC_GLOBAL and not program) or n > 5:
            raise LoadError(f"image: function table entry at {off}: flags 0x{f['flags']:x}, {n} arguments")
        return cls(f["start"], f["ret"], [(f["arg_type"][k], f[f"arg{k + 1}_size"]) for k in range(n)], program)

    def describe(self):
        args = [FUNC_ARG_NAMES.get(k, str(k)) + (f"[{n}]" if k in MEM_ARGS else "")
                for k, n in self.args]
        return f"{'int' if self.ret else 'void'}({', '.join(args)})"


@dataclass
class Image:
    """A device load image: program name, maps (index = ld_imm64 imm), instructions."""
    name: str
    maps: list
    insns: list
    section: str = field(default="", compare=False)
    functions: list = field(default_factory=list, compare=False)  # (name, first instruction), program first
    globals: list = field(default_factory=list)  # GlobalFunc of the functions verified on their own
    notes: list = field(default_factory=list, compare=False)  # what the loader chose for the user (stderr)
    programs: list = field(default_factory=list, compare=False)  # names by PROG_ARRAY value (0: this one)

    def to_bytes(self):
        hdr, ment = abi.STRUCTS["image_header"], abi.STRUCTS["image_map"]
        if len(self.maps) > abi.NANOBPF_IMAGE_MAX_MAPS:
            raise LoadError(f"{len(self.maps)} maps, the image holds at most {abi.NANOBPF_IMAGE_MAX_MAPS}")
        fent = abi.STRUCTS["image_func"]
        if len(self.globals) > abi.NANOBPF_IMAGE_MAX_FUNCS:
            raise LoadError(f"{len(self.globals)} global functions, the image holds at most "
                            f"{abi.NANOBPF_IMAGE_MAX_FUNCS}")
        maps_off = _align8(hdr.size)
        funcs_off = _align8(maps_off + len(self.maps) * ment.size)
        insns_off = _align8(funcs_off + len(self.globals) * fent.size)
        data_off = insns_off + 8 * len(self.insns)
        data, table = bytearray(), []
        for m in self.maps:
            init_off = 0
            if m.init:
                init_off = len(data)
                data += m.init
                data += bytes(_align8(len(data)) - len(data))
            table.append(_pack("image_map", {
                "type": m.type, "key_size": m.key_size, "value_size": m.value_size,
                "max_entries": m.max_entries, "flags": m.flags, "init_off": init_off,
                "init_size": len(m.init), "pinning": m.pinning, "spin_lock_off": m.spin_lock_off, "name": _name_bytes(m.name, abi.NANOBPF_MAP_NAME_LEN)}))
        total = data_off + len(data)
        head = _pack("image_header", {
            "magic": abi.NANOBPF_IMAGE_MAGIC, "version": abi.NANOBPF_IMAGE_VERSION, "header_size": hdr.size,
            "n_maps": len(self.maps), "maps_off": maps_off, "n_insns": len(self.insns), "insns_off": insns_off,
            "n_funcs": len(self.globals), "funcs_off": funcs_off,
            "data_off": data_off, "data_size": len(data), "total_size": total,
            "prog_name": _name_bytes(self.name, abi.NANOBPF_PROG_NAME_LEN)})
        out = bytearray(head)
        out += bytes(maps_off - len(out))
        out += b"".join(table)
        out += bytes(funcs_off - len(out))
        out += b"".join(g.pack() for g in self.globals)
        out += bytes(insns_off - len(out))
        out += b"".join(i.pack() for i in self.insns)
        out += data
        assert len(out) == total
        return bytes(out)

    def summary(self):
        """Plain data for --info / --json."""
        gl = {g.start: g for g in self.globals}
        return {
            "program": self.name, "section": self.section, "insns": len(self.insns),
            "programs": list(self.programs or [self.name]),
            "functions": [dict({"name": n, "start": s}, **({"global": ("program " if gl[s].program else "") + gl[s].describe()}
                                                           if s in gl else {}))
                          for n, s in self.functions],
            "maps": [{"index": i, "name": m.name, "type": m.type_name, "type_id": m.type, "key_size": m.key_size,
                      "value_size": m.value_size, "max_entries": m.max_entries, "flags": m.flags,
                      "init_size": len(m.init), "source": m.source,
                      "pinned": m.pinning == abi.NANOBPF_PIN_BY_NAME} for i, m in enumerate(self.maps)],
            "notes": list(self.notes),
        }


def _name_bytes(name, limit):
    b = name.encode()
    if len(b) >= limit:
        raise LoadError(f"name '{name}' does not fit {limit - 1} bytes")
    return b


def parse_image(blob):
    """Read a device image back (the inverse of Image.to_bytes); LoadError when it is malformed."""
    blob = bytes(blob)
    hdr, ment = abi.STRUCTS["image_header"], abi.STRUCTS["image_map"]
    if len(blob) < hdr.size:
        raise LoadError(f"image: {len(blob)} bytes is shorter than its header ({hdr.size})")
    h = _unpack("image_header", blob, 0)
    if h["magic"] != abi.NANOBPF_IMAGE_MAGIC:
        raise LoadError(f"image: bad magic 0x{h['magic']:08x}")
    if h["version"] != abi.NANOBPF_IMAGE_VERSION:
        raise LoadError(f"image: version {h['version']}, this reader knows {abi.NANOBPF_IMAGE_VERSION}")
    if h["header_size"] < hdr.size or h["total_size"] != len(blob):
        raise LoadError(f"image: header says {h['total_size']} bytes (header {h['header_size']}), got {len(blob)}")
    if h["n_maps"] > abi.NANOBPF_IMAGE_MAX_MAPS:
        raise LoadError(f"image: {h['n_maps']} maps (at most {abi.NANOBPF_IMAGE_MAX_MAPS})")

    def inside(off, n):
        return off <= len(blob) and n <= len(blob) - off

    if not (inside(h["maps_off"], h["n_maps"] * ment.size) and inside(h["insns_off"], 8 * h["n_insns"])
            and inside(h["data_off"], h["data_size"])) or h["insns_off"] % 8:
        raise LoadError("image: a section lies outside the image or is misaligned")
    data = blob[h["data_off"]:h["data_off"] + h["data_size"]]
    maps = []
    for i in range(h["n_maps"]):
        m = _unpack("image_map", blob, h["maps_off"] + i * ment.size)
        if m["init_size"] and not (m["init_off"] <= len(data) and m["init_size"] <= len(data) - m["init_off"]):
            raise LoadError(f"image: map {i}: initial value {m['init_size']} bytes at {m['init_off']} "
                            f"outside the data area ({len(data)} bytes)")
        maps.append(Map(_cstr(m["name"]), m["type"], m["key_size"], m["value_size"], m["max_entries"],
                        m["flags"], data[m["init_off"]:m["init_off"] + m["init_size"]], pinning=m["pinning"],
                        spin_lock_off=m["spin_lock_off"]))
    fent = abi.STRUCTS["image_func"]
    if h["n_funcs"] > abi.NANOBPF_IMAGE_MAX_FUNCS or not inside(h["funcs_off"], h["n_funcs"] * fent.size):
        raise LoadError(f"image: function table ({h['n_funcs']} entries at {h['funcs_off']}) is malformed")
    globals_ = [GlobalFunc.unpack(blob, h["funcs_off"] + k * fent.size) for k in range(h["n_funcs"])]
    insns = [Insn.unpack(blob[h["insns_off"]:], i) for i in range(h["n_insns"])]
    return Image(_cstr(h["prog_name"]), maps, insns, globals=globals_)


# ---------------------------------------------------------------- BTF through libbpf
BTF_KIND_INT, BTF_KIND_PTR, BTF_KIND_ARRAY, BTF_KIND_STRUCT, BTF_KIND_UNION = 1, 2, 3, 4, 5
BTF_KIND_TYPEDEF, BTF_KIND_VOLATILE, BTF_KIND_CONST, BTF_KIND_RESTRICT = 8, 9, 10, 11
BTF_KIND_ENUM, BTF_KIND_FUNC, BTF_KIND_FUNC_PROTO, BTF_KIND_ENUM64 = 6, 12, 13, 19
BTF_KIND_VAR, BTF_KIND_DATASEC, BTF_KIND_TYPE_TAG = 14, 15, 18
BTF_FUNC_GLOBAL = 1  # linkage of a BTF_KIND_FUNC (in vlen)
BTF_KIND_NAMES = {1: "int", 2: "pointer", 3: "array", 4: "struct", 5: "union", 6: "enum", 7: "forward",
                  8: "typedef", 9: "volatile", 10: "const", 11: "restrict", 12: "function",
                  13: "function prototype", 14: "variable", 15: "data section", 16: "float",
                  17: "declaration tag", 18: "type tag", 19: "enum64"}
_MODS = (BTF_KIND_TYPEDEF, BTF_KIND_VOLATILE, BTF_KIND_CONST, BTF_KIND_RESTRICT, BTF_KIND_TYPE_TAG)

_libbpf = None


def _lib():
    global _libbpf
    if _libbpf is None:
        name = "libbpf.so.1"
        try:
            lib = ctypes.CDLL(name, use_errno=True)
        except OSError:
            found = ctypes.util.find_library("bpf")
            if not found:
                raise LoadError("libbpf.so.1 not found (Debian: apt install libbpf1); it is needed to read BTF")
            lib = ctypes.CDLL(found, use_errno=True)
        lib.btf__parse_elf.restype = ctypes.c_void_p
        lib.btf__parse_elf.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        lib.btf__free.restype = None
        lib.btf__free.argtypes = [ctypes.c_void_p]
        lib.btf__type_cnt.restype = ctypes.c_uint32
        lib.btf__type_cnt.argtypes = [ctypes.c_void_p]
        lib.btf__type_by_id.restype = ctypes.c_void_p
        lib.btf__type_by_id.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        lib.btf__name_by_offset.restype = ctypes.c_char_p
        lib.btf__name_by_offset.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        lib.btf__resolve_size.restype = ctypes.c_int64
        lib.btf__resolve_size.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        lib.btf__resolve_type.restype = ctypes.c_int
        lib.btf__resolve_type.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        lib.btf__find_by_name_kind.restype = ctypes.c_int32
        lib.btf__find_by_name_kind.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32]
        _libbpf = lib
    return _libbpf


BtfType = namedtuple("BtfType", "id kind name size_or_type vlen words")


class _Btf:
    """The object's .BTF, parsed by libbpf. Types are read from libbpf's memory as struct btf_type
    (name_off, info, size/type) followed by the kind's records (linux/btf.h)."""

    def __init__(self, path):
        self.lib = _lib()
        ptr = self.lib.btf__parse_elf(str(path).encode(), None)
        if not ptr or ptr >= (1 << 64) - 4095:  # NULL (libbpf 1.x) or an ERR_PTR (legacy mode)
            err = ctypes.get_errno() or (((1 << 64) - ptr) if ptr else 0)
            raise LoadError(f"{path}: libbpf cannot parse its BTF (errno {err})")
        self.ptr = ptr

    def close(self):
        if self.ptr:
            self.lib.btf__free(self.ptr)
            self.ptr = None

    def _open(self):
        if not self.ptr:  # libbpf would dereference NULL
            raise RuntimeError("BTF used after close")
        return self.ptr

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def type(self, tid):
        p = self.lib.btf__type_by_id(self._open(), tid)
        if not p:
            raise LoadError(f"BTF type {tid} does not exist")
        w = ctypes.cast(p, ctypes.POINTER(ctypes.c_uint32))
        name_off, info, size_or_type = w[0], w[1], w[2]
        kind, vlen = (info >> 24) & 0x1f, info & 0xffff
        nrec = {BTF_KIND_STRUCT: 3 * vlen, BTF_KIND_UNION: 3 * vlen, BTF_KIND_DATASEC: 3 * vlen,
                BTF_KIND_ARRAY: 3, BTF_KIND_VAR: 1, BTF_KIND_FUNC_PROTO: 2 * vlen}.get(kind, 0)
        words = [w[3 + i] for i in range(nrec)]
        return BtfType(tid, kind, self.name(name_off), size_or_type, vlen, words)

    def name(self, off):
        s = self.lib.btf__name_by_offset(self._open(), off)
        return s.decode() if s else ""

    def skip_mods(self, tid):
        t = self.type(tid)
        while t.kind in _MODS:
            t = self.type(t.size_or_type)
        return t

    def resolve_size(self, tid):
        n = self.lib.btf__resolve_size(self._open(), tid)
        if n < 0:
            raise LoadError(f"BTF type {tid}: size unknown (errno {-n})")
        return n

    def find(self, name, kind):
        tid = self.lib.btf__find_by_name_kind(self._open(), name.encode(), kind)
        return tid if tid > 0 else None

    @staticmethod
    def members(t):
        """(name_off, type, offset) records of a struct/union or (type, offset, size) of a datasec."""
        return [tuple(t.words[3 * i:3 * i + 3]) for i in range(t.vlen)]


# ---------------------------------------------------------------- the ELF object
Sym = namedtuple("Sym", "index name value size type bind shndx")
Section = namedtuple("Section", "index name type flags size data")
Program = namedtuple("Program", "name section xdp insns")
Function = namedtuple("Function", "name shndx start end")  # instruction indices [start, end) in the section

SHF_EXECINSTR = 0x4


def _is_xdp_section(name):
    """libbpf's XDP sections ("xdp", "xdp/...", "xdp.frags"), and the old style ("xdp_pass", "xdp_stats1")
    that libxdp and the xdp-tutorial load by program name."""
    if name in ("xdp", "xdp.frags"):
        return True
    if name.startswith(("xdp/", "xdp.frags/")):
        return name.rsplit("/", 1)[1] not in ("devmap", "cpumap")
    return name.startswith("xdp_")


# Sections of programs of other kinds (libbpf's section names): -p/-s naming one is refused, since libxdp
# would load it as XDP only by mistake. Any other code section chosen by name is taken as XDP, as libxdp does.
_OTHER_PROGRAM_SECTIONS = ("tc", "classifier", "action", "socket", "kprobe", "kretprobe", "uprobe", "tracepoint",
                           "tp", "raw_tp", "raw_tracepoint", "fentry", "fexit", "lsm", "cgroup", "cgroup_", "sk_", "sockops",
                           "flow_dissector", "perf_event", "struct_ops", "syscall", "netfilter", "tcx", "lwt_")


def _other_program_kind(section):
    """The kind of a section that holds programs of another type than XDP (or None)."""
    if section.startswith(("xdp/devmap", "xdp/cpumap", "xdp.frags/devmap", "xdp.frags/cpumap")):
        return ("a program the kernel runs on a DEVMAP/CPUMAP redirect; the device's devmap entries are its "
                "ports and hold no program")
    for p in _OTHER_PROGRAM_SECTIONS:
        if section == p.rstrip("_") or section.startswith(p if p.endswith("_") else (p + "/", p + ".")):
            return f"a '{p.rstrip('_')}' program, not XDP"
    return None


def _is_data_section(name):
    return name in (".rodata", ".data", ".bss") or name.startswith((".rodata.", ".data.", ".bss."))


class _Object:
    """What the loader needs from the ELF file: sections, symbols, REL relocations, functions."""

    def __init__(self, path):
        try:
            from elftools.elf.elffile import ELFFile
            from elftools.common.exceptions import ELFError
        except ImportError:
            raise LoadError("pyelftools is not installed: run with the project venv (build/venv/bin/python)")
        self.path = Path(path)
        try:
            f = open(self.path, "rb")
        except OSError as e:
            raise LoadError(f"{path}: {e.strerror}")
        with f:
            try:
                elf = ELFFile(f)
                self._read(elf)
            except ELFError as e:
                raise LoadError(f"{path}: not a valid ELF file ({e})")
            except struct.error as e:
                raise LoadError(f"{path}: truncated ELF file ({e})")

    def _read(self, elf):
        where = self.path
        if elf.header["e_machine"] != "EM_BPF":
            raise LoadError(f"{where}: not a BPF object (machine {elf.header['e_machine']}); build with clang -target bpf")
        if elf.elfclass != 64 or not elf.little_endian:
            raise LoadError(f"{where}: not a little-endian ELF64 BPF object (use -target bpf or bpfel, not bpfeb)")
        if elf.header["e_type"] != "ET_REL":
            raise LoadError(f"{where}: expected a relocatable object (clang -c), got {elf.header['e_type']}")
        self.sections = []
        for i, s in enumerate(elf.iter_sections()):
            nobits = s["sh_type"] == "SHT_NOBITS"
            data = bytes(s["sh_size"]) if nobits else s.data()
            self.sections.append(Section(i, s.name, s["sh_type"], s["sh_flags"], s["sh_size"], data))
        self.by_name = {s.name: s for s in self.sections}
        self.symbols = []
        symtab = elf.get_section_by_name(".symtab")
        if symtab is None:
            raise LoadError(f"{where}: no symbol table")
        for i, s in enumerate(symtab.iter_symbols()):
            # st_shndx: a section index, or a name such as 'SHN_UNDEF' / 'SHN_ABS' / 'SHN_COMMON'
            self.symbols.append(Sym(i, s.name, s["st_value"], s["st_size"], s["st_info"]["type"],
                                    s["st_info"]["bind"], s["st_shndx"]))
        # relocations by target section: {shndx: {byte offset: (type, Sym)}}
        self.relocs = {}
        for s in elf.iter_sections():
            if s["sh_type"] == "SHT_RELA" and self.sections[s["sh_info"]].flags & SHF_EXECINSTR:
                raise LoadError(f"{where}: section '{s.name}': RELA relocations are not expected in a BPF object")
            if s["sh_type"] != "SHT_REL":
                continue
            table = self.relocs.setdefault(s["sh_info"], {})
            for r in s.iter_relocations():
                table[r["r_offset"]] = (r["r_info_type"], self.symbols[r["r_info_sym"]])
        # functions: FUNC symbols in executable sections
        self.functions = {}
        for sec in self.sections:
            if not sec.flags & SHF_EXECINSTR or sec.size == 0:
                continue
            if sec.size % 8:
                raise LoadError(f"{where}: section '{sec.name}' is {sec.size} bytes, not whole instructions")
            syms = sorted((s for s in self.symbols if s.shndx == sec.index and s.type == "STT_FUNC"),
                          key=lambda s: s.value)
            funcs = []
            for k, s in enumerate(syms):
                start = s.value // 8
                end = (s.value + s.size) // 8 if s.size else (syms[k + 1].value // 8 if k + 1 < len(syms)
                                                              else sec.size // 8)
                funcs.append(Function(s.name, sec.index, start, end))
            self.functions[sec.index] = funcs

    def insns(self, shndx):
        data = self.sections[shndx].data
        return [Insn.unpack(data, i) for i in range(len(data) // 8)]

    def function_at(self, shndx, idx):
        for f in self.functions.get(shndx, []):
            if f.start <= idx < f.end:
                return f
        return None

    def programs(self):
        out = []
        for sec in self.sections:
            if not sec.flags & SHF_EXECINSTR or sec.name == ".text":
                continue
            for f in self.functions.get(sec.index, []):
                sym = next(s for s in self.symbols if s.shndx == sec.index and s.name == f.name)
                if sym.bind in ("STB_GLOBAL", "STB_WEAK"):
                    out.append(Program(f.name, sec.name, _is_xdp_section(sec.name), f.end - f.start))
        return out


def programs(path):
    """Every program (global function outside .text) of the object: name, section, xdp?, insns."""
    return _Object(path).programs()


# ---------------------------------------------------------------- the loader
def _obj_name(path):
    """libbpf's object name: the file name up to its first dot."""
    return Path(path).name.split(".", 1)[0]


def _data_map_name(obj, section):
    """Like libbpf's internal map names, with the device's longer limit: "<obj>.rodata" (the object
    name shortened to fit), custom sections (.rodata.foo, .data.bar) by their own name."""
    limit = abi.NANOBPF_MAP_NAME_LEN - 1
    if section.startswith((".rodata.", ".data.", ".bss.")):
        return section[:limit]
    return obj[:max(0, limit - len(section))] + section


class _Linker:
    def __init__(self, obj, prog_func, btf, map_sizes=None, notes=None):
        self.obj, self.btf = obj, btf
        self.map_sizes, self.notes = map_sizes or {}, notes if notes is not None else []
        self.out = []            # Insn list
        self.placed = {}         # (shndx, func start) -> output index of the function's first insn
        self.queue = []          # functions placed (copied up to self._linked)
        self._linked = 0
        self.functions = []      # (name, output start)
        self.maps, self.map_index = [], {}  # Map list; key -> index
        self.btf_maps = None
        self._next_free = 0
        self._place(prog_func)

    def where(self, shndx, idx):
        return f"{self.obj.path.name}: section '{self.obj.sections[shndx].name}' instruction {idx}"

    def _place(self, f):
        """Output index of function f, appending it after what is placed so far."""
        key = (f.shndx, f.start)
        if key not in self.placed:
            start = self._next_free
            self.placed[key] = start
            self.queue.append((f, start))
            self.functions.append((f.name, start))
            self._next_free = start + (f.end - f.start)
        return self.placed[key]

    def link(self):
        """Copy the functions placed so far (again after more are placed: only the new ones)."""
        k = self._linked
        while k < len(self.queue):
            f, start = self.queue[k]
            self._copy(f, start)
            k += 1
        self._linked = k
        return self.out

    def _copy(self, f, base):
        obj = self.obj
        insns = obj.insns(f.shndx)
        relocs = obj.relocs.get(f.shndx, {})
        assert len(self.out) == base
        i = f.start
        while i < f.end:
            ins = insns[i]
            rel = relocs.get(8 * i)
            where = self.where(f.shndx, i)
            if rel and rel[0] == R_BPF_NONE:
                rel = None
            if rel and rel[0] not in (R_BPF_64_64, R_BPF_64_32):
                raise LoadError(f"{where}: relocation {R_NAMES.get(rel[0], rel[0])} against "
                                f"'{rel[1].name}' is not supported in code")
            if ins.code == LD_IMM64:
                if i + 1 >= f.end or insns[i + 1].code != 0:
                    raise LoadError(f"{where}: ld_imm64 without its second slot")
                lo, hi = self._ld_imm64(ins, insns[i + 1], rel, where)
                self.out += [lo, hi]
                i += 2
                continue
            if rel and rel[0] == R_BPF_64_64:
                raise LoadError(f"{where}: R_BPF_64_64 relocation on an instruction that is not ld_imm64")
            if ins.code == CALL:
                ins = self._call(ins, f, i, base, rel, where)
            elif rel:
                raise LoadError(f"{where}: R_BPF_64_32 relocation on an instruction that is not a call")
            elif ins.code == CALL | 0x08:
                raise LoadError(f"{where}: indirect calls (callx) are not supported")
            elif ins.cls == CLS_LD:
                mode = ins.code & 0xe0
                if mode in (MODE_ABS, MODE_IND):
                    raise LoadError(f"{where}: legacy packet access (BPF_{'ABS' if mode == MODE_ABS else 'IND'} "
                                    f"load, code 0x{ins.code:02x}) is not supported; read through xdp_md.data")
                raise LoadError(f"{where}: unknown load instruction (code 0x{ins.code:02x})")
            self.out.append(ins)
            i += 1

    def _call(self, ins, f, i, base, rel, where):
        if ins.src == PSEUDO_KFUNC_CALL:
            raise LoadError(f"{where}: kernel function calls (kfuncs) are not supported: they are functions "
                            f"of the host's kernel, which the device does not run")
        if rel is None and ins.src == 0:
            h = HELPERS.get(ins.imm)
            if h is None:
                linux = _linux_helper_name(ins.imm)
                if ins.imm in _REFUSED_HELPERS:
                    raise LoadError(f"{where}: helper {ins.imm}: {_REFUSED_HELPERS[ins.imm]}")
                raise LoadError(f"{where}: helper {ins.imm}{f' ({linux})' if linux else ''} is not provided "
                                f"by the device (see docs/ebpf-abi.md)")
            return ins
        if ins.src not in (0, PSEUDO_CALL):
            raise LoadError(f"{where}: call with src {ins.src} is not supported")
        if rel:
            sym = rel[1]
            if not isinstance(sym.shndx, int) or sym.shndx == 0:
                raise LoadError(f"{where}: call to extern function '{sym.name}' (a kfunc or an unresolved "
                                f"function) is not supported: kfuncs are functions of the host's kernel, "
                                f"which the device does not run")
            tsec = self.obj.sections[sym.shndx]
            if not tsec.flags & SHF_EXECINSTR:
                raise LoadError(f"{where}: call into non-code section '{tsec.name}'")
            if sym.value % 8:
                raise LoadError(f"{where}: call target '{sym.name}' is not instruction-aligned")
            tsh, target = sym.shndx, sym.value // 8 + ins.imm + 1
        else:
            tsh, target = f.shndx, i + ins.imm + 1
        if tsh == f.shndx and f.start <= target < f.end:
            out = base + target - f.start  # a call inside the same function keeps its offset
        else:
            g = self.obj.function_at(tsh, target)
            if g is None:
                raise LoadError(f"{where}: call target (section '{self.obj.sections[tsh].name}' instruction "
                                f"{target}) is not inside a known function")
            out = self._place(g) + target - g.start
        here = len(self.out)
        return ins._replace(src=PSEUDO_CALL, imm=out - (here + 1))

    def _ld_imm64(self, lo, hi, rel, where):
        if rel is None:
            if lo.src != 0:
                raise LoadError(f"{where}: ld_imm64 with src {lo.src} and no relocation is not supported")
            return lo, hi
        sym = rel[1]
        if not isinstance(sym.shndx, int) or sym.shndx == 0:
            raise LoadError(f"{where}: reference to extern '{sym.name}' (kconfig/ksym) is not supported")
        sec = self.obj.sections[sym.shndx]
        if sec.name == ".maps":
            idx = self._btf_map(sym.value + lo.imm, where)
            return lo._replace(src=PSEUDO_MAP_IDX, imm=idx), hi._replace(imm=0)
        if _is_data_section(sec.name):
            off = (sym.value if sym.type != "STT_SECTION" else 0) + lo.imm
            if not 0 <= off < max(sec.size, 1):
                raise LoadError(f"{where}: offset {off} lies outside section '{sec.name}' ({sec.size} bytes)")
            idx = self._data_map(sec, where)
            return lo._replace(src=PSEUDO_MAP_IDX_VALUE, imm=idx), hi._replace(imm=off)
        if sec.flags & SHF_EXECINSTR:  # a callback (bpf_loop): Linux's BPF_PSEUDO_FUNC, imm the offset to it
            off = (sym.value if sym.type != "STT_SECTION" else 0) + lo.imm
            g = self.obj.function_at(sym.shndx, off // 8) if off % 8 == 0 else None
            if g is None or g.start != off // 8:
                raise LoadError(f"{where}: the address taken (section '{sec.name}' offset {off}) is not the start "
                                f"of a function")
            here = len(self.out)
            return lo._replace(src=PSEUDO_FUNC, imm=self._place(g) - (here + 1)), hi._replace(imm=0)
        if sec.name == "maps" or sec.name.startswith("maps/"):
            raise LoadError(f"{where}: map '{sym.name}' is a legacy SEC(\"maps\") definition (struct bpf_map_def); "
                            f"declare it as a BTF-defined map in SEC(\".maps\")")
        raise LoadError(f"{where}: reference to '{sym.name}' in section '{sec.name}', which is neither "
                        f"a map nor global data")

    # -- maps
    def _add_map(self, key, make):
        if key not in self.map_index:
            m = make()
            if any(x.name == m.name for x in self.maps):
                raise LoadError(f"{self.obj.path.name}: two maps named '{m.name}'")
            if len(self.maps) >= abi.NANOBPF_IMAGE_MAX_MAPS:
                raise LoadError(f"{self.obj.path.name}: the program uses more than "
                                f"{abi.NANOBPF_IMAGE_MAX_MAPS} maps")
            self.map_index[key] = len(self.maps)
            self.maps.append(m)
        return self.map_index[key]

    def _data_map(self, sec, where):
        def make():
            if sec.index in self.obj.relocs:
                raise LoadError(f"{where}: section '{sec.name}' holds relocated data (pointers in "
                                f"initialised globals), which is not supported")
            init = b"" if sec.type == "SHT_NOBITS" else sec.data
            name = _data_map_name(_obj_name(self.obj.path), sec.name)
            return Map(name, abi.NANOBPF_MAP_TYPE_ARRAY, 4, sec.size, 1, 0, init, source=sec.name)
        return self._add_map(("data", sec.index), make)

    def _btf_map(self, off, where):
        maps = self.btf_map_vars()
        if off not in maps:
            raise LoadError(f"{where}: no map at offset {off} of section '.maps'")
        name, tid = maps[off]

        def make():
            try:
                return _map_from_btf(self.btf, name, tid, self.map_sizes.get(name), self.notes)
            except LoadError as e:
                raise LoadError(f"{where}: {e}") from None
        return self._add_map(("btf", off), make)

    def btf_map_vars(self):
        """offset in .maps -> (map name, BTF type of its definition), via the DATASEC and the symbols."""
        if self.btf_maps is None:
            btf = self.btf
            sid = btf.find(".maps", BTF_KIND_DATASEC)
            if sid is None:
                raise LoadError(f"{self.obj.path.name}: the BTF has no .maps data section")
            maps_shndx = self.obj.by_name[".maps"].index
            by_name = {s.name: s for s in self.obj.symbols if s.shndx == maps_shndx and s.type == "STT_OBJECT"}
            self.btf_maps = {}
            for vtype, _voff, _vsize in btf.members(btf.type(sid)):
                var = btf.type(vtype)
                if var.kind != BTF_KIND_VAR:
                    raise LoadError(f"{self.obj.path.name}: .maps holds a {BTF_KIND_NAMES.get(var.kind)}, not a variable")
                sym = by_name.get(var.name)
                if sym is None:
                    raise LoadError(f"{self.obj.path.name}: map '{var.name}' has BTF but no symbol")
                self.btf_maps[sym.value] = (var.name, var.size_or_type)
        return self.btf_maps


_INT_FIELDS = ("type", "max_entries", "map_flags", "key_size", "value_size", "numa_node", "pinning", "map_extra")


# The device's own maps, bound by name on the device (hw/defs/ebpf.toml [keytable]): what a program's
# declaration must be, so that the loader refuses a wrong one before the device does.
_DEVICE_MAPS = {abi.KEYTABLE_MAP_NAME: ("the key table", "quic_keys"),
                abi.KEYTABLE_PN_MAP_NAME: ("the device's packet-number map", "quic_pn_state")}


# Linux map types and map_flags the device does not have, and why (messages at load).
_REFUSED_MAP_TYPES = {
    12: "map-in-map is not supported by the device",
    13: "map-in-map is not supported by the device",
    16: "redirects frames to host CPUs; the device's cores are chosen by its core-select unit and frames "
        "reach the host with XDP_PASS",
    17: "redirects frames to AF_XDP sockets, which live in the host kernel; the device delivers to the "
        "host with XDP_PASS",
}
_MAP_FLAG_NAMES = {1: "BPF_F_NO_PREALLOC", 2: "BPF_F_NO_COMMON_LRU", 4: "BPF_F_NUMA_NODE", 8: "BPF_F_RDONLY",
                   16: "BPF_F_WRONLY", 32: "BPF_F_STACK_BUILD_ID", 64: "BPF_F_ZERO_SEED", 128: "BPF_F_RDONLY_PROG",
                   256: "BPF_F_WRONLY_PROG", 512: "BPF_F_CLONE", 1024: "BPF_F_MMAPABLE"}
_HASH_TYPES = {abi.NANOBPF_MAP_TYPE_HASH, abi.NANOBPF_MAP_TYPE_PERCPU_HASH, abi.NANOBPF_MAP_TYPE_LRU_HASH,
               abi.NANOBPF_MAP_TYPE_LRU_PERCPU_HASH, abi.NANOBPF_MAP_TYPE_DEVMAP_HASH}
_ARRAY_TYPES = {abi.NANOBPF_MAP_TYPE_ARRAY, abi.NANOBPF_MAP_TYPE_PERCPU_ARRAY, abi.NANOBPF_MAP_TYPE_DEVMAP,
                abi.NANOBPF_MAP_TYPE_PROG_ARRAY}
_DEVMAP_TYPES = {abi.NANOBPF_MAP_TYPE_DEVMAP, abi.NANOBPF_MAP_TYPE_DEVMAP_HASH}
_EVENT_TYPES = {abi.NANOBPF_MAP_TYPE_RINGBUF, abi.NANOBPF_MAP_TYPE_PERF_EVENT_ARRAY}
LIBBPF_PIN_BY_NAME = 1


def _accepted_flags(mtype):
    """Linux map_flags that change nothing on the device, for this map type (the image gets 0)."""
    if mtype in (abi.NANOBPF_MAP_TYPE_HASH, abi.NANOBPF_MAP_TYPE_PERCPU_HASH):
        return abi.NANOBPF_BPF_F_NO_PREALLOC  # the device preallocates every hash map
    if mtype == abi.NANOBPF_MAP_TYPE_ARRAY:
        return abi.NANOBPF_BPF_F_MMAPABLE     # the host reads the device's maps through the control link
    return 0


def _event_map_shape(what, name, mtype, key_size, value_size, entries, size, notes):
    """(key_size, value_size, max_entries) of an event map in the image, checked as Linux checks them (the
    device's maps.c again). A PERF_EVENT_ARRAY keeps max_entries 0 (libbpf: the number of CPUs; the device:
    its cores). A RINGBUF's max_entries is its bytes; one above what the device keeps is shrunk, with a note
    (a smaller ring only drops sooner, and the device counts every drop)."""
    if mtype == abi.NANOBPF_MAP_TYPE_PERF_EVENT_ARRAY:
        if (key_size, value_size) != (4, 4):   # libbpf does not fill them in: Linux refuses 0 too
            raise LoadError(f"{what}: a PERF_EVENT_ARRAY has a 4-byte key and value (Linux: perf event fds), "
                            f"not {key_size} and {value_size}")
        return 4, 4, entries if size is None else size
    if key_size or value_size:
        raise LoadError(f"{what}: a RINGBUF has no key or value (size 0), not {key_size} and {value_size}")
    lo, hi = abi.NANOBPF_EVENT_RINGBUF_MIN, abi.NANOBPF_EVENT_RINGBUF_MAX
    n = entries if size is None else size
    if n < lo or n & (n - 1):
        raise LoadError(f"{what}: a RINGBUF's max_entries is its size in bytes, a power of two of at least {lo}, "
                        f"not {n}")
    if n > hi:
        if size is not None:
            raise LoadError(f"{what}: --map-size {name}={n}: the device keeps rings of at most {hi} bytes")
        if notes is not None:
            notes.append(f"{what}: a ring of {n} bytes: the device keeps {hi} in its shared memory "
                         f"(choose with --map-size {name}=N)")
        n = hi
    return 0, 0, n


def _map_from_btf(btf, name, tid, size=None, notes=None):
    """A BTF-defined map: struct { int (*type)[T]; ...; K *key; V *value; } -> Map, checked. size: the
    max_entries the user set (--map-size), which replaces the declared one."""
    what = f"map '{name}'"
    t = btf.skip_mods(tid)
    if t.kind != BTF_KIND_STRUCT:
        raise LoadError(f"{what}: its definition is a {BTF_KIND_NAMES.get(t.kind, t.kind)}, not a struct")
    vals, key_size, value_size, locks = {}, None, None, []
    for name_off, mtype, _off in btf.members(t):
        mname = btf.name(name_off)
        mt = btf.skip_mods(mtype)
        if mname in _INT_FIELDS:
            arr = btf.type(mt.size_or_type) if mt.kind == BTF_KIND_PTR else None
            if arr is None or arr.kind != BTF_KIND_ARRAY:
                raise LoadError(f"{what}: field '{mname}' is not __uint({mname}, N) (a pointer to an array)")
            vals[mname] = arr.words[2]
        elif mname in ("key", "value"):
            if mt.kind != BTF_KIND_PTR:
                raise LoadError(f"{what}: field '{mname}' is not __type({mname}, T) (a pointer)")
            n = btf.resolve_size(mt.size_or_type)
            if mname == "key":
                key_size = n
            else:
                value_size = n
                locks = _spin_locks(btf, mt.size_or_type)
        elif mname == "values" and vals.get("type") == abi.NANOBPF_MAP_TYPE_PROG_ARRAY:
            raise LoadError(f"{what}: a program array initialised in its declaration (.values) is not supported "
                            f"by the device: the host sets its entries (nanobpfctl map update)")
        elif mname in ("values", "inner"):
            raise LoadError(f"{what}: '{mname}' (map-in-map) is not supported by the device")
        else:
            raise LoadError(f"{what}: unknown field '{mname}'")
    for sized, given in (("key", key_size), ("value", value_size)):
        declared = vals.get(f"{sized}_size")
        if given is not None and declared is not None and given != declared:
            raise LoadError(f"{what}: {sized}_size {declared} disagrees with the {sized} type ({given} bytes)")
    key_size = key_size if key_size is not None else vals.get("key_size", 0)
    value_size = value_size if value_size is not None else vals.get("value_size", 0)
    if "type" not in vals:
        raise LoadError(f"{what}: no map type (__uint(type, ...))")
    mtype, flags, entries = vals["type"], vals.get("map_flags", 0), vals.get("max_entries", 0)
    if mtype in _REFUSED_MAP_TYPES:
        raise LoadError(f"{what}: map type {map_type_name(mtype)} ({mtype}): {_REFUSED_MAP_TYPES[mtype]}")
    if mtype not in MAP_TYPE_NAMES:
        raise LoadError(f"{what}: map type {map_type_name(mtype)} ({mtype}) is not supported by the device "
                        f"(supported: {', '.join(abi.MAP_TYPE)})")
    other = flags & ~_accepted_flags(mtype)
    if other:
        names = [_MAP_FLAG_NAMES.get(1 << b, f"0x{1 << b:x}") for b in range(32) if other >> b & 1]
        raise LoadError(f"{what}: map_flags {', '.join(names)} (0x{other:x}) not supported for a "
                        f"{map_type_name(mtype)} map by the device")
    pinning = vals.get("pinning", 0)
    if pinning not in (0, LIBBPF_PIN_BY_NAME):
        raise LoadError(f"{what}: pinning {pinning}: the device pins by name only (LIBBPF_PIN_BY_NAME)")
    if vals.get("map_extra", 0):
        raise LoadError(f"{what}: map_extra is not supported")
    if mtype in _EVENT_TYPES:
        key_size, value_size, entries = _event_map_shape(what, name, mtype, key_size, value_size, entries, size, notes)
    elif size is not None:
        entries = size
    elif entries == 0:
        entries = abi.NANOBPF_MAP_DEFAULT_ENTRIES
        if notes is not None:
            notes.append(f"{what}: max_entries 0 (left for the loader): {entries} entries "
                         f"(choose with --map-size {name}=N)")
    if mtype not in _EVENT_TYPES and (key_size <= 0 or value_size <= 0 or entries <= 0):
        raise LoadError(f"{what}: key size {key_size}, value size {value_size}, max_entries {entries}: "
                        f"each must be > 0")
    if mtype in _ARRAY_TYPES and key_size != 4:
        raise LoadError(f"{what}: an array map's key is 4 bytes, not {key_size}")
    if mtype == abi.NANOBPF_MAP_TYPE_PROG_ARRAY and (key_size != 4 or value_size != 4):
        raise LoadError(f"{what}: a PROG_ARRAY has a 4-byte key and a 4-byte value, not {key_size} and {value_size}")
    if mtype == abi.NANOBPF_MAP_TYPE_PROG_ARRAY and pinning:
        raise LoadError(f"{what}: a pinned PROG_ARRAY is not supported by the device: its values are programs of "
                        f"one image")
    if mtype in _DEVMAP_TYPES and (key_size != 4 or value_size not in (4, 8)):
        raise LoadError(f"{what}: a {map_type_name(mtype)} has a 4-byte key and a 4-byte (ifindex) or 8-byte "
                        f"(struct bpf_devmap_val) value, not {key_size} and {value_size}")
    limit = abi.NANOBPF_MAP_NAME_LEN - 1
    if len(name.encode()) > limit:
        raise LoadError(f"{what}: the name is longer than {limit} bytes")
    if name in _DEVICE_MAPS:
        label, value_struct = _DEVICE_MAPS[name]
        cid, vsize = abi.STRUCTS["quic_cid"].size, abi.STRUCTS[value_struct].size
        if (mtype != abi.NANOBPF_MAP_TYPE_HASH or key_size != cid or value_size != vsize
                or entries > abi.NANOBPF_KEYTABLE_ENTRIES or flags):
            raise LoadError(f"{what}: {label} must be a HASH map with key struct nanobpf_quic_cid "
                            f"({cid} bytes), value struct nanobpf_{value_struct} ({vsize} bytes), at most "
                            f"{abi.NANOBPF_KEYTABLE_ENTRIES} entries and no map_flags; it is {map_type_name(mtype)} "
                            f"with key {key_size}, value {value_size}, {entries} entries")
    if len(locks) > 1:
        raise LoadError(f"{what}: {len(locks)} struct bpf_spin_lock in its value (at most one, as Linux)")
    if locks and mtype not in (abi.NANOBPF_MAP_TYPE_HASH, abi.NANOBPF_MAP_TYPE_ARRAY):
        raise LoadError(f"{what}: a struct bpf_spin_lock in a {map_type_name(mtype)} value: only HASH and ARRAY "
                        f"maps hold one (as Linux)")
    return Map(name, mtype, key_size, value_size, entries, 0, b"", source=".maps", pinning=pinning,
               spin_lock_off=locks[0] + 1 if locks else 0)


def _spin_locks(btf, tid, base=0, depth=0):
    """Byte offsets of the struct bpf_spin_lock members of type tid, nested structs and unions included."""
    t = btf.skip_mods(tid)
    if t.kind == BTF_KIND_STRUCT and t.name == "bpf_spin_lock":
        return [base]
    if t.kind not in (BTF_KIND_STRUCT, BTF_KIND_UNION) or depth > 16:
        return []
    # member offsets are in bits; with the struct's kind_flag the top 8 bits are a bitfield's size
    return [o for _n, mtype, off in btf.members(t) for o in _spin_locks(btf, mtype, base + (off & 0xffffff) // 8, depth + 1)]


def load(path, program=None, section=None, map_sizes=None):
    """Turn the BPF object at path into an Image of its XDP program. program= (a function name) or
    section= chooses it when the object has several; a program chosen so may be in any code section
    (libxdp loads old-style sections by name). map_sizes={name: max_entries} sets maps' sizes as
    libbpf's bpf_map__set_max_entries does; a map declared with max_entries 0 and not named there gets
    NANOBPF_MAP_DEFAULT_ENTRIES (Image.notes says so). Raises LoadError."""
    obj = _Object(path)
    map_sizes = dict(map_sizes or {})
    for sec in obj.sections:
        if _is_xdp_section(sec.name) and sec.flags & SHF_EXECINSTR and sec.size and not obj.functions[sec.index]:
            raise LoadError(f"{obj.path.name}: section '{sec.name}' holds code but no function symbol: "
                            f"the program has no name")
    prog = _choose_program(obj, program, section)
    sec = obj.by_name[prog.section]
    func = next(f for f in obj.functions[sec.index] if f.name == prog.name)
    btf = None
    if ".maps" in obj.by_name and ".BTF" not in obj.by_name:
        raise LoadError(f"{obj.path.name}: section '.maps' without BTF: compile with -g so the map "
                        f"definitions can be read")
    if ".BTF" in obj.by_name:
        btf = _Btf(obj.path)
    notes = []
    try:
        linker = _Linker(obj, func, btf, map_sizes, notes)
        insns = linker.link()
        # bpf_tail_call's targets: with a PROG_ARRAY, the object's other XDP programs come along, in the
        # object's order (their PROG_ARRAY values are 1, 2, ...), as libbpf loads every program of an object
        others = []
        if any(m.type == abi.NANOBPF_MAP_TYPE_PROG_ARRAY for m in linker.maps):
            for p in obj.programs():
                if p.xdp and p.name != prog.name:
                    psec = obj.by_name[p.section]
                    others.append((p.name, linker._place(next(f for f in obj.functions[psec.index] if f.name == p.name))))
            insns = linker.link()
        entries = {start for _, start in others}
        globals_ = [g for g in (_global_funcs(obj, btf, linker.functions[1:]) if btf else []) if g.start not in entries]
        globals_ += [GlobalFunc(start, abi.NANOBPF_FUNC_ARG_SCALAR, [(abi.NANOBPF_FUNC_ARG_CTX, 0)], program=True)
                     for _, start in others]
        # read while the BTF is open: a program that uses none of its maps has not looked at them yet
        declared = {n for n, _ in linker.btf_map_vars().values()} if ".maps" in obj.by_name else set()
    finally:
        if btf:
            btf.close()
    unknown = sorted(set(map_sizes) - declared)
    if unknown:
        raise LoadError(f"{obj.path.name}: --map-size names {', '.join(unknown)}, which the object does not "
                        f"declare in SEC(\".maps\") (maps: {', '.join(sorted(declared)) or 'none'})")
    name = prog.name
    limit = abi.NANOBPF_PROG_NAME_LEN - 1
    if len(name.encode()) > limit:  # Linux's kernel keeps 15 bytes of it; the device keeps 31
        name = name.encode()[:limit].decode(errors="ignore")
        notes.append(f"program name '{prog.name}' is longer than {limit} bytes: the device knows it as '{name}'")
    return Image(name, linker.maps, insns, section=prog.section, functions=linker.functions,
                 globals=globals_, notes=notes, programs=[name] + [n for n, _ in others])


def _choose_program(obj, program, section):
    """The program to load: the one named (program= or section=), or the only XDP program."""
    progs = obj.programs()
    listing = ", ".join(f"{p.name} (section '{p.section}')" for p in progs) or "none"
    if program is None and section is None:
        xdp = [p for p in progs if p.xdp]
        if not xdp:
            raise LoadError(f"{obj.path.name}: no XDP program (sections 'xdp', 'xdp/...', 'xdp.frags', 'xdp_*'); "
                            f"programs found: {listing}; name one with -p")
        if len(xdp) > 1:
            raise LoadError(f"{obj.path.name}: {len(xdp)} XDP programs, choose one with program= / -p: "
                            f"{', '.join(p.name for p in xdp)}")
        return xdp[0]
    match = [p for p in progs if (program is None or p.name == program) and (section is None or p.section == section)]
    what = " and ".join(x for x in (program and f"named '{program}'", section and f"in section '{section}'") if x)
    if not match:
        raise LoadError(f"{obj.path.name}: no program {what}; programs: {listing}")
    if len(match) > 1:
        raise LoadError(f"{obj.path.name}: {len(match)} programs {what}, choose one with -p: "
                        f"{', '.join(p.name for p in match)}")
    kind = _other_program_kind(match[0].section)
    if kind:
        raise LoadError(f"{obj.path.name}: program '{match[0].name}' is in section '{match[0].section}': {kind}")
    return match[0]


def _global_funcs(obj, btf, functions):
    """GlobalFunc of each placed function whose BTF linkage is global (as Linux, which verifies those on
    their own; without BTF every function is verified along each call)."""
    out = []
    for name, start in functions:
        tid = btf.find(name, BTF_KIND_FUNC)
        if tid is None or btf.type(tid).vlen != BTF_FUNC_GLOBAL:
            continue
        where = f"{obj.path.name}: global function '{name}'"
        proto = btf.type(btf.type(tid).size_or_type)
        if proto.kind != BTF_KIND_FUNC_PROTO:
            raise LoadError(f"{where}: its BTF type is not a function prototype")
        params = [tuple(proto.words[2 * k:2 * k + 2]) for k in range(proto.vlen)]
        if params and params[-1][1] == 0:
            raise LoadError(f"{where}: variadic functions are not supported")
        if len(params) > 5:
            raise LoadError(f"{where}: {len(params)} arguments (at most 5)")
        args = [_func_arg(btf, t, f"{where}: argument {k + 1} ('{btf.name(n)}')") for k, (n, t) in enumerate(params)]
        ret = abi.NANOBPF_FUNC_ARG_NONE
        if proto.size_or_type:
            if btf.skip_mods(proto.size_or_type).kind not in (BTF_KIND_INT, BTF_KIND_ENUM, BTF_KIND_ENUM64):
                raise LoadError(f"{where}: returns a {BTF_KIND_NAMES.get(btf.skip_mods(proto.size_or_type).kind)}; "
                                f"a global function returns an integer or void")
            ret = abi.NANOBPF_FUNC_ARG_SCALAR
        out.append(GlobalFunc(start, ret, args))
    return out


def _is_const(btf, tid):
    """Is the type tid const (a const among the modifiers and typedefs before the type itself)?"""
    while tid:
        t = btf.type(tid)
        if t.kind == BTF_KIND_CONST:
            return True
        if t.kind not in _MODS:
            return False
        tid = t.size_or_type
    return False


def _func_arg(btf, tid, where):
    """(NANOBPF_FUNC_ARG_*, bytes) of a global function's parameter type (Linux btf_prepare_func_args)."""
    t = btf.skip_mods(tid)
    if t.kind in (BTF_KIND_INT, BTF_KIND_ENUM, BTF_KIND_ENUM64):
        return abi.NANOBPF_FUNC_ARG_SCALAR, 0
    if t.kind == BTF_KIND_PTR:
        pointee = btf.skip_mods(t.size_or_type) if t.size_or_type else None
        if pointee is not None and pointee.kind == BTF_KIND_STRUCT and pointee.name == "xdp_md":
            return abi.NANOBPF_FUNC_ARG_CTX, 0
        if pointee is None or pointee.kind in (BTF_KIND_FUNC_PROTO,) or pointee.kind == 7:
            raise LoadError(f"{where}: a pointer to void, a function or an incomplete type has no size; "
                            f"point to a sized type")
        n = btf.resolve_size(t.size_or_type)
        if n <= 0:
            raise LoadError(f"{where}: points to a type of {n} bytes")
        return abi.NANOBPF_FUNC_ARG_MEM_RO if _is_const(btf, t.size_or_type) else abi.NANOBPF_FUNC_ARG_MEM, n
    raise LoadError(f"{where}: a {BTF_KIND_NAMES.get(t.kind, t.kind)} cannot be a global function argument "
                    f"(integers, struct xdp_md * and pointers to sized types can)")
