"""nanobpf-run --batch: the command contract (results, error lines that leave the session usable,
usage errors) and the Python driver nanobpf.ebpf.device.DeviceXdp, on a small map-using program.
Needs `make ebpf-tools`."""
import platform
import subprocess

import pytest

from nanobpf import BUILD, ROOT
from nanobpf.ebpf import device, load

RUN = BUILD / "ebpf/host/nanobpf-run"
PROG = r"""#include "nanobpf_xdp.h"
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, __u64);
} seen SEC(".maps");
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} verdict SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u8 *data = (__u8 *)(long)ctx->data, *end = (__u8 *)(long)ctx->data_end;
    __u32 key = ctx->ingress_ifindex, zero = 0;
    __u64 one = 1, *n = bpf_map_lookup_elem(&seen, &key);
    if (n)
        *n += 1;
    else
        bpf_map_update_elem(&seen, &key, &one, BPF_ANY);
    if (data + 1 > end)
        return XDP_ABORTED;
    data[0] ^= 0xff; /* the frame comes back changed */
    __u32 *v = bpf_map_lookup_elem(&verdict, &zero);
    return v ? *v : XDP_ABORTED;
}
char _license[] SEC("license") = "GPL";
"""


def compile_c(src, obj):
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{platform.machine()}-linux-gnu",
                    f"-I{ROOT}/sw/ebpf/include", f"-I{BUILD}/generated/include", "-c", str(src), "-o", str(obj)],
                   check=True)
    return obj


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    d = tmp_path_factory.mktemp("batch")
    (d / "p.c").write_text(PROG)
    (d / "p.nbpf").write_bytes(load(compile_c(d / "p.c", d / "p.o")).to_bytes())
    return d / "p.nbpf"


def batch(image, script, *opts):
    p = subprocess.run([str(RUN), "--image", str(image), "--batch", "-", *opts], input=script, capture_output=True,
                       text=True)
    return p.returncode, p.stdout.splitlines(), p.stderr


@pytest.mark.parametrize("jit", [False, True])
def test_commands_and_results(image, jit):
    if jit and not device.available(jit=True)[0]:
        pytest.skip(device.available(jit=True)[1])
    rc, out, err = batch(image, "\n".join([
        "# a comment, then a blank line", "",
        "lookup seen 07000000",
        "update verdict 00000000 02000000",
        "run 7 0011",
        "run 7 aa",
        "lookup seen 07000000",
        "lookup verdict 00000000",
        "slot seen 08000000",
        "slot seen 07000000",
    ]) + "\n", *(["--jit"] if jit else []))
    assert rc == 0, err
    assert out[:6] == ["none", "ok", "result 2 ff11 0 0 0 0", "result 2 55 0 0 0 0", "value 0200000000000000", "value 02000000"]
    # the hash slot of an entry (none without one), what PISA's conn names for the key table
    assert out[6] == "none" and out[7].startswith("slot ") and 0 <= int(out[7].split()[1]) < 64, out[6:]


def test_errors_leave_the_session_usable(image):
    rc, out, _ = batch(image, "\n".join([
        "frobnicate", "update nosuch 00 00", "update seen 0000 0000000000000000", "update seen zz 00",
        "lookup seen", "slot seen", "slot nosuch 00", "run x 00", "run 1 0g", "run 1 00 1,2,3", "run 1 00 1,2,3,4,5,6,7", "run 1 00 0,0,0,0,0,99999",
        "update verdict 00000000 01000000", "run 1 00", "run 1 00 14,34,0,0,0,0",
    ]))  # no final newline: the last line still counts
    assert rc == 0
    assert out[:9] == ["error unknown command 'frobnicate' (info, update, lookup, delete, next, slot, events, run)",
                       "error no map named 'nosuch'", "error map seen: key of 2 bytes, expected 4",
                       "error map seen: the key is not hex bytes", "error lookup takes MAP KEY", "error slot takes MAP KEY",
                       "error no map named 'nosuch'", "error run takes IFINDEX FRAME [L3_OFF,L4_OFF,QUIC_OFF,PN_OFF,CID_LEN,CONN]",
                       "error the frame is not hex bytes"]
    parse_usage = "error PARSE is six comma-separated numbers: L3_OFF,L4_OFF,QUIC_OFF,PN_OFF,CID_LEN,CONN"
    assert out[9:11] == [parse_usage, parse_usage]
    # a parse result outside the verifier's ranges: refused, the program does not run
    assert out[11].startswith("error fault: insn -1: context: parse result out of range"), out[11]
    assert out[12:] == ["ok", "result 1 ff 0 0 0 0", "result 1 ff 0 0 0 0"]


@pytest.mark.parametrize("args", [["--batch", "-"], ["--image", "x.nbpf", "--batch", "-", "00"],
                                  ["--image", "x.nbpf", "--batch", "-", "--check"]])
def test_usage_errors(args):
    p = subprocess.run([str(RUN), *args], capture_output=True, text=True, input="")
    assert p.returncode == 2 and "--batch needs --image" in p.stderr


def test_device_driver(image):
    with device.DeviceXdp(image) as d:
        d.map_update("verdict", bytes(4), (3).to_bytes(4, "little"))
        assert d.run(b"\x01\x02", ingress_ifindex=5) == (3, b"\xfe\x02")
        assert d.map_lookup("seen", (5).to_bytes(4, "little")) == (1).to_bytes(8, "little")
        assert d.map_lookup_percpu("verdict", bytes(4)) == [(3).to_bytes(4, "little")]
        with pytest.raises(device.DeviceError, match="key of 2 bytes"):
            d.map_lookup("seen", b"\0\0")
        with pytest.raises(TypeError):
            d.map_lookup("verdict", bytes(4))


def test_delete_next_and_update_flags(image):
    rc, out, _ = batch(image, "\n".join([
        "next seen", "update seen 01000000 0100000000000000 1", "update seen 01000000 0200000000000000 1",
        "update seen 02000000 0200000000000000 2", "update seen 03000000 0300000000000000 0",
        "next seen", "next seen 09000000", "delete seen 01000000", "delete seen 01000000", "next seen",
        "next seen 03000000", "delete verdict 00000000", "next verdict", "next verdict 00000000",
        "update seen 01000000 0100000000000000 3", "delete seen", "next", "info", "info x",
    ]) + "\n")
    assert rc == 0
    first = out[5]
    assert out[:5] == ["none", "ok", "error map seen: update failed (-17)", "error map seen: update failed (-2)", "ok"]
    assert first in ("key 01000000", "key 03000000") and out[6] == first   # an absent key gives the first
    assert out[7:10] == ["ok", "none", "key 03000000"]
    assert out[10] == "none"                                                # after the last key
    assert out[11] == "error map verdict: delete failed (-22: array elements cannot be deleted)"
    assert out[12:14] == ["key 00000000", "none"]                           # one-entry array
    assert out[14] == "error update: FLAGS is 0 (any), 1 (noexist) or 2 (exist)"
    assert out[15:] == ["error delete takes MAP KEY", "error next takes MAP [KEY]", "info 42 2",
                        "error info takes no arguments"]


def test_device_driver_map_iteration(image):
    with device.DeviceXdp(image) as d:
        assert d.info() == (42, 2)   # instructions (ld_imm64 counts 2), maps
        for k in (4, 2, 3):
            d.map_update("seen", k.to_bytes(4, "little"), bytes(8))
        keys, k = [], d.map_next_key("seen")
        while k is not None:
            keys.append(int.from_bytes(k, "little"))
            k = d.map_next_key("seen", k)
        assert sorted(keys) == [2, 3, 4]
        assert d.map_delete("seen", (3).to_bytes(4, "little")) and not d.map_delete("seen", (3).to_bytes(4, "little"))
        with pytest.raises(device.DeviceError, match="-17"):
            d.map_update("seen", (2).to_bytes(4, "little"), bytes(8), flags=1)


def test_device_driver_reports_a_rejected_program(tmp_path):
    obj = compile_c(ROOT / "tests/ebpf/verifier/reject_no_bounds_check.c", tmp_path / "r.o")
    with device.DeviceXdp(obj) as d:
        with pytest.raises(device.DeviceError, match="verifier: insn"):
            d.run(bytes(64))
