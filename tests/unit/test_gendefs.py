"""nanobpf-gendefs: every generated view agrees with the definition file; bad definitions are refused."""
import re
import subprocess

import pytest

from nanobpf import ROOT, command
from nanobpf import soc
from nanobpf.gen.soc import camel

GENDEFS = command("nanobpf-gendefs")
DEFS = ROOT / "hw/defs/soc.toml"


def gendefs(*args):
    return subprocess.run([GENDEFS, *map(str, args)], capture_output=True, text=True)


def test_committed_memory_map_doc_is_current():
    p = gendefs("--check-md", ROOT / "docs/memory-map.md")
    assert p.returncode == 0, p.stderr


def test_c_header_agrees_with_python_module(tmp_path):
    gendefs("--c", tmp_path / "nanobpf_soc.h")
    names = [(f"NANOBPF_{r.upper()}_BASE", soc.REGIONS[r].base) for r in soc.REGIONS]
    names += [(f"NANOBPF_{b.upper()}_{n.upper()}_OFFSET" + ("(1)" if g.count > 1 else ""),
               g.offset + (g.stride if g.count > 1 else 0)) for (b, n), g in soc.REGS.items()]
    prog = tmp_path / "dump.c"
    prog.write_text('#include <stdio.h>\n#include "nanobpf_soc.h"\nint main(void) {\n'
                    + "".join(f'  printf("%llu\\n", (unsigned long long)({c}));\n' for c, _ in names)
                    + "  return 0;\n}\n")
    subprocess.run(["cc", "-I", str(tmp_path), str(prog), "-o", str(tmp_path / "dump")], check=True)
    out = subprocess.run([str(tmp_path / "dump")], capture_output=True, text=True, check=True).stdout.split()
    assert [int(v) for v in out] == [v for _, v in names]


def test_scala_and_sv_views_agree(tmp_path):
    gendefs("--scala", tmp_path / "SocMap.scala", "--sv", tmp_path / "pkg.sv")
    scala = (tmp_path / "SocMap.scala").read_text()
    sv = (tmp_path / "pkg.sv").read_text()
    for r in soc.REGIONS.values():
        assert f'"{r.name}", BigInt("{r.base:x}", 16), BigInt("{r.size:x}", 16)' in scala
        assert f"{r.name.upper()}_BASE = 64'h{r.base:x};" in sv
    execs = re.search(r"ExecuteRegionAddrBase: \{([^}]*)\}", sv)[1]
    want = {f"64'h{r.base:x}" for r in soc.REGIONS.values() if "exec" in r.attrs}
    assert set(x.strip() for x in execs.split(",")) == want


def test_bus_slave_names_follow_the_interconnect_order(tmp_path):
    """nanobpf-sim --bus-stats names slave i by NANOBPF_BUS_SLAVE_NAMES[i]: the regions with hardware,
    in SocMap.regions order (the interconnect's slave ports)."""
    gendefs("--c", tmp_path / "nanobpf_soc.h", "--scala", tmp_path / "SocMap.scala")
    on_bus = [r.name for r in soc.REGIONS.values() if "detached" not in r.attrs]
    scala = re.search(r"val regions = Seq\(([^)]*)\)", (tmp_path / "SocMap.scala").read_text())[1]
    assert [x.strip() for x in scala.split(",")] == [camel(n) for n in on_bus]
    prog = tmp_path / "names.c"
    prog.write_text('#include <stdio.h>\n#include "nanobpf_soc.h"\nint main(void) {\n'
                    "  static const char *n[] = NANOBPF_BUS_SLAVE_NAMES;\n"
                    '  for (unsigned i = 0; i < NANOBPF_BUS_SLAVES; i++) printf("%s\\n", n[i]);\n'
                    "  return sizeof n / sizeof *n != NANOBPF_BUS_SLAVES;\n}\n")
    subprocess.run(["cc", "-I", str(tmp_path), str(prog), "-o", str(tmp_path / "names")], check=True)
    out = subprocess.run([str(tmp_path / "names")], capture_output=True, text=True, check=True).stdout.split()
    assert out == on_bus


BAD = {
    "layout width": ("[[region]]\nname='a'\nbase=0x1000\nsize=0x1000\ndesc='a'\n"
                     "[[layout]]\nname='l'\nwidth=48\ndesc='l'\nfields=[]\n", "width must be 32, 64 or 128"),
    "layout overlap": ("[[region]]\nname='a'\nbase=0x1000\nsize=0x1000\ndesc='a'\n"
                       "[[layout]]\nname='l'\nwidth=64\ndesc='l'\nfields=[['x', 0, 8, 'x'], ['y', 4, 4, 'y']]\n",
                       "overlaps another field"),
    "overlap": ("[[region]]\nname='a'\nbase=0x1000\nsize=0x1000\ndesc='a'\n"
                "[[region]]\nname='b'\nbase=0x1800\nsize=0x800\ndesc='b'\n", "overlaps"),
    "unaligned": ("[[region]]\nname='a'\nbase=0x1800\nsize=0x1000\ndesc='a'\n", "naturally aligned"),
    "reg past end": ("[[region]]\nname='a'\nbase=0x1000\nsize=0x1000\ndesc='a'\n"
                     "[[reg]]\nblock='a'\nname='r'\noffset=0xffc\nwidth=64\naccess='rw'\ndesc='r'\n", "past the end"),
    "unknown block": ("[[region]]\nname='a'\nbase=0x1000\nsize=0x1000\ndesc='a'\n"
                      "[[reg]]\nblock='b'\nname='r'\noffset=0\nwidth=32\naccess='rw'\ndesc='r'\n", "unknown block"),
    "reg overlap": ("[[region]]\nname='a'\nbase=0x1000\nsize=0x1000\ndesc='a'\n"
                    "[[reg]]\nblock='a'\nname='r'\noffset=0\nwidth=64\naccess='rw'\ndesc='r'\n"
                    "[[reg]]\nblock='a'\nname='s'\noffset=4\nwidth=32\naccess='rw'\ndesc='s'\n", "overlap"),
    "field overlap": ("[[region]]\nname='a'\nbase=0x1000\nsize=0x1000\ndesc='a'\n"
                      "[[reg]]\nblock='a'\nname='r'\noffset=0\nwidth=32\naccess='rw'\ndesc='r'\n"
                      "fields=[['x', 0, 4, 'x'], ['y', 3, 2, 'y']]\n", "overlaps another field"),
    "field too wide": ("[[region]]\nname='a'\nbase=0x1000\nsize=0x1000\ndesc='a'\n"
                       "[[reg]]\nblock='a'\nname='r'\noffset=0\nwidth=32\naccess='rw'\ndesc='r'\n"
                       "fields=[['x', 30, 4, 'x']]\n", "does not fit"),
    "enum repeat": ("[[region]]\nname='a'\nbase=0x1000\nsize=0x1000\ndesc='a'\n"
                    "[[enum]]\nname='e'\ndesc='e'\nvalues=[['x', 1, 'x'], ['y', 1, 'y']]\n", "repeats"),
    "bad access": ("[[region]]\nname='a'\nbase=0x1000\nsize=0x1000\ndesc='a'\n"
                   "[[reg]]\nblock='a'\nname='r'\noffset=0\nwidth=32\naccess='rx'\ndesc='r'\n", "access must be"),
    "cva6 unknown key": ("[cva6]\nscoreboard=4\n", "[cva6] has no key 'scoreboard'"),
    "cva6 too few ways": ("[cva6]\ndcache_ways=2\n", "dcache_ways must be a power of two >= 4"),
    "cva6 icache ways beyond a page with the MMU": ("[cva6]\nicache_kib=32\nmmu=true\n", "icache_kib above 16 needs mmu = false"),
    "cva6 icache not a power of two": ("[cva6]\nicache_kib=24\n", "icache_kib must be a power of two >= 4"),
    "cva6 not a power of two": ("[cva6]\nscoreboard_entries=6\n", "scoreboard_entries must be a power of two"),
    "cva6 switch": ("[cva6]\nperf_counters=0\n", "perf_counters must be true or false"),
}

def test_fields_and_enums_agree(tmp_path):
    """Register fields and enumerations: the Python helpers round-trip and the Scala view has them."""
    from nanobpf.soc import ENUMS, REGS, pack, unpack
    g = REGS[("pisa", "port_entry")]
    word = pack("pisa", "port_entry", valid=1, port=2, tagged=1, vid=0xABC, lport=3)
    assert unpack("pisa", "port_entry", word) == {"valid": 1, "port": 2, "tagged": 1, "vid": 0xABC, "lport": 3}
    assert word == 1 | 2 << 1 | 1 << 3 | 0xABC << 4 | 3 << 16 and g.fields["vid"] == (4, 12)
    with pytest.raises(ValueError):
        pack("pisa", "port_entry", vid=1 << 12)
    with pytest.raises(KeyError):
        pack("pisa", "port_entry", nope=1)
    assert gendefs("--scala", tmp_path / "SocMap.scala").returncode == 0
    out = (tmp_path / "SocMap.scala").read_text()
    assert "val PortEntryVid = Field(4, 12)" in out and "object PisaDrop {" in out
    assert all(f"val {''.join(w.capitalize() for w in k.split('_'))} = {v}" in out for k, v in ENUMS["pisa_drop"].items())


def test_layouts_agree(tmp_path):
    """Layouts (descriptors): Python pack/unpack round-trip, C macros and the Scala view give the same bits."""
    from nanobpf.soc import LAYOUTS, pack_layout, unpack_layout
    width, fields = LAYOUTS["pkt_desc"]
    assert width == 64 and fields["seq"] == (32, 16)
    vals = {"slot": 0x5A, "len": 1514, "lport": 3, "quic": 1, "conn_valid": 1, "gso": 0, "ctrl": 1, "valid": 1,
            "seq": 0xBEEF, "conn_slot": 0x1234}
    word = pack_layout("pkt_desc", **vals)
    assert unpack_layout("pkt_desc", word) == vals
    with pytest.raises(ValueError):
        pack_layout("pkt_desc", len=1 << 12)
    with pytest.raises(KeyError):
        pack_layout("pkt_comp", seq=1)
    assert pack_layout("gso_hdr", conn_slot=0xFFFF) == 0xFFFF << 112
    gendefs("--c", tmp_path / "nanobpf_soc.h", "--scala", tmp_path / "SocMap.scala")
    prog = tmp_path / "desc.c"
    prog.write_text('#include <stdio.h>\n#include "nanobpf_soc.h"\nint main(void) {\n'
                    f"  unsigned long long w = {word}ull;\n"
                    + "".join(f'  printf("%llu\\n", NANOBPF_GET(w, NANOBPF_PKT_DESC_{k.upper()}));\n' for k in vals)
                    + f'  printf("%llu\\n", NANOBPF_PUT(NANOBPF_PKT_DESC_SEQ, 0xBEEF) | NANOBPF_PUT(NANOBPF_PKT_DESC_SLOT, 0x5A));\n'
                    + "  return 0;\n}\n")
    subprocess.run(["cc", "-I", str(tmp_path), str(prog), "-o", str(tmp_path / "desc")], check=True)
    out = subprocess.run([str(tmp_path / "desc")], capture_output=True, text=True, check=True).stdout.split()
    assert [int(v) for v in out] == list(vals.values()) + [pack_layout("pkt_desc", seq=0xBEEF, slot=0x5A)]
    scala = (tmp_path / "SocMap.scala").read_text()
    assert "object PktDesc {" in scala and "val Seq = Field(32, 16)" in scala and "val ConnSlot = Field(112, 16)" in scala


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_definitions_are_refused(tmp_path, case):
    body, message = BAD[case]
    f = tmp_path / "soc.toml"
    f.write_text("[soc]\nmax_cores=4\nbus_bytes=8\nreset_vector='a'\ncore_clock_hz=1000\n" + body)
    p = gendefs("--defs", f, "--c", tmp_path / "x.h")
    assert p.returncode == 1
    assert message in p.stderr
    assert not (tmp_path / "x.h").exists()


def test_stacks_are_in_each_cores_own_ram():
    """Every hart's stack and TLS block are in region core_local (the same address for each core,
    served by its own RAM in front of the shared interconnect: hw soc/CoreLocal.scala): cached, off the
    shared bus, the linker's stack top its end, and no main memory kept for stacks (the heap runs to
    the end of main memory). Fails if the linker script or the region's attributes drift apart."""
    import shutil
    elf = ROOT / "build/firmware/hello.elf"
    if not elf.exists():
        pytest.skip("build/firmware/hello.elf not built (make firmware)")
    local, main = soc.REGIONS["core_local"], soc.REGIONS["main_mem"]
    assert {"cached", "detached"} <= set(local.attrs) and "exec" not in local.attrs
    nm = shutil.which("riscv64-unknown-elf-nm") or "nm"
    syms = {p[2]: int(p[0], 16) for p in (ln.split() for ln in subprocess.run(
        [nm, str(elf)], capture_output=True, text=True, check=True).stdout.splitlines()) if len(p) == 3}
    assert syms["__stack_top"] == local.base + local.size
    assert syms["__stack_size"] == local.size
    assert syms["__heap_end"] == main.base + main.size
