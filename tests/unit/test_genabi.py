"""nanobpf-genabi: the C header and the Python module agree, docs/ebpf-abi.md is current, bad definitions
are refused."""
import subprocess

import nanobpf_ebpf_defs as abi
import pytest

from nanobpf import ROOT, command

GENABI = command("nanobpf-genabi")


def genabi(*args):
    return subprocess.run([GENABI, *map(str, args)], capture_output=True, text=True)


def test_committed_abi_doc_is_current():
    p = genabi("--check-md", ROOT / "docs/ebpf-abi.md")
    assert p.returncode == 0, p.stderr


def test_c_header_agrees_with_python_module(tmp_path):
    assert genabi("--c", tmp_path / "nanobpf_ebpf_defs.h").returncode == 0
    consts = [n for n in dir(abi) if n.startswith("NANOBPF_")]
    checks = [(n, getattr(abi, n)) for n in consts]
    checks += [(f"NANOBPF_HELPER_{h['name'].upper()}", h["id"]) for h in abi.HELPERS]
    checks += [(f"sizeof(struct nanobpf_{s.name})", s.size) for s in abi.STRUCTS.values()]
    checks += [(f"__builtin_offsetof(struct nanobpf_{s.name}, {f})", off)
               for s in abi.STRUCTS.values() for f, off, _ in s.fields]
    src = tmp_path / "dump.c"
    src.write_text('#include <stdio.h>\n#include "nanobpf_ebpf_defs.h"\n#define E(...) __VA_ARGS__\n'
                   "static int n;\n#define H(id, name, ...) n++;\nint main(void) {\n  NANOBPF_HELPERS(H)\n"
                   '  printf("%d\\n", n);\n'
                   + "".join(f'  printf("%llu\\n", (unsigned long long)({c}));\n' for c, _ in checks)
                   + "  return 0;\n}\n")
    subprocess.run(["cc", "-I", str(tmp_path), str(src), "-o", str(tmp_path / "dump")], check=True)
    out = subprocess.run([str(tmp_path / "dump")], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) == len(abi.HELPERS)
    assert [int(v) for v in out[1:]] == [v for _, v in checks]


def test_struct_formats_match_sizes():
    import struct
    for s in abi.STRUCTS.values():
        assert struct.calcsize(s.fmt) == s.size, s.name


def test_header_compiles_for_bpf(tmp_path):
    assert genabi("--c", tmp_path / "nanobpf_ebpf_defs.h").returncode == 0
    src = tmp_path / "p.c"
    src.write_text('#include "nanobpf_ebpf_defs.h"\nint f(struct nanobpf_quic_keys *k) { return k->hp[0]; }\n')
    subprocess.run(["clang", "-O2", "-target", "bpf", "-I", str(tmp_path), "-c", str(src), "-o",
                    str(tmp_path / "p.o")], check=True)


BASE = """
[[const]]
group = "limit"
prefix = "NANOBPF_"
desc = "d"
values = [{ name = "HELPER_VENDOR_BASE", value = 0x10000, desc = "d" },
          { name = "HELPER_VENDOR_END", value = 0x10100, desc = "d" }]
[keytable]
map_name = "k"
"""
BAD = {
    "unknown arg type": ('[[helper]]\nid = 1\nname = "a"\nret = "integer"\nargs = ["pointer"]\ndesc = "d"\n', "at most 5 args"),
    "duplicate id": ('[[helper]]\nid = 1\nname = "a"\nret = "integer"\nargs = []\ndesc = "d"\n'
                     '[[helper]]\nid = 1\nname = "b"\nret = "integer"\nargs = []\ndesc = "d"\n', "used twice"),
    "id beyond vendor range": ('[[helper]]\nid = 0x20000\nname = "a"\nret = "integer"\nargs = []\ndesc = "d"\n',
                               "outside the vendor range"),
    "misaligned field": ('[[struct]]\nname = "s"\ndesc = "d"\nfields = [{ name = "a", type = "u8", desc = "d" },'
                         '{ name = "b", type = "u32", desc = "d" }]\n', "misaligned"),
    "memory argument without size": ('[[helper]]\nid = 1\nname = "a"\nret = "integer"\nargs = ["mem_rw", "anything"]\n'
                                     'desc = "d"\n', "followed by a size"),
    "size without memory argument": ('[[helper]]\nid = 1\nname = "a"\nret = "integer"\nargs = ["size", "anything"]\n'
                                     'desc = "d"\n', "'size' must follow a memory argument"),
    "bad type": ('[[struct]]\nname = "s"\ndesc = "d"\nfields = [{ name = "a", type = "float", desc = "d" }]\n',
                 "unknown type"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_definitions_are_refused(tmp_path, case):
    body, message = BAD[case]
    f = tmp_path / "ebpf.toml"
    f.write_text(BASE + body)
    p = genabi("--defs", f, "--c", tmp_path / "x.h")
    assert p.returncode == 1
    assert message in p.stderr
    assert not (tmp_path / "x.h").exists()


def test_scala_object_agrees_with_python_module(tmp_path):
    """The hardware's view (nanobpf.common.EbpfAbi, written by mill through --scala) carries the same
    constants and struct offsets; parsed here rather than compiled (mill compiles it in make hw)."""
    import re
    assert genabi("--scala", tmp_path / "EbpfAbi.scala").returncode == 0
    text = (tmp_path / "EbpfAbi.scala").read_text()
    vals = dict(re.findall(r'val (\w+) = BigInt\("?(\d+)"?\)', text))   # a string beyond Scala's Int
    camel = lambda n: "".join(w.capitalize() for w in n.lower().split("_"))
    for n in (n for n in dir(abi) if n.startswith("NANOBPF_") and isinstance(getattr(abi, n), int)):
        assert int(vals[camel(n.removeprefix("NANOBPF_"))]) == getattr(abi, n), n
    for s in abi.STRUCTS.values():
        body = re.search(rf"object {camel(s.name)} \{{(.*?)\}}", text, re.S).group(1)
        fields = dict(re.findall(r"val (\w+) = (\d+)", body))
        assert int(fields["Size"]) == s.size
        for f, off, size in s.fields:
            assert (int(fields[camel(f) + "Offset"]), int(fields[camel(f) + "Size"])) == (off, size), (s.name, f)
