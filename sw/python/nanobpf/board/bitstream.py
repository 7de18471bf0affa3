"""Build the FPGA bitstream of a NanoBPF board with Vivado (batch mode, non-project flow).

Writes OUTDIR/files.f (the SoC's synthesis file list from nanobpf-rtl-files, then the board's LiteDRAM
core as listed in its dram.properties (nanobpf-litedram: the generated Verilog and the init
CPU's; their memory files are named by absolute path inside), then the board's boards/<board>/rtl/*.sv)
and OUTDIR/run-vivado.sh, then runs Vivado on the board's Vivado script (boards/<board>/vivado/build.tcl),
showing each stage with its elapsed time and a heartbeat while a stage runs. Outputs in OUTDIR:
<top without _top>.bit (JTAG), .bin (configuration flash), checkpoints, reports, vivado.log.
The board's part, top module, files and flash come from boards/<board>/board.toml (nanobpf.board.facts).

Exit status: 0 built (or --dry-run), 1 Vivado failed (the end of its log is shown), 2 something is
missing (unknown board, Chisel output, constraints, Vivado itself).
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from nanobpf import litedram
from nanobpf.board import facts
from nanobpf.progress import run_with_heartbeat

PROG = "nanobpf-bitstream"

def fail(msg, code=2):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(code)


def find_vivado(arg):
    """The vivado executable from --vivado/$VIVADO (a file, or an install directory) or PATH; None if absent."""
    if arg:
        if "/" not in arg:  # a command name
            return shutil.which(arg)
        p = Path(arg).expanduser()
        if p.is_dir():
            p = p / "bin" / "vivado"
        return str(p) if p.is_file() and os.access(p, os.X_OK) else None
    return shutil.which("vivado")


def dram_files(name, props_path):
    """LiteDRAM's sources and memory files from its dram.properties; exits 2 when something is missing."""
    if not props_path.is_file():
        fail(f"{props_path} not found: generate the DDR3 controller first: run `make litedram BOARD={name}`")
    props = {}
    for line in props_path.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            props[k.strip()] = v.strip()
    if props.get("variant") != "board":
        fail(f"{props_path} describes LiteDRAM's {props.get('variant')!r} core, not the board's")
    srcs, mems = props.get("sources", "").split(), props.get("memory_files", "").split()
    if not srcs:
        fail(f"{props_path} lists no sources: run `make litedram BOARD={name}`")
    missing = [f for f in srcs + mems if not Path(f).is_file()]
    if missing:
        fail(f"files of LiteDRAM's core ({props_path}) are missing: run `make litedram BOARD={name}`:\n  "
             + "\n  ".join(missing))
    return srcs, mems


def file_list(board, chisel):
    """The synthesis file list: nanobpf-rtl-files --synthesis (CVA6, generated package, hw/vsrc, Chisel
    output, with +incdir+/+define+), then the board RTL sorted by name."""
    p = subprocess.run([sys.executable, "-m", "nanobpf.rtl_files", "--synthesis", "--chisel", str(chisel)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"nanobpf-rtl-files failed:\n{p.stderr.strip()}")
    soc = p.stdout.split()
    rtl = sorted(str(f) for f in board.design.rtl.glob("*.sv"))
    missing = [f for f in soc if not f.startswith("+") and not Path(f).is_file()]
    if missing:
        hint = " (run `make defs`)" if any(f.endswith("nanobpf_soc_pkg.sv") for f in missing) else ""
        fail("files of the SoC list are missing" + hint + ":\n  " + "\n  ".join(missing))
    return soc, rtl


def vivado_cmd(vivado, tcl, files_f, xdc, out, board, jobs):
    return [vivado, "-mode", "batch", "-nojournal", "-log", str(out / "vivado.log"), "-source", str(tcl),
            "-tclargs", str(files_f), str(xdc), str(out), board.design.top, board.fpga.part, str(jobs),
            board.flash.interface, str(board.flash.size_mib)]


def default_dram(name):
    """LiteDRAM's dram.properties of the board's core, where `make litedram` (nanobpf-litedram) writes it."""
    return litedram.out_dir(name, "board") / "dram.properties"


def no_vivado_message(board, out, cmd_file):
    name = board.name
    return f"""{PROG}: Vivado was not found (not on PATH, no --vivado / VIVADO=).
  The bitstream needs AMD Vivado (ML edition) with Kintex-7 support and a license that covers the
  {board.fpga.device.upper()}: ML Enterprise, or the device-locked license that came with the Genesys2 (as far as we
  know the free ML Standard edition stops at the XC7K160T; check AMD's device support table).
  Then either `source <install>/Vivado/<version>/settings64.sh` so `vivado` is on PATH, or pass
  `make bitstream BOARD={name} VIVADO=/path/to/bin/vivado` (or the install directory).
  Ready in {out}: files.f (the file list) and {cmd_file.name} (the Vivado command line, using
  {facts.rel(board.design.vivado_tcl)}); once Vivado is on PATH, `sh {cmd_file}` runs the build.
  Without Vivado you can check: `make board-check` (board RTL and constraints) and
  `make synth-estimate-board BOARD={name}` (yosys utilisation estimate)."""


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0],
                                 epilog="\n".join(__doc__.splitlines()[2:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--board", required=True, help=f"board ({', '.join(facts.known())}: boards/BOARD/board.toml)")
    ap.add_argument("--chisel", required=True, metavar="DIR", help="elaborated board (NanobpfBoard): DIR/filelist.f")
    ap.add_argument("--out", required=True, metavar="OUTDIR", help="output directory")
    ap.add_argument("--vivado", metavar="PATH", default=os.environ.get("VIVADO") or None,
                    help="vivado executable or install directory (default: $VIVADO, else vivado on PATH)")
    ap.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 8), metavar="N",
                    help="Vivado threads (general.maxThreads, at most 8; default: %(default)s)")
    ap.add_argument("--xdc", metavar="FILE", help="constraints instead of the board's (default: board.toml's [design] xdc)")
    ap.add_argument("--dram", metavar="FILE", help="LiteDRAM's dram.properties (default: the board's, "
                                                 "written by `make litedram`)")
    ap.add_argument("--dry-run", action="store_true", help="write files.f and run-vivado.sh, print the command, do not run")
    ap.add_argument("--heartbeat", type=float, default=60, help=argparse.SUPPRESS)  # seconds; tests shorten it
    a = ap.parse_args(argv)

    try:
        board = facts.load(a.board)
    except facts.BoardFactsError as e:
        fail(str(e))
    if a.jobs < 1:
        fail("--jobs must be at least 1")
    chisel = Path(a.chisel).resolve()
    if not (chisel / "filelist.f").is_file():
        fail(f"no Chisel output in {chisel} (filelist.f missing): elaborate the board first: "
             f"run `make board-hw BOARD={a.board}`")
    top_sv = [f for f in (chisel / "filelist.f").read_text().split() if f.endswith(".sv")]
    if not any(re.search(rf"^\s*module\s+{board.design.chisel_top}\b", (chisel / f).read_text(errors="replace"), re.M)
               for f in top_sv if (chisel / f).is_file()):
        fail(f"{chisel} does not define module {board.design.chisel_top} (is it the SoC from `make hw`?): "
             f"run `make board-hw BOARD={a.board}`")
    xdc = Path(a.xdc).resolve() if a.xdc else board.design.xdc
    if not xdc.is_file():
        fail(f"constraints {xdc} not found")
    tcl = board.design.vivado_tcl
    if not tcl.is_file():
        fail(f"{tcl} not found")

    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    dram_props = Path(a.dram).resolve() if a.dram else default_dram(a.board)
    dram, mems = dram_files(a.board, dram_props)
    soc, rtl = file_list(board, chisel)
    files_f = out / "files.f"
    files_f.write_text(f"// {a.board}: SoC synthesis list (nanobpf-rtl-files --synthesis --chisel {chisel})\n"
                       + "\n".join(soc) + f"\n// LiteDRAM DDR3 core ({dram_props}); its $readmemh files: "
                       + (" ".join(mems) or "none") + "\n" + "\n".join(dram)
                       + f"\n// board RTL ({facts.rel(board.design.rtl)})\n" + "\n".join(rtl) + "\n")
    soc = soc + dram
    vivado = find_vivado(a.vivado)
    cmd = vivado_cmd(vivado or "vivado", tcl, files_f, xdc, out, board, a.jobs)
    cmd_file = out / "run-vivado.sh"
    cmd_file.write_text("#!/bin/sh\n# written by nanobpf-bitstream; run where Vivado is on PATH\n"
                        f"cd {shlex.quote(str(out))} && exec {shlex.join(['vivado'] + cmd[1:])}\n")
    cmd_file.chmod(0o755)
    name = re.sub(r"_top$", "", board.design.top)
    bit, binf = out / f"{name}.bit", out / f"{name}.bin"

    if a.dry_run:
        print(f"{PROG}: {len(soc) + len(rtl)} entries in {files_f}; command (in {out}):")
        print(shlex.join(cmd))
        return 0
    if vivado is None:
        if a.vivado:
            print(f"{PROG}: --vivado/VIVADO={a.vivado} is not an executable vivado (nor a directory with bin/vivado)",
                  file=sys.stderr)
        print(no_vivado_message(board, out, cmd_file), file=sys.stderr)
        return 2

    for f in (bit, binf):  # never leave an older bitstream that looks like the result of this run
        f.unlink(missing_ok=True)
    print(f"[bitstream] {a.board}: {board.design.top} on {board.fpga.part}, {len(soc) + len(rtl)} file-list entries, "
          f"{a.jobs} thread(s); Vivado log {out / 'vivado.log'}", flush=True)
    t0 = time.time()
    rc, tail = run_with_heartbeat(cmd, cwd=out, tag="[bitstream]", stage=r"^### (.*)", log=out / "vivado.log",
                                  heartbeat_s=a.heartbeat)
    log = out / "vivado.log"
    if rc != 0 or not bit.is_file() or not binf.is_file():
        lines = log.read_text(errors="replace").splitlines()[-30:] if log.is_file() else tail
        print("\n".join(lines), file=sys.stderr)
        why = f"exit {rc}" if rc != 0 else f"{bit.name} or {binf.name} not written"
        print(f"{PROG}: Vivado failed ({why}) after {time.time() - t0:.0f} s; full log: {log}; reports in {out}",
              file=sys.stderr)
        return 1
    print(f"[bitstream] done in {time.time() - t0:.0f} s: {bit} (JTAG: make flash BOARD={a.board}), "
          f"{binf} (configuration flash: make flash BOARD={a.board} FLASH=spi); reports: {out}/*.rpt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
