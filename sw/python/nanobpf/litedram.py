"""LiteDRAM cores for a board's DDR3, generated from PyPI's litedram (`litedram_gen`).

The board's DRAM facts live in one file, boards/<board>/ddr3.yml (sections `common`, `board`, `sim`;
the board's board.toml names it: [design] ddr3, read through nanobpf.board.facts).
For each variant this module writes LiteDRAM's own YAML config and runs `litedram_gen` into
build/litedram/<board>/<variant>/:

- `board`: the real core (K7 PHY, PLL, a VexRiscv init CPU with LiteX's BIOS, which initialises and
  levels the DDR3 and then sets init_done).
- `sim`: `litedram_gen --sim` (SDRAMPHYModel, no PHY or PLL), with a small module for simulation.

Besides LiteDRAM's output it writes `dram.properties` (java.util.Properties syntax, read by
ElaborateBoard and the tests): the AXI port's widths and the DRAM size as found in the generated
Verilog, the clocks from the config, and the Verilog sources and memory files a synthesis flow must
read. A variant whose inputs (config, generator, package versions) are unchanged is not regenerated.
"""
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from nanobpf import BUILD, ROOT
from nanobpf.board import facts

VARIANTS = ("board", "sim")
CORE = "litedram_core"
# PyPI packages each variant needs (sw/tools/setup.sh installs them).
PACKAGES = {
    "any": ("litedram", "litex", "migen"),
    "sim": ("liteeth", "litescope", "pythondata-misc-tapcfg"),
    "cpu": ("pythondata-cpu-vexriscv", "pythondata-software-picolibc", "pythondata-software-compiler_rt",
            "meson", "ninja"),
}
# What the SoC side (nanobpf.dram.DramBridge) is written for.
NATIVE_DATA_BITS = 256
ID_BITS = 4


class LitedramError(Exception):
    """A missing or wrong input; the message names it."""


def log(msg):
    print(f"[litedram] {msg}", flush=True)


def board_file(board):
    """The board's ddr3.yml, as its board.toml names it ([design] ddr3)."""
    try:
        return facts.load(board).design.ddr3
    except facts.BoardFactsError as e:
        raise LitedramError(str(e)) from None


def out_dir(board, variant):
    return BUILD / "litedram" / board / variant


def load_board(board):
    """The board's ddr3.yml as a dict with `common`, `board` and `sim` sections."""
    path = board_file(board)
    if not path.is_file():
        raise LitedramError(f"{path} not found: the board's DDR3 facts (boards/<board>/ddr3.yml) are the "
                            f"generator's input (known boards: {', '.join(known_boards()) or 'none'})")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise LitedramError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise LitedramError(f"{path}: expected a mapping with sections common, board, sim")
    for section in ("common",) + VARIANTS:
        if not isinstance(data.get(section), dict):
            raise LitedramError(f"{path}: section '{section}' missing or not a mapping")
    return data


def known_boards():
    return [b for b in facts.known() if board_file(b).is_file()]


def config(board, variant):
    """LiteDRAM's config for one variant: `common` updated by the variant's section."""
    if variant not in VARIANTS:
        raise LitedramError(f"unknown variant '{variant}' (known: {', '.join(VARIANTS)})")
    data = load_board(board)
    cfg = dict(data["common"])
    cfg.update(data[variant])
    for key in ("memtype", "sdram_module", "sdram_module_nb", "sdram_phy", "sys_clk_freq", "user_ports"):
        if key not in cfg:
            raise LitedramError(f"{board_file(board)}: '{key}' missing (in common or {variant})")
    ports = cfg["user_ports"]
    if not isinstance(ports, dict) or len(ports) != 1:
        raise LitedramError(f"{board_file(board)}: user_ports must hold exactly one port (the SoC's AXI port)")
    (port,) = ports.values()
    if port.get("type") != "axi" or int(port.get("id_width", -1)) != ID_BITS:
        raise LitedramError(f"{board_file(board)}: the user port must be AXI with id_width {ID_BITS} (DramBridge's)")
    if "data_width" in port:
        raise LitedramError(f"{board_file(board)}: the user port must stay at the native width (no data_width)")
    # LiteDRAM reads clock frequencies as floats and "None" as Python's None; YAML gives "100e6" as a string.
    for k, v in cfg.items():
        if k.endswith("clk_freq"):
            try:
                cfg[k] = float(v)
            except (TypeError, ValueError):
                raise LitedramError(f"{board_file(board)}: {k}: not a frequency: {v!r}") from None
    return cfg


def versions():
    out = {}
    for p in sorted({p for ps in PACKAGES.values() for p in ps}):
        try:
            out[p] = importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            out[p] = None
    return out


def litedram_gen():
    exe = Path(sys.executable).parent / "litedram_gen"
    if exe.is_file():
        return str(exe)
    found = shutil.which("litedram_gen")
    if not found:
        raise LitedramError("litedram_gen not found (PyPI litedram): run `make setup` (sw/tools/setup.sh venv)")
    return found


def inputs_digest(board, variant, cfg):
    h = hashlib.sha256()
    h.update(json.dumps({"board": board, "variant": variant, "config": cfg, "versions": versions()},
                        sort_keys=True).encode())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()


def _port_width(verilog, name):
    m = re.search(rf"^\s*(?:input|output)\s+wire\s+(?:\[(\d+):0\]\s+)?{re.escape(name)}\s*,?\s*$", verilog, re.M)
    if not m:
        raise LitedramError(f"the generated {CORE}.v has no port {name}")
    return int(m.group(1)) + 1 if m.group(1) else 1


def module_bytes(cfg):
    """DRAM size from the module's geometry: banks x rows x columns x byte lanes (x ranks)."""
    import litedram.modules as modules
    mod = getattr(modules, cfg["sdram_module"], None)
    if mod is None:
        raise LitedramError(f"LiteDRAM knows no SDRAM module {cfg['sdram_module']}")
    return mod.nbanks * mod.nrows * mod.ncols * int(cfg["sdram_module_nb"]) * int(cfg.get("sdram_rank_nb", 1))


def _postprocess(vdir):
    """$readmemh names the memory files relative to the gateware folder; make them absolute so any tool
    (Vivado from its own run directory, Verilator) finds them. Returns the memory files."""
    core = vdir / f"{CORE}.v"
    text = core.read_text()
    inits = []

    def absolute(m):
        f = vdir / m.group(2)
        if not f.is_file():
            raise LitedramError(f"{core} reads {m.group(2)}, which litedram_gen did not write")
        inits.append(f)
        return f'{m.group(1)}"{f}"'

    new = re.sub(r'(\$readmem[hb]\(\s*)"([^"/]+)"', absolute, text)
    if new != text:
        core.write_text(new)
    inits += [vdir / m for m in re.findall(r'\$readmem[hb]\(\s*"[^"]*/([^"/]+)"', text)]  # already absolute
    return sorted(set(inits))


def _sources(vdir):
    """Verilog the core needs: LiteDRAM's output plus what its tcl reads (the VexRiscv from its package)."""
    srcs = []
    tcl = vdir / f"{CORE}.tcl"
    if tcl.is_file():
        for m in re.findall(r"^read_verilog\s+\{?([^}\s]+)\}?", tcl.read_text(), re.M):
            p = Path(m)
            if p.name != f"{CORE}.v":
                if not p.is_file():
                    raise LitedramError(f"{tcl} reads {p}, which does not exist (reinstall the venv: make setup)")
                srcs.append(p)
    srcs.append(vdir / f"{CORE}.v")
    return srcs


def properties(board, variant, cfg, vdir):
    verilog = (vdir / f"{CORE}.v").read_text()
    port = next(iter(cfg["user_ports"]))
    pre = f"user_port_{port}_"
    addr_bits = _port_width(verilog, pre + "araddr")
    data_bits = _port_width(verilog, pre + "rdata")
    id_bits = _port_width(verilog, pre + "arid")
    size = module_bytes(cfg)
    if 1 << addr_bits != size:
        raise LitedramError(f"{variant}: the AXI port has {addr_bits} address bits but the module holds {size} bytes")
    if data_bits != NATIVE_DATA_BITS or id_bits != ID_BITS:
        raise LitedramError(f"{variant}: the AXI port is {data_bits} bits wide with id {id_bits}; "
                            f"DramBridge needs {NATIVE_DATA_BITS} and {ID_BITS}")
    inits = _postprocess(vdir)
    props = {
        "board": board,
        "variant": variant,
        "module": cfg["sdram_module"],
        "size_bytes": size,
        "addr_bits": addr_bits,
        "data_bits": data_bits,
        "id_bits": id_bits,
        "axi_prefix": pre,
        "sys_clk_hz": int(cfg["sys_clk_freq"]),
        "input_clk_hz": int(cfg.get("input_clk_freq", cfg["sys_clk_freq"])),
        "iodelay_clk_hz": int(cfg.get("iodelay_clk_freq", 0)),
        "init_cpu": str(cfg.get("cpu", "None")),
        "sources": " ".join(str(s) for s in _sources(vdir)),
        "memory_files": " ".join(str(f) for f in inits),
    }
    return props


def read_properties(path):
    """dram.properties as a dict of strings."""
    out = {}
    for line in Path(path).read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def generate(board, variant, force=False):
    """Generate one variant (or say it is up to date). Returns the output folder."""
    cfg = config(board, variant)
    vdir = out_dir(board, variant)
    stamp = vdir / ".inputs"
    digest = inputs_digest(board, variant, cfg)
    props_file = vdir / "dram.properties"
    if (not force and stamp.is_file() and stamp.read_text() == digest and props_file.is_file()
            and (vdir / "gateware" / f"{CORE}.v").is_file()):
        log(f"{board} {variant}: up to date ({vdir})")
        return vdir
    has_cpu = str(cfg.get("cpu", "None")) != "None"
    need = PACKAGES["any"] + (PACKAGES["sim"] if variant == "sim" else ()) + (PACKAGES["cpu"] if has_cpu else ())
    missing = [p for p in need if versions()[p] is None]
    if missing:
        raise LitedramError(f"Python packages missing: {', '.join(missing)}: run `make setup` (sw/tools/setup.sh PY_PACKAGES)")
    if has_cpu and not shutil.which("riscv64-unknown-elf-gcc"):
        raise LitedramError("riscv64-unknown-elf-gcc not found (Debian gcc-riscv64-unknown-elf): the init CPU's "
                            "BIOS needs it; run `make setup`")
    if vdir.exists():
        shutil.rmtree(vdir)
    vdir.mkdir(parents=True)
    cfg_file = vdir / "litedram.yml"
    cfg_file.write_text(f"# written by nanobpf.litedram from {board_file(board).relative_to(ROOT)} ({variant}); "
                        "do not edit\n" + yaml.safe_dump(cfg, sort_keys=True))
    cmd = [litedram_gen(), str(cfg_file), "--output-dir", str(vdir), "--name", CORE] + (["--sim"] if variant == "sim" else [])
    what = "the K7 core with the VexRiscv init CPU and its BIOS (about a minute)" if variant == "board" \
        else "the simulation core (SDRAMPHYModel, a few seconds)"
    log(f"{board} {variant}: generating {what} -> {vdir}")
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + ":" + env.get("PATH", "")  # meson, ninja from the venv
    p = subprocess.run(cmd, cwd=vdir, capture_output=True, text=True, env=env)
    (vdir / "litedram_gen.log").write_text(p.stdout + p.stderr)
    if p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).splitlines()[-30:])
        raise LitedramError(f"litedram_gen failed (exit {p.returncode}) for {board} {variant}:\n{tail}\n"
                            f"full log: {vdir / 'litedram_gen.log'}")
    props = properties(board, variant, cfg, vdir / "gateware")
    props_file.write_text(f"# {board} {variant}: written by nanobpf.litedram from {board_file(board).relative_to(ROOT)}\n"
                          + "".join(f"{k}={v}\n" for k, v in props.items()))
    stamp.write_text(digest)
    log(f"{board} {variant}: {props['module']}, {props['size_bytes'] >> 20} MiB, AXI {props['data_bits']}-bit data, "
        f"{props['addr_bits']}-bit address, user_clk {props['sys_clk_hz'] / 1e6:g} MHz")
    return vdir


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(
        prog="nanobpf-litedram",
        description="Generate the LiteDRAM cores of a board's DDR3 (boards/BOARD/ddr3.yml) into build/litedram/BOARD/VARIANT.",
        epilog="Variants: board = the real K7 core with the VexRiscv init CPU (DDR3 init and leveling in the core); "
               "sim = litedram_gen --sim (SDRAMPHYModel, small module). A variant whose inputs did not change is "
               "skipped. Exit 0 done, 2 a missing or wrong input, 1 litedram_gen failed.")
    ap.add_argument("--board", default=facts.DEFAULT_BOARD,
                    help="board folder under boards/, with its board.toml (default: %(default)s)")
    ap.add_argument("--variant", choices=VARIANTS + ("all",), default="all", help="which core (default: all)")
    ap.add_argument("--force", action="store_true", help="regenerate even when the inputs did not change")
    a = ap.parse_args(argv)
    try:
        for v in VARIANTS if a.variant == "all" else (a.variant,):
            generate(a.board, v, a.force)
    except LitedramError as e:
        print(f"nanobpf-litedram: {e}", file=sys.stderr)
        return 1 if "litedram_gen failed" in str(e) else 2
    return 0
