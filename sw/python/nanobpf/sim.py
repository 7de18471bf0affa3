"""Run the Verilator model of the SoC (build/sim/soc-N/nanobpf-sim) and parse what it prints."""
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from . import BUILD
from .soc import SIM_EXIT

EXIT_TIMEOUT = SIM_EXIT["timeout"]
EXIT_BUS_ERROR = SIM_EXIT["bus_error"]
EXIT_USAGE = SIM_EXIT["usage"]

_SUMMARY = re.compile(r"nanobpf-sim: (?P<verdict>.+?): exit code (?P<code>\d+) after (?P<cycles>\d+) cycles, "
                      r"(?P<bus>\d+) bus error\(s\); (?P<wall>[\d.]+) s wall, (?P<rate>\d+) cycles/s")
_CONSOLE = re.compile(r"\[core (\d+)\] (.*)")


@dataclass
class SimResult:
    returncode: int
    output: str
    verdict: str = ""
    cycles: int = 0
    bus_errors: int = 0
    wall_s: float = 0.0
    cycles_per_s: float = 0.0
    console: dict = field(default_factory=dict)  # core -> list of lines

    def lines(self, core):
        return self.console.get(core, [])


def sim_binary(cores):
    path = BUILD / f"sim/soc-{cores}/nanobpf-sim"
    if not path.exists():
        raise FileNotFoundError(f"{path} is not built: run `make sim CORES={cores}`")
    return path


def firmware_image(name):
    path = BUILD / f"firmware/{name}.hex"
    if not path.exists():
        raise FileNotFoundError(f"{path} is not built: run `make firmware`")
    return path


def parse(returncode, output):
    r = SimResult(returncode, output)
    for line in output.splitlines():
        m = _CONSOLE.match(line)
        if m:
            r.console.setdefault(int(m[1]), []).append(m[2])
        m = _SUMMARY.match(line)
        if m:
            r.verdict, r.cycles, r.bus_errors = m["verdict"], int(m["cycles"]), int(m["bus"])
            r.wall_s, r.cycles_per_s = float(m["wall"]), float(m["rate"])
    return r


def run(cores, firmware, max_cycles=20_000_000, args=(), timeout=600):
    """Run `firmware` (a name under build/firmware or a path to a .hex) on the `cores`-core model."""
    image = Path(firmware) if str(firmware).endswith(".hex") else firmware_image(firmware)
    cmd = [str(sim_binary(cores)), "--firmware", str(image), "--max-cycles", str(max_cycles), *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return parse(p.returncode, p.stdout + p.stderr)
