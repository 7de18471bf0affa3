"""nanobpf-genctrl: the C header (user space and the kernel's attribute policy) and the Python module
agree, docs/control-protocol.md is current, bad definitions are refused."""
import subprocess
import sys

import nanobpf_ctrl_defs as ctrl
import pytest

from nanobpf import ROOT

GENCTRL = ROOT / "sw/tools/nanobpf-genctrl"


def genctrl(*args):
    return subprocess.run([sys.executable, str(GENCTRL), *map(str, args)], capture_output=True, text=True)


def test_committed_doc_is_current():
    p = genctrl("--check-md", ROOT / "docs/control-protocol.md")
    assert p.returncode == 0, p.stderr


def test_c_header_agrees_with_python_module(tmp_path):
    assert genctrl("--c", tmp_path / "nanobpf_ctrl.h").returncode == 0
    checks = [(n, getattr(ctrl, n)) for n in dir(ctrl) if n.startswith("NANOBPF_")]
    checks += [("NANOBPF_CTRL_ETHERTYPE", ctrl.ETHERTYPE), ("NANOBPF_SHIM_ETHERTYPE", ctrl.SHIM_ETHERTYPE),
               ("NANOBPF_CTRL_VERSION", ctrl.VERSION), ("NANOBPF_DECRYPT_MARK", ctrl.DECRYPT_MARK),
               ("NANOBPF_ENCRYPT_MARK", ctrl.ENCRYPT_MARK), ("NANOBPF_ATTR_MAX", len(ctrl.GENL_ATTRS) - 1)]
    checks += [(f"NANOBPF_ATTR_{a}", num) for a, (num, _, _) in ctrl.GENL_ATTRS.items()]
    for name, (st, layout) in ctrl.STRUCTS.items():
        checks.append((f"sizeof(struct nanobpf_{name})", st.size))
        off = 0
        for f, kind, n in layout:
            checks.append((f"__builtin_offsetof(struct nanobpf_{name}, {f})", off))
            off += n if kind in ("bytes", "str") else {"u8": 1, "u16": 2, "u32": 4, "u64": 8}[kind]
    src = tmp_path / "dump.c"
    src.write_text('#include <stdio.h>\n#include "nanobpf_ctrl.h"\n'
                   "static const char *const st[NANOBPF_STATUS_COUNT] = NANOBPF_STATUS_NAMES;\nint main(void) {\n"
                   '  printf("%s\\n", st[NANOBPF_CTRL_ST_STALE_EPOCH]);\n'
                   + "".join(f'  printf("%llu\\n", (unsigned long long)({c}));\n' for c, _ in checks)
                   + "  return 0;\n}\n")
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-I", str(tmp_path), str(src), "-o", str(tmp_path / "dump")],
                   check=True)
    out = subprocess.run([str(tmp_path / "dump")], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == ctrl.STATUS_NAMES[ctrl.NANOBPF_CTRL_ST_STALE_EPOCH] == "stale_epoch"
    assert [int(v) for v in out[1:]] == [v for _, v in checks]


def test_kernel_policy_names_every_attribute(tmp_path):
    assert genctrl("--c", tmp_path / "h.h").returncode == 0
    text = (tmp_path / "h.h").read_text()
    policy = text[text.index("#define NANOBPF_GENL_POLICY"):text.index("#endif", text.index("#define NANOBPF_GENL_POLICY"))]
    for a, (_, typ, n) in ctrl.GENL_ATTRS.items():
        if typ == "unspec":
            continue
        assert f"[NANOBPF_ATTR_{a}]" in policy
        if typ == "string":
            assert f"[NANOBPF_ATTR_{a}] = {{ .type = NLA_NUL_STRING, .len = {n - 1} }}" in policy


def test_pack_unpack_round_trip_and_refusals():
    b = ctrl.pack("ctrl_hdr", version=1, type=ctrl.NANOBPF_CTRL_MSG_KEY_ADD, seq=0x01020304, length=128)
    assert b[:8] == bytes([1, 0x10, 0, 0, 1, 2, 3, 4])          # big-endian on the wire
    assert ctrl.unpack("ctrl_hdr", b)["seq"] == 0x01020304
    assert ctrl.unpack("prog_begin", ctrl.pack("prog_begin", total=9, name="xdp_quic"))["name"] == "xdp_quic"
    with pytest.raises(ValueError):
        ctrl.pack("prog_begin", name="x" * (ctrl.NANOBPF_CTRL_NAME_LEN + 1))
    with pytest.raises(TypeError):
        ctrl.pack("ctrl_hdr", bogus=1)
    with pytest.raises(ValueError):
        ctrl.unpack("ctrl_hdr", b[:15])


@pytest.mark.parametrize("patch, message", [
    (("ethertype = 0x88B5", 'ethertype = "x"'), "ethertype missing or not int"),
    (("version = 1                 #", "version = 300                 #"), "min_version <= version"),
    (('name = "STALE_SEQ", value = 14', 'name = "STALE_SEQ", value = 13'), "value 13 used twice"),
    (('name = "IFNAME"\ntype = "string"\nlen = 16', 'name = "IFNAME"\ntype = "string"'), "string needs len"),
    (('type = "u8[80]"', 'type = "u9[80]"'), "unknown type 'u9[80]'"),
    (('name = "UNSPEC"\ntype = "unspec"', 'name = "UNSPEC"\ntype = "u8"'), "first genl_attr must be the unspec"),
])
def test_bad_definitions_are_refused(tmp_path, patch, message):
    text = (ROOT / "hw/defs/ctrl.toml").read_text()
    assert patch[0] in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(patch[0], patch[1], 1))
    p = genctrl("--defs", bad, "--python", tmp_path / "x.py")
    assert p.returncode == 1 and message in p.stderr, p.stderr
