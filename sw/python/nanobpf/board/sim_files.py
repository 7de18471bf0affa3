"""The Verilator file list of a board simulated from its pins (make board-sim-model; the harness is
sim/verilator/board_main.cpp, the run nanobpf.board.sim).

The model is the board's own design: its top and RTL (board.toml [design] rtl), the Chisel board part
as `make board-hw` elaborated it (the SoC, CVA6, the firmware image), with
- the behavioural Xilinx primitives (board.toml [design] sim, with NANOBPF_BOARD_SIM: the MMCM's
  clocks come from the harness),
- LiteDRAM's simulation core (build/litedram/<board>/sim, `make litedram`) behind the real core's ports
  (<sim>/boardsim/litedram_core.sv; the generated module renamed litedram_sim_core into --out),
- the simulation top <sim>/boardsim/nanobpf_board_sim.sv.
The board's clocks and baud rate (board.toml [clocks], [uart]) reach the harness as -D flags.

    nanobpf-board-sim-files --board genesys2 --chisel build/hw/board-genesys2-2 --out DIR > DIR/files.f
Exit 0, or 2 with a message when an input is missing.
"""
import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from nanobpf import litedram
from nanobpf.board import facts

PROG = "nanobpf-board-sim-files"
SIM_CORE = "litedram_sim_core"


def file_list(board, chisel, out):
    """The lines of the file list (Verilator -f syntax)."""
    chisel, out = Path(chisel), Path(out)
    if not (chisel / "filelist.f").exists():
        raise FileNotFoundError(f"{chisel}/filelist.f not found: run `make board-hw BOARD={board.name}`")
    sim_dir = litedram.out_dir(board.name, "sim")
    props_path = sim_dir / "dram.properties"
    if not props_path.exists():
        raise FileNotFoundError(f"{props_path} not found: run `make litedram BOARD={board.name}`")
    props = dict(l.split("=", 1) for l in props_path.read_text().splitlines() if "=" in l and not l.startswith("#"))
    csr = json.loads((sim_dir / "csr.json").read_text())
    init_done = csr["csr_registers"]["ddrctrl_init_done"]["addr"]
    out.mkdir(parents=True, exist_ok=True)
    renamed = []
    for src in props["sources"].split():
        text = Path(src).read_text()
        text, n = re.subn(rf"^module {litedram.CORE}\b", f"module {SIM_CORE}", text, flags=re.M)
        if n:
            dst = out / f"{SIM_CORE}.v"
            dst.write_text(text)
            renamed.append(str(dst))
        else:
            renamed.append(src)
    files = subprocess.run([sys.executable, "-m", "nanobpf.rtl_files", "--chisel", str(chisel)],
                           check=True, capture_output=True, text=True).stdout.split()
    sim = board.design.sim
    c = board.clocks
    defines = {"NB_SYS_HZ": c.sys_hz, "NB_CORE_HZ": c.core_hz, "NB_NET_HZ": c.net_hz, "NB_REF_HZ": c.ref_hz,
               "NB_ETH_RX_HZ": c.eth_rx_hz, "NB_UART_BAUD": board.uart.baud}
    return (["+define+NANOBPF_BOARD_SIM", f"+define+NB_LITEDRAM_INIT_DONE_ADDR={init_done}",
             *(f"-CFLAGS -D{k}={v}ull" for k, v in defines.items())]
            + files + renamed
            + [str(p) for p in sorted(board.design.rtl.glob("*.sv"))]
            + [str(p) for p in sorted(sim.glob("*.sv")) + sorted((sim / "boardsim").glob("*.sv"))])


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--board", default=facts.DEFAULT_BOARD, help="the board (default: %(default)s)")
    ap.add_argument("--chisel", required=True, metavar="DIR", help="the board's Chisel output (make board-hw)")
    ap.add_argument("--out", required=True, metavar="DIR", help="the model's build folder (the renamed LiteDRAM core goes here)")
    a = ap.parse_args(argv)
    try:
        board = facts.load(a.board)
        lines = file_list(board, a.chisel, a.out)
    except (facts.BoardFactsError, FileNotFoundError, KeyError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
