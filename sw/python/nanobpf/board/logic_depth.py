"""Logic depth per clock domain of a mapped Xilinx 7-series netlist (yosys `synth_xilinx`, flattened,
written with `write_json`): what a timing report's "logic levels" would say, without Vivado.

Every path starts at a sequential cell's output (a flip-flop, a block RAM, a DSP, a shift register's
or distributed RAM's registered side), a top-level input or a constant, goes through combinational
cells and ends at a sequential cell's input (paths into top-level outputs are not counted). A path
belongs to the clock domain of the cell that ends it (the net on its clock pin, named by the shortest
of its names). Its depth is in LUT levels: a LUT, a MUXF7/MUXF8 and the read side of distributed RAM
or a dynamic shift register (address to data) count one level each, a CARRY4 a quarter of one (a
Kintex-7 carry chain passes a CARRY4 in about 0.1 ns, a LUT with its routing takes several times
that: DS182, UG474), so a 64-bit adder's 16 CARRY4s weigh 4 LUT levels. The deepest path by that
weight is reported with its LUTs, CARRY4s and MUXFs counted apart.

    report = analyse(json.load(open("netlist.json")), "nanobpf_genesys2_top")
    report.domains   # {clock net: Path(levels, luts, carries, muxes, cells=[(cell, type), ...])}

Used by nanobpf-synth-estimate --timing (the board's timing table in docs/board.md).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

COMB = {"LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6", "MUXF7", "MUXF8", "CARRY4", "INV", "BUF"}
# distributed RAM and dynamic shift registers: read combinationally from their address inputs
ASYNC_READ = {"RAM32M": r"^ADDR[A-D]$", "RAM64M": r"^ADDR[A-D]$", "RAM32X1D": r"^(A\d|DPRA\d)$",
              "RAM64X1D": r"^(A\d|DPRA\d)$", "RAM128X1D": r"^(A|DPRA)$", "RAM256X1S": r"^A$",
              "RAM32X1S": r"^A\d$", "RAM64X1S": r"^A\d$", "RAM128X1S": r"^A\d$",
              "SRL16E": r"^A\d$", "SRLC32E": r"^A$"}
READ_DATA = {"DOA", "DOB", "DOC", "DOD", "SPO", "DPO", "O", "Q"}
CLOCK_PINS = ("C", "CLK", "WCLK", "CLKARDCLK", "CLKBWRCLK", "CLKA", "CLKB", "CLKIN1", "CLKDIV")
WEIGHT = {**{t: 1.0 for t in ("LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6", "MUXF7", "MUXF8")},
          **{t: 1.0 for t in ASYNC_READ}, "CARRY4": 0.25}
LEVELS = set(WEIGHT)


@dataclass
class Path:
    levels: float = 0.0   # LUT levels (a CARRY4 a quarter)
    luts: int = 0
    carries: int = 0
    muxes: int = 0
    cells: list = field(default_factory=list)   # (cell name, type), from the start
    end: str = ""                                # the cell (and pin) that ends it


@dataclass
class Report:
    domains: dict = field(default_factory=dict)  # clock net name -> Path (the deepest)
    endpoints: dict = field(default_factory=dict)  # clock net name -> sequential endpoints counted


def _is_input(cell, pin):
    d = cell.get("port_directions", {}).get(pin)
    return d == "input" if d else pin not in ("O", "O5", "O6", "CO", "Q", "DO", "SPO", "DPO", "DOA", "DOB", "DOC",
                                             "DOD", "Q31", "P", "O1", "O2", "O3", "O4")


def analyse(netlist, top) -> Report:
    mod = netlist["modules"][top]
    cells = mod["cells"]
    names = {}                                   # bit -> the shortest of its names
    for name, n in mod["netnames"].items():
        for b in n["bits"]:
            if isinstance(b, int) and (b not in names or (len(name), name) < (len(names[b]), names[b])):
                names[b] = name
    driver = {}                                  # bit -> (cell name, its combinational input bits) or None
    for cname, c in cells.items():
        t = c["type"]
        comb_in = None
        if t in COMB:
            comb_in = [b for pin, bits in c["connections"].items() if _is_input(c, pin) for b in bits]
        elif t in ASYNC_READ:
            rx = re.compile(ASYNC_READ[t])
            comb_in = [b for pin, bits in c["connections"].items() if rx.match(pin) for b in bits]
        for pin, bits in c["connections"].items():
            if _is_input(c, pin):
                continue
            # a combinational cell's output, or the read data of distributed RAM and shift registers,
            # continues a path; every other output (a register's, a block RAM's, ...) starts one
            through = t in COMB or (t in ASYNC_READ and pin in READ_DATA)
            for b in bits:
                if isinstance(b, int):
                    driver[b] = (cname, comb_in) if through else None
    depth = {}                                   # bit -> (levels, the input bit it came through)

    def level_of(bit):
        """Levels of the deepest path into `bit` (iterative: chains are long)."""
        if not isinstance(bit, int):
            return 0
        stack, on_stack = [bit], {bit}
        while stack:
            b = stack[-1]
            if b in depth:
                stack.pop()
                on_stack.discard(b)
                continue
            d = driver.get(b)
            if d is None:
                depth[b] = (0, None)
                continue
            # inputs still on the stack close a combinational loop: the loop is cut there
            pending = [i for i in d[1] if isinstance(i, int) and i not in depth and i not in on_stack]
            if pending:
                stack += pending
                on_stack.update(pending)
                continue
            best, via = 0.0, None
            for i in d[1]:
                if isinstance(i, int) and i in depth and depth[i][0] >= best:
                    best, via = depth[i][0], i
            depth[b] = (best + WEIGHT.get(cells[d[0]]["type"], 0.0), via)
        return depth[bit][0]

    report = Report()
    for cname, c in cells.items():
        t = c["type"]
        if t in COMB:
            continue
        conns = c["connections"]
        clk = next((conns[p][0] for p in CLOCK_PINS if p in conns and conns[p] and isinstance(conns[p][0], int)), None)
        if clk is None:
            continue
        domain = names.get(clk, f"net {clk}")
        rx = re.compile(ASYNC_READ[t]) if t in ASYNC_READ else None
        report.endpoints[domain] = report.endpoints.get(domain, 0) + 1
        for pin, bits in conns.items():
            if not _is_input(c, pin) or pin in CLOCK_PINS or (rx and rx.match(pin)):
                continue
            for b in bits:
                n = level_of(b)
                best = report.domains.get(domain)
                if best is None or n > best.levels:
                    report.domains[domain] = _trace(b, n, depth, driver, cells, f"{cname} ({t}.{pin})")
    return report


def _trace(bit, levels, depth, driver, cells, end):
    p = Path(levels=levels, end=end)
    chain = []
    b = bit
    while isinstance(b, int) and driver.get(b):
        cname = driver[b][0]
        chain.append((cname, cells[cname]["type"]))
        b = depth[b][1]
    for cname, t in reversed(chain):
        if t.startswith("LUT") or t in ASYNC_READ:
            p.luts += 1
        elif t == "CARRY4":
            p.carries += 1
        elif t.startswith("MUXF"):
            p.muxes += 1
        if t in LEVELS:
            p.cells.append((cname, t))
    return p


def blocks_on(path, depth=3):
    """The instances (their first `depth` levels of hierarchy) of the cells on a path, in order, each
    once; names yosys made up (starting with $) are not instances (its flatten pass writes an
    instance path as `$flatten\\a.\\b.` before the cell's own name)."""
    out = []
    for cname, _ in path.cells:
        parts = []
        name = cname[len("$flatten"):] if cname.startswith("$flatten") else cname
        for x in (c.lstrip("\\") for c in name.split(".")[:-1]):
            if x.startswith("$"):
                break
            parts.append(x)
        block = ".".join(parts[:depth]) or "(top)"
        if not out or out[-1] != block:
            out.append(block)
    return out
