"""boards/<board>/board.toml is the one place for a board's facts (issue 27): nanobpf.board.facts reads
and checks it, and every other view agrees with it: the Makefile (build/generated/boards.mk, `make
board-facts`, the command lines `make -n` shows, ElaborateBoard's among them), the tools, the XDC's
clocks and configuration, the MMCM in the board RTL, ddr3.yml's clocks and hw/defs/soc.toml's core
clock. A broken board.toml stops with a message naming the file and the key.

Needs nothing built (make runs with -n only; build/generated/boards.mk is written by make itself).
"""
import re
import shutil
import subprocess
import tomllib

import pytest
import yaml

from nanobpf import ROOT, SOC_DEFAULT_CORES, command
from nanobpf.board import facts

BOARD = "genesys2"
F = facts.load(BOARD)
TOOL = command("nanobpf-board")


def make(*args):
    """`make -s -n ARGS` at the root: the commands it would run, continuation lines joined."""
    p = subprocess.run(["make", "-s", "-n", "--no-print-directory", *args], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.replace("\\\n", " ")


def line_with(text, word):
    (line,) = [ln for ln in text.splitlines() if word in ln]
    return line.split()


def opt(words, name):
    return words[words.index(name) + 1]


# ---------------------------------------------------------------- board.toml itself

def test_genesys2_facts():
    assert facts.DEFAULT_BOARD == BOARD and BOARD in facts.known()
    assert (F.fpga.part, F.fpga.device, F.design.top, F.design.chisel_top) == \
        ("xc7k325tffg900-2", "xc7k325t", "nanobpf_genesys2_top", "NanobpfBoard")
    assert (F.clocks.sys_hz, F.clocks.core_hz, F.clocks.net_hz) == (200_000_000, 50_000_000, 125_000_000)
    assert F.capacity == {"LUT": 203_800, "FF": 407_600, "BRAM36": 445, "DSP": 840}
    for path in (F.design.rtl, F.design.sim, F.design.xdc, F.design.vivado_tcl, F.design.ddr3):
        assert path.exists(), path
    assert (F.design.rtl / f"{F.design.top}.sv").is_file()


def test_every_board_loads_and_every_key_is_commented():
    for name in facts.known():
        b = facts.load(name)
        assert b.name == name
        for line in b.path.read_text().splitlines():
            if re.match(r"^\w+\s*=", line):  # a fact: its line says what it is or where it comes from
                assert "#" in line, f"{b.path}: {line!r} has no comment"


def test_cli_prints_the_facts():
    p = subprocess.run([TOOL, BOARD], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert f"fpga.part = {F.fpga.part}" in p.stdout and "design.xdc = constraints/genesys2.xdc" in p.stdout
    p = subprocess.run([TOOL, BOARD, "--get", "clocks.core_hz"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == str(F.clocks.core_hz)
    p = subprocess.run([TOOL], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith(f"{BOARD} (default): ")


# ---------------------------------------------------------------- a broken board.toml

GOOD = (ROOT / "boards/genesys2/board.toml").read_text()


def broken(tmp_path, text, name="genesys2"):
    d = tmp_path / "boards" / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "board.toml").write_text(text)
    return tmp_path / "boards"


@pytest.mark.parametrize("edit, message", [
    (lambda t: re.sub(r"^core_hz = .*$", "", t, flags=re.M), "[clocks] core_hz missing"),
    (lambda t: t.replace("[uart]\nbaud = 115200", ""), "table [uart] missing"),
    (lambda t: t.replace("part = ", "parts = "), "[fpga] parts: unknown key"),
    (lambda t: t.replace("default_cores = 4", 'default_cores = "4"'), "[board] default_cores must be a positive integer"),
    (lambda t: t.replace("default_cores = 4", "default_cores = 0"), "[board] default_cores must be a positive integer"),
    (lambda t: t.replace('top = "nanobpf_genesys2_top"', "top = 1"), "[design] top must be a non-empty string"),
    (lambda t: t.replace('name = "genesys2"', 'name = "arty"'), "[board] name is 'arty' but the folder is 'genesys2'"),
    (lambda t: t.replace('device = "xc7k325t"', 'device = "xc7a100t"'), "is not of device 'xc7a100t'"),
    (lambda t: t + "\n[extra]\nx = 1\n", "unknown table [extra]"),
    (lambda t: t.replace("[uart]", "[uart"), "not valid TOML"),
])
def test_broken_board_toml_is_refused_with_the_file_and_key(tmp_path, edit, message):
    text = edit(GOOD)
    assert text != GOOD
    boards = broken(tmp_path, text)
    path = boards / "genesys2" / "board.toml"
    with pytest.raises(facts.BoardFactsError) as e:
        facts.load("genesys2", boards)
    assert str(path) in str(e.value) and message in str(e.value), str(e.value)
    # the command and the Makefile's fragment (what make's rule for boards.mk runs) say the same, exit 2
    for args in (["genesys2"], ["--make"]):
        p = subprocess.run([TOOL, "--boards-dir", str(boards), *args], capture_output=True, text=True)
        assert p.returncode == 2 and message in p.stderr and str(path) in p.stderr, p.stderr


def test_unknown_board_names_the_known_ones(tmp_path):
    with pytest.raises(facts.BoardFactsError, match=r"unknown board 'arty': boards/arty/board.toml not found "
                                                   r"\(known boards: genesys2\)"):
        facts.load("arty")


def test_a_copied_board_folder_is_a_board(tmp_path):
    """Paths in board.toml are relative to its folder: a copy under another name (and name) works."""
    boards = broken(tmp_path, GOOD.replace('name = "genesys2"', 'name = "other"'), "other")
    shutil.copytree(ROOT / "boards/genesys2/rtl", boards / "other" / "rtl")
    b = facts.load("other", boards)
    assert b.design.rtl == boards / "other" / "rtl" and (b.design.rtl / f"{b.design.top}.sv").is_file()


# ---------------------------------------------------------------- the Makefile's view

def test_boards_mk_is_written_from_board_toml():
    make("help")  # remakes build/generated/boards.mk when a board.toml changed
    assert (ROOT / "build/generated/boards.mk").read_text() == facts.make_fragment()


def test_make_defaults_come_from_the_one_source():
    p = subprocess.run(["make", "-s", "--no-print-directory", "help"], cwd=ROOT, capture_output=True, text=True)
    (variables,) = [ln for ln in p.stdout.splitlines() if ln.strip().startswith("variables:")]
    assert f"CORES={SOC_DEFAULT_CORES} " in variables and f"BOARD={facts.DEFAULT_BOARD} " in variables
    assert variables.rstrip().endswith(f"BOARD_CORES={F.default_cores}")
    makefile = (ROOT / "Makefile").read_text()
    assert not re.search(r"^\s*(BOARD_)?CORES\s*\?=\s*\d", makefile, re.M), "a numeric core default in the Makefile"
    assert not re.search(r"^\s*BOARD\s*\?=\s*\w+\s*$", makefile, re.M), "a board name as make's default"


def test_make_board_facts_shows_board_toml():
    out = subprocess.run(["make", "-s", "--no-print-directory", "board-facts", f"BOARD={BOARD}"], cwd=ROOT,
                         capture_output=True, text=True).stdout
    got = {ln.split(None, 1)[0]: ln.split(None, 1)[1] for ln in out.splitlines()}
    assert got["part"] == F.fpga.part and got["xdc"] == str(facts.rel(F.design.xdc))
    assert got["top"].startswith(f"{F.design.top} ({facts.rel(F.design.rtl)})")
    assert got["vivado_tcl"] == str(facts.rel(F.design.vivado_tcl)) and got["ddr3"] == str(facts.rel(F.design.ddr3))
    assert (got["core_hz"], got["net_hz"], got["uart_baud"]) == tuple(map(str, (F.clocks.core_hz, F.clocks.net_hz,
                                                                                 F.uart.baud)))
    assert got["cores"].startswith(f"BOARD_CORES={F.default_cores} ")
    assert got["bit"].endswith(f"/build/bitstream/{BOARD}/{F.design.top.removesuffix('_top')}.bit")


def test_elaborate_board_gets_the_facts_on_its_command_line():
    # -W board.toml: as if it had just changed, so that the elaboration is shown even when it is up to date
    out = make("-W", f"boards/{BOARD}/board.toml", "board-hw", f"BOARD={BOARD}")
    w = line_with(out, "nanobpf.board.ElaborateBoard")
    assert opt(w, "--board") == BOARD and opt(w, "--cores") == str(F.default_cores)
    assert (opt(w, "--core-hz"), opt(w, "--net-hz"), opt(w, "--uart-baud")) == \
        (str(F.clocks.core_hz), str(F.clocks.net_hz), str(F.uart.baud))
    assert opt(w, "--out").endswith(f"build/hw/board-{BOARD}-{F.default_cores}")
    w = line_with(make("-W", f"boards/{BOARD}/board.toml", "board-hw", f"BOARD={BOARD}", "BOARD_CORES=3"),
                  "nanobpf.board.ElaborateBoard")
    assert opt(w, "--cores") == "3"


def test_board_targets_pass_the_board():
    w = line_with(make("-W", f"boards/{BOARD}/board.toml", "synth-estimate-board", f"BOARD={BOARD}"),
                  "nanobpf-synth-estimate")
    assert opt(w, "--board") == BOARD and opt(w, "--top") == F.design.top
    assert opt(w, "--fit-cores") == str(F.default_cores)
    assert [w[i + 1] for i, x in enumerate(w) if x == "--top-file"] == \
        [str(facts.rel(f)) for f in sorted(F.design.rtl.glob("*.sv"))]
    w = line_with(make("synth-estimate"), "nanobpf-synth-estimate")
    assert opt(w, "--board") == facts.DEFAULT_BOARD and opt(w, "--chisel").endswith(f"/soc-{SOC_DEFAULT_CORES}")
    out = make("board-check", "bitstream", "flash", f"BOARD={BOARD}")
    assert line_with(out, "nanobpf-xdc-check")[1:] == ["--board", BOARD]
    assert opt(line_with(out, "nanobpf-bitstream"), "--board") == BOARD
    assert opt(line_with(out, "nanobpf-flash"), "--bit").endswith(f"{F.design.top.removesuffix('_top')}.bit")


def test_unknown_board_stops_make():
    p = subprocess.run(["make", "-s", "-n", "board-hw", "BOARD=arty"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode != 0 and "BOARD=arty: no boards/arty/board.toml (boards: genesys2)" in p.stderr


# ---------------------------------------------------------------- the tools

def test_tools_take_their_facts_from_board_toml():
    from nanobpf import litedram
    from nanobpf.board import bitstream, flash, synth_estimate
    assert litedram.board_file(BOARD) == F.design.ddr3
    assert synth_estimate.CAPACITY == F.capacity and synth_estimate.DEVICE == F.fpga.device.upper()
    cmd = bitstream.vivado_cmd("vivado", "t.tcl", "f.f", "x.xdc", ROOT, F, 2)
    assert cmd[cmd.index("-tclargs") + 4:] == [F.design.top, F.fpga.part, "2", F.flash.interface, str(F.flash.size_mib)]
    assert f"-b {F.flash.openfpgaloader_board}" in flash.hint(F) and F.fpga.device in flash.hint(F)
    for name in ("bitstream", "flash", "lint", "litedram", "synth_estimate", "xdc_check"):
        mod = ROOT / ("sw/python/nanobpf/litedram.py" if name == "litedram" else f"sw/python/nanobpf/board/{name}.py")
        text = mod.read_text()
        for literal in (F.fpga.part, F.design.top, '"S25FL256S"', "203_800", "genesys2\""):
            assert literal not in text, f"{mod.relative_to(ROOT)} holds its own copy of {literal}"


# ---------------------------------------------------------------- the files that cannot read TOML

def hz(period_ns):
    return round(1e9 / float(period_ns))


def test_xdc_agrees():
    xdc = F.design.xdc.read_text()
    periods = dict(re.findall(r"^create_clock -name (\w+) -period ([\d.]+)", xdc, re.M))
    assert hz(periods["sysclk"]) == F.clocks.sys_hz and hz(periods["eth_rxck"]) == F.clocks.eth_rx_hz
    assert re.search(rf"^set_property CONFIG_MODE {F.flash.interface} ", xdc, re.M)
    width = re.search(r"^set_property BITSTREAM.CONFIG.SPI_BUSWIDTH (\d+) ", xdc, re.M)[1]
    assert F.flash.interface == f"SPIx{width}"


def test_mmcm_makes_the_clocks_of_board_toml():
    sv = (F.design.rtl / "nanobpf_genesys2_clocks.sv").read_text()
    p = {k: float(v) for k, v in re.findall(r"\.(CLKIN1_PERIOD|DIVCLK_DIVIDE|CLKFBOUT_MULT_F|CLKOUT\d_DIVIDE(?:_F)?)"
                                            r"\(([\d.]+)\)", sv)}
    assert hz(p["CLKIN1_PERIOD"]) == F.clocks.sys_hz
    vco = F.clocks.sys_hz * p["CLKFBOUT_MULT_F"] / p["DIVCLK_DIVIDE"]
    out = {f"out{n}": vco / p.get(f"CLKOUT{n}_DIVIDE_F", p.get(f"CLKOUT{n}_DIVIDE", 0) or 1) for n in range(4)}
    bufg = dict(re.findall(r"BUFG \w+ \(\.I\((out\d)\), \.O\((clk_\w+)\)\)", sv))  # outN -> clk_x
    clk = {name: out[o] for o, name in bufg.items()}
    assert (clk["clk_core"], clk["clk_net"], clk["clk_ref"]) == (F.clocks.core_hz, F.clocks.net_hz, F.clocks.ref_hz)


def test_ddr3_yml_clocks_agree():
    d = yaml.safe_load(F.design.ddr3.read_text())
    assert float(d["board"]["input_clk_freq"]) == F.clocks.sys_hz  # LiteDRAM's PLL runs on the oscillator
    assert float(d["board"]["iodelay_clk_freq"]) == F.clocks.ref_hz


def test_soc_toml_core_clock_is_the_boards():
    """The firmware's time (NANOBPF_CORE_CLOCK_HZ) comes from hw/defs/soc.toml; on the default board it
    must be the core clock the board runs at."""
    soc = tomllib.loads((ROOT / "hw/defs/soc.toml").read_text())["soc"]
    assert soc["core_clock_hz"] == facts.load(facts.DEFAULT_BOARD).clocks.core_hz


def test_scala_keeps_no_board_facts():
    """ElaborateBoard takes the clocks, baud rate and core count on its command line (required), the
    SoC's Elaborate its core count: no table or default of their own."""
    board_dir = ROOT / "hw/src/main/scala/nanobpf/board"
    for f in ("ElaborateBoard.scala", "NanobpfBoard.scala"):
        text = (board_dir / f).read_text()
        for literal in ("50_000_000", "125_000_000", "115200", '"genesys2"', str(F.clocks.core_hz)):
            assert literal not in text, f"{f} holds {literal}"
    elab = (board_dir / "ElaborateBoard.scala").read_text()
    for option in ("core-hz", "net-hz", "uart-baud", "cores"):
        assert f'"{option}"' in elab
    soc = (ROOT / "hw/src/main/scala/nanobpf/soc/Elaborate.scala").read_text()
    assert "getOrElse(4)" not in soc and '"--cores is required"' in soc


def test_elaborated_board_uses_the_clocks():
    """When `make board-hw` has run (make test-prereqs: BOARD_CORES=2), the Chisel output holds the
    board's clocks: the heartbeat counts core_hz / 2 cycles, the activity LEDs net_hz / 20, and the UART
    divider resets to core_hz / baud."""
    sv_dir = ROOT / f"build/hw/board-{BOARD}-2"
    if not (sv_dir / "filelist.f").is_file():
        pytest.skip(f"{sv_dir} not built (make board-hw BOARD={BOARD} BOARD_CORES=2)")
    sv = "\n".join(f.read_text() for f in sv_dir.glob("*.sv"))
    for value in (F.clocks.core_hz // 2 - 1, F.clocks.net_hz // 20 - 1, F.clocks.core_hz // F.uart.baud):
        assert re.search(rf"'h{value:X}\b", sv, re.I) or re.search(rf"'d{value}\b", sv), value
