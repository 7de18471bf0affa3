"""NanoBPF host-side Python package.

The SoC definitions (address map, registers) are generated from hw/defs/soc.toml into the module
`nanobpf_soc` (build/generated/python, on the venv's path); `nanobpf.soc` re-exports it.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
"""Repository root (the package is installed in editable mode from sw/python)."""
BUILD = ROOT / "build"
