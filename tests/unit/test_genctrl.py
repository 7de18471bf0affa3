"""nanobpf-genctrl: the C header (user space and the kernel's attribute policy) and the Python module
agree, docs/control-protocol.md is current, bad definitions are refused."""
import subprocess

import nanobpf_ctrl_defs as ctrl
import pytest

from nanobpf import ROOT, command

GENCTRL = command("nanobpf-genctrl")


def genctrl(*args):
    return subprocess.run([GENCTRL, *map(str, args)], capture_output=True, text=True)


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
    (("version = 2                 #", "version = 300                 #"), "min_version <= version"),
    (('auth_req_label = "NanoBPF ctrl req"', 'auth_req_label = "NanoBPF ctrl"'), "auth_req_label: 16 printable ASCII"),
    (('auth_resp_label = "NanoBPF ctrl rsp"', 'auth_resp_label = "NanoBPF ctrl req"'), "must differ"),
    (('name = "STALE_SEQ", value = 14', 'name = "STALE_SEQ", value = 13'), "value 13 used twice"),
    (('name = "IFNAME"\ntype = "string"\nlen = 16', 'name = "IFNAME"\ntype = "string"'), "string needs len"),
    (('type = "u8[NANOBPF_CTRL_KEYS_SIZE]"', 'type = "u9[80]"'), "unknown type 'u9[80]'"),
    (('type = "u8[NANOBPF_CTRL_KEYS_SIZE]"', 'type = "u8[NANOBPF_NO_SUCH]"'), "no constant named NANOBPF_NO_SUCH"),
    (('value = "NANOBPF_KEYTABLE_CID_MAX"', 'value = "NANOBPF_KEYTABLE_CID_MAXX"'), "no constant named"),
    (('len = "NANOBPF_CTRL_MAX_IMAGE"', 'len = "NANOBPF_CTRL_MAX_IMAGES"'), "no constant named"),
    (('name = "UNSPEC"\ntype = "unspec"', 'name = "UNSPEC"\ntype = "u8"'), "first genl_attr must be the unspec"),
])
def test_bad_definitions_are_refused(tmp_path, patch, message):
    text = (ROOT / "hw/defs/ctrl.toml").read_text()
    assert patch[0] in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(patch[0], patch[1], 1))
    p = genctrl("--defs", bad, "--python", tmp_path / "x.py")
    assert p.returncode == 1 and message in p.stderr, p.stderr


def test_limits_have_one_source():
    """Every limit the protocol shares with the eBPF ABI, the hardware or the driver is defined once
    (hw/defs/*.toml) and named elsewhere, and the generated views agree: the CID length, the key
    entry's size, name lengths, the key table's entries (HELLO's key_slots; the driver's assumption
    before HELLO) and its slots (the AEAD engine's key storage), the netlink attribute lengths and the
    wire structs' arrays."""
    import re
    import nanobpf_ebpf_defs as abi
    import nanobpf_soc as soc
    assert ctrl.NANOBPF_CTRL_MAX_CID == abi.NANOBPF_KEYTABLE_CID_MAX
    assert ctrl.NANOBPF_CTRL_NAME_LEN == abi.NANOBPF_MAP_NAME_LEN == abi.NANOBPF_PROG_NAME_LEN
    assert ctrl.NANOBPF_CTRL_KEYS_SIZE == abi.STRUCTS["quic_keys"].size
    assert abi.NANOBPF_KEYTABLE_SLOTS == 2 * abi.NANOBPF_KEYTABLE_ENTRIES
    # an event record: the runtime's limit, and the largest one fits one EVENTS response (its header
    # the size of the ring's record header, which nanobpf-run's events budget counts)
    assert ctrl.NANOBPF_CTRL_MAX_EVENT == abi.NANOBPF_EVENT_MAX == ctrl.GENL_ATTRS["EVENT_DATA"][2]
    assert ctrl.EVENTS_RESP_SIZE + ctrl.EVENT_REC_SIZE + ctrl.NANOBPF_CTRL_MAX_EVENT <= ctrl.NANOBPF_CTRL_MAX_BODY
    assert ctrl.EVENT_REC_SIZE == abi.NANOBPF_EVENT_REC_HDR
    toml = (ROOT / "hw/defs/ctrl.toml").read_text()
    assert re.search(r'name = "MAX_CID", value = "NANOBPF_KEYTABLE_CID_MAX"', toml)
    assert re.search(r'name = "NAME_LEN", value = "NANOBPF_MAP_NAME_LEN"', toml)
    assert re.search(r'name = "MAX_EVENT", value = "NANOBPF_EVENT_MAX"', toml)
    assert "u8[20]" not in toml and "u8[80]" not in toml and "char[32]" not in toml
    for a, n in [("CID", ctrl.NANOBPF_CTRL_MAX_CID), ("ADDR_ID", ctrl.NANOBPF_CTRL_MAX_CID), ("KEYS", ctrl.NANOBPF_CTRL_KEYS_SIZE),
                 ("IMAGE", ctrl.NANOBPF_CTRL_MAX_IMAGE), ("PROG_NAME", ctrl.NANOBPF_CTRL_NAME_LEN)]:
        assert ctrl.GENL_ATTRS[a][2] == n, a
    sizes = {f: n for f, _, n in ctrl.STRUCTS["key_msg"][1]}
    assert sizes["cid"] == ctrl.NANOBPF_CTRL_MAX_CID and sizes["keys"] == ctrl.NANOBPF_CTRL_KEYS_SIZE
    # the hardware and the driver name the ABI's constants instead of copying them
    src = lambda p: (ROOT / p).read_text()
    assert "keySlots: Int = nanobpf.common.EbpfAbi.KeytableSlots.toInt" in src("hw/src/main/scala/nanobpf/aead/AeadParams.scala")
    assert "val maxCid = nanobpf.common.EbpfAbi.KeytableCidMax.toInt" in src("hw/src/main/scala/nanobpf/pisa/PisaParams.scala")
    assert re.search(r"#define NBPF_DEFAULT_KEY_SLOTS\s+NANOBPF_KEYTABLE_ENTRIES", src("sw/driver/nanobpf.h"))
    # the engine's key_slots register field can hold the slot count
    assert abi.NANOBPF_KEYTABLE_SLOTS < 1 << soc.REGS[("aead", "params")].fields["key_slots"][1]
