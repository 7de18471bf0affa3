"""nanobpf.board.logic_depth on small hand-made netlists (yosys write_json's shape): levels per clock
domain, what counts as a level, where paths start and end, the blocks named on the deepest path."""
from nanobpf.board import logic_depth


def cell(t, **pins):
    out = {"O", "O5", "O6", "CO", "Q", "DOA", "DOB", "DOC", "DOD", "SPO", "DPO"}
    return {"type": t, "connections": {p: list(b) for p, b in pins.items()},
            "port_directions": {p: ("output" if p in out else "input") for p in pins}}


def netlist(cells, nets):
    return {"modules": {"top": {"cells": cells, "netnames": {n: {"bits": [b]} for n, b in nets.items()}}}}


def test_levels_per_clock_domain_and_the_blocks_on_the_deepest_path():
    # clk_a (bit 1): ff0 -> a.lut1 -> a.lut2 -> b.carry -> ff1.D; ff0 -> lut3 -> ff1.CE (shallower)
    # clk_b (bit 2): ff2 -> lutram read (address) -> ff3.D; ff3 writes the RAM (endpoint of clk_b too)
    cells = {
        "ff0": cell("FDRE", C=[1], D=[10], CE=[11], R=[11], Q=[20]),
        "a.x.$abc$1.lut1": cell("LUT2", I0=[20], I1=[20], O=[21]),
        "$flatten\\a.\\x.$abc$2$lut2": cell("LUT1", I0=[21], O=[22]),
        "b.y.carry": cell("CARRY4", CI=[22], S=[22, 22, 22, 22], CO=[23, 24, 25, 26]),
        "a.x.lut3": cell("LUT1", I0=[20], O=[27]),
        "ff1": cell("FDRE", C=[1], D=[26], CE=[27], R=[11], Q=[28]),
        "ff2": cell("FDRE", C=[2], D=[28], CE=[11], R=[11], Q=[30]),
        "c.ram": cell("RAM32M", WCLK=[2], ADDRA=[30], ADDRD=[30], DIA=[28], WE=[11], DOA=[31]),
        "ff3": cell("FDRE", C=[2], D=[31], CE=[11], R=[11], Q=[32]),
    }
    r = logic_depth.analyse(netlist(cells, {"clk_a": 1, "u.clk_b": 2, "x": 20}), "top")
    a, b = r.domains["clk_a"], r.domains["u.clk_b"]
    assert (a.levels, a.luts, a.carries, a.muxes) == (2.25, 2, 1, 0)   # a CARRY4 weighs a quarter
    assert [c for c, _ in a.cells] == ["a.x.$abc$1.lut1", "$flatten\\a.\\x.$abc$2$lut2", "b.y.carry"] and a.end == "ff1 (FDRE.D)"
    assert logic_depth.blocks_on(a, depth=2) == ["a.x", "b.y"]
    # the distributed RAM's read is one level; its registered write side ends clk_b's paths
    assert (b.levels, b.luts) == (1, 1) and b.end == "ff3 (FDRE.D)"
    assert r.endpoints == {"clk_a": 2, "u.clk_b": 3}


def test_a_combinational_loop_is_cut_not_followed_forever():
    cells = {
        "l1": cell("LUT2", I0=[5], I1=[6], O=[6]),
        "ff": cell("FDRE", C=[1], D=[6], CE=[7], R=[7], Q=[5]),
    }
    r = logic_depth.analyse(netlist(cells, {"clk": 1}), "top")
    assert r.domains["clk"].levels >= 1
