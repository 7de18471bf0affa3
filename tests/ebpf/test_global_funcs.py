"""Global functions end to end: the loader's prototypes from BTF, the image's function table, and the
device verifier refusing a malformed table (a corrupted or hand-made image) with a clear message.
The verdicts on well-formed programs are compared with Linux in test_verifier_corpus.py.
Needs `make ebpf-tools`."""
import platform
import struct
import subprocess

import pytest

import nanobpf_ebpf_defs as abi
from nanobpf import BUILD, ROOT
from nanobpf.ebpf import LoadError, load, parse_image

RUN = BUILD / "ebpf/host/nanobpf-run"
SRC = ROOT / "tests/ebpf/verifier/accept_global_func.c"


def compile_c(src, tmp_path, name="prog"):
    if isinstance(src, str):
        path = tmp_path / f"{name}.c"
        path.write_text(src)
        src = path
    obj = tmp_path / f"{name}.o"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{platform.machine()}-linux-gnu",
                    f"-I{ROOT}/sw/ebpf/include", f"-I{BUILD}/generated/include", "-c", str(src), "-o", str(obj)],
                   check=True)
    return obj


def check(blob, tmp_path):
    img = tmp_path / "x.nbpf"
    img.write_bytes(blob)
    p = subprocess.run([str(RUN), "--image", str(img), "--check"], capture_output=True, text=True)
    return p.returncode, (p.stdout + p.stderr).strip()


def test_prototypes_from_btf(tmp_path):
    image = load(compile_c(SRC, tmp_path))
    starts = dict(image.functions)
    protos = {g.start: g.describe() for g in image.globals}
    assert protos == {starts["blk_mix"]: "int(mem[16], scalar)", starts["blk_fold"]: "int(ctx, mem[16])",
                      starts["pkt_byte"]: "int(ctx, scalar)"}
    assert parse_image(image.to_bytes()).globals == image.globals
    assert check(image.to_bytes(), tmp_path)[0] == 0


def test_static_functions_have_no_entry(tmp_path):
    obj = compile_c("""#include "nanobpf_xdp.h"
static __noinline int twice(int x) { return 2 * x; }
SEC("xdp") int prog(struct xdp_md *ctx) { return twice(ctx->ingress_ifindex) & 1 ? XDP_PASS : XDP_DROP; }
char _license[] SEC("license") = "GPL";
""", tmp_path)
    image = load(obj)
    assert len(image.functions) == 2 and image.globals == []


@pytest.mark.parametrize("proto,body,arg,why", [
    ("void *p", "return p ? *(volatile char *)p : 0;", "&v", "pointer to void"),
    ("int (*cb)(int)", "return cb ? 1 : 0;", "0", "a function"),
    ("struct opaque *o", "return o ? 1 : 0;", "(struct opaque *)&v", "incomplete type"),
])
def test_loader_refuses_unsupported_prototypes(tmp_path, proto, body, arg, why):
    obj = compile_c(f"""#include "nanobpf_xdp.h"
struct big {{ __u64 a, b; }};
struct opaque;
__noinline int f({proto}) {{ {body} }}
SEC("xdp") int prog(struct xdp_md *ctx) {{
    struct big v = {{ctx->ingress_ifindex, 2}};
    return f({arg}) ? XDP_PASS : XDP_DROP;
}}
char _license[] SEC("license") = "GPL";
""", tmp_path)
    with pytest.raises(LoadError, match=why):
        load(obj)


def corrupt(blob, field, value, entry=0):
    """blob with one field of function table entry `entry` replaced."""
    h = struct.unpack_from(abi.STRUCTS["image_header"].fmt, blob)
    names = [f[0] for f in abi.STRUCTS["image_header"].fields]
    funcs_off = h[names.index("funcs_off")]
    fent = abi.STRUCTS["image_func"]
    off = funcs_off + entry * fent.size
    vals = list(struct.unpack_from(fent.fmt, blob, off))
    vals[[f[0] for f in fent.fields].index(field)] = value
    out = bytearray(blob)
    struct.pack_into(fent.fmt, out, off, *vals)
    return bytes(out)


@pytest.mark.parametrize("field,value,message", [
    ("start", 1, "function table entry 0: insn 1 is not the start of a called function"),
    ("start", 0, "function table entry 0: insn 0 is not the start of a called function"),
    ("flags", 0, "function table entry 0: flags 0x0"),
    ("ret", 7, "return kind 7 not supported"),
    ("n_args", 6, "6 arguments"),
    ("arg1_size", 0, "argument 1 has kind 3 and size 0"),
    ("arg2_size", 4, "argument 2 has kind 1 and size 4"),
])
def test_verifier_refuses_malformed_table(tmp_path, field, value, message):
    image = load(compile_c(SRC, tmp_path))
    first = sorted(image.globals, key=lambda g: g.start)[0]  # blk_mix: (mem[16], scalar)
    entry = image.globals.index(first)
    rc, out = check(corrupt(image.to_bytes(), field, value, entry), tmp_path)
    assert rc == 1 and message in out, out


def test_verifier_refuses_a_smaller_prototype(tmp_path):
    """An image claiming blk_mix takes 8 bytes while it reads 16: its own verification fails."""
    image = load(compile_c(SRC, tmp_path))
    entry = next(k for k, g in enumerate(image.globals) if g.describe() == "int(mem[16], scalar)")
    rc, out = check(corrupt(image.to_bytes(), "arg1_size", 8, entry), tmp_path)
    assert rc == 1 and "invalid access to memory, mem_size=8" in out, out


ALIGN_SRC = """#include "nanobpf_xdp.h"
struct pair { __u32 a, b; __u64 c; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct pair); } vals SEC(".maps");
__noinline int use(const struct pair *p) { return p ? (int)(p->a + p->b + p->c) : 0; }
__noinline int outer(const struct pair *p) { return p ? use(p) + 1 : 0; }
SEC("xdp") int prog(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    __u64 buf[3] = {ctx->ingress_ifindex, 2, 3};
    __u32 zero = 0;
    struct pair *v = bpf_map_lookup_elem(&vals, &zero);
    (void)data, (void)end, (void)v;
    int r = 0;
    %s
    return r & 1 ? XDP_PASS : XDP_DROP;
}
char _license[] SEC("license") = "GPL";
"""


@pytest.mark.parametrize("calls,tests", [
    # the loads of use (4, 4 and 8 bytes) and nothing else test alignment: only where a caller may pass
    # an address without it (the packet, or a stack address 4 bytes off) are they tested
    ("r += use((struct pair *)buf);", 0),
    ("if (v) r += use(v);", 0),
    ("r += use((struct pair *)buf) + use(0);", 0),
    ("if (data + 16 <= end) r += use(data);", 3),
    ("r += use((struct pair *)buf); if (data + 16 <= end) r += use(data);", 3),
    ("r += use((struct pair *)((char *)buf + 4));", 1),  # c at +12: only the 8-byte load
    ("r += use((struct pair *)((char *)buf + 2));", 3),
    # through another global function: outer passes on what its callers give
    ("r += outer((struct pair *)buf);", 0),
    ("if (v) r += outer(v); if (data + 16 <= end) r += outer(data);", 3),
    ("r += outer((struct pair *)((char *)buf + 4));", 1),
])
def test_alignment_tests_only_where_a_caller_may_misalign(tmp_path, calls, tests):
    """A global function's memory argument may be the packet, whose offsets carry no alignment, so the
    JIT tests the address of its multi-byte accesses at run time (CVA6 traps on misaligned ones) - unless
    the verifier proved every caller's address aligned for them (stack, map values, and what a global
    function passes on from its own callers)."""
    image = load(compile_c(ALIGN_SRC % calls, tmp_path))
    img = tmp_path / "a.nbpf"
    img.write_bytes(image.to_bytes())
    p = subprocess.run([str(RUN), "--image", str(img), "--jit", "--stats"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    stats = dict(ln.split()[:2] for ln in p.stdout.splitlines() if len(ln.split()) == 2)
    assert int(stats["align_tests"]) == tests, p.stdout
