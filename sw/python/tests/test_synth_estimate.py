"""nanobpf-synth-estimate: cell counting and the utilisation table (yosys itself runs in make synth-estimate)."""
import importlib.util
from importlib.machinery import SourceFileLoader

from nanobpf import ROOT

_loader = SourceFileLoader("synth_estimate", str(ROOT / "sw/tools/nanobpf-synth-estimate"))
tool = importlib.util.module_from_spec(importlib.util.spec_from_loader("synth_estimate", _loader))
_loader.exec_module(tool)


def test_cells_are_counted_by_resource():
    cells = {"LUT1": 3, "LUT6": 10, "RAM64M": 2, "SRLC32E": 1, "FDRE": 7, "FDCE": 2, "RAMB36E1": 3,
             "RAMB18E1": 3, "DSP48E1": 4, "CARRY4": 9, "MUXF7": 5}
    used, lutram = tool.count(cells)
    assert lutram == 2 * 4 + 1
    assert used == {"LUT": 13 + 9, "FF": 9, "BRAM36": 4.5, "DSP": 4}


def test_table_shows_capacity_and_percentages():
    used, lutram = tool.count({"LUT6": 20380, "FDRE": 4076, "RAMB36E1": 89, "DSP48E1": 0})
    text = tool.table(used, lutram, "t")
    assert "| LUT | 20380 | 203800 | 10.0% |" in text
    assert "| FF | 4076 | 407600 | 1.0% |" in text
    assert "| BRAM36 | 89 | 445 | 20.0% |" in text
    assert "| DSP | 0 | 840 | 0.0% |" in text
