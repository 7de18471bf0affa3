"""Board flow without Vivado or a board: nanobpf-bitstream, boards/genesys2/vivado/build.tcl, nanobpf-flash.

Vivado is faked by a `vivado` script first on PATH that runs the real build.tcl under /usr/bin/tclsh
with stub procs for the Vivado commands; each stub call is recorded (one line, tab-separated) so the
tests can check what the flow asked Vivado to do. openFPGALoader is faked the same way.
"""
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from nanobpf import ROOT, command
from nanobpf.board import facts

BITSTREAM = command("nanobpf-bitstream")
FLASH = command("nanobpf-flash")
GENESYS2 = facts.load("genesys2")  # the facts the tools must use: boards/genesys2/board.toml
BUILD_TCL = GENESYS2.design.vivado_tcl
TCLSH = "/usr/bin/tclsh"
PART, TOP = GENESYS2.fpga.part, GENESYS2.design.top
FLASH_IF, FLASH_MIB = GENESYS2.flash.interface, str(GENESYS2.flash.size_mib)
OFL = GENESYS2.flash.openfpgaloader_board
STAGES = ["read sources", "read constraints", "synth_design", "opt_design", "place_design", "phys_opt_design",
          "route_design", "reports", "timing check", "write_bitstream", "write_cfgmem", "done"]
IMPL = ["synth_design", "opt_design", "place_design", "phys_opt_design", "route_design"]

needs_tclsh = pytest.mark.skipif(not Path(TCLSH).exists(), reason="tclsh not installed (apt-get install tcl)")
needs_soc_pkg = pytest.mark.skipif(not (ROOT / "build/generated/vsrc/nanobpf_soc_pkg.sv").exists(),
                                   reason="build/generated/vsrc/nanobpf_soc_pkg.sv missing (make defs)")

# Stubs for the Vivado commands build.tcl uses. FAKE_WNS/FAKE_WHS set the slack the timing paths report
# ("none": no timing path at all); FAKE_SLEEP makes synth_design slow (heartbeat test).
STUBS = r"""
proc record {cmd args} {
    set fh [open $::env(FAKE_VIVADO_CALLS) a]
    puts $fh [join [concat [list $cmd] $args] "\t"]
    close $fh
}
proc touch_opt {opt argl} {
    set i [lsearch -exact $argl $opt]
    if {$i >= 0} { close [open [lindex $argl [expr {$i + 1}]] w] }
}
foreach cmd {read_verilog read_xdc opt_design place_design phys_opt_design route_design set_param set_property} {
    proc $cmd {args} "record $cmd {*}\$args"
}
foreach cmd {report_utilization report_timing_summary report_clock_interaction report_drc} {
    proc $cmd {args} "record $cmd {*}\$args; touch_opt -file \$args"
}
proc synth_design {args} {
    record synth_design {*}$args
    if {[info exists ::env(FAKE_SLEEP)]} { after [expr {int($::env(FAKE_SLEEP) * 1000)}] }
}
proc write_checkpoint {args} { record write_checkpoint {*}$args; close [open [lindex $args end] w] }
proc current_design {args} { return design_1 }
proc get_timing_paths {args} {
    record get_timing_paths {*}$args
    if {$::env(FAKE_WNS) eq "none"} { return {} }
    return [list path_[lindex $args [expr {[lsearch -exact $args -delay_type] + 1}]]]
}
proc get_property {prop obj} {
    record get_property $prop $obj
    switch -- $obj {
        path_max { return $::env(FAKE_WNS) }
        path_min { return $::env(FAKE_WHS) }
        default  { return "" }
    }
}
proc write_bitstream {args} { record write_bitstream {*}$args; close [open [lindex $args end] w] }
proc write_cfgmem {args} { record write_cfgmem {*}$args; touch_opt -file $args }
set argv0 [lindex $argv 0]
set argv [lrange $argv 1 end]
set argc [llength $argv]
source $argv0
"""

FAKE_VIVADO = """#!/bin/bash
# fake vivado: vivado -mode batch -nojournal -log LOG -source TCL -tclargs ARGS...
echo "$@" > "$FAKE_VIVADO_ARGV"
log=/dev/null; src=
while [ $# -gt 0 ]; do
  case "$1" in
    -log) log=$2; shift 2;;
    -source) src=$2; shift 2;;
    -tclargs) shift; break;;
    *) shift;;
  esac
done
set -o pipefail
{TCLSH} {STUBS} "$src" "$@" 2>&1 | tee "$log"
"""


def write_exe(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def chisel(tmp_path):
    """A stand-in for the elaborated board (make board-hw): filelist.f naming two small SV files."""
    d = tmp_path / "chisel"
    d.mkdir()
    (d / "NanobpfBoard.sv").write_text("module NanobpfBoard(input logic coreClock);\n  BoardLeds u ();\nendmodule\n")
    (d / "BoardLeds.sv").write_text("module BoardLeds;\nendmodule\n")
    (d / "filelist.f").write_text("NanobpfBoard.sv\nBoardLeds.sv\nextra.json\n")
    return d


@pytest.fixture
def xdc(tmp_path):
    f = tmp_path / "board.xdc"
    f.write_text("create_clock -period 5.000 [get_ports sysclk_p]\n")
    return f


@pytest.fixture
def fake_vivado(tmp_path):
    """Returns (bin dir to put first on PATH, environment, calls file)."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    stubs = tmp_path / "stubs.tcl"
    stubs.write_text(STUBS)
    write_exe(bindir / "vivado", FAKE_VIVADO.replace("{TCLSH}", TCLSH).replace("{STUBS}", str(stubs)))
    calls = tmp_path / "calls.txt"
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", FAKE_VIVADO_CALLS=str(calls),
               FAKE_VIVADO_ARGV=str(tmp_path / "argv.txt"), FAKE_WNS="0.123", FAKE_WHS="0.045")
    env.pop("VIVADO", None)
    return bindir, env, calls


def read_calls(calls):
    return [line.split("\t") for line in calls.read_text().splitlines()] if calls.exists() else []


def opt(call, name):
    return call[call.index(name) + 1]


DRAM = None  # the stand-in LiteDRAM core's dram.properties of the running test (fixture `dram`)


@pytest.fixture(autouse=True)
def dram(tmp_path, monkeypatch):
    """A stand-in for LiteDRAM's generated core (make litedram): dram.properties naming two small Verilog
    files (the core and its init CPU) and a memory file; every nanobpf-bitstream run gets it."""
    d = tmp_path / "litedram"
    d.mkdir()
    (d / "VexRiscv.v").write_text("module VexRiscv;\nendmodule\n")
    (d / "litedram_core.v").write_text("module litedram_core;\n  VexRiscv cpu ();\nendmodule\n")
    (d / "litedram_core_rom.init").write_text("00000013\n")
    props = d / "dram.properties"
    props.write_text(f"# stand-in\nvariant=board\nsources={d / 'VexRiscv.v'} {d / 'litedram_core.v'}\n"
                     f"memory_files={d / 'litedram_core_rom.init'}\n")
    monkeypatch.setattr(sys.modules[__name__], "DRAM", props)
    return props


def bitstream(*args, env=None):
    args = [str(x) for x in args]
    if "--dram" not in args and DRAM is not None:
        args += ["--dram", str(DRAM)]
    return subprocess.run([BITSTREAM, *args], capture_output=True, text=True, env=env)


def list_entries(files_f):
    out = []
    for line in files_f.read_text().splitlines():
        line = line.split("//")[0].strip()
        if line:
            out += line.split()
    return out


# ---------------------------------------------------------------- nanobpf-bitstream: checks and messages

@needs_soc_pkg
def test_no_vivado_exits_2_with_the_message_and_writes_the_file_list(tmp_path, chisel, xdc):
    env = dict(os.environ, PATH=str(tmp_path / "empty"))  # nothing on PATH, certainly no vivado
    env.pop("VIVADO", None)
    out = tmp_path / "out"
    p = bitstream("--board", "genesys2", "--chisel", chisel, "--out", out, "--xdc", xdc, env=env)
    assert p.returncode == 2, p.stdout + p.stderr
    for text in ("Vivado was not found", "Kintex-7", "settings64.sh", "VIVADO=", "files.f", "run-vivado.sh",
                 "make board-check", "make synth-estimate-board BOARD=genesys2"):
        assert text in p.stderr, text
    files = list_entries(out / "files.f")
    soc = subprocess.run([sys.executable, "-m", "nanobpf.rtl_files", "--synthesis", "--chisel", str(chisel)],
                         capture_output=True, text=True, check=True).stdout.split()
    board = sorted(str(f) for f in GENESYS2.design.rtl.glob("*.sv"))
    assert str(GENESYS2.design.rtl / f"{TOP}.sv") in board
    litedram = [str(DRAM.parent / "VexRiscv.v"), str(DRAM.parent / "litedram_core.v")]
    assert files == soc + litedram + board
    assert files[len(soc) - 2:len(soc)] == [str(chisel / "NanobpfBoard.sv"), str(chisel / "BoardLeds.sv")]
    assert str(DRAM.parent / "litedram_core_rom.init") in (out / "files.f").read_text()  # named in a comment
    assert not any("/boards/genesys2/sim/" in f for f in files)
    assert "+define+WT_DCACHE" in files and any(f.startswith("+incdir+") for f in files)
    script = (out / "run-vivado.sh").read_text()
    assert f"-source {BUILD_TCL}" in script and "-mode batch" in script


def test_unknown_board_missing_chisel_and_missing_xdc_are_refused(tmp_path, chisel, xdc):
    p = bitstream("--board", "arty", "--chisel", chisel, "--out", tmp_path / "o", "--xdc", xdc)
    assert p.returncode == 2 and "unknown board 'arty'" in p.stderr and "genesys2" in p.stderr
    p = bitstream("--board", "genesys2", "--chisel", tmp_path / "none", "--out", tmp_path / "o", "--xdc", xdc)
    assert p.returncode == 2 and "make board-hw" in p.stderr
    soc = tmp_path / "soc"  # an SoC elaboration (make hw) is not the board
    soc.mkdir()
    (soc / "filelist.f").write_text("NanobpfSoc.sv\n")
    (soc / "NanobpfSoc.sv").write_text("module NanobpfSoc;\nendmodule\n")
    p = bitstream("--board", "genesys2", "--chisel", soc, "--out", tmp_path / "o", "--xdc", xdc)
    assert p.returncode == 2 and "NanobpfBoard" in p.stderr and "make board-hw" in p.stderr
    p = bitstream("--board", "genesys2", "--chisel", chisel, "--out", tmp_path / "o", "--xdc", tmp_path / "no.xdc")
    assert p.returncode == 2 and "no.xdc not found" in p.stderr


@needs_soc_pkg
def test_missing_litedram_core_is_refused(tmp_path, chisel, xdc, dram):
    p = bitstream("--board", "genesys2", "--chisel", chisel, "--out", tmp_path / "o", "--xdc", xdc,
                  "--dram", tmp_path / "none.properties")
    assert p.returncode == 2 and "none.properties not found" in p.stderr and "make litedram BOARD=genesys2" in p.stderr
    (dram.parent / "litedram_core_rom.init").unlink()
    p = bitstream("--board", "genesys2", "--chisel", chisel, "--out", tmp_path / "o", "--xdc", xdc)
    assert p.returncode == 2 and "litedram_core_rom.init" in p.stderr and "make litedram" in p.stderr
    dram.write_text(dram.read_text().replace("variant=board", "variant=sim"))
    p = bitstream("--board", "genesys2", "--chisel", chisel, "--out", tmp_path / "o", "--xdc", xdc)
    assert p.returncode == 2 and "not the board's" in p.stderr


def test_default_dram_is_the_generated_litedram_core():
    """nanobpf-bitstream's default dram.properties is where nanobpf-litedram writes the board core's."""
    from nanobpf import litedram
    from nanobpf.board import bitstream
    assert bitstream.default_dram("genesys2") == litedram.out_dir("genesys2", "board") / "dram.properties"
    assert bitstream.default_dram("genesys2").relative_to(ROOT) == Path("build/litedram/genesys2/board/dram.properties")


@needs_soc_pkg
def test_default_constraints_come_from_board_toml(tmp_path, chisel):
    p = bitstream("--board", "genesys2", "--chisel", chisel, "--out", tmp_path / "o", "--dry-run")
    xdc = GENESYS2.design.xdc
    if xdc.exists():
        assert p.returncode == 0 and str(xdc) in p.stdout
    else:
        assert p.returncode == 2 and f"{xdc} not found" in p.stderr


@needs_soc_pkg
def test_dry_run_prints_the_vivado_command(tmp_path, chisel, xdc):
    out = tmp_path / "out"
    p = bitstream("--board", "genesys2", "--chisel", chisel, "--out", out, "--xdc", xdc, "--jobs", "3",
                  "--vivado", "/opt/Xilinx/bin/vivado", "--dry-run")
    assert p.returncode == 0, p.stderr
    cmd = p.stdout.splitlines()[-1].split()
    assert cmd[1:] == ["-mode", "batch", "-nojournal", "-log", str(out / "vivado.log"), "-source", str(BUILD_TCL),
                       "-tclargs", str(out / "files.f"), str(xdc), str(out), TOP, PART, "3", FLASH_IF, FLASH_MIB]
    assert (out / "files.f").exists()


# ---------------------------------------------------------------- the Vivado flow on a fake Vivado

@needs_tclsh
@needs_soc_pkg
def test_fake_vivado_runs_the_whole_flow(tmp_path, chisel, xdc, fake_vivado):
    _, env, calls = fake_vivado
    out = tmp_path / "out"
    p = bitstream("--board", "genesys2", "--chisel", chisel, "--out", out, "--xdc", xdc, "--jobs", "2", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    # progress: every stage shown, in order, with its elapsed time
    shown = [m[1] for m in re.finditer(r"^\[bitstream\] +\d+s  (.*)$", p.stdout, re.M)]
    assert [next(s for s in STAGES if x.startswith(s)) for x in shown] == STAGES
    assert (out / "vivado.log").exists() and "### synth_design" in (out / "vivado.log").read_text()

    c = read_calls(calls)
    names = [x[0] for x in c]
    # every entry of files.f read in order, .sv as SystemVerilog
    files = [f for f in list_entries(out / "files.f") if not f.startswith("+")]
    reads = [x for x in c if x[0] == "read_verilog"]
    assert [x[-1] for x in reads] == files
    assert all(x[1:] == (["-sv", x[-1]] if x[-1].endswith(".sv") else [x[-1]]) for x in reads)
    assert [x[-1] for x in reads if not x[-1].endswith(".sv")] == [str(DRAM.parent / "VexRiscv.v"),
                                                                    str(DRAM.parent / "litedram_core.v")]
    assert c[names.index("read_xdc")] == ["read_xdc", str(xdc)]
    assert names.index("read_xdc") > max(i for i, n in enumerate(names) if n == "read_verilog")
    assert ["set_param", "general.maxThreads", "2"] in c
    # synthesis: top, part, hierarchy, include dirs and defines from files.f
    syn = c[names.index("synth_design")]
    entries = list_entries(out / "files.f")
    assert opt(syn, "-top") == TOP and opt(syn, "-part") == PART and opt(syn, "-flatten_hierarchy") == "rebuilt"
    assert opt(syn, "-include_dirs").split() == [e[len("+incdir+"):].rstrip("/") for e in entries if e.startswith("+incdir+")]
    assert opt(syn, "-verilog_define").split() == [e[len("+define+"):] for e in entries if e.startswith("+define+")]
    # implementation in order, then the timing gate, then bitstream and flash image
    order = [n for n in names if n in IMPL + ["get_timing_paths", "write_bitstream", "write_cfgmem"]]
    assert order == IMPL + ["get_timing_paths", "get_timing_paths", "write_bitstream", "write_cfgmem"]
    for rpt, cmd in (("utilization.rpt", "report_utilization"), ("timing_summary.rpt", "report_timing_summary"),
                     ("clock_interaction.rpt", "report_clock_interaction"), ("drc.rpt", "report_drc")):
        assert any(x[0] == cmd and opt(x, "-file") == str(out / rpt) for x in c), rpt
        assert names.index(cmd) < names.index("get_timing_paths")
    for dcp in ("post_synth.dcp", "post_place.dcp", "post_route.dcp"):
        assert ["write_checkpoint", "-force", str(out / dcp)] in c
    assert (out / "timing.txt").read_text().split() == ["WNS", "0.123", "WHS", "0.045"]
    bit, binf = out / "nanobpf_genesys2.bit", out / "nanobpf_genesys2.bin"
    assert c[names.index("write_bitstream")] == ["write_bitstream", "-force", str(bit)]
    assert ["set_property", "BITSTREAM.CONFIG.SPI_BUSWIDTH", "4", "design_1"] in c
    cfg = c[names.index("write_cfgmem")]
    assert opt(cfg, "-format") == "bin" and opt(cfg, "-interface") == FLASH_IF and opt(cfg, "-size") == FLASH_MIB
    assert opt(cfg, "-loadbit").split() == ["up", "0x0", str(bit)] and opt(cfg, "-file") == str(binf)
    assert bit.exists() and binf.exists() and str(bit) in p.stdout


@needs_tclsh
@needs_soc_pkg
@pytest.mark.parametrize("wns,whs", [("-0.250", "0.010"), ("0.300", "-0.020"), ("none", "none")])
def test_timing_failure_stops_before_the_bitstream(tmp_path, chisel, xdc, fake_vivado, wns, whs):
    _, env, calls = fake_vivado
    env.update(FAKE_WNS=wns, FAKE_WHS=whs)
    out = tmp_path / "out"
    out.mkdir()
    (out / "nanobpf_genesys2.bit").write_text("old")  # a previous run's bitstream must not survive
    p = bitstream("--board", "genesys2", "--chisel", chisel, "--out", out, "--xdc", xdc, env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    names = [x[0] for x in read_calls(calls)]
    assert "route_design" in names and "report_timing_summary" in names
    assert "write_bitstream" not in names and "write_cfgmem" not in names
    assert not (out / "nanobpf_genesys2.bit").exists() and not (out / "nanobpf_genesys2.bin").exists()
    expected = "no constrained timing path" if wns == "none" else "timing not met after routing"
    assert expected in p.stderr  # the end of the log is shown
    assert "Vivado failed (exit 1)" in p.stderr and str(out / "vivado.log") in p.stderr


@needs_tclsh
@needs_soc_pkg
def test_heartbeat_while_a_stage_runs(tmp_path, chisel, xdc, fake_vivado):
    _, env, _ = fake_vivado
    env["FAKE_SLEEP"] = "1.5"
    p = bitstream("--board", "genesys2", "--chisel", chisel, "--out", tmp_path / "out", "--xdc", xdc,
                  "--heartbeat", "0.5", env=env)
    assert p.returncode == 0, p.stderr
    assert "still running (synth_design;" in p.stdout


def run_tcl(tmp_path, fake_vivado, files_f, xdc, *extra):
    _, env, calls = fake_vivado
    out = tmp_path / "out"
    p = subprocess.run(["vivado", "-mode", "batch", "-nojournal", "-log", str(tmp_path / "v.log"), "-source", str(BUILD_TCL),
                        "-tclargs", str(files_f), str(xdc), str(out), "my_board_top", "xc7a35ticsg324-1L", "16", *extra],
                       capture_output=True, text=True, env=env)
    return p, read_calls(calls), out


@needs_tclsh
def test_build_tcl_reads_the_verilator_file_list_format(tmp_path, xdc, fake_vivado):
    src = tmp_path / "src"
    (src / "inc").mkdir(parents=True)
    (src / "inc2").mkdir()
    for f in ("a_pkg.sv", "b.v", "c.sv"):
        (src / f).write_text("")
    files_f = src / "files.f"
    files_f.write_text(f"""# a comment
// another comment
+define+WT_DCACHE
+incdir+{src / 'inc'}
+incdir+inc2   // relative to the file list
+define+DEPTH=4+FAST
a_pkg.sv b.v   # two on a line
{src / 'c.sv'}

""")
    p, c, out = run_tcl(tmp_path, fake_vivado, files_f, xdc, "SPIx1", "16")
    assert p.returncode == 0, p.stdout + p.stderr
    assert [x for x in c if x[0] == "read_verilog"] == [
        ["read_verilog", "-sv", str(src / "a_pkg.sv")], ["read_verilog", str(src / "b.v")],
        ["read_verilog", "-sv", str(src / "c.sv")]]
    syn = next(x for x in c if x[0] == "synth_design")
    assert opt(syn, "-top") == "my_board_top" and opt(syn, "-part") == "xc7a35ticsg324-1L"
    assert opt(syn, "-include_dirs").split() == [str(src / "inc"), str(src / "inc2")]
    assert opt(syn, "-verilog_define").split() == ["WT_DCACHE", "DEPTH=4", "FAST"]
    assert ["set_param", "general.maxThreads", "8"] in c  # 16 clamped
    assert ["write_bitstream", "-force", str(out / "my_board.bit")] in c
    cfg = next(x for x in c if x[0] == "write_cfgmem")
    assert opt(cfg, "-interface") == "SPIx1" and opt(cfg, "-size") == "16" and opt(cfg, "-file") == str(out / "my_board.bin")
    assert ["set_property", "BITSTREAM.CONFIG.SPI_BUSWIDTH", "1", "design_1"] in c


@needs_tclsh
@pytest.mark.parametrize("entry,message", [
    ("missing.sv", "source file {src}/missing.sv does not exist"),
    ("+incdir+nodir", "include directory {src}/nodir does not exist"),
    ("header.svh", "not a .sv or .v source"),
    ("-y lib", "option '-y' is not supported"),
])
def test_build_tcl_refuses_a_bad_file_list(tmp_path, xdc, fake_vivado, entry, message):
    src = tmp_path / "src"
    src.mkdir()
    (src / "ok.sv").write_text("")
    (src / "header.svh").write_text("")
    files_f = src / "files.f"
    files_f.write_text(f"ok.sv\n{entry}\n")
    p, c, _ = run_tcl(tmp_path, fake_vivado, files_f, xdc)
    assert p.returncode == 1
    assert message.format(src=src) in p.stdout and "files.f:2:" in p.stdout
    assert not any(x[0] in ("read_verilog", "synth_design") for x in c)


@needs_tclsh
def test_build_tcl_refuses_a_missing_xdc_and_bad_arguments(tmp_path, fake_vivado):
    src = tmp_path / "ok.sv"
    src.write_text("")
    files_f = tmp_path / "files.f"
    files_f.write_text(f"{src}\n")
    p, c, _ = run_tcl(tmp_path, fake_vivado, files_f, tmp_path / "none.xdc")
    assert p.returncode == 1 and "none.xdc do not exist" in p.stdout and not any(x[0] == "synth_design" for x in c)
    _, env, _ = fake_vivado
    p = subprocess.run(["vivado", "-mode", "batch", "-log", str(tmp_path / "v.log"), "-source", str(BUILD_TCL),
                        "-tclargs", str(files_f)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 1 and "usage: -tclargs FILES_F XDC OUT TOP PART JOBS" in p.stdout


# ---------------------------------------------------------------- nanobpf-flash on a fake openFPGALoader

FAKE_OFL = """#!/bin/sh
printf '%s\\n' "$@" > "$FAKE_OFL_ARGV"
if [ -n "$FAKE_OFL_FAIL" ]; then
  echo "unable to open ftdi device: -3 (device not found)"
  echo "JTAG init failed with: unable to open ftdi device"
  exit 1
fi
echo "Load SRAM: [==========] 100.00%"
"""


@pytest.fixture
def fake_ofl(tmp_path):
    bindir = tmp_path / "oflbin"
    bindir.mkdir()
    write_exe(bindir / "openFPGALoader", FAKE_OFL)
    argv = tmp_path / "ofl-argv.txt"
    env = dict(os.environ, PATH=str(bindir), FAKE_OFL_ARGV=str(argv))  # only the fake on PATH
    return env, argv


def flash(*args, env=None):
    return subprocess.run([FLASH, *map(str, args)], capture_output=True, text=True, env=env)


@pytest.fixture
def bit(tmp_path):
    f = tmp_path / "build/nanobpf_genesys2.bit"
    f.parent.mkdir()
    f.write_bytes(b"\x00\x09bitstream")
    return f


def test_flash_volatile_loads_the_bit_over_jtag(fake_ofl, bit):
    env, argv = fake_ofl
    p = flash("--board", "genesys2", "--bit", bit, env=env)
    assert p.returncode == 0, p.stderr
    assert argv.read_text().splitlines() == ["-b", OFL, "-m", str(bit)]
    assert "100.00%" in p.stdout and "lost at power-off" in p.stdout


def test_flash_spi_writes_the_bin_next_to_the_bit(fake_ofl, bit):
    env, argv = fake_ofl
    binf = bit.with_suffix(".bin")
    binf.write_bytes(b"raw")
    p = flash("--board", "genesys2", "--bit", bit, "--spi", env=env)
    assert p.returncode == 0, p.stderr
    assert argv.read_text().splitlines() == ["-b", OFL, "-f", str(binf)]
    assert "QSPI" in p.stdout
    p = flash("--board", "genesys2", "--bit", bit, "--spi", "--verify", env=env)
    assert argv.read_text().splitlines() == ["-b", OFL, "-f", "--verify", str(binf)]


def test_flash_spi_without_an_up_to_date_bin_writes_the_bit(fake_ofl, bit):
    env, argv = fake_ofl
    p = flash("--board", "genesys2", "--bit", bit, "--spi", env=env)
    assert p.returncode == 0 and argv.read_text().splitlines() == ["-b", OFL, "-f", str(bit)]
    assert "no nanobpf_genesys2.bin" in p.stdout
    binf = bit.with_suffix(".bin")
    binf.write_bytes(b"old")
    os.utime(binf, (bit.stat().st_mtime - 100,) * 2)
    p = flash("--board", "genesys2", "--bit", bit, "--spi", env=env)
    assert p.returncode == 0 and argv.read_text().splitlines() == ["-b", OFL, "-f", str(bit)]
    assert "older than" in p.stdout


def test_flash_dry_run_prints_the_command(fake_ofl, bit):
    env, argv = fake_ofl
    p = flash("--board", "genesys2", "--bit", bit, "--dry-run", env=env)
    assert p.returncode == 0 and not argv.exists()
    assert p.stdout.split()[-4:] == ["-b", OFL, "-m", str(bit)]


def test_flash_missing_bitstream_tool_or_board(tmp_path, fake_ofl, bit):
    env, argv = fake_ofl
    p = flash("--board", "genesys2", "--bit", tmp_path / "none.bit", env=env)
    assert p.returncode == 2 and "make bitstream BOARD=genesys2" in p.stderr and not argv.exists()
    p = flash("--board", "nexys", "--bit", bit, env=env)
    assert p.returncode == 2 and "unknown board 'nexys'" in p.stderr
    p = flash("--board", "genesys2", "--bit", bit, env=dict(env, PATH=str(tmp_path / "empty")))
    assert p.returncode == 2 and "openFPGALoader not found" in p.stderr and "apt-get install openfpgaloader" in p.stderr
    p = flash("--board", "genesys2", "--bit", bit, "--openfpgaloader", tmp_path / "nope", env=env)
    assert p.returncode == 2 and "not an executable" in p.stderr


def test_flash_failure_shows_the_output_and_a_hint(fake_ofl, bit):
    env, argv = fake_ofl
    p = flash("--board", "genesys2", "--bit", bit, "--spi", env=dict(env, FAKE_OFL_FAIL="1"))
    assert p.returncode == 1
    assert "unable to open ftdi device" in p.stdout  # openFPGALoader's own output passed through
    for text in ("exited with status 1", "power switch", "udev", "plugdev", "openFPGALoader --detect -b genesys2"):
        assert text in p.stderr, text


def test_flash_takes_an_explicit_openfpgaloader(tmp_path, fake_ofl, bit):
    env, argv = fake_ofl
    tool = Path(env["PATH"]) / "openFPGALoader"
    p = flash("--board", "genesys2", "--bit", bit, "--openfpgaloader", tool, env=dict(env, PATH=str(tmp_path / "empty")))
    assert p.returncode == 0 and argv.read_text().splitlines() == ["-b", OFL, "-m", str(bit)]


def test_tools_have_help():
    for tool in (BITSTREAM, FLASH):
        p = subprocess.run([tool, "--help"], capture_output=True, text=True)
        assert p.returncode == 0 and "--board" in p.stdout and "--dry-run" in p.stdout
        assert os.access(tool, os.X_OK)
