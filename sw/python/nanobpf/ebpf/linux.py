"""Run a clang-built XDP object in the host Linux kernel (BPF_PROG_TEST_RUN): an independent oracle
for the device's eBPF runtime.

    ok, why = available()                       # root / CAP_BPF, bpf() allowed? (cached)
    with LinuxXdp("prog.o", program="xdp_main") as x:   # or section="xdp_stats1"; map_sizes={"m": 64}
        x.map_update("hits", key, value)        # bytes of exactly the map's key/value size
        action, out = x.run(frame)              # retval (XDP action) and the frame after the program
        x.map_lookup("hits", key), x.map_items("hits"), x.map_lookup_percpu("pcpu", key)
        x.map_by_suffix(".bss")                 # libbpf's name of a global-data map, e.g. "prog.bss"

The object (`clang -O2 -g -target bpf -c`) is opened and loaded by libbpf (libbpf.so.1, found as
loader.py finds it, called through ctypes), so maps, global data, relocations and BTF are handled as
for any libbpf application: one XDP program is loaded, the object's other programs are not. Programs in
old-style sections ("xdp_pass", "xdp_stats1": libbpf 1.x no longer knows them) are set to XDP as
libxdp does. map_sizes= sets max_entries before loading (bpf_map__set_max_entries; maps declared
with 0 need it); pin_root_path= is where maps declared with LIBBPF_PIN_BY_NAME are pinned and reused
(a directory on a bpffs; libbpf's default is /sys/fs/bpf). Map names
are libbpf's: ".maps" maps keep their C names, global data maps are "<object name prefix>.rodata",
".data", ".bss" (the prefix is cut so the name fits the kernel's 15 characters; map_by_suffix finds
them). ".rodata" is frozen after loading: the kernel refuses updates to it.

Kernel behaviour (checked on Linux 6.18 with libbpf 1.1; tests/unit/test_linux_xdp.py):
- run() without ingress_ifindex passes no context: the kernel uses rx queue 0 of the loopback device
  of the current network namespace, so ctx->ingress_ifindex reads 1 (lo) and rx_queue_index 0.
- With ingress_ifindex the kernel requires a device of that index in the current network namespace
  (otherwise ENODEV) and rx_queue below its number of rx queues (otherwise EINVAL); the program then
  sees both in struct xdp_md. Devices that are down are accepted. rx_queue without ingress_ifindex
  is refused (EINVAL); run() says so before asking. The context passed has data = data_meta = 0 (no
  metadata in front of the frame) and data_end = len(frame). data_end matters: 6.18 takes it as the
  length of the linear part and puts the rest of data_in into fragments (data_end 0 would give the
  program an empty packet), larger than len(frame) is EINVAL; kernels before 6.18 accept only
  data_end == len(frame).
- Frames shorter than 14 bytes (ETH_HLEN) are refused (EINVAL). The frame sits behind 256 bytes of
  headroom in one page; bpf_xdp_adjust_tail can grow it up to the page's tailroom and the output
  (data_out, len(frame) + 4096 bytes here) holds the grown frame: a 60-byte frame grown by 16 comes
  back as 76 bytes. The linear part holds at most a page minus head- and tailroom (3520 bytes with
  4 KiB pages on x86-64), so growth past that fails (the helper returns an error); longer frames
  continue in fragments, even for programs not marked "xdp.frags" (they see only the linear part).
- The output starts at data_meta: a program that adds metadata (bpf_xdp_adjust_meta) gets it in
  front of the frame.
- Per-CPU maps hold one value per possible CPU (libbpf_num_possible_cpus(), not the online count);
  the system call reads and writes all of them at once, each padded to a multiple of 8 bytes.
  map_lookup_percpu and map_items return the values without the padding. A test run executes on one
  CPU, so one test-run's counting shows up in a single CPU's value: sum them.
"""
import ctypes
import errno as _errno
import functools
import os
import platform
import struct
import sys
import threading
from collections import namedtuple

from .loader import LINUX_MAP_TYPES, Insn, LoadError, _lib

__all__ = ["LinuxUnavailable", "LinuxError", "MapInfo", "LinuxXdp", "available"]


class LinuxUnavailable(Exception):
    """This process cannot load and test-run XDP programs in the host kernel; str() is the reason."""


class LinuxError(Exception):
    """libbpf or the kernel refused something. errno: the error number (or None); log: what libbpf
    printed meanwhile (for a refused load, the verifier log)."""

    def __init__(self, message, errno=None, log=""):
        super().__init__(message)
        self.errno = errno
        self.log = log


BPF_PROG_TYPE_XDP = 6
XDP_PASS = 2
ETH_HLEN = 14
PERCPU_MAP_TYPES = frozenset({5, 6, 10, 21})  # PERCPU_HASH, PERCPU_ARRAY, LRU_PERCPU_HASH, PERCPU_CGROUP_STORAGE
BPF_PROG_TYPE_UNSPEC = 0
BPF_XDP = 37                                   # enum bpf_attach_type: what libbpf sets for SEC("xdp")
BPF_MAP_TYPE_PROG_ARRAY = 3
LIBBPF_DEBUG = 2                               # enum libbpf_print_level: WARN 0, INFO 1, DEBUG 2
GROWTH = 4096                                  # room for bpf_xdp_adjust_tail in run()'s output buffer
LOG_TAIL_LINES, LOG_TAIL_CHARS = 40, 6000      # how much of libbpf's output a load error message shows


class MapInfo(namedtuple("MapInfo", "name type key_size value_size max_entries fd")):
    """One map of the loaded object, as libbpf created it (type: Linux enum bpf_map_type)."""
    __slots__ = ()

    @property
    def type_name(self):
        return LINUX_MAP_TYPES.get(self.type, f"type {self.type}")

    @property
    def percpu(self):
        return self.type in PERCPU_MAP_TYPES


class _TestRunOpts(ctypes.Structure):
    """struct bpf_test_run_opts (libbpf 1.1 bpf.h; 80 bytes on 64-bit)."""
    _fields_ = [("sz", ctypes.c_size_t),
                ("data_in", ctypes.c_void_p), ("data_out", ctypes.c_void_p),
                ("data_size_in", ctypes.c_uint32), ("data_size_out", ctypes.c_uint32),
                ("ctx_in", ctypes.c_void_p), ("ctx_out", ctypes.c_void_p),
                ("ctx_size_in", ctypes.c_uint32), ("ctx_size_out", ctypes.c_uint32),
                ("retval", ctypes.c_uint32), ("repeat", ctypes.c_int), ("duration", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("cpu", ctypes.c_uint32), ("batch_size", ctypes.c_uint32)]


class _OpenOpts(ctypes.Structure):
    """The leading fields of struct bpf_object_open_opts (libbpf 1.1 libbpf.h); sz tells libbpf how many
    this caller knows, the rest count as zero."""
    _fields_ = [("sz", ctypes.c_size_t), ("object_name", ctypes.c_char_p), ("relaxed_maps", ctypes.c_bool),
                ("pin_root_path", ctypes.c_char_p)]


class _XdpMd(ctypes.Structure):
    """struct xdp_md (linux/bpf.h)."""
    _fields_ = [(n, ctypes.c_uint32) for n in
                ("data", "data_end", "data_meta", "ingress_ifindex", "rx_queue_index", "egress_ifindex")]


# ---------------------------------------------------------------- libbpf through ctypes
_P, _I, _U32, _CP = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p
_PROTOS = {  # name: (restype, argtypes)
    "bpf_object__open_file": (_P, [_CP, _P]),
    "bpf_object__load": (_I, [_P]),
    "bpf_object__close": (None, [_P]),
    "bpf_object__next_program": (_P, [_P, _P]),
    "bpf_object__find_program_by_name": (_P, [_P, _CP]),
    "bpf_object__next_map": (_P, [_P, _P]),
    "bpf_object__find_map_by_name": (_P, [_P, _CP]),
    "bpf_program__name": (_CP, [_P]),
    "bpf_program__section_name": (_CP, [_P]),
    "bpf_program__type": (_I, [_P]),
    "bpf_program__set_autoload": (_I, [_P, ctypes.c_bool]),
    "bpf_program__set_type": (_I, [_P, _I]),
    "bpf_program__set_expected_attach_type": (_I, [_P, _I]),
    "bpf_program__fd": (_I, [_P]),
    "bpf_map__name": (_CP, [_P]),
    "bpf_map__fd": (_I, [_P]),
    "bpf_map__type": (_I, [_P]),
    "bpf_map__key_size": (_U32, [_P]),
    "bpf_map__value_size": (_U32, [_P]),
    "bpf_map__max_entries": (_U32, [_P]),
    "bpf_map__set_max_entries": (_I, [_P, _U32]),
    "bpf_map__pin_path": (_CP, [_P]),
    "bpf_map__is_pinned": (ctypes.c_bool, [_P]),
    "bpf_map_update_elem": (_I, [_I, _P, _P, ctypes.c_uint64]),
    "bpf_map_lookup_elem": (_I, [_I, _P, _P]),
    "bpf_map_delete_elem": (_I, [_I, _P]),
    "bpf_map_get_next_key": (_I, [_I, _P, _P]),
    "bpf_prog_load": (_I, [_I, _CP, _CP, _P, ctypes.c_size_t, _P]),
    "bpf_prog_test_run_opts": (_I, [_I, ctypes.POINTER(_TestRunOpts)]),
    "libbpf_num_possible_cpus": (_I, []),
    "libbpf_set_print": (_P, [_P]),
    "libbpf_strerror": (_I, [_I, _P, ctypes.c_size_t]),
}
_lock = threading.RLock()
_ready = False


def _libbpf():
    """libbpf.so.1 (opened by loader.py) with the prototypes used here."""
    global _ready
    lib = _lib()
    if not _ready:
        with _lock:
            for name, (res, args) in _PROTOS.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = res, args
            _ready = True
    return lib


def _strerror(err):
    """libbpf's text for an errno or one of its own LIBBPF_ERRNO__ codes."""
    buf = ctypes.create_string_buffer(256)
    try:
        _libbpf().libbpf_strerror(err, buf, len(buf))
        text = buf.value.decode(errors="replace")
    except Exception:
        text = ""
    name = _errno.errorcode.get(err)
    text = text or os.strerror(err)
    return f"{name}: {text}" if name else f"errno {err}: {text}"


def _err(ret):
    """errno of a failed libbpf call: libbpf 1.x returns -errno and also sets errno."""
    return -ret if ret < 0 else (ctypes.get_errno() or _errno.EIO)


# -------- libbpf's messages (libbpf_set_print): the verifier log of a refused load comes this way
_PRINT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
# bytes that make a copy of a va_list argument (va_copy is a plain copy on these): x86-64 and aarch64
# pass a pointer to a 24/32-byte structure, riscv64's va_list is a pointer passed by value (0: the
# value itself is the copy). Elsewhere one vsnprintf into a large buffer.
_VA_LIST_COPY = {"x86_64": 24, "amd64": 24, "aarch64": 32, "arm64": 32, "riscv64": 0}
_libc = None
_sink = None


def _vformat(fmt, ap):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None)
        _libc.vsnprintf.restype = ctypes.c_int
        _libc.vsnprintf.argtypes = [_P, ctypes.c_size_t, _P, _P]
    copy = _VA_LIST_COPY.get(platform.machine().lower())
    if copy is None:
        buf = ctypes.create_string_buffer(1 << 20)
        _libc.vsnprintf(buf, len(buf), fmt, ap)
        return buf.value
    if copy:
        ap2 = ctypes.create_string_buffer(copy)
        ctypes.memmove(ap2, ap, copy)
    else:
        ap2 = ap
    need = _libc.vsnprintf(None, 0, fmt, ap2)  # consumes the copy, measures
    if need <= 0:
        return b""
    buf = ctypes.create_string_buffer(need + 1)
    _libc.vsnprintf(buf, need + 1, fmt, ap)
    return buf.raw[:need]


@_PRINT_FN
def _on_print(level, fmt, ap):
    try:
        if level != LIBBPF_DEBUG and fmt:
            text = _vformat(fmt, ap).decode(errors="replace")
            if _sink is not None:
                _sink.append(text)
            else:
                sys.stderr.write(text)
    except Exception:  # never raise into libbpf
        pass
    return 0


class _Capture:
    """Collects libbpf's warnings and infos while open/load run; the previous print function is
    restored afterwards (libbpf's is process-wide)."""

    def __enter__(self):
        global _sink
        _lock.acquire()
        self.parts = []
        self._prev_sink, _sink = _sink, self.parts
        self._prev_fn = _libbpf().libbpf_set_print(ctypes.cast(_on_print, _P))
        return self

    def __exit__(self, *exc):
        global _sink
        _libbpf().libbpf_set_print(self._prev_fn)
        _sink = self._prev_sink
        _lock.release()

    @property
    def text(self):
        return "".join(self.parts)

    def tail(self):
        lines = self.text.rstrip("\n").splitlines()
        t = "\n".join(lines[-LOG_TAIL_LINES:])
        if len(lines) > LOG_TAIL_LINES or len(t) > LOG_TAIL_CHARS:
            t = "...\n" + t[-LOG_TAIL_CHARS:]
        return t


# ---------------------------------------------------------------- can this process do it?
def _test_run(lib, prog_fd, frame, ctx=None, out_room=GROWTH):
    """BPF_PROG_TEST_RUN once: (0, retval, output) or (errno, None, None)."""
    din = (ctypes.c_char * len(frame)).from_buffer_copy(frame)
    dout = (ctypes.c_char * (len(frame) + out_room))()
    opts = _TestRunOpts(sz=ctypes.sizeof(_TestRunOpts), data_in=ctypes.addressof(din),
                        data_out=ctypes.addressof(dout), data_size_in=len(frame),
                        data_size_out=len(dout), repeat=1)
    if ctx is not None:
        opts.ctx_in, opts.ctx_size_in = ctypes.addressof(ctx), ctypes.sizeof(ctx)
    ret = lib.bpf_prog_test_run_opts(prog_fd, ctypes.byref(opts))
    if ret < 0:
        return _err(ret), None, None
    if opts.data_size_out > len(dout):  # the kernel says ENOSPC first; kept as a guard
        return _errno.ENOSPC, None, None
    return 0, opts.retval, dout.raw[:opts.data_size_out]


def _permission_hint():
    try:
        with open("/proc/sys/kernel/unprivileged_bpf_disabled") as f:
            unpriv = f.read().strip()
    except OSError:
        unpriv = "?"
    return (f"needs root or CAP_BPF + CAP_NET_ADMIN (euid {os.geteuid()}, "
            f"kernel.unprivileged_bpf_disabled = {unpriv})")


@functools.lru_cache(maxsize=None)
def available():
    """(True, "") when this process can load XDP programs into the host kernel and test-run them,
    else (False, reason). Loads and runs `r0 = XDP_PASS; exit` once; the answer is cached."""
    if not sys.platform.startswith("linux"):
        return False, f"not Linux ({sys.platform})"
    try:
        lib = _libbpf()
    except (LoadError, OSError, AttributeError) as e:
        return False, f"libbpf unusable: {e}"
    code = Insn(0xb7, 0, 0, 0, XDP_PASS).pack() + Insn(0x95, 0, 0, 0, 0).pack()  # mov r0, 2; exit
    insns = ctypes.create_string_buffer(code, len(code))
    fd = lib.bpf_prog_load(BPF_PROG_TYPE_XDP, b"nanobpf_probe", b"GPL", insns, len(code) // 8, None)
    if fd < 0:
        err = _err(fd)
        if err in (_errno.EPERM, _errno.EACCES):
            return False, f"the kernel refuses to load an XDP program ({_strerror(err)}): {_permission_hint()}"
        if err == _errno.ENOSYS:
            return False, ("the bpf() system call is not available (kernel without CONFIG_BPF_SYSCALL, "
                           "or blocked by seccomp, as in many containers)")
        return False, f"the kernel refuses to load a trivial XDP program ({_strerror(err)})"
    try:
        err, retval, _ = _test_run(lib, fd, bytes(64))
    finally:
        os.close(fd)
    if err:
        return False, f"BPF_PROG_TEST_RUN of a trivial XDP program failed ({_strerror(err)})"
    if retval != XDP_PASS:
        return False, f"BPF_PROG_TEST_RUN of `r0 = {XDP_PASS}; exit` returned {retval}"
    return True, ""


# ---------------------------------------------------------------- one loaded object
def _bytes(what, data, size):
    b = bytes(data)
    if len(b) != size:
        raise ValueError(f"{what} has {len(b)} bytes, the map's size is {size}")
    return b


def _old_style_xdp(section):
    """libxdp's and the xdp-tutorial's XDP sections that libbpf 1.x does not recognise ("xdp_pass")."""
    return section.startswith("xdp_")


class LinuxXdp:
    """One XDP program of a clang BPF object loaded into the host kernel by libbpf, with its maps.

    program: the XDP program's function name, or section: its section name; one is needed when the
    object has several XDP programs. Only that program is loaded (the others are set not to autoload);
    all maps of the object are created. map_sizes: {map name: max_entries} set before loading.
    pin_root_path: the directory (on a bpffs) for maps declared with LIBBPF_PIN_BY_NAME; a map already
    pinned there with the same shape is reused, as libbpf does, so two objects share it.
    Raises LinuxUnavailable when the process cannot use BPF at all, LinuxError when libbpf cannot open
    the object or the kernel refuses it (the message ends with the tail of libbpf's output, which holds
    the verifier log; .log has all of it), and ValueError for a missing or unsuitable program."""

    def __init__(self, obj_path, program=None, section=None, map_sizes=None, pin_root_path=None):
        self._obj = None
        ok, why = available()
        if not ok:
            raise LinuxUnavailable(why)
        lib = self._lib = _libbpf()
        self.path = os.fspath(obj_path)
        opts = None
        if pin_root_path is not None:
            self._pin_root = os.fsencode(os.fspath(pin_root_path))  # libbpf keeps the pointer until open returns
            opts = _OpenOpts(sz=ctypes.sizeof(_OpenOpts), pin_root_path=self._pin_root)
        with _Capture() as cap:
            obj = lib.bpf_object__open_file(os.fsencode(self.path), ctypes.byref(opts) if opts else None)
            if not obj:
                err = ctypes.get_errno() or _errno.EINVAL
                msg = f"{self.path}: libbpf cannot open the object ({_strerror(err)})"
                raise LinuxError(msg + (f"; libbpf said:\n{cap.tail()}" if cap.text else ""), err, cap.text)
            self._obj = obj
            try:
                prog = self._choose(program, section)
                for name, entries in (map_sizes or {}).items():
                    m = lib.bpf_object__find_map_by_name(obj, name.encode())
                    if not m:
                        raise ValueError(f"{self.path}: map_sizes names no map '{name}'")
                    ret = lib.bpf_map__set_max_entries(m, int(entries))
                    if ret < 0:
                        raise LinuxError(f"{self.path}: libbpf cannot set max_entries of map '{name}' "
                                         f"({_strerror(_err(ret))})", _err(ret))
                ret = lib.bpf_object__load(obj)
                if ret < 0:
                    err = _err(ret)
                    raise LinuxError(f"{self.path}: the kernel refused to load XDP program '{self.program}' "
                                     f"({_strerror(err)}); libbpf said:\n{cap.tail()}", err, cap.text)
            except BaseException:
                self.close()
                raise
        self.prog_fd = lib.bpf_program__fd(prog)
        self._maps = {}
        self.pinned = {}  # map name -> pin path (maps declared with LIBBPF_PIN_BY_NAME)
        m = lib.bpf_object__next_map(obj, None)
        while m:
            name = lib.bpf_map__name(m).decode()
            self._maps[name] = MapInfo(name, lib.bpf_map__type(m), lib.bpf_map__key_size(m),
                                       lib.bpf_map__value_size(m), lib.bpf_map__max_entries(m),
                                       lib.bpf_map__fd(m))
            if lib.bpf_map__is_pinned(m):
                self.pinned[name] = lib.bpf_map__pin_path(m).decode()
            m = lib.bpf_object__next_map(obj, m)
        self._ncpus = None

    def _is_xdp(self, p):
        lib = self._lib
        t = lib.bpf_program__type(p)
        return t == BPF_PROG_TYPE_XDP or (t == BPF_PROG_TYPE_UNSPEC and
                                          _old_style_xdp(lib.bpf_program__section_name(p).decode()))

    def _choose(self, program, section=None):
        """Pick the program, turn off autoload for the others; sets self.program."""
        lib = self._lib
        progs, xdp = [], []
        p = lib.bpf_object__next_program(self._obj, None)
        while p:
            progs.append(p)
            if self._is_xdp(p):
                xdp.append(p)
            p = lib.bpf_object__next_program(self._obj, p)
        names = [lib.bpf_program__name(p).decode() for p in xdp]
        if program is not None and section is not None:
            raise ValueError(f"{self.path}: choose a program by name or by section, not both")
        if program is not None or section is not None:
            if program is not None:
                chosen = lib.bpf_object__find_program_by_name(self._obj, program.encode())
                what = f"program '{program}'"
            else:
                found = [p for p in progs if lib.bpf_program__section_name(p).decode() == section]
                if len(found) > 1:
                    raise ValueError(f"{self.path}: section \"{section}\" holds {len(found)} programs: choose by name")
                chosen = found[0] if found else None
                what = f"section '{section}'"
            if not chosen:
                raise ValueError(f"{self.path}: no {what} (XDP programs: {', '.join(names) or 'none'})")
            if not self._is_xdp(chosen):
                sec = lib.bpf_program__section_name(chosen).decode()
                raise ValueError(f"{self.path}: {what} (section \"{sec}\") is not an XDP program")
        elif len(xdp) == 1:
            chosen = xdp[0]
        elif not xdp:
            raise ValueError(f"{self.path}: no XDP program (sections \"xdp\", \"xdp.frags\", \"xdp/...\")")
        else:
            raise ValueError(f"{self.path}: several XDP programs ({', '.join(names)}): choose one with program=")
        self.program = lib.bpf_program__name(chosen).decode()
        if lib.bpf_program__type(chosen) == BPF_PROG_TYPE_UNSPEC:  # old-style section: libxdp sets the type
            if (lib.bpf_program__set_type(chosen, BPF_PROG_TYPE_XDP) < 0
                    or lib.bpf_program__set_expected_attach_type(chosen, BPF_XDP) < 0):
                raise LinuxError(f"{self.path}: libbpf cannot make program '{self.program}' an XDP program")
        # with a PROG_ARRAY the object's other XDP programs load too (bpf_tail_call's targets)
        tails = False
        m = lib.bpf_object__next_map(self._obj, None)
        while m:
            tails |= lib.bpf_map__type(m) == BPF_MAP_TYPE_PROG_ARRAY
            m = lib.bpf_object__next_map(self._obj, m)
        for p in progs:
            if lib.bpf_program__set_autoload(p, p == chosen or (tails and p in xdp)) < 0:
                raise LinuxError(f"{self.path}: libbpf cannot set autoload of a program")
        return chosen

    def prog_value(self, name):
        """What a PROG_ARRAY entry holds to name XDP program `name` of the object: its fd (4 bytes)."""
        self._check_open()
        p = self._lib.bpf_object__find_program_by_name(self._obj, name.encode())
        fd = self._lib.bpf_program__fd(p) if p else -1
        if fd < 0:
            raise ValueError(f"{self.path}: no loaded program '{name}'")
        return struct.pack("<i", fd)

    def close(self):
        if getattr(self, "_obj", None):
            self._lib.bpf_object__close(self._obj)
            self._obj = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    # ------------------------------------------------------------ maps
    def map_names(self):
        """libbpf's map names, in the object's order."""
        return list(self._maps)

    def map_info(self, name):
        self._check_open()
        try:
            return self._maps[name]
        except KeyError:
            raise KeyError(f"{self.path}: no map '{name}' (maps: {', '.join(self._maps) or 'none'})") from None

    def map_by_suffix(self, suffix):
        """The one map name ending with suffix, e.g. ".bss" -> "prog.bss"."""
        found = [n for n in self._maps if n.endswith(suffix)]
        if len(found) != 1:
            raise KeyError(f"{self.path}: {len(found)} maps end with '{suffix}' (maps: {', '.join(self._maps)})")
        return found[0]

    def possible_cpus(self):
        """Number of values of a per-CPU map entry (libbpf_num_possible_cpus)."""
        if self._ncpus is None:
            n = self._lib.libbpf_num_possible_cpus()
            if n <= 0:
                raise LinuxError(f"libbpf_num_possible_cpus failed ({_strerror(-n)})", -n)
            self._ncpus = n
        return self._ncpus

    def _check_open(self):
        if not self._obj:
            raise ValueError(f"{self.path}: closed")

    def _value_buffer(self, m):
        stride = (m.value_size + 7) & ~7
        n = stride * self.possible_cpus() if m.percpu else m.value_size
        return ctypes.create_string_buffer(max(n, 1)), stride

    def _fail(self, what, name, ret):
        err = _err(ret)
        raise LinuxError(f"{self.path}: {what} on map '{name}' failed ({_strerror(err)})", err)

    def map_update(self, name, key, value, flags=0):
        """bpf_map_update_elem (flags: BPF_ANY 0, BPF_NOEXIST 1, BPF_EXIST 2). For a per-CPU map,
        value is either one value (written to every CPU) or a list with one value per possible CPU."""
        m = self.map_info(name)
        k = _bytes("key", key, m.key_size)
        if m.percpu:
            ncpus = self.possible_cpus()
            vals = [value] * ncpus if isinstance(value, (bytes, bytearray, memoryview)) else list(value)
            if len(vals) != ncpus:
                raise ValueError(f"{len(vals)} per-CPU values, the kernel has {ncpus} possible CPUs")
            pad = b"\0" * (-m.value_size % 8)
            v = b"".join(_bytes("value", x, m.value_size) + pad for x in vals)
        else:
            v = _bytes("value", value, m.value_size)
        ret = self._lib.bpf_map_update_elem(m.fd, k, v, flags)
        if ret < 0:
            self._fail("update", name, ret)

    def _lookup(self, m, k):
        buf, stride = self._value_buffer(m)
        ret = self._lib.bpf_map_lookup_elem(m.fd, k, buf)
        if ret < 0:
            if _err(ret) == _errno.ENOENT:
                return None
            self._fail("lookup", m.name, ret)
        if m.percpu:
            return [buf.raw[i * stride:i * stride + m.value_size] for i in range(self.possible_cpus())]
        return buf.raw[:m.value_size]

    def map_lookup(self, name, key):
        """The value for key, or None. Refused for per-CPU maps: use map_lookup_percpu."""
        m = self.map_info(name)
        if m.percpu:
            raise TypeError(f"map '{name}' is {m.type_name}: use map_lookup_percpu")
        return self._lookup(m, _bytes("key", key, m.key_size))

    def map_lookup_percpu(self, name, key):
        """The values of a per-CPU map entry, one per possible CPU, or None."""
        m = self.map_info(name)
        if not m.percpu:
            raise TypeError(f"map '{name}' is {m.type_name}, not per-CPU: use map_lookup")
        return self._lookup(m, _bytes("key", key, m.key_size))

    def map_delete(self, name, key):
        """bpf_map_delete_elem; False when the key was not there (array maps refuse with EINVAL)."""
        m = self.map_info(name)
        ret = self._lib.bpf_map_delete_elem(m.fd, _bytes("key", key, m.key_size))
        if ret < 0:
            if _err(ret) == _errno.ENOENT:
                return False
            self._fail("delete", name, ret)
        return True

    def map_items(self, name):
        """[(key, value)] in the kernel's iteration order (bpf_map_get_next_key); per-CPU maps give a
        list of per-CPU values as value."""
        m = self.map_info(name)
        items = []
        cur, nxt = None, ctypes.create_string_buffer(max(m.key_size, 1))
        while len(items) < m.max_entries:
            ret = self._lib.bpf_map_get_next_key(m.fd, cur, nxt)
            if ret < 0:
                if _err(ret) == _errno.ENOENT:
                    break
                self._fail("get_next_key", name, ret)
            k = nxt.raw[:m.key_size]
            v = self._lookup(m, k)
            if v is not None:  # gone meanwhile
                items.append((k, v))
            cur = k
        return items

    # ------------------------------------------------------------ running
    def run(self, frame, ingress_ifindex=0, rx_queue=0, meta=b""):
        """Run the program once over frame (BPF_PROG_TEST_RUN): (retval, output from data_meta).

        retval is the XDP action the program returned (XDP_TX and XDP_REDIRECT are not carried out).
        ingress_ifindex 0 passes no context: the program sees lo (ifindex 1) and rx queue 0. A nonzero
        ingress_ifindex must name a device of the current network namespace (ENODEV otherwise) and
        rx_queue must be below its number of rx queues (EINVAL otherwise); see the module's notes.
        meta: metadata in front of the frame (a multiple of 4 bytes, at most 255): the kernel takes the
        first ctx.data bytes of the input as metadata."""
        self._check_open()
        frame = bytes(frame)
        if len(frame) < ETH_HLEN:
            raise ValueError(f"a frame of {len(frame)} bytes: XDP test runs need at least {ETH_HLEN} (ETH_HLEN)")
        if rx_queue and not ingress_ifindex:
            raise ValueError("rx_queue needs ingress_ifindex (the kernel refuses a queue without a device)")
        meta = bytes(meta)
        ctx = None
        if ingress_ifindex or meta:
            ctx = _XdpMd(data=len(meta), data_end=len(meta) + len(frame), data_meta=0, ingress_ifindex=ingress_ifindex,
                         rx_queue_index=rx_queue)
        err, retval, out = _test_run(self._lib, self.prog_fd, meta + frame, ctx)
        if err:
            hint = ""
            if err == _errno.ENODEV and ingress_ifindex:
                hint = f": no network device with ifindex {ingress_ifindex} in this network namespace"
            elif err == _errno.EINVAL and ingress_ifindex:
                hint = f": rx queue {rx_queue} may not exist on ifindex {ingress_ifindex}"
            raise LinuxError(f"{self.path}: test run of '{self.program}' failed ({_strerror(err)}){hint}", err)
        return retval, out
