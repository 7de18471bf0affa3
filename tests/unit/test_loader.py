"""The host eBPF loader (sw/python/nanobpf/ebpf/loader.py, nanobpf-load): the examples in
sw/ebpf/examples become device images with the right maps, resolved map references and appended
subprograms; images round-trip through parse_image; everything the device lacks is refused with a
message naming the section and instruction. Optionally the same objects are loaded by the Linux
kernel (XDP generic mode on lo) and its maps compared with the image's."""
import json
import platform
import shutil
import struct
import subprocess

import pytest

from nanobpf import BUILD, ROOT, command

import nanobpf_ebpf_defs as abi
from nanobpf.ebpf import Insn, LoadError, load, parse_image, programs

EXAMPLES = ROOT / "sw/ebpf/examples"
LOAD = command("nanobpf-load")
CLANG = shutil.which("clang")
CFLAGS = ["-O2", "-g", "-target", "bpf", "-Wall", f"-I/usr/include/{platform.machine()}-linux-gnu",
          f"-I{BUILD / 'generated/include'}"]

needs_clang = pytest.mark.skipif(CLANG is None, reason="clang is not installed")
pytestmark = needs_clang


def compile_c(tmp_path, name, source=None, debug=True):
    """Compile sw/ebpf/examples/<name>.c, or source text, into tmp_path/<name>.o."""
    src = EXAMPLES / f"{name}.c"
    if source is not None:
        src = tmp_path / f"{name}.c"
        src.write_text(source)
    out = tmp_path / f"{name}.o"
    flags = CFLAGS if debug else [f for f in CFLAGS if f != "-g"]
    p = subprocess.run([CLANG, *flags, "-c", str(src), "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out


def ld_imm64(img):
    """(index, first slot, second slot) of every ld_imm64 of the image."""
    out, i = [], 0
    while i < len(img.insns):
        if img.insns[i].code == 0x18:
            out.append((i, img.insns[i], img.insns[i + 1]))
            i += 2
        else:
            i += 1
    return out


def calls(img, src):
    return [(i, x) for i, x in enumerate(img.insns) if x.code == 0x85 and x.src == src]


def code_relocs(obj):
    """R_BPF_64_64 relocations per code section, read independently of the loader."""
    from elftools.elf.elffile import ELFFile
    with open(obj, "rb") as f:
        elf = ELFFile(f)
        out = {}
        for s in elf.iter_sections():
            if s["sh_type"] == "SHT_REL":
                target = elf.get_section(s["sh_info"])
                if target["sh_flags"] & 4:
                    out[target.name] = sum(1 for r in s.iter_relocations() if r["r_info_type"] == 1)
        return out


def check_image(img):
    """Invariants of every image: map references resolved, calls land on function starts."""
    for i, lo, hi in ld_imm64(img):
        assert lo.src in (0, 5, 6), f"insn {i}: ld_imm64 src {lo.src}"
        if lo.src in (5, 6):
            assert 0 <= lo.imm < len(img.maps), f"insn {i}: map index {lo.imm}"
        if lo.src == 6:
            m = img.maps[lo.imm]
            assert m.type == abi.NANOBPF_MAP_TYPE_ARRAY and 0 <= hi.imm < m.value_size
        if lo.src == 5:
            assert hi.imm == 0
    starts = {s for _, s in img.functions}
    assert [s for _, s in img.functions][0] == 0
    for i, c in calls(img, 1):
        assert i + c.imm + 1 in starts, f"call at {i} lands on {i + c.imm + 1}, not a function start"
    helper_ids = {h["id"] for h in abi.HELPERS}
    for i, c in calls(img, 0):
        assert c.imm in helper_ids
    assert parse_image(img.to_bytes()) == img


# ---------------------------------------------------------------- the examples
def test_xdp_pass(tmp_path):
    img = load(compile_c(tmp_path, "xdp_pass"))
    assert img.name == "xdp_pass" and img.section == "xdp" and img.maps == []
    assert img.insns == [Insn(0xb7, 0, 0, 0, abi.NANOBPF_XDP_PASS), Insn(0x95, 0, 0, 0, 0)]
    check_image(img)


def test_maps_declared_but_unused(tmp_path):
    """A program that uses none of the object's maps: nothing to place, and the declarations are still
    read (for --map-size) while the BTF is open (it crashed the loader once)."""
    src = """
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } unused SEC(".maps");
SEC("xdp") int prog(struct xdp_md *ctx) { return XDP_PASS; }
char _license[] SEC("license") = "GPL";
"""
    obj = compile_c(tmp_path, "unused_map", src)
    img = load(obj)
    assert img.maps == [] and img.insns[-1].code == 0x95
    with pytest.raises(LoadError, match="--map-size names other, which the object does not declare.*maps: unused"):
        load(obj, map_sizes={"other": 4})
    check_image(img)


def test_callback_address(tmp_path):
    """A bpf_loop callback's address (R_BPF_64_64 against .text) becomes ld_imm64 src 4 (Linux's
    BPF_PSEUDO_FUNC) with the offset to the callback's start in the image."""
    src = """
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
static int cb_a(__u32 i, void *c) { return 0; }
static int cb_b(__u32 i, void *c) { return i > 3; }
SEC("xdp") int prog(struct xdp_md *ctx) {
    return bpf_loop(4, cb_a, 0, 0) + bpf_loop(8, cb_b, 0, 0) > 5 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
"""
    img = load(compile_c(tmp_path, "callbacks", src))
    refs = [(i, lo) for i, lo, _ in ld_imm64(img) if lo.src == 4]
    starts = {start: name for name, start in img.functions}
    assert sorted(starts[i + 1 + lo.imm] for i, lo in refs) == ["cb_a", "cb_b"]
    assert len(calls(img, 0)) == 2 and all(c.imm == 181 for _, c in calls(img, 0))
    assert parse_image(img.to_bytes()) == img


def test_ringbuf_reservation_helpers(tmp_path):
    """bpf_ringbuf_reserve/submit/discard are device helpers (ids 131..133) the image keeps."""
    src = xdp_with(RINGBUF, "__u64 *r = bpf_ringbuf_reserve(&m, 8, 0); if (!r) return XDP_PASS; *r = 1;"
                            " if (ctx->ingress_ifindex == 1) bpf_ringbuf_discard(r, 0); else bpf_ringbuf_submit(r, 0);"
                            " return XDP_PASS;")
    img = load(compile_c(tmp_path, "reserve", src))
    assert sorted(c.imm for _, c in calls(img, 0)) == [131, 132, 133]
    check_image(img)


def test_xdp_parse(tmp_path):
    obj = compile_c(tmp_path, "xdp_parse")
    img = load(obj)
    check_image(img)
    specs = [(m.name, m.type, m.key_size, m.value_size, m.max_entries, m.init) for m in img.maps]
    assert specs == [  # first-use order: .rodata (vlan_max), udp_ports, then count()'s proto_count
        ("xdp_parse.rodata", abi.NANOBPF_MAP_TYPE_ARRAY, 4, 4, 1, struct.pack("<I", 2)),
        ("udp_ports", abi.NANOBPF_MAP_TYPE_HASH, 2, 4, 64, b""),
        ("proto_count", abi.NANOBPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 5, b""),
    ]
    # count() (.text) is appended after the program and every bpf-to-bpf call reaches it
    names = [n for n, _ in img.functions]
    assert names == ["xdp_parse", "count"]
    count_start = dict(img.functions)["count"]
    main_len = next(p.insns for p in programs(obj) if p.name == "xdp_parse")
    assert count_start == main_len and len(img.insns) > main_len
    cs = calls(img, 1)
    assert cs and all(i + c.imm + 1 == count_start for i, c in cs)
    # every map reference in the object's code became a src 5/6 ld_imm64
    refs = [lo for _, lo, _ in ld_imm64(img) if lo.src in (5, 6)]
    assert len(refs) == sum(code_relocs(obj).values())
    # count() looks up proto_count (map 2) and calls map_lookup_elem
    sub = img.insns[count_start:]
    assert any(x.code == 0x18 and x.src == 5 and x.imm == 2 for x in sub)
    assert any(x.code == 0x85 and x.src == 0 and x.imm == abi.HELPER_IDS["map_lookup_elem"] for x in sub)


def test_xdp_keytable(tmp_path):
    img = load(compile_c(tmp_path, "xdp_keytable"))
    check_image(img)
    by_name = {m.name: m for m in img.maps}
    kt = by_name[abi.KEYTABLE_MAP_NAME]
    assert (kt.type, kt.key_size, kt.value_size, kt.max_entries) == (
        abi.NANOBPF_MAP_TYPE_HASH, abi.STRUCTS["quic_cid"].size, abi.STRUCTS["quic_keys"].size,
        abi.NANOBPF_KEYTABLE_ENTRIES)
    ro, bss = by_name["xdp_keytable.rodata"], by_name["xdp_keytable.bss"]
    assert ro.type == bss.type == abi.NANOBPF_MAP_TYPE_ARRAY and ro.max_entries == bss.max_entries == 1
    assert len(ro.init) == ro.value_size and b"quic: unknown cid" in ro.init
    assert bss.init == b"" and bss.value_size == 8
    # the format strings handed to trace_printk are .rodata map values at the right offsets
    fmts = [ro.init[hi.imm:].split(b"\0")[0] for _, lo, hi in ld_imm64(img)
            if lo.src == 6 and img.maps[lo.imm] is ro and ro.init[hi.imm:hi.imm + 5] == b"quic:"]
    assert sorted(fmts) == [b"quic: cid found, key phase %u", b"quic: unknown cid (%u bytes), drop"]
    assert any(c.imm == abi.HELPER_IDS["trace_printk"] for _, c in calls(img, 0))


def test_image_layout(tmp_path):
    """The bytes follow STRUCTS: header, map table, instructions, 8-byte aligned data."""
    img = load(compile_c(tmp_path, "xdp_keytable"))
    blob = img.to_bytes()
    hs, ms = abi.STRUCTS["image_header"], abi.STRUCTS["image_map"]
    h = dict(zip([f[0] for f in hs.fields], struct.unpack_from(hs.fmt, blob)))
    assert h["magic"] == abi.NANOBPF_IMAGE_MAGIC and blob[:4] == b"NBPF"
    assert h["version"] == abi.NANOBPF_IMAGE_VERSION and h["header_size"] == hs.size
    assert h["n_maps"] == len(img.maps) and h["maps_off"] == hs.size
    assert h["insns_off"] == h["maps_off"] + len(img.maps) * ms.size and h["insns_off"] % 8 == 0
    assert h["n_insns"] == len(img.insns) and h["data_off"] == h["insns_off"] + 8 * len(img.insns)
    assert h["total_size"] == len(blob) == h["data_off"] + h["data_size"] and h["data_size"] % 8 == 0
    assert h["prog_name"].rstrip(b"\0") == b"xdp_keytable" and h["reserved"] == 0
    assert blob[h["insns_off"]:h["data_off"]] == b"".join(i.pack() for i in img.insns)
    for k, m in enumerate(img.maps):
        e = dict(zip([f[0] for f in ms.fields], struct.unpack_from(ms.fmt, blob, h["maps_off"] + k * ms.size)))
        assert (e["type"], e["key_size"], e["value_size"], e["max_entries"], e["flags"]) == (
            m.type, m.key_size, m.value_size, m.max_entries, 0)
        assert e["name"].rstrip(b"\0").decode() == m.name and e["init_size"] == len(m.init)
        if m.init:
            assert e["init_off"] % 8 == 0
            assert blob[h["data_off"] + e["init_off"]:][:len(m.init)] == m.init
    with pytest.raises(LoadError, match="magic"):
        parse_image(b"XXXX" + blob[4:])
    with pytest.raises(LoadError, match="bytes"):
        parse_image(blob[:-8])


SUBPROGS = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, __u64); } a SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 8); __uint(key_size, 4); __uint(value_size, 16); } h SEC(".maps");
__u64 total = 5;
static __noinline __u64 leaf(__u32 k) {
    __u64 *v = bpf_map_lookup_elem(&a, &k);
    return v ? *v : total;
}
static __noinline __u64 mid(__u32 k) { return leaf(k) + leaf(k + 1); }
__noinline int global_fn(struct xdp_md *ctx) { return ctx ? (int)mid(ctx->ingress_ifindex) & 1 : 0; }
SEC("xdp") int first(struct xdp_md *ctx) { return mid(1) ? XDP_PASS : XDP_DROP; }
SEC("xdp/second") int second(struct xdp_md *ctx) {
    __u32 k = 0;
    if (bpf_map_lookup_elem(&h, &k)) return XDP_DROP;
    return global_fn(ctx) ? XDP_TX : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
"""


def test_subprograms_and_program_choice(tmp_path):
    obj = compile_c(tmp_path, "subprogs", SUBPROGS)
    assert {(p.name, p.section, p.xdp) for p in programs(obj)} == {("first", "xdp", True),
                                                                    ("second", "xdp/second", True)}
    with pytest.raises(LoadError, match=r"2 XDP programs.*first, second"):
        load(obj)
    one = load(obj, program="first")
    check_image(one)
    assert [n for n, _ in one.functions] == ["first", "mid", "leaf"]  # transitively appended, once each
    assert [(m.name, m.type) for m in one.maps] == [("a", abi.NANOBPF_MAP_TYPE_ARRAY),
                                                    ("subprogs.data", abi.NANOBPF_MAP_TYPE_ARRAY)]
    assert one.maps[1].init == struct.pack("<Q", 5)
    two = load(obj, program="second")
    check_image(two)
    assert [n for n, _ in two.functions] == ["second", "global_fn", "mid", "leaf"]
    assert [(m.name, m.key_size, m.value_size, m.max_entries) for m in two.maps][0] == ("h", 4, 16, 8)
    assert [m.name for m in two.maps] == ["h", "a", "subprogs.data"]
    with pytest.raises(LoadError, match="no program named 'third'.*first"):
        load(obj, program="third")


ASM_CALL = """
    .section xdp,"ax",@progbits
    .globl asmprog
    .type asmprog,@function
asmprog:
    r1 = 7
    call inner
    exit
    .size asmprog, .-asmprog
    .type inner,@function
inner:
    r0 = r1
    r0 += 1
    exit
    .size inner, .-inner
"""


def assemble(tmp_path, name, text):
    src = tmp_path / f"{name}.s"
    src.write_text(text)
    p = subprocess.run([CLANG, "-target", "bpf", "-c", str(src), "-o", str(tmp_path / f"{name}.o")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return tmp_path / f"{name}.o"


def test_call_inside_program_section(tmp_path):
    """A call the assembler resolved without a relocation, to another function of the same section."""
    img = load(assemble(tmp_path, "asmcall", ASM_CALL))
    assert img.functions == [("asmprog", 0), ("inner", 3)]
    assert img.insns[1] == Insn(0x85, 0, 1, 0, 1)
    check_image(img)


def test_program_without_name(tmp_path):
    obj = assemble(tmp_path, "noname", '    .section xdp,"ax",@progbits\n    r0 = 2\n    exit\n')
    with pytest.raises(LoadError, match="section 'xdp' holds code but no function symbol"):
        load(obj)


# ---------------------------------------------------------------- refusals
HEAD = "#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n"
LICENSE = '\nchar _license[] SEC("license") = "GPL";\n'


def xdp_with(map_def, body="return XDP_PASS;", extra=""):
    return HEAD + extra + map_def + "\nSEC(\"xdp\") int prog(struct xdp_md *ctx) {\n" + body + "\n}\n" + LICENSE


LOOKUP = "__u32 k = 0; return bpf_map_lookup_elem(&m, &k) ? XDP_PASS : XDP_DROP;"
RINGBUF = "struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } m SEC(\".maps\");"
RING_OUT = "__u64 v = 7; bpf_ringbuf_output(&m, &v, sizeof v, 0); return XDP_PASS;"
PERF = ("struct { __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY); __uint(key_size, sizeof(__u32));"
        " __uint(value_size, sizeof(__u32)); } m SEC(\".maps\");")
PERF_OUT = "__u64 v = 7; bpf_perf_event_output(ctx, &m, BPF_F_CURRENT_CPU, &v, sizeof v); return XDP_PASS;"

REFUSALS = {
    "pinned_prog_array": (xdp_with("struct { __uint(type, BPF_MAP_TYPE_PROG_ARRAY); __uint(max_entries, 4);"
                                   " __uint(key_size, 4); __uint(value_size, 4);"
                                   " __uint(pinning, LIBBPF_PIN_BY_NAME); } jmp SEC(\".maps\");",
                                   "bpf_tail_call(ctx, &jmp, 1); return XDP_PASS;"),
                          r"section 'xdp' instruction \d+: map 'jmp': a pinned PROG_ARRAY is not supported"),
    "xskmap": (xdp_with("struct { __uint(type, BPF_MAP_TYPE_XSKMAP); __uint(max_entries, 4);"
                        " __type(key, __u32); __type(value, __u32); } m SEC(\".maps\");",
                        "return bpf_redirect_map(&m, 0, XDP_PASS);"),
               r"section 'xdp' instruction \d+: map 'm': map type XSKMAP \(17\): .*AF_XDP sockets"),
    "cpumap": (xdp_with("struct { __uint(type, BPF_MAP_TYPE_CPUMAP); __uint(max_entries, 4);"
                        " __type(key, __u32); __type(value, struct bpf_cpumap_val); } m SEC(\".maps\");",
                        "return bpf_redirect_map(&m, 0, XDP_PASS);"),
               r"map 'm': map type CPUMAP \(16\): redirects frames to host CPUs"),
    "fib_lookup": (xdp_with("", "struct bpf_fib_lookup p = {}; return bpf_fib_lookup(ctx, &p, sizeof p, 0) ? XDP_PASS : XDP_DROP;"),
                   r"helper 69: bpf_fib_lookup needs the kernel's routing"),
    "ringbuf_size": (xdp_with(RINGBUF.replace("4096", "6144"), RING_OUT),
                     r"map 'm': a RINGBUF's max_entries is its size in bytes, a power of two of at least 4096, not 6144"),
    "ringbuf_small": (xdp_with(RINGBUF.replace("4096", "2048"), RING_OUT), r"at least 4096, not 2048"),
    "ringbuf_key": (xdp_with(RINGBUF.replace("}", "__type(key, __u32); }", 1), RING_OUT),
                    r"map 'm': a RINGBUF has no key or value \(size 0\), not 4 and 0"),
    "perf_value": (xdp_with(PERF.replace("sizeof(__u32)); }", "8); }"), PERF_OUT),
                   r"map 'm': a PERF_EVENT_ARRAY has a 4-byte key and value .* not 4 and 8"),
    "perf_no_sizes": (xdp_with("struct { __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY); } m SEC(\".maps\");", PERF_OUT),
                      r"map 'm': a PERF_EVENT_ARRAY has a 4-byte key and value .* not 0 and 0"),
    "map_flags": (xdp_with("struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4);"
                           " __uint(map_flags, BPF_F_RDONLY_PROG);"
                           " __type(key, __u32); __type(value, __u32); } m SEC(\".maps\");", LOOKUP),
                  r"section 'xdp' instruction \d+: map 'm': map_flags BPF_F_RDONLY_PROG \(0x80\) not supported"),
    "mmapable_hash": (xdp_with("struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4);"
                               " __uint(map_flags, BPF_F_MMAPABLE);"
                               " __type(key, __u32); __type(value, __u32); } m SEC(\".maps\");", LOOKUP),
                      r"map 'm': map_flags BPF_F_MMAPABLE \(0x400\) not supported for a HASH map"),
    "pin_by_path": (xdp_with("struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __uint(pinning, 2);"
                             " __type(key, __u32); __type(value, __u32); } m SEC(\".maps\");", LOOKUP),
                    r"map 'm': pinning 2: the device pins by name only"),
    "keytable_value": (xdp_with("struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16);"
                                " __type(key, struct nanobpf_quic_cid); __type(value, __u64); }"
                                " nanobpf_quic_keys SEC(\".maps\");",
                                "struct nanobpf_quic_cid k = {}; return bpf_map_lookup_elem(&nanobpf_quic_keys, &k)"
                                " ? XDP_PASS : XDP_DROP;", "#include \"nanobpf_ebpf_defs.h\"\n"),
                       r"map 'nanobpf_quic_keys': the key table must be a HASH map .* value 8"),
    "keytable_type": (xdp_with("struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 16);"
                               " __type(key, __u32); __type(value, struct nanobpf_quic_keys); }"
                               " nanobpf_quic_keys SEC(\".maps\");",
                               "__u32 k = 0; return bpf_map_lookup_elem(&nanobpf_quic_keys, &k) ? XDP_PASS : XDP_DROP;",
                               "#include \"nanobpf_ebpf_defs.h\"\n"),
                      r"the key table must be a HASH map .* it is ARRAY"),
    "keytable_entries": (xdp_with("struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, NANOBPF_KEYTABLE_ENTRIES + 1);"
                                  " __type(key, struct nanobpf_quic_cid); __type(value, struct nanobpf_quic_keys); }"
                                  " nanobpf_quic_keys SEC(\".maps\");",
                                  "struct nanobpf_quic_cid k = {}; return bpf_map_lookup_elem(&nanobpf_quic_keys, &k)"
                                  " ? XDP_PASS : XDP_DROP;", "#include \"nanobpf_ebpf_defs.h\"\n"),
                         rf"the key table .* at most {abi.NANOBPF_KEYTABLE_ENTRIES} entries.*; .* {abi.NANOBPF_KEYTABLE_ENTRIES + 1} entries"),
    "pn_map_value": (xdp_with("struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16);"
                              " __type(key, struct nanobpf_quic_cid); __type(value, __u64); } quic_pn SEC(\".maps\");",
                              "struct nanobpf_quic_cid k = {}; return bpf_map_lookup_elem(&quic_pn, &k) ? XDP_PASS : XDP_DROP;",
                              "#include \"nanobpf_ebpf_defs.h\"\n"),
                     r"map 'quic_pn': the device's packet-number map must be a HASH map .* value 8"),
    "unknown_helper": (xdp_with("", "return bpf_get_current_pid_tgid() ? XDP_PASS : XDP_DROP;"),
                       r"section 'xdp' instruction 0: helper 14 \(bpf_get_current_pid_tgid\) is not provided"),
    "legacy_abs": (xdp_with("", "return load_byte(ctx, 12) == 8 ? XDP_PASS : XDP_DROP;",
                            "unsigned long long load_byte(void *skb, unsigned long long off) asm(\"llvm.bpf.load.byte\");\n"),
                   r"section 'xdp' instruction \d+: legacy packet access \(BPF_ABS"),
    "kfunc": (xdp_with("", "bpf_kfunc_call_test_ext(); return XDP_PASS;",
                       "extern void bpf_kfunc_call_test_ext(void) __ksym;\n"),
              r"section 'xdp' instruction \d+: call to extern function 'bpf_kfunc_call_test_ext'"),
    "legacy_maps": (xdp_with("struct def { unsigned int type, key_size, value_size, max_entries, map_flags; };\n"
                             "struct def m SEC(\"maps\") = { BPF_MAP_TYPE_ARRAY, 4, 4, 1, 0 };", LOOKUP),
                    r"section 'xdp' instruction \d+: map 'm' is a legacy SEC\(\"maps\"\)"),
    "data_pointer": (xdp_with("", "return *ptr ? XDP_PASS : XDP_DROP;", "int x = 1; int *ptr = &x;\n"),
                     r"section 'xdp' instruction \d+: section '.data' holds relocated data"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusal(tmp_path, case):
    source, message = REFUSALS[case]
    obj = compile_c(tmp_path, case, source)
    with pytest.raises(LoadError, match=message):
        load(obj)


def test_event_maps(tmp_path):
    """RINGBUF and PERF_EVENT_ARRAY maps as Linux programs declare them: a ring of max_entries bytes
    (key and value 0), a perf array of 4-byte keys and values whose max_entries 0 stays 0 (libbpf: the
    CPUs; the device: its cores); its sizes are refused when left out, as Linux refuses them. A ring
    larger than the device keeps is shrunk to NANOBPF_EVENT_RINGBUF_MAX with a note; --map-size may set
    a ring's size within the device's limits."""
    src = xdp_with(RINGBUF + "\n" + PERF.replace(" m SEC", " p SEC"),
                   "__u64 v = 7; bpf_ringbuf_output(&m, &v, sizeof v, 0);"
                   " bpf_perf_event_output(ctx, &p, BPF_F_CURRENT_CPU, &v, sizeof v); return XDP_PASS;")
    img = load(compile_c(tmp_path, "events", src))
    maps = {m.name: (m.type, m.key_size, m.value_size, m.max_entries) for m in img.maps}
    assert maps == {"m": (abi.NANOBPF_MAP_TYPE_RINGBUF, 0, 0, 4096), "p": (abi.NANOBPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, 0)}
    assert img.notes == []
    check_image(img)
    big = compile_c(tmp_path, "big", xdp_with(RINGBUF.replace("4096", "256 * 1024"), RING_OUT))
    img = load(big)
    assert img.maps[0].max_entries == abi.NANOBPF_EVENT_RINGBUF_MAX
    assert img.notes == [f"map 'm': a ring of 262144 bytes: the device keeps {abi.NANOBPF_EVENT_RINGBUF_MAX} in its "
                         f"shared memory (choose with --map-size m=N)"]
    assert load(big, map_sizes={"m": 8192}).maps[0].max_entries == 8192
    with pytest.raises(LoadError, match=r"--map-size m=32768: the device keeps rings of at most 16384 bytes"):
        load(big, map_sizes={"m": 2 * abi.NANOBPF_EVENT_RINGBUF_MAX})
    assert load(compile_c(tmp_path, "perf8", xdp_with(PERF, PERF_OUT)), map_sizes={"m": 8}).maps[0].max_entries == 8


TC = HEAD + 'SEC("tc") int cls(struct __sk_buff *skb) { return 0; }\n' + LICENSE
TC_AND_XDP = TC + 'SEC("xdp") int fast(struct xdp_md *ctx) { return XDP_PASS; }\n'


def test_other_program_types(tmp_path):
    tc = compile_c(tmp_path, "tc", TC)
    with pytest.raises(LoadError, match=r"no XDP program .* cls \(section 'tc'\)"):
        load(tc)
    with pytest.raises(LoadError, match="program 'cls' is in section 'tc': a 'tc' program, not XDP"):
        load(tc, program="cls")
    both = compile_c(tmp_path, "both", TC_AND_XDP)
    assert load(both).name == "fast"  # the only XDP program is chosen


def test_maps_without_btf(tmp_path):
    src = xdp_with("struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1);"
                   " __type(key, __u32); __type(value, __u32); } m SEC(\".maps\");", LOOKUP)
    obj = compile_c(tmp_path, "nobtf", src, debug=False)
    with pytest.raises(LoadError, match=r"section '.maps' without BTF"):
        load(obj)


def test_unknown_relocation_type(tmp_path):
    """An R_BPF_64_64 turned into R_BPF_64_ABS64 by hand is refused."""
    from elftools.elf.elffile import ELFFile
    obj = compile_c(tmp_path, "xdp_parse")
    blob = bytearray(obj.read_bytes())
    with open(obj, "rb") as f:
        elf = ELFFile(f)
        rel = elf.get_section_by_name(".relxdp")
        k = next(i for i, r in enumerate(rel.iter_relocations()) if r["r_info_type"] == 1)
        pos = rel["sh_offset"] + k * rel["sh_entsize"] + 8  # r_info: type in the low 32 bits
    info = struct.unpack_from("<Q", blob, pos)[0]
    struct.pack_into("<Q", blob, pos, (info & ~0xffffffff) | 2)
    bad = tmp_path / "bad.o"
    bad.write_bytes(bytes(blob))
    with pytest.raises(LoadError, match=r"section 'xdp' instruction \d+: relocation R_BPF_64_ABS64"):
        load(bad)


def test_not_an_object(tmp_path):
    (tmp_path / "x.o").write_bytes(b"not an ELF file at all")
    with pytest.raises(LoadError, match="not a valid ELF"):
        load(tmp_path / "x.o")
    with pytest.raises(LoadError):
        load(tmp_path / "missing.o")


# ---------------------------------------------------------------- the command line
def run_load(*args):
    return subprocess.run([LOAD, *map(str, args)], capture_output=True, text=True)


def test_cli(tmp_path):
    obj = compile_c(tmp_path, "xdp_parse")
    out = tmp_path / "xdp_parse.nbpf"
    p = run_load(obj, "-o", out)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes() == load(obj).to_bytes()
    p = run_load(obj, "--info")
    assert p.returncode == 0 and "udp_ports" in p.stdout and "PERCPU_ARRAY" in p.stdout and "184" not in p.stderr
    p = run_load(obj, "--json")
    d = json.loads(p.stdout)
    assert d["image"]["insns"] == len(load(obj).insns)
    assert [m["name"] for m in d["image"]["maps"]] == ["xdp_parse.rodata", "udp_ports", "proto_count"]
    p = run_load(obj, "-p", "nope", "-o", out)
    assert p.returncode == 1 and p.stderr.startswith("nanobpf-load: error: ") and "nope" in p.stderr
    p = run_load(obj)
    assert p.returncode == 2 and "nothing to do" in p.stderr
    assert run_load("--help").returncode == 0


# ---------------------------------------------------------------- compared with Linux
def _sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


ENV_ERRORS = ("Operation not permitted", "Permission denied", "Function not implemented", "not supported",
              "Not supported", "No such device", "/sys/fs/bpf")


def _frame(l3, payload, vlan=False):
    """Ethernet (dst 01..06, src 07..0c, optionally one 802.1Q tag) + the given L3 bytes."""
    eth = bytes(range(1, 13)) + (b"\x81\x00\x00\x05" if vlan else b"")
    return eth + struct.pack(">H", l3) + payload


def _ipv4_udp(dport, data):
    udp = struct.pack(">HHHH", 40000, dport, 8 + len(data), 0) + data
    return struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, bytes(4), bytes(4)) + udp


def _ipv6_udp(dport, data):
    udp = struct.pack(">HHHH", 40000, dport, 8 + len(data), 0) + data
    return struct.pack(">IHBB16s16s", 6 << 28, len(udp), 17, 64, bytes(16), bytes(16)) + udp


QUIC_SHORT = bytes([0x40]) + bytes(range(0x10, 0x18)) + bytes(24)  # fixed bit, CID 10..17 (8 bytes)


def _hex(b):
    return ["hex", *(f"{x:02x}" for x in b)]


def _run(tmp_path, prog_id, frame):
    """BPF_PROG_TEST_RUN through bpftool: (XDP action, output frame)."""
    fin, fout = tmp_path / "in.bin", tmp_path / "out.bin"
    fin.write_bytes(frame)
    p = _sh("bpftool", "-j", "prog", "run", "id", str(prog_id), "data_in", str(fin), "data_out", str(fout))
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout)["retval"], fout.read_bytes()


def _map_update(map_id, key, value):
    p = _sh("bpftool", "map", "update", "id", str(map_id), "key", *_hex(key), "value", *_hex(value))
    assert p.returncode == 0, p.stderr


def test_linux_loads_and_runs_the_examples(tmp_path):
    """Load each example into the host kernel (XDP generic on lo, through iproute2's libbpf), compare
    the maps the kernel created with the image's, and run frames through it (BPF_PROG_TEST_RUN).
    Skips when the environment cannot load BPF. One test, so parallel workers never share lo."""
    if not (shutil.which("ip") and shutil.which("bpftool")):
        pytest.skip("ip or bpftool missing")
    link = _sh("ip", "-j", "link", "show", "dev", "lo")
    if link.returncode or "xdp" in link.stdout:
        pytest.skip("lo unavailable or already has an XDP program")
    kinds = {"hash": abi.NANOBPF_MAP_TYPE_HASH, "array": abi.NANOBPF_MAP_TYPE_ARRAY,
             "percpu_array": abi.NANOBPF_MAP_TYPE_PERCPU_ARRAY}
    PASS, DROP, TX = abi.NANOBPF_XDP_PASS, abi.NANOBPF_XDP_DROP, abi.NANOBPF_XDP_TX
    for name in ("xdp_pass", "xdp_parse", "xdp_keytable"):
        obj = compile_c(tmp_path, name)
        img = load(obj)
        p = _sh("ip", "link", "set", "dev", "lo", "xdpgeneric", "obj", str(obj), "sec", "xdp")
        if p.returncode:
            msg = p.stderr.strip()
            # the trivial program failing, or a permission/feature error, is the environment; a
            # verifier rejection of a real example is a failure
            if name == "xdp_pass" or any(s in msg for s in ENV_ERRORS):
                pytest.skip(f"the host kernel does not load BPF here: {msg[-300:]}")
            pytest.fail(f"Linux refused {name}: {msg[-2000:]}")
        try:
            info = json.loads(_sh("ip", "-j", "link", "show", "dev", "lo").stdout)[0]
            prog_id = info["xdp"]["prog"]["id"]
            prog = json.loads(_sh("bpftool", "-j", "prog", "show", "id", str(prog_id)).stdout)
            assert prog["name"] == name[:15]
            kernel_maps, ids = [], {}
            for mid in prog.get("map_ids", []):
                m = json.loads(_sh("bpftool", "-j", "map", "show", "id", str(mid)).stdout)
                kernel_maps.append((m["name"], kinds.get(m["type"], m["type"]), m["bytes_key"],
                                    m["bytes_value"], m["max_entries"]))
                ids[m["name"]] = mid
            # the kernel lists a program's maps in first-use order too; its names are at most 15
            # bytes (libbpf shortens the object-name prefix of "<obj>.rodata")
            assert [k[1:] for k in kernel_maps] == [(m.type, m.key_size, m.value_size, m.max_entries)
                                                    for m in img.maps], name
            for (kname, *_), m in zip(kernel_maps, img.maps):
                assert kname == m.name[:15] if m.source == ".maps" else kname.endswith(m.source)

            dns = _frame(0x0800, _ipv4_udp(53, bytes(16)))
            if name == "xdp_pass":
                assert _run(tmp_path, prog_id, dns)[0] == PASS
            elif name == "xdp_parse":
                assert _run(tmp_path, prog_id, dns)[0] == PASS
                _map_update(ids["udp_ports"], struct.pack("<H", 53), struct.pack("<I", DROP))
                _map_update(ids["udp_ports"], struct.pack("<H", 4433), struct.pack("<I", TX))
                assert _run(tmp_path, prog_id, dns)[0] == DROP
                assert _run(tmp_path, prog_id, _frame(0x0800, _ipv4_udp(53, b"x"), vlan=True))[0] == DROP
                assert _run(tmp_path, prog_id, _frame(0x86dd, _ipv6_udp(53, b"x")))[0] == DROP
                tx = _frame(0x0800, _ipv4_udp(4433, b"hello"))
                action, out = _run(tmp_path, prog_id, tx)
                assert action == TX and out[:12] == tx[6:12] + tx[:6] and out[12:] == tx[12:]
                assert _run(tmp_path, prog_id, _frame(0x0800, _ipv4_udp(53, b"")[:12]))[0] == DROP  # truncated
                assert _run(tmp_path, prog_id, _frame(0x0806, bytes(28)))[0] == PASS  # ARP
            else:
                quic = _frame(0x0800, _ipv4_udp(443, QUIC_SHORT))
                assert _run(tmp_path, prog_id, dns)[0] == PASS
                assert _run(tmp_path, prog_id, quic)[0] == DROP  # CID not in the key table
                cid = abi.STRUCTS["quic_cid"]
                key = struct.pack(cid.fmt, 8, bytes(range(0x10, 0x18)), abi.NANOBPF_QUIC_DIR_OPEN, b"")
                _map_update(ids[abi.KEYTABLE_MAP_NAME[:15]], key, bytes(abi.STRUCTS["quic_keys"].size))
                assert _run(tmp_path, prog_id, quic)[0] == PASS
                assert _run(tmp_path, prog_id, _frame(0x86dd, _ipv6_udp(443, QUIC_SHORT)))[0] == PASS
        finally:
            _sh("ip", "link", "set", "dev", "lo", "xdpgeneric", "off")
