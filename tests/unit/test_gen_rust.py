"""The Rust views of hw/defs/ctrl.toml and hw/defs/ebpf.toml (sw/quic-offload's `defs`) agree with the C
headers: every constant the Rust module defines has the C header's value, and every struct size and
field offset is what a C compiler makes of the header's struct (offsetof), so the crate and the driver,
libnanobpf and the device read the same bytes.
"""
import re
import subprocess

import pytest

from nanobpf.gen import abi, ctrl

RUST_CONST = re.compile(r"^pub const (\w+): ([\w&\[\]; 0-9]+) = (.+);$", re.M)
C_DEFINE = re.compile(r"^#define (\w+)\s+(0x[0-9A-Fa-f]+|\d+)u?\b", re.M)


def _views():
    return [("ctrl", ctrl.rust_module(ctrl.load()), ctrl.c_header(ctrl.load())),
            ("ebpf", abi.rust_module(abi.load()), abi.c_header(abi.load()))]


@pytest.mark.parametrize("name,rust,c", _views(), ids=["ctrl", "ebpf"])
def test_rust_constants_are_the_c_headers(name, rust, c):
    c_values = {m.group(1): int(m.group(2), 0) for m in C_DEFINE.finditer(c)}
    checked = 0
    for m in RUST_CONST.finditer(rust):
        cname, rtype, value = m.groups()
        if not re.fullmatch(r"0x[0-9A-Fa-f]+|\d+", value) or cname.endswith("_OFF"):
            continue
        assert cname in c_values, f"{name}: {cname} is in the Rust view, not in the C header"
        assert int(value, 0) == c_values[cname], f"{name}: {cname} = {value} in Rust, {c_values[cname]} in C"
        checked += 1
    assert checked > 50, f"{name}: only {checked} constants compared"


def test_rust_struct_layouts_are_the_c_compilers(tmp_path):
    """Sizes and offsets against offsetof/sizeof of the C headers, compiled here."""
    inc = tmp_path / "include"
    inc.mkdir()
    (inc / "nanobpf_ctrl.h").write_text(ctrl.c_header(ctrl.load()))
    (inc / "nanobpf_ebpf_defs.h").write_text(abi.c_header(abi.load()))
    checks = []
    for name, rust, c in _views():
        structs = set(re.findall(r"^struct nanobpf_(\w+) \{", c, re.M))
        for m in RUST_CONST.finditer(rust):
            const, value = m.group(1), m.group(3)
            for s in structs:
                up = f"NANOBPF_{s.upper()}_"
                if const == up + "SIZE":
                    checks.append((const, f"sizeof(struct nanobpf_{s})", int(value)))
                elif const.startswith(up) and const.endswith("_OFF"):
                    field = const[len(up):-len("_OFF")].lower()
                    checks.append((const, f"offsetof(struct nanobpf_{s}, {field})", int(value)))
    assert len(checks) > 100, len(checks)
    body = "\n".join(f'    printf("{k} %zu\\n", (size_t)({expr}));' for k, expr, _ in checks)
    src = tmp_path / "layout.c"
    src.write_text("#include <stddef.h>\n#include <stdio.h>\n#include \"nanobpf_ctrl.h\"\n#include \"nanobpf_ebpf_defs.h\"\n"
                   f"int main(void) {{\n{body}\n    return 0;\n}}\n")
    exe = tmp_path / "layout"
    subprocess.run(["cc", "-std=gnu11", f"-I{inc}", str(src), "-o", str(exe)], check=True)
    got = dict(line.split() for line in subprocess.run([str(exe)], check=True, capture_output=True,
                                                       text=True).stdout.splitlines())
    wrong = [f"{k}: Rust {v}, C {got[k]}" for k, _, v in checks if int(got[k]) != v]
    assert not wrong, "\n".join(wrong)
