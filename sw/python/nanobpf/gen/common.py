"""What the definition generators share (nanobpf-gendefs, nanobpf-genabi, nanobpf-genctrl,
nanobpf-gen-aes-tables): the error a wrong definition raises, a field type's parse, writing a view only
when its text changed (an unchanged view keeps its timestamp, so make and mill rebuild nothing), and the
command line (one option per view, --all DIR, --check-md FILE)."""
import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional


class DefsError(Exception):
    """A definition file is wrong; the message names the file and the entry."""


def write_if_changed(path, text):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def parse_type(t, where, names=None):
    """(base, count) of a field type: u8/u16/u32/u64, or u8[N]/char[N] where N is a number or, when
    `names` ({constant name: value}) is given, the name of a constant."""
    m = re.fullmatch(r"(u8|u16|u32|u64|char)(?:\[([0-9]+|[A-Z_][A-Z0-9_]*)\])?", t)
    if not m or (names is None and m.group(2) and not m.group(2).isdigit()):
        raise DefsError(f"{where}: unknown type '{t}' (u8/u16/u32/u64, u8[N], char[N])")
    base, n = m.group(1), m.group(2)
    if n is not None and not n.isdigit():
        if n not in names:
            raise DefsError(f"{where}: no constant named {n} (in hw/defs/ebpf.toml or earlier in ctrl.toml)")
        n = str(names[n])
    if base == "char" and n is None:
        raise DefsError(f"{where}: char needs a length, char[N]")
    if base in ("u16", "u32", "u64") and n is not None:
        raise DefsError(f"{where}: arrays are u8[N] or char[N] only")
    if n is not None and int(n) < 1:
        raise DefsError(f"{where}: array length must be at least 1")
    return base, int(n or 1)


@dataclass
class View:
    """One generated view of a definition file: its option (--c, --python, ...), what it is, the text
    it gets from the loaded definitions, and where --all DIR writes it (None: not part of --all)."""
    option: str
    help: str
    render: Callable
    all_path: Optional[Callable[[Path], Path]] = None


def main(prog, doc, defs_default, load, views, argv=None):
    """The generator's command line: each view's option writes that view, --all DIR every view with an
    all_path, --check-md FILE exits 1 if FILE differs from the `md` view (docs committed out of date).
    Exit status 0 done, 1 a wrong definition file or a stale document, 2 usage."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0],
                                 epilog=f"Example: {prog} --all build/generated")
    ap.add_argument("--defs", default=defs_default, help=f"definition file (default {defs_default})")
    for v in views:
        ap.add_argument(f"--{v.option}", metavar="FILE", help=v.help)
    ap.add_argument("--check-md", metavar="FILE", help="exit 1 if FILE differs from what --md would write")
    ap.add_argument("--all", metavar="DIR", help="write every view: " + ", ".join(
        str(v.all_path(Path("DIR"))) for v in views if v.all_path))
    a = ap.parse_args(argv)
    wanted = {v.option: getattr(a, v.option) for v in views if getattr(a, v.option)}
    if a.all:
        wanted.update({v.option: v.all_path(Path(a.all)) for v in views if v.all_path})
    if not wanted and not a.check_md:
        ap.error("nothing to do: give --all DIR, --check-md FILE or a view (" +
                 "/".join(f"--{v.option}" for v in views) + ")")
    by_option = {v.option: v for v in views}
    try:
        defs = load(a.defs)
        texts = {opt: by_option[opt].render(defs) for opt in wanted}
        md = by_option["md"].render(defs) if a.check_md else None
    except DefsError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    for opt, path in wanted.items():
        write_if_changed(path, texts[opt])
    if a.check_md:
        p = Path(a.check_md)
        if not p.exists() or p.read_text() != md:
            print(f"{prog}: {p} is out of date with {a.defs}: run `make defs` and commit it", file=sys.stderr)
            return 1
    return 0
