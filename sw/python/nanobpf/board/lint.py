"""Lint a board's top level in Verilator: the whole board design (its SystemVerilog top, the Chisel
board part with the SoC and CVA6) must elaborate, and the board's own files must be free of warnings.

Xilinx primitives come from behavioural stand-ins (boards/<board>/sim/*.sv). LiteDRAM's generated core
(its Verilog and the init CPU's, listed in build/litedram/<board>/board/dram.properties by
nanobpf-litedram) is linted with the top. Warnings inside CVA6, LiteDRAM and the generated SoC
are not the board's and are only counted; errors anywhere fail.
The top module and the board's folders (rtl, sim, ddr3.yml) come from boards/<board>/board.toml
(nanobpf.board.facts).
Exit 0: clean; 1: errors or warnings in the board's files; 2: bad usage or missing inputs.
"""
import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

from nanobpf import ROOT, litedram
from nanobpf.board import facts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default=facts.DEFAULT_BOARD,
                    help="the board (boards/BOARD/board.toml; default: %(default)s)")
    ap.add_argument("--chisel", required=True, metavar="DIR", help="the board's Chisel output (make board-hw)")
    ap.add_argument("--board-dir", metavar="DIR", help="a copy of the board's folder to lint instead (its rtl and sim "
                    "folders as board.toml names them; default: boards/BOARD in this repository)")
    ap.add_argument("--dram", metavar="FILE", help="LiteDRAM's dram.properties (default: build/litedram/BOARD/board/dram.properties)")
    ap.add_argument("--verilator", default=shutil.which("verilator") or str(Path(sys.executable).parent / "verilator"))
    a = ap.parse_args(argv)
    try:
        board = facts.load(a.board)
    except facts.BoardFactsError as e:
        print(f"nanobpf-board-lint: {e}", file=sys.stderr)
        return 2
    bdir = Path(a.board_dir).resolve() if a.board_dir else board.dir
    # the board's files; with --board-dir, those inside the board's folder are taken from the copy
    rtl, sim, ddr3 = (bdir / p.relative_to(board.dir) if p.is_relative_to(board.dir) else p
                      for p in (board.design.rtl, board.design.sim, board.design.ddr3))
    top = board.design.top
    if not (rtl / f"{top}.sv").exists():
        print(f"nanobpf-board-lint: no board top {rtl}/{top}.sv", file=sys.stderr)
        return 2
    chisel = Path(a.chisel)
    if not (chisel / "filelist.f").exists():
        print(f"nanobpf-board-lint: {chisel}/filelist.f not found: run `make board-hw BOARD={a.board}`", file=sys.stderr)
        return 2
    files = subprocess.run([sys.executable, "-m", "nanobpf.rtl_files", "--chisel", str(chisel)],
                           check=True, capture_output=True, text=True).stdout.split()
    dram = Path(a.dram) if a.dram else litedram.out_dir(a.board, "board") / "dram.properties"
    if ddr3.exists():  # the board's main memory is its DRAM, through LiteDRAM's core
        if not dram.exists():
            print(f"nanobpf-board-lint: {dram} not found: run `make litedram BOARD={a.board}`", file=sys.stderr)
            return 2
        props = dict(l.split("=", 1) for l in dram.read_text().splitlines() if "=" in l and not l.startswith("#"))
        files += props.get("sources", "").split()
    files += [str(p) for p in sorted(rtl.glob("*.sv")) + sorted(sim.glob("*.sv"))]
    # unconnected primitive outputs are deliberate (PINCONNECTEMPTY)
    cmd = [a.verilator, "--lint-only", "--no-timing", "-Wall", "-Wno-fatal", "-Wno-PINCONNECTEMPTY", "--top-module", top] + files
    print(f"[lint] verilator --lint-only {top}: {len(files)} files", flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    ours = (str(bdir),)  # the hand-written board files; the Chisel output's warnings are Chisel's idioms
    board_warnings, other = [], 0
    for line in p.stderr.splitlines():
        m = re.match(r"%(Warning|Error)(-\w+)?: (\S+?):\d+", line)
        if not m:
            continue
        if m.group(1) == "Error":
            board_warnings.append(line)
        elif any(o in m.group(3) for o in ours) and "xilinx7_models" not in m.group(3):
            board_warnings.append(line)
        else:
            other += 1
    if p.returncode != 0 and not board_warnings:
        board_warnings.append(f"verilator exited {p.returncode}:\n" + p.stderr[-3000:])
    for w in board_warnings:
        print(w)
    print(f"nanobpf-board-lint: {top}: {len(board_warnings)} error(s)/warning(s) in the board's files, "
          f"{other} warning(s) elsewhere (CVA6, LiteDRAM, SoC) not counted")
    return 1 if board_warnings else 0


if __name__ == "__main__":
    sys.exit(main())
