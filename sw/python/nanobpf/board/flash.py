"""Load a NanoBPF bitstream into a board with openFPGALoader: over JTAG into the FPGA, or into its flash.

Default (volatile): the .bit goes over USB-JTAG into the FPGA's configuration memory; it runs at once
and is lost at power-off. --spi writes the board's configuration flash instead (openFPGALoader loads
its spiOverJtag bridge into the FPGA first, then programs the flash; it takes minutes): the board
boots from it at every power-up while its programming-mode jumper is on QSPI. For the flash the .bin
next to the .bit is written (Vivado's write_cfgmem image for this flash), or the .bit when there is no
up-to-date .bin: openFPGALoader's -f accepts .bit (it strips the header), .bin (raw) and .mcs for
Xilinx parts; without -f a .bit or .bin goes to the FPGA, not the flash.

Exit status: 0 done (or --dry-run), 1 openFPGALoader failed (its output and a hint are shown),
2 something is missing (openFPGALoader, the bitstream, an unknown board).
openFPGALoader's name for the board and its flash come from boards/<board>/board.toml (nanobpf.board.facts).
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from nanobpf.board import facts

PROG = "nanobpf-flash"


def fail(msg, code=2):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(code)


def hint(board):
    b = board.flash.openfpgaloader_board
    return f"""{PROG}: openFPGALoader failed. Check:
  - a USB cable is in the board's USB-JTAG port (the UART port alone is not enough) and the board's
    power switch is on;
  - permissions: Debian's openfpgaloader package installs udev rules (/lib/udev/rules.d/99-openfpgaloader.rules,
    group plugdev): `sudo usermod -aG plugdev $USER`, log in again, replug the cable (or try with sudo);
  - another program (Vivado's hw_server, another openFPGALoader) does not hold the cable;
  - `openFPGALoader --detect -b {b}` should show the {board.fpga.device}."""


def pick_flash_file(bit):
    """The file to write into the flash: the write_cfgmem .bin next to the .bit if it is not older."""
    if bit.suffix != ".bit":
        return bit, None
    binf = bit.with_suffix(".bin")
    if binf.is_file() and binf.stat().st_mtime >= bit.stat().st_mtime:
        return binf, None
    if binf.is_file():
        return bit, f"{binf.name} is older than {bit.name}: writing {bit.name} (openFPGALoader strips its header)"
    return bit, f"no {binf.name} next to {bit.name}: writing {bit.name} (openFPGALoader strips its header)"


def run(cmd):
    """Run openFPGALoader with its output passed through as it comes (progress bars); returns the exit code."""
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as e:
        fail(f"cannot run {cmd[0]}: {e}")
    out = sys.stdout.buffer
    while True:
        chunk = os.read(p.stdout.fileno(), 4096)
        if not chunk:
            break
        out.write(chunk)
        out.flush()
    return p.wait()


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0],
                                 epilog="\n".join(__doc__.splitlines()[2:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--board", required=True, help=f"board ({', '.join(facts.known())}: boards/BOARD/board.toml)")
    ap.add_argument("--bit", required=True, metavar="FILE", help="bitstream (.bit from make bitstream)")
    ap.add_argument("--spi", action="store_true", help="write the configuration flash (persistent) instead of the FPGA")
    ap.add_argument("--verify", action="store_true", help="with --spi: read the flash back and compare (slower)")
    ap.add_argument("--openfpgaloader", metavar="PATH", help="openFPGALoader executable (default: on PATH)")
    ap.add_argument("--dry-run", action="store_true", help="print the openFPGALoader command, do not run it")
    a = ap.parse_args(argv)

    try:
        board = facts.load(a.board)
    except facts.BoardFactsError as e:
        fail(str(e))
    if a.verify and not a.spi:
        fail("--verify applies to --spi only")
    bit = Path(a.bit).resolve()
    if not bit.is_file():
        fail(f"bitstream {bit} not found: run `make bitstream BOARD={a.board}` first")
    if a.openfpgaloader:
        ofl = shutil.which(a.openfpgaloader) or a.openfpgaloader
        if not (Path(ofl).is_file() and os.access(ofl, os.X_OK)):
            fail(f"--openfpgaloader {a.openfpgaloader}: not an executable")
    else:
        ofl = shutil.which("openFPGALoader")
    if ofl is None and not a.dry_run:
        fail("openFPGALoader not found: install it (`sudo apt-get install openfpgaloader` on Debian/Ubuntu) "
             "or pass --openfpgaloader PATH (make flash OPENFPGALOADER=...)")
    ofl = ofl or "openFPGALoader"

    if a.spi:
        target, note = pick_flash_file(bit)
        cmd = [ofl, "-b", board.flash.openfpgaloader_board, "-f"] + (["--verify"] if a.verify else []) + [str(target)]
        what = f"writing {target.name} into {board.flash_text} of the {a.board}"
    else:
        target, note = bit, None
        cmd = [ofl, "-b", board.flash.openfpgaloader_board, "-m", str(target)]
        what = f"loading {target.name} into the {a.board}'s FPGA over JTAG (volatile: lost at power-off)"
    if note:
        print(f"{PROG}: {note}")
    if a.dry_run:
        print(shlex.join(cmd))
        return 0
    print(f"{PROG}: {what}\n{PROG}: {shlex.join(cmd)}", flush=True)
    rc = run(cmd)
    if rc != 0:
        print(f"{PROG}: openFPGALoader exited with status {rc}", file=sys.stderr)
        print(hint(board), file=sys.stderr)
        return 1
    if a.spi:
        print(f"{PROG}: done: the flash holds {target.name}; the {a.board} boots from it at power-up with its "
              f"programming-mode jumper on {board.flash.mode_jumper} "
              "(openFPGALoader has also just reset the FPGA, which reloads from the flash when the jumper is there); "
              "with the jumper on JTAG the FPGA stays unconfigured until a JTAG load.")
    else:
        print(f"{PROG}: done: {target.name} is running on the {a.board} (until power-off or the PROG button).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
