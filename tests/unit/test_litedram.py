"""nanobpf.litedram (nanobpf-litedram): the LiteDRAM configs come from boards/genesys2/ddr3.yml,
the generated cores agree with it, generation is skipped when nothing changed, and missing inputs stop
with a message naming them.

The checks of generated output need `make litedram BOARD=genesys2` (part of `make test-prereqs`).
"""
import subprocess

import pytest
import yaml

from nanobpf import BUILD, ROOT, command
from nanobpf import litedram as ld
from nanobpf.board import facts

TOOL = command("nanobpf-litedram")
BOARD = "genesys2"
FACTS = facts.load(BOARD)  # boards/genesys2/board.toml: names ddr3.yml and the XDC
DDR3, XDC = FACTS.design.ddr3, FACTS.design.xdc


def test_ddr3_yml_is_the_one_board_toml_names():
    assert ld.board_file(BOARD) == DDR3 and DDR3.is_file()


def test_configs_merge_common_and_variant():
    src = yaml.safe_load(DDR3.read_text())
    board, sim = ld.config(BOARD, "board"), ld.config(BOARD, "sim")
    for cfg in (board, sim):
        for k, v in src["common"].items():
            if "clk_freq" not in k:
                assert cfg[k] == v, k
        assert cfg["sys_clk_freq"] == 100e6
        assert cfg["user_ports"] == {"axi_0": {"type": "axi", "id_width": 4}}
    # the board facts of the brief (litedram's examples/genesys2.yml, litex-boards' Genesys2)
    assert (board["sdram_module"], board["sdram_module_nb"], board["sdram_phy"], board["speedgrade"],
            board["cmd_latency"], board["cpu"]) == ("MT41J256M16", 4, "K7DDRPHY", -2, 1, "vexriscv")
    assert (board["input_clk_freq"], board["iodelay_clk_freq"]) == (200e6, 200e6)
    # ... and they are the board's (board.toml: the 200 MHz oscillator, the 200 MHz IDELAYCTRL reference)
    assert (board["input_clk_freq"], board["iodelay_clk_freq"]) == (FACTS.clocks.sys_hz, FACTS.clocks.ref_hz)
    assert sim["cpu"] == "None" and sim["sdram_module"] == "MT41K64M16"
    assert ld.module_bytes(board) == 1 << 30 and ld.module_bytes(sim) == 256 << 20


def test_sim_module_is_the_smallest_ddr3_module():
    """No DDR3 module LiteDRAM knows is smaller than the sim variant's (DDR3 keeps the 256-bit port)."""
    import inspect
    import litedram.modules as m
    sizes = {n: c.nbanks * c.nrows * c.ncols for n, c in inspect.getmembers(m, inspect.isclass)
             if issubclass(c, m.SDRAMModule) and getattr(c, "memtype", None) == "DDR3" and getattr(c, "nrows", None)}
    assert min(sizes.values()) == sizes[ld.config(BOARD, "sim")["sdram_module"]]


def test_missing_board_file_is_named(tmp_path):
    r = subprocess.run([TOOL, "--board", "no_such_board"], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "unknown board 'no_such_board': boards/no_such_board/board.toml not found" in r.stderr, r.stderr


def test_wrong_user_port_refused(monkeypatch, tmp_path):
    bad = tmp_path / "ddr3.yml"
    text = DDR3.read_text().replace("id_width: 4", "id_width: 6")
    bad.write_text(text)
    monkeypatch.setattr(ld, "board_file", lambda board: bad)
    with pytest.raises(ld.LitedramError, match="id_width 4"):
        ld.config(BOARD, "board")


def test_help():
    r = subprocess.run([TOOL, "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "ddr3.yml" in r.stdout and "sim" in r.stdout


@pytest.mark.parametrize("variant", ["board", "sim"])
def test_generated_core_agrees_with_ddr3_yml(variant):
    props_file = BUILD / "litedram" / BOARD / variant / "dram.properties"
    if not props_file.exists():
        pytest.fail(f"{props_file} not found: run `make litedram BOARD={BOARD}`")
    props = ld.read_properties(props_file)
    cfg = ld.config(BOARD, variant)
    assert int(props["size_bytes"]) == ld.module_bytes(cfg) == 1 << int(props["addr_bits"])
    assert (int(props["data_bits"]), int(props["id_bits"])) == (256, 4)
    assert int(props["sys_clk_hz"]) == int(cfg["sys_clk_freq"])
    for f in props["sources"].split() + props["memory_files"].split():
        assert (ROOT / f).is_file(), f
    core = (BUILD / "litedram" / BOARD / variant / "gateware/litedram_core.v").read_text()
    assert '$readmemh("litedram_core' not in core  # memory files named by absolute path
    if variant == "board":
        assert props["init_cpu"] == "vexriscv" and any(f.endswith("VexRiscv.v") for f in props["sources"].split())
        assert len(props["memory_files"].split()) == 2  # the BIOS ROM and its SRAM
        # constraints/genesys2.xdc names the PLL's clocks by this instance (u_dram/PLLE2_ADV/CLKOUT*)
        import re
        assert len(re.findall(r"^\) PLLE2_ADV \($", core, re.M)) == 1
        assert "get_pins u_dram/PLLE2_ADV/CLKOUT*" in XDC.read_text()


def test_second_run_is_skipped():
    if not (BUILD / "litedram" / BOARD / "sim" / "dram.properties").exists():
        pytest.fail(f"run `make litedram BOARD={BOARD}` first")
    r = subprocess.run([TOOL, "--board", BOARD, "--variant", "sim"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "sim: up to date" in r.stdout, r.stdout


def test_xdc_ddr3_pins_are_litex_boards():
    """constraints/genesys2.xdc's DDR3 pins and I/O standards are those of litex-boards' Genesys2 platform
    (the `ddram` resource LiteDRAM's Genesys2 target uses), bit for bit."""
    import re
    from litex.build.generic_platform import IOStandard, Pins, Subsignal
    from litex_boards.platforms import digilent_genesys2 as plat
    (ddram,) = [r for r in plat._io if r[0] == "ddram" and r[1] == 0]
    want = {}
    for sub in ddram[2:]:
        if not isinstance(sub, Subsignal):
            continue
        pins = next(c for c in sub.constraints if isinstance(c, Pins)).identifiers
        std = next(c for c in sub.constraints if isinstance(c, IOStandard)).name
        for i, pin in enumerate(pins):
            port = f"ddram_{sub.name}" + (f"[{i}]" if len(pins) > 1 else "")
            want[port] = (pin, std)
    xdc = XDC.read_text()
    got = {m[3]: (m[1], m[2]) for m in re.finditer(
        r"PACKAGE_PIN\s+(\S+)\s+IOSTANDARD\s+(\S+)\s*\}\s*\[get_ports\s*\{\s*(ddram_\S+)\s*\}\]", xdc)}
    assert len(want) == 71 and got == want  # 15 a, 3 ba, 4 dm, 32 dq, 4+4 dqs, clk pair, 7 single-pin signals
    assert "set_property SLEW FAST [get_ports {ddram_*}]" in xdc and "set_property VCCAUX_IO HIGH [get_ports {ddram_*}]" in xdc
    assert "INTERNAL_VREF 0.750 [get_iobanks 34]" in xdc
