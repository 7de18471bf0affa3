"""nanobpf-xdc-check: the Genesys2 constraints fit the board top bit for bit; broken fixtures are caught
with a FILE:LINE message and exit 1; usage errors exit 2."""
import subprocess
import sys

import pytest

from nanobpf import ROOT, command
from nanobpf.board import facts

TOOL = command("nanobpf-xdc-check")
GENESYS2 = facts.load("genesys2")  # boards/genesys2/board.toml names the XDC and the top
XDC = str(GENESYS2.design.xdc.relative_to(ROOT))
TOP = str((GENESYS2.design.rtl / f"{GENESYS2.design.top}.sv").relative_to(ROOT))

FIX_TOP = """\
// a small board top
module fix_top #(
    parameter int W = 4,  // data width
    parameter N = W * 2
) (
    input  logic         clk_p, clk_n,   /* differential */
    input  logic         rst_n,
    output logic [W-1:0] data,
    output logic [1:0]   flag, extra,    // extra inherits [1:0]
    input  wire  [N-1:N-2] hi
);
endmodule

module other (input logic a);
endmodule
"""

FIX_XDC = """\
# every bit of fix_top
set_property -dict { PACKAGE_PIN A1 IOSTANDARD LVDS } [get_ports { clk_p }]; # inline comment
set_property -dict { PACKAGE_PIN A2 IOSTANDARD LVDS } [get_ports clk_n]
set_property PACKAGE_PIN B1 [get_ports rst_n]
set_property IOSTANDARD LVCMOS33 [get_ports "rst_n"]
set_property -dict { PACKAGE_PIN C0 IOSTANDARD LVCMOS33 } [get_ports {data[0]}]
set_property -dict { PACKAGE_PIN C1 IOSTANDARD LVCMOS33 } [get_ports {data[1]}]
set_property -dict { PACKAGE_PIN C2 IOSTANDARD LVCMOS33 } [get_ports {data[2]}]
set_property -dict { PACKAGE_PIN C3 IOSTANDARD LVCMOS33 } [get_ports {data[3]}]
set_property -dict {PACKAGE_PIN D0 IOSTANDARD LVCMOS33} [get_ports {flag[0]}]
set_property -dict {PACKAGE_PIN D1 IOSTANDARD LVCMOS33} [get_ports {flag[1]}]
set_property -dict { \\
    PACKAGE_PIN E0 IOSTANDARD LVCMOS33 \\
} [get_ports {extra[0]}]
set_property PACKAGE_PIN E1 [get_ports {extra[1]}]
set_property PACKAGE_PIN F6 [get_ports {hi[6]}]
set_property PACKAGE_PIN F7 [get_ports {hi[7]}]
set_property IOSTANDARD LVCMOS18 [get_ports { extra[1] hi[*] }]
#set_property PACKAGE_PIN Z9 [get_ports {nonexistent}]
create_clock -period 10.000 -name clk [get_ports clk_p]
set_false_path -from [get_ports {rst_n hi[*]}] -to [get_clocks -of_objects [get_ports {clk_p}]]
set_output_delay -clock clk -max 1.0 [get_ports {data[*] flag[*] extra}]
"""


def run(*args, cwd=ROOT):
    return subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def check(tmp_path, xdc=FIX_XDC, top=FIX_TOP, *extra):
    (tmp_path / "fix.xdc").write_text(xdc)
    (tmp_path / "fix_top.sv").write_text(top)
    return run("--xdc", "fix.xdc", "--top", "fix_top.sv", *extra, cwd=tmp_path)


def line_of(text, needle):
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def test_genesys2_xdc_matches_the_board_top():
    p = run("--xdc", XDC, "--top", TOP)
    assert p.returncode == 0, p.stdout + p.stderr
    # 34 bits of clocks, reset, Ethernet, UART, switches and LEDs, and the DDR3's 71
    assert p.stdout.strip().splitlines()[-1] == "nanobpf-xdc-check: 105 port bits, all constrained, 0 problems"


def test_board_option_takes_the_files_from_board_toml():
    p = run("--board", "genesys2")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip().splitlines()[-1] == "nanobpf-xdc-check: 105 port bits, all constrained, 0 problems"
    p = run("--board", "no_such_board")
    assert p.returncode == 2 and "boards/no_such_board/board.toml not found" in p.stderr
    p = run("--xdc", XDC)
    assert p.returncode == 2 and "--xdc and --top are required without --board" in p.stderr


def test_genesys2_xdc_has_the_board_facts():
    xdc = (ROOT / XDC).read_text()
    for fact in ("PACKAGE_PIN AD12  IOSTANDARD LVDS } [get_ports { sysclk_p }]",
                 "PACKAGE_PIN AG10  IOSTANDARD LVCMOS15 } [get_ports { eth_rxck }]",
                 "create_clock -name sysclk -period 5.000 [get_ports sysclk_p]",
                 "create_clock -name eth_rxck -period 8.000 [get_ports eth_rxck]",
                 "-source [get_pins u_rgmii/txck_oddr/C]", "BITSTREAM.CONFIG.SPI_BUSWIDTH 4",
                 "set_clock_groups", "Genesys-2-Master.xdc"):
        assert fact in xdc, fact


def test_fixture_passes(tmp_path):
    p = check(tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout == "nanobpf-xdc-check: 13 port bits, all constrained, 0 problems\n"


def test_module_option_selects_the_module(tmp_path):
    p = check(tmp_path, FIX_XDC, FIX_TOP, "--module", "other")
    assert p.returncode == 1
    assert "fix.xdc:2: get_ports {clk_p}: no such port in module other" in p.stdout
    assert f"fix_top.sv:{line_of(FIX_TOP, 'module other')}: port bit a (input) has no PACKAGE_PIN and no " \
           "IOSTANDARD in fix.xdc" in p.stdout
    assert check(tmp_path, FIX_XDC, FIX_TOP, "--module", "nope").returncode == 2


def test_top_port_missing_from_xdc(tmp_path):
    xdc = FIX_XDC.replace("set_property -dict { PACKAGE_PIN C2 IOSTANDARD LVCMOS33 } [get_ports {data[2]}]\n", "")
    p = check(tmp_path, xdc)
    assert p.returncode == 1
    assert f"fix_top.sv:{line_of(FIX_TOP, 'output logic [W-1:0] data')}: port bit data[2] (output) has no " \
           "PACKAGE_PIN and no IOSTANDARD in fix.xdc" in p.stdout
    assert p.stdout.splitlines()[-1] == "nanobpf-xdc-check: 13 port bits, 1 unconstrained, 1 problem"


def test_xdc_port_missing_from_top(tmp_path):
    xdc = FIX_XDC + "set_property -dict { PACKAGE_PIN G1 IOSTANDARD LVCMOS33 } [get_ports { data[0] ghost }]\n"
    p = check(tmp_path, xdc)
    n = len(xdc.splitlines())
    assert p.returncode == 1
    assert f"fix.xdc:{n}: get_ports {{ghost}}: no such port in module fix_top" in p.stdout
    # data[0] on the same line is real, so it gets a second pin
    assert f"fix.xdc:{n}: data[0] gets a second PACKAGE_PIN G1 (it has C0 from line 6)" in p.stdout
    # ports named by timing commands are checked too, but a commented line is not
    p = check(tmp_path, FIX_XDC.replace("[get_ports {rst_n hi[*]}]", "[get_ports {rst_n reset}]"))
    assert "get_ports {reset}: no such port" in p.stdout and "nonexistent" not in p.stdout


def test_index_out_of_range(tmp_path):
    p = check(tmp_path, FIX_XDC.replace("{hi[7]}", "{hi[8]}"))
    assert p.returncode == 1
    assert f"fix.xdc:{line_of(FIX_XDC, '{hi[7]}')}: get_ports {{hi[8]}}: index 8 is out of range of hi[7:6]" in p.stdout
    assert "port bit hi[7] (input) has no PACKAGE_PIN in fix.xdc" in p.stdout
    p = check(tmp_path, FIX_XDC.replace("[get_ports rst_n]", "[get_ports {rst_n[0]}]"))
    assert "get_ports {rst_n[0]}: rst_n is a single bit in module fix_top, not a bus" in p.stdout


def test_pin_used_twice(tmp_path):
    p = check(tmp_path, FIX_XDC.replace("PACKAGE_PIN D1", "PACKAGE_PIN C3"))
    assert p.returncode == 1
    ln, first = line_of(FIX_XDC, "PIN D1"), line_of(FIX_XDC, "PIN C3")
    assert f"fix.xdc:{ln}: package pin C3 of flag[1] is already used by data[3] (line {first})" in p.stdout


def test_missing_iostandard(tmp_path):
    p = check(tmp_path, FIX_XDC.replace('set_property IOSTANDARD LVCMOS33 [get_ports "rst_n"]\n', ""))
    assert p.returncode == 1
    assert f"fix_top.sv:{line_of(FIX_TOP, 'rst_n,')}: port bit rst_n (input) has no IOSTANDARD in fix.xdc" in p.stdout


def test_lone_p_of_an_lvds_pair(tmp_path):
    top = FIX_TOP.replace("clk_p, clk_n,", "clk_p,       ")
    xdc = FIX_XDC.replace("set_property -dict { PACKAGE_PIN A2 IOSTANDARD LVDS } [get_ports clk_n]\n", "")
    p = check(tmp_path, xdc, top)
    assert p.returncode == 1
    assert "fix.xdc:2: clk_p has the differential IOSTANDARD LVDS but its partner clk_n is not a port of " \
           "module fix_top" in p.stdout
    # the partner exists but is single-ended
    p = check(tmp_path, FIX_XDC.replace("PACKAGE_PIN A2 IOSTANDARD LVDS", "PACKAGE_PIN A2 IOSTANDARD LVCMOS18"))
    assert "fix.xdc:2: clk_p has the differential IOSTANDARD LVDS but its partner clk_n has IOSTANDARD " \
           "LVCMOS18" in p.stdout
    # an active-low _n port made differential by mistake: its _p does not exist
    p = check(tmp_path, FIX_XDC.replace("PACKAGE_PIN B1 [get_ports rst_n]", "PACKAGE_PIN B1 [get_ports rst_n]\n"
                                        "set_property IOSTANDARD DIFF_SSTL15 [get_ports rst_n]"))
    assert "fix.xdc:5: rst_n has the differential IOSTANDARD DIFF_SSTL15 but its partner rst_p is not a port" in p.stdout
    assert "fix.xdc:6: rst_n gets IOSTANDARD LVCMOS33 but has DIFF_SSTL15 from line 5" in p.stdout
    # a differential standard on a port that is no _p/_n at all
    p = check(tmp_path, FIX_XDC.replace("[get_ports { extra[1] hi[*] }]",
                                        "[get_ports { extra[1] }]\nset_property IOSTANDARD TMDS_33 [get_ports {hi[*]}]"))
    assert p.returncode == 1
    assert "hi[6] has the differential IOSTANDARD TMDS_33 but is not named *_p/*_n" in p.stdout


def test_unbraced_index_and_unbalanced_braces(tmp_path):
    p = check(tmp_path, FIX_XDC.replace("[get_ports {flag[0]}]", "[get_ports flag[0]]"))
    assert p.returncode == 1
    assert "get_ports flag[0]: brace the name ({flag[0]})" in p.stdout
    p = check(tmp_path, FIX_XDC + "set_property PACKAGE_PIN Q1 [get_ports {extra[0]]\n")
    assert p.returncode == 1 and "unbalanced {" in p.stdout


@pytest.mark.parametrize("args", [
    ["--xdc", "missing.xdc", "--top", TOP],
    ["--xdc", XDC, "--top", "missing.sv"],
    ["--xdc", XDC],
    ["--bogus"],
])
def test_usage_errors_exit_2(args):
    p = run(*args)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr


def test_unreadable_top_exits_2(tmp_path):
    assert check(tmp_path, FIX_XDC, "// no module here\n").returncode == 2
    assert check(tmp_path, FIX_XDC, FIX_TOP.replace("[W-1:0]", "[WIDTH-1:0]")).returncode == 2


def test_help():
    p = run("--help")
    assert p.returncode == 0 and "--xdc" in p.stdout and "Exit status" in p.stdout
