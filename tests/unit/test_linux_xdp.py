"""The Linux oracle (sw/python/nanobpf/ebpf/linux.py): clang-built XDP programs loaded into the host
kernel by libbpf and run with BPF_PROG_TEST_RUN. Checks actions, output frames (bpf_xdp_adjust_tail
growing and shrinking, metadata), ARRAY / PERCPU_ARRAY / HASH maps and global data through the map
API, ingress_ifindex and rx_queue rules, and that a verifier rejection reports the verifier log.
Skipped, with the reason, where this process cannot load BPF programs (not root, no CAP_BPF, seccomp)."""
import errno
import platform
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from nanobpf import BUILD, ROOT
from nanobpf.ebpf import linux
from nanobpf.ebpf.linux import LinuxError, LinuxUnavailable, LinuxXdp, available

CLANG = shutil.which("clang")
CFLAGS = ["-O2", "-g", "-target", "bpf", "-Wall", f"-I/usr/include/{platform.machine()}-linux-gnu",
          f"-I{ROOT / 'sw/ebpf/include'}", f"-I{BUILD / 'generated/include'}"]

_OK, _WHY = available()
pytestmark = [pytest.mark.skipif(CLANG is None, reason="clang is not installed"),
              pytest.mark.skipif(not _OK, reason=f"host kernel BPF unavailable: {_WHY}")]

XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT = range(5)

HEAD = """#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
"""
LICENSE = """char LICENSE[] SEC("license") = "GPL";
"""

# action from byte 14 of the frame (& 7; 5..7 pass), counted per value in an ARRAY, a PERCPU_ARRAY
# (4-byte values, padded to 8 per CPU by the system call) and a .bss global; .rodata holds the limit.
ACTIONS = HEAD + """
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 8);
    __type(key, __u32);
    __type(value, __u64);
} counts SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 8);
    __type(key, __u32);
    __type(value, __u32);
} pcpu SEC(".maps");

const volatile __u32 n_actions = 5;
__u64 frames;

SEC("xdp")
int by_byte(struct xdp_md *ctx)
{
    unsigned char *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    if (data + 15 > end)
        return XDP_ABORTED;
    __u32 k = data[14] & 7;
    __u64 *c = bpf_map_lookup_elem(&counts, &k);
    if (c)
        __sync_fetch_and_add(c, 1);
    __u32 *p = bpf_map_lookup_elem(&pcpu, &k);
    if (p)
        *p += 1;
    frames++;
    return k < n_actions ? k : XDP_PASS;
}

SEC("xdp")
int always_drop(struct xdp_md *ctx)
{
    return XDP_DROP;
}
""" + LICENSE

GROW = HEAD + """
SEC("xdp")
int grow(struct xdp_md *ctx)
{
    if (bpf_xdp_adjust_tail(ctx, 16))
        return XDP_ABORTED;
    unsigned char *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    long len = end - data;
    if (len < 16 || len > 4000)
        return XDP_ABORTED;
    __u64 off = len - 16;
    asm volatile("" : "+r"(off));   /* keep clang from folding the -16 into the store offsets */
    unsigned char *t = data + off;
    if (t + 16 > end)
        return XDP_ABORTED;
    for (int i = 0; i < 16; i++)
        t[i] = 0xa0 + i;
    return XDP_TX;
}
""" + LICENSE

SHRINK = HEAD + """
SEC("xdp")
int shrink(struct xdp_md *ctx)
{
    return bpf_xdp_adjust_tail(ctx, -8) ? XDP_ABORTED : XDP_PASS;
}
""" + LICENSE

META = HEAD + """
SEC("xdp")
int meta(struct xdp_md *ctx)
{
    if (bpf_xdp_adjust_meta(ctx, -4))
        return XDP_ABORTED;
    unsigned char *m = (void *)(long)ctx->data_meta, *d = (void *)(long)ctx->data;
    if (m + 4 > d)
        return XDP_ABORTED;
    m[0] = 0xe0; m[1] = 0xe1; m[2] = 0xe2; m[3] = 0xe3;
    return XDP_PASS;
}
""" + LICENSE

# the action comes from a HASH map keyed by the frame's first 4 bytes; hits counted in the value
HASH = HEAD + """
struct verdict {
    __u32 action;
    __u32 hits;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, __u32);
    __type(value, struct verdict);
} verdicts SEC(".maps");

SEC("xdp")
int by_hash(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    if (data + 4 > end)
        return XDP_ABORTED;
    __u32 key = *(__u32 *)data;
    struct verdict *v = bpf_map_lookup_elem(&verdicts, &key);
    if (!v)
        return XDP_DROP;
    __sync_fetch_and_add(&v->hits, 1);
    return v->action;
}
""" + LICENSE

IFINDEX = HEAD + """
SEC("xdp")
int ifindex(struct xdp_md *ctx)
{
    return ctx->ingress_ifindex;
}

SEC("xdp")
int rx_queue(struct xdp_md *ctx)
{
    return ctx->rx_queue_index;
}
""" + LICENSE

# reads the packet without checking data_end: the verifier refuses it
UNCHECKED = HEAD + """
SEC("xdp")
int unchecked(struct xdp_md *ctx)
{
    unsigned char *data = (void *)(long)ctx->data;
    return data[20];
}
""" + LICENSE


def compile_c(tmp_path, name, source):
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    out = tmp_path / f"{name}.o"
    p = subprocess.run([CLANG, *CFLAGS, "-c", str(src), "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out


def frame(byte14=0, n=60):
    f = bytearray(i & 0xff for i in range(n))
    f[14] = byte14
    return bytes(f)


def u32(v):
    return struct.pack("<I", v)


def test_available_is_cached():
    assert available() is available()
    assert available() == (True, "")


def test_actions_and_counters(tmp_path):
    obj = compile_c(tmp_path, "actions", ACTIONS)
    with LinuxXdp(obj, program="by_byte") as x:
        assert x.program == "by_byte"
        names = x.map_names()
        assert names[:2] == ["counts", "pcpu"]
        bss, rodata = x.map_by_suffix(".bss"), x.map_by_suffix(".rodata")
        assert bss == "actions.bss" and rodata == "actions.rodata" and set(names) == {"counts", "pcpu", bss, rodata}
        assert x.map_info("pcpu").percpu and x.map_info("pcpu").type_name == "PERCPU_ARRAY"
        assert not x.map_info("counts").percpu

        sent = [0, 1, 2, 3, 4, 5, 6, 7, 3, 3, 2, 0x13]   # 0x13 & 7 = 3
        for b in sent:
            action, out = x.run(frame(b))
            assert action == (b & 7 if b & 7 < 5 else XDP_PASS)
            assert out == frame(b)
        expect = [sum(1 for b in sent if b & 7 == k) for k in range(8)]

        assert [x.map_lookup("counts", u32(k)) for k in range(8)] == [struct.pack("<Q", n) for n in expect]
        assert x.map_items("counts") == [(u32(k), struct.pack("<Q", n)) for k, n in enumerate(expect)]
        assert x.map_lookup("counts", u32(8)) is None   # past max_entries: ENOENT

        ncpus = x.possible_cpus()
        for k in range(8):
            per = x.map_lookup_percpu("pcpu", u32(k))
            assert len(per) == ncpus and all(len(v) == 4 for v in per)
            assert sum(struct.unpack("<I", v)[0] for v in per) == expect[k]
        items = x.map_items("pcpu")
        assert [k for k, _ in items] == [u32(k) for k in range(8)] and all(len(v) == ncpus for _, v in items)
        with pytest.raises(TypeError, match="map_lookup_percpu"):
            x.map_lookup("pcpu", u32(0))
        with pytest.raises(TypeError, match="not per-CPU"):
            x.map_lookup_percpu("counts", u32(0))

        # per-CPU writes: one value for every CPU, or one per CPU
        x.map_update("pcpu", u32(7), u32(100))
        assert x.map_lookup_percpu("pcpu", u32(7)) == [u32(100)] * ncpus
        x.map_update("pcpu", u32(7), [u32(i) for i in range(ncpus)])
        assert x.map_lookup_percpu("pcpu", u32(7)) == [u32(i) for i in range(ncpus)]
        with pytest.raises(ValueError, match="possible CPUs"):
            x.map_update("pcpu", u32(7), [u32(0)] * (ncpus + 1))

        # global data: .bss counts frames; .rodata is frozen after loading
        assert x.map_lookup(bss, u32(0)) == struct.pack("<Q", len(sent))
        assert x.map_lookup(rodata, u32(0)) == u32(5)
        with pytest.raises(LinuxError) as e:
            x.map_update(rodata, u32(0), u32(7))
        assert e.value.errno == errno.EPERM

        # counters written from the host are what the program increments
        x.map_update("counts", u32(1), struct.pack("<Q", 1000))
        assert x.run(frame(1))[0] == XDP_DROP
        assert x.map_lookup("counts", u32(1)) == struct.pack("<Q", 1001)

        with pytest.raises(ValueError, match="key has 2 bytes"):
            x.map_lookup("counts", b"\0\0")
        with pytest.raises(ValueError, match="value has 4 bytes"):
            x.map_update("counts", u32(0), u32(0))
        with pytest.raises(KeyError, match="no map 'nope'"):
            x.map_lookup("nope", u32(0))
        with pytest.raises(LinuxError) as e:
            x.map_delete("counts", u32(0))   # array entries cannot be deleted
        assert e.value.errno == errno.EINVAL
        with pytest.raises(ValueError, match="ETH_HLEN"):
            x.run(bytes(13))
    with pytest.raises(ValueError, match="closed"):
        x.run(frame())


def test_program_choice(tmp_path):
    obj = compile_c(tmp_path, "actions", ACTIONS)
    with pytest.raises(ValueError, match="several XDP programs"):
        LinuxXdp(obj)
    with pytest.raises(ValueError, match=r"no program 'nope' \(XDP programs: by_byte, always_drop\)"):
        LinuxXdp(obj, program="nope")
    with LinuxXdp(obj, program="always_drop") as x:
        assert x.run(frame(3)) == (XDP_DROP, frame(3))
        # the maps are created even when the loaded program does not use them
        assert x.map_lookup("counts", u32(3)) == bytes(8)


def test_grow_tail(tmp_path):
    with LinuxXdp(compile_c(tmp_path, "grow", GROW)) as x:
        f = frame(n=60)
        action, out = x.run(f)
        assert action == XDP_TX
        assert out == f + bytes(range(0xa0, 0xb0))
        big = frame(n=1500)
        assert x.run(big) == (XDP_TX, big + bytes(range(0xa0, 0xb0)))


def test_shrink_tail(tmp_path):
    with LinuxXdp(compile_c(tmp_path, "shrink", SHRINK)) as x:
        f = frame(n=64)
        assert x.run(f) == (XDP_PASS, f[:-8])


def test_metadata_leads_the_output(tmp_path):
    with LinuxXdp(compile_c(tmp_path, "meta", META)) as x:
        f = frame()
        assert x.run(f) == (XDP_PASS, bytes([0xe0, 0xe1, 0xe2, 0xe3]) + f)


def test_hash_map_controls_action(tmp_path):
    with LinuxXdp(compile_c(tmp_path, "hash", HASH)) as x:
        f = frame()
        key = f[:4]
        assert x.run(f)[0] == XDP_DROP                        # no entry
        assert x.map_items("verdicts") == []
        x.map_update("verdicts", key, struct.pack("<II", XDP_TX, 0))
        x.map_update("verdicts", u32(0xdeadbeef), struct.pack("<II", XDP_PASS, 0))
        assert x.run(f) == (XDP_TX, f)
        assert x.run(f)[0] == XDP_TX
        assert x.map_lookup("verdicts", key) == struct.pack("<II", XDP_TX, 2)
        assert sorted(x.map_items("verdicts")) == sorted([(key, struct.pack("<II", XDP_TX, 2)),
                                                          (u32(0xdeadbeef), struct.pack("<II", XDP_PASS, 0))])
        with pytest.raises(LinuxError) as e:                  # BPF_NOEXIST on an existing key
            x.map_update("verdicts", key, struct.pack("<II", XDP_PASS, 0), flags=1)
        assert e.value.errno == errno.EEXIST
        assert x.map_delete("verdicts", key) is True
        assert x.map_delete("verdicts", key) is False
        assert x.map_lookup("verdicts", key) is None
        assert x.run(f)[0] == XDP_DROP
        assert x.map_items("verdicts") == [(u32(0xdeadbeef), struct.pack("<II", XDP_PASS, 0))]


def _devices():
    """{ifindex: rx queue count} of this network namespace's devices."""
    devs = {}
    for d in Path("/sys/class/net").iterdir():
        try:
            idx = int((d / "ifindex").read_text())
        except (OSError, ValueError):
            continue
        devs[idx] = len(list((d / "queues").glob("rx-*"))) if (d / "queues").is_dir() else 1
    return devs


def test_ingress_ifindex(tmp_path):
    obj = compile_c(tmp_path, "ifindex", IFINDEX)
    devs = _devices()
    with LinuxXdp(obj, program="ifindex") as x:
        assert x.run(frame())[0] == 1                         # no context: the loopback device
        for idx in sorted(devs):                              # any existing device, up or down
            assert x.run(frame(), ingress_ifindex=idx)[0] == idx
        missing = max(devs) + 1000
        with pytest.raises(LinuxError, match=f"no network device with ifindex {missing}") as e:
            x.run(frame(), ingress_ifindex=missing)
        assert e.value.errno == errno.ENODEV
        with pytest.raises(ValueError, match="rx_queue needs ingress_ifindex"):
            x.run(frame(), rx_queue=1)
    with LinuxXdp(obj, program="rx_queue") as x:
        assert x.run(frame())[0] == 0
        lo_queues = devs.get(1, 1)
        assert x.run(frame(), ingress_ifindex=1, rx_queue=lo_queues - 1)[0] == lo_queues - 1
        with pytest.raises(LinuxError) as e:                  # past the device's rx queues
            x.run(frame(), ingress_ifindex=1, rx_queue=lo_queues)
        assert e.value.errno == errno.EINVAL


def test_verifier_rejection_reports_the_log(tmp_path):
    obj = compile_c(tmp_path, "unchecked", UNCHECKED)
    with pytest.raises(LinuxError) as e:
        LinuxXdp(obj)
    msg = str(e.value)
    assert e.value.errno == errno.EACCES
    assert "the kernel refused to load XDP program 'unchecked'" in msg
    assert "invalid access to packet" in msg                  # the verifier's words, from its log
    assert "BEGIN PROG LOAD LOG" in e.value.log


def test_open_errors(tmp_path):
    with pytest.raises(LinuxError, match="ENOENT") as e:
        LinuxXdp(tmp_path / "missing.o")
    assert e.value.errno == errno.ENOENT
    bad = tmp_path / "bad.o"
    bad.write_text("not an ELF object")
    with pytest.raises(LinuxError, match="libbpf cannot open the object"):
        LinuxXdp(bad)
    none = compile_c(tmp_path, "none", HEAD + 'SEC("tc") int cls(void *ctx) { return 0; }\n' + LICENSE)
    with pytest.raises(ValueError, match="no XDP program"):
        LinuxXdp(none)
    with pytest.raises(ValueError, match="is not an XDP program"):
        LinuxXdp(none, program="cls")


def test_unavailable_raises_with_the_reason(tmp_path, monkeypatch):
    obj = compile_c(tmp_path, "shrink", SHRINK)
    monkeypatch.setattr(linux, "available", lambda: (False, "no CAP_BPF here"))
    with pytest.raises(LinuxUnavailable, match="no CAP_BPF here"):
        LinuxXdp(obj)
