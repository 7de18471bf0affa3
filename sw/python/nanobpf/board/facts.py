"""A board's facts: boards/<name>/board.toml, read and checked; the one place for them.

Each board folder holds a board.toml (boards/genesys2/board.toml is the example, every key commented
with where it comes from): the FPGA part and its capacity, the clocks, the default core count, the
top module and the board's files, the configuration flash and openFPGALoader's name for the board,
the console's baud rate, and what the board's DPU image sets up at boot (its one-arm VLANs, the QUIC
program's port and CID length). Every key is required and no other key is allowed; a missing, unknown or
mistyped one is a BoardFactsError naming the file, the table and the key.

Used by every board tool (nanobpf-bitstream, nanobpf-flash, nanobpf-board-lint, nanobpf-xdc-check
--board, nanobpf-synth-estimate --board, nanobpf-litedram) and, through `nanobpf-board --make`
(build/generated/boards.mk), by the Makefile, which passes the clocks, the baud rate and the core
count on to ElaborateBoard. Standard library only (the Makefile runs it before the venv exists).

    board = load("genesys2")
    board.fpga.part, board.clocks.core_hz, board.design.xdc (a Path), board.default_cores

Command line (nanobpf-board): without arguments the known boards; `nanobpf-board BOARD` every fact of
one board; `--get TABLE.KEY` one value; `--make` the Makefile fragment. Exit 2 on a bad board.toml.
"""
import argparse
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

from nanobpf import ROOT, SOC_DEFAULT_CORES

PROG = "nanobpf-board"
BOARDS_DIR = ROOT / "boards"
DEFAULT_BOARD = "genesys2"
"""The board when none is given: make's BOARD, the --board default of nanobpf-board-lint and nanobpf-litedram."""

PATH = "path"  # a path relative to the board's folder; loaded as an absolute Path
# table -> key -> type. Every key is required; no other is allowed.
SCHEMA = {
    "board": {"name": str, "description": str, "default_cores": int},
    "fpga": {"part": str, "device": str, "luts": int, "flip_flops": int, "bram36": int, "dsps": int},
    "clocks": {"sys_hz": int, "core_hz": int, "net_hz": int, "ref_hz": int, "eth_rx_hz": int},
    "design": {"top": str, "chisel_top": str, "rtl": PATH, "sim": PATH, "xdc": PATH, "vivado_tcl": PATH,
               "ddr3": PATH},
    "flash": {"openfpgaloader_board": str, "interface": str, "size_mib": int, "chip": str, "mode_jumper": str},
    "uart": {"baud": int},
    "dpu": {"host_vid": int, "net_vid": int, "quic_port": int, "short_cid_len": int},
}
# (table, key) -> (lowest, highest) for the integers that have a range besides being positive.
RANGES = {("dpu", "host_vid"): (1, 4094), ("dpu", "net_vid"): (1, 4094), ("dpu", "quic_port"): (1, 65535),
          ("dpu", "short_cid_len"): (1, 20)}


class BoardFactsError(Exception):
    """A missing board or a bad board.toml; the message names the file and the key."""


def rel(path):
    """`path` relative to the repository when it is inside it (for messages and the Makefile)."""
    path = Path(path)
    try:
        return path.resolve().relative_to(ROOT)
    except ValueError:
        return path


class Board(SimpleNamespace):
    """One board's facts: a namespace per table of board.toml (board.fpga.part, board.clocks.core_hz,
    board.design.xdc, ...), plus name, description, default_cores, path (the board.toml) and dir."""

    @property
    def capacity(self):
        """The FPGA's resources, as nanobpf-synth-estimate counts them."""
        f = self.fpga
        return {"LUT": f.luts, "FF": f.flip_flops, "BRAM36": f.bram36, "DSP": f.dsps}

    @property
    def flash_text(self):
        """The configuration flash in words: 'the 32 MiB quad-SPI configuration flash (S25FL256S)'."""
        kind = {"SPIx1": "SPI", "SPIx2": "dual-SPI", "SPIx4": "quad-SPI", "SPIx8": "octal-SPI"}.get(
            self.flash.interface, self.flash.interface)
        return f"the {self.flash.size_mib} MiB {kind} configuration flash ({self.flash.chip})"

    def items(self):
        """(TABLE.KEY, value) for every fact, in board.toml's order; paths relative to the repository."""
        for table, keys in SCHEMA.items():
            for key, kind in keys.items():
                v = getattr(getattr(self, table), key)
                yield f"{table}.{key}", rel(v) if kind == PATH else v


def known(boards_dir=None):
    """Names of the boards: the folders of boards_dir (default boards/) that hold a board.toml."""
    return sorted(p.parent.name for p in Path(boards_dir or BOARDS_DIR).glob("*/board.toml"))


def load(name, boards_dir=None):
    """The facts of board `name` (boards/<name>/board.toml), checked; BoardFactsError otherwise."""
    boards_dir = Path(boards_dir or BOARDS_DIR)
    path = boards_dir / name / "board.toml"
    if not name or "/" in name or not path.is_file():
        raise BoardFactsError(f"unknown board '{name}': {rel(path)} not found "
                              f"(known boards: {', '.join(known(boards_dir)) or 'none'})")
    return load_file(path)


def load_file(path):
    """The facts in one board.toml, checked against SCHEMA; the board's name is its folder's."""
    path = Path(path)
    shown = rel(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise BoardFactsError(f"{shown}: cannot read: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise BoardFactsError(f"{shown}: not valid TOML: {e}") from None
    example = "boards/genesys2/board.toml"
    for table in data.keys() - SCHEMA.keys():
        raise BoardFactsError(f"{shown}: unknown table [{table}] (known: {', '.join(SCHEMA)})")
    tables = {}
    for table, keys in SCHEMA.items():
        got = data.get(table)
        if not isinstance(got, dict):
            raise BoardFactsError(f"{shown}: table [{table}] missing (it holds {', '.join(keys)}; see {example})")
        for key in got.keys() - keys.keys():
            raise BoardFactsError(f"{shown}: [{table}] {key}: unknown key (known: {', '.join(keys)})")
        values = {}
        for key, kind in keys.items():
            if key not in got:
                raise BoardFactsError(f"{shown}: [{table}] {key} missing (see {example})")
            v = got[key]
            if kind is int:
                if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                    raise BoardFactsError(f"{shown}: [{table}] {key} must be a positive integer, not {v!r}")
                lo, hi = RANGES.get((table, key), (1, v))
                if not lo <= v <= hi:
                    raise BoardFactsError(f"{shown}: [{table}] {key} must be {lo}..{hi}, not {v}")
            elif not isinstance(v, str) or not v:
                raise BoardFactsError(f"{shown}: [{table}] {key} must be a non-empty string, not {v!r}")
            if kind == PATH:
                v = (path.parent / v).resolve()
            values[key] = v
        tables[table] = SimpleNamespace(**values)
    b = tables["board"]
    if b.name != path.parent.name:
        raise BoardFactsError(f"{shown}: [board] name is '{b.name}' but the folder is '{path.parent.name}'")
    if not tables["fpga"].part.startswith(tables["fpga"].device):
        raise BoardFactsError(f"{shown}: [fpga] part '{tables['fpga'].part}' is not of device "
                              f"'{tables['fpga'].device}'")
    if tables["dpu"].host_vid == tables["dpu"].net_vid:
        raise BoardFactsError(f"{shown}: [dpu] host_vid and net_vid are both {tables['dpu'].host_vid}: the host link "
                              "and the network link need two VLANs")
    return Board(name=b.name, description=b.description, default_cores=b.default_cores, path=path.resolve(),
                 dir=path.parent.resolve(), **tables)


def _make_value(v):
    return str(v).replace("$", "$$").replace("#", "\\#")


def make_fragment(boards_dir=None):
    """The Makefile's view of every board (build/generated/boards.mk): BOARDFACT_<board>_<TABLE>_<KEY>
    for each fact (paths relative to the repository), BOARDS, BOARD_DEFAULT and SOC_DEFAULT_CORES."""
    names = known(boards_dir)
    lines = ["# Written by `nanobpf-board --make` (sw/python/nanobpf/board/facts.py) from boards/*/board.toml:",
             "# do not edit. The Makefile includes it and remakes it when a board.toml changes.",
             f"BOARDS := {' '.join(names)}",
             f"BOARD_DEFAULT := {DEFAULT_BOARD}",
             f"SOC_DEFAULT_CORES := {SOC_DEFAULT_CORES}"]
    for name in names:
        board = load(name, boards_dir)
        lines.append(f"# {rel(board.path)}")
        lines += [f"BOARDFACT_{name}_{k.replace('.', '_').upper()} := {_make_value(v)}" for k, v in board.items()]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description="A board's facts (boards/BOARD/board.toml), checked.",
                                 epilog="Without BOARD: the known boards. Exit 0, or 2 for an unknown board or a "
                                        "bad board.toml (the message names the file and the key).")
    ap.add_argument("board", nargs="?", help="a board (a folder of boards/ with a board.toml)")
    ap.add_argument("--get", metavar="TABLE.KEY", help="print one fact, e.g. fpga.part or clocks.core_hz")
    ap.add_argument("--make", action="store_true", help="print the Makefile fragment of every board "
                                                        "(build/generated/boards.mk)")
    ap.add_argument("--boards-dir", metavar="DIR", help="the folder of the boards (default: boards/ of this repository)")
    a = ap.parse_args(argv)
    try:
        if a.make:
            if a.board or a.get:
                ap.error("--make takes no BOARD and no --get")
            sys.stdout.write(make_fragment(a.boards_dir))
            return 0
        if not a.board:
            if a.get:
                ap.error("--get needs a BOARD")
            for name in known(a.boards_dir):
                b = load(name, a.boards_dir)
                mark = " (default)" if name == DEFAULT_BOARD else ""
                print(f"{name}{mark}: {b.description}, {b.fpga.part}, {b.default_cores} core(s) by default")
            return 0
        board = load(a.board, a.boards_dir)
        facts = dict(board.items())
        if a.get:
            if a.get not in facts:
                print(f"{PROG}: no fact '{a.get}' (known: {', '.join(facts)})", file=sys.stderr)
                return 2
            print(facts[a.get])
            return 0
        print(f"# {rel(board.path)}")
        for k, v in facts.items():
            print(f"{k} = {v}")
        return 0
    except BoardFactsError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
