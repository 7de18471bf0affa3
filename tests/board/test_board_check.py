"""`make board-check` as tests: the Genesys2 top level, with the board's Chisel part, the SoC and CVA6,
elaborates in Verilator lint with no warning in the board's own files, and the XDC matches the top.

Needs the board's Chisel part built by `make test-prereqs` (`make board-hw`, BOARD_CORES=2).
"""
import shutil
import subprocess

import pytest

from nanobpf import BUILD, command
from nanobpf.board import facts

BOARD = "genesys2"
FACTS = facts.load(BOARD)  # boards/genesys2/board.toml: the top, its folder, the XDC
CHISEL = BUILD / "hw" / f"board-{BOARD}-2"  # BOARD_CORES=2: make test-prereqs' deliberately small build
LINT = command("nanobpf-board-lint")
XDC_CHECK = command("nanobpf-xdc-check")


def lint(*args):
    if not (CHISEL / "filelist.f").exists():
        pytest.fail(f"{CHISEL}/filelist.f not found: run `make board-hw BOARD_CORES=2`")
    return subprocess.run([LINT, "--board", BOARD, "--chisel", str(CHISEL), *args],
                          capture_output=True, text=True, timeout=900)


def test_board_top_lints_clean():
    r = lint()
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{FACTS.design.top}: 0 error(s)/warning(s) in the board's files" in r.stdout, r.stdout


def test_lint_reports_a_warning_in_the_board_files(tmp_path):
    """The same lint on a copy of the board folder whose top truncates a constant into an unused signal
    must fail and report both warnings."""
    copy = tmp_path / BOARD
    shutil.copytree(FACTS.dir, copy)
    top = copy / FACTS.design.rtl.relative_to(FACTS.dir) / f"{FACTS.design.top}.sv"
    text = top.read_text()
    assert text.rstrip().endswith("endmodule")
    top.write_text(text.rstrip()[: -len("endmodule")] + "  logic [3:0] lint_probe;\n  assign lint_probe = 8'hff;\nendmodule\n")
    r = lint("--board-dir", str(copy))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "%Warning-WIDTHTRUNC" in r.stdout and "Signal is not used: 'lint_probe'" in r.stdout, r.stdout
    assert "2 error(s)/warning(s) in the board's files" in r.stdout, r.stdout


def test_xdc_matches_the_top():
    r = subprocess.run([XDC_CHECK, "--board", BOARD], capture_output=True, text=True)  # as make board-check
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all constrained, 0 problems" in r.stdout, r.stdout
