"""NanoBPF host-side Python package.

The SoC definitions (address map, registers) are generated from hw/defs/soc.toml into the module
`nanobpf_soc` (build/generated/python, on the venv's path); `nanobpf.soc` re-exports it. Every Python
tool is a `main()` of a module here, installed as a command (`nanobpf-*`, listed in pyproject.toml's
[project.scripts]) into the venv's bin by `make setup`.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
"""Repository root (the package is installed in editable mode from sw/python)."""
BUILD = ROOT / "build"
SOC_DEFAULT_CORES = 4
"""The SoC's core count when none is given, defined here only: the Makefile's CORES (through
build/generated/boards.mk, written by nanobpf.board.facts) and nanobpf-wire --cores. A board's own
default is its board.toml's [board] default_cores."""


def command(name: str) -> str:
    """The installed command `name` (nanobpf-load, ...): the console script next to the running Python,
    so that tests and tools run the entry point a user types."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise FileNotFoundError(f"{path}: not installed; run `make setup` (installs the nanobpf commands "
                                f"into the venv)")
    return str(path)
