"""Firmware on the Verilator SoC model: boot, wake-up, per-core console, rendezvous, exit codes.

Needs the models built by `make test-prereqs` (CORES 1 and 4) and the firmware images.
"""
import pytest

from nanobpf import sim

CORES = [1, 4]


@pytest.mark.parametrize("cores", CORES)
def test_every_core_reports_in(cores):
    r = sim.run(cores, "hello", max_cycles=2_000_000)
    assert r.returncode == 0, r.output
    assert r.verdict == "PASS" and r.bus_errors == 0
    assert r.lines(0)[0] == f"NanoBPF skeleton: {cores} core(s), core 0 waking the others"
    for h in range(cores):
        lines = r.lines(h)
        assert any(line.startswith(f"hello from hart {h} ") for line in lines), (h, lines)
        assert f"hart {h} passed the rendezvous" in lines, (h, lines)
    assert r.lines(0)[-1] == f"PASS: all {cores} cores reported in"
    assert set(r.console) == set(range(cores)), "a core that does not exist printed"
    assert 0 < r.cycles < 2_000_000


@pytest.mark.parametrize("cores", CORES)
def test_board_firmware_prints_through_the_uart(cores, tmp_path):
    """The board firmware (board-sim: the same code with a short "second" and an end) prints through
    the UART: the line decoded by the harness holds every console line, CR LF terminated, whole
    lines from each core, none lost, no framing errors."""
    uart = tmp_path / "uart.txt"
    r = sim.run(cores, "board-sim", max_cycles=3_000_000, args=["--uart", str(uart)])
    assert r.returncode == 0, r.output
    assert "framing error" not in r.output
    text = uart.read_bytes().decode()
    assert text.endswith("\r\n") and "\n" not in text.replace("\r\n", ""), repr(text[-200:])
    got = text.split("\r\n")[:-1]
    expected = [line for h in range(cores) for line in r.lines(h)]
    assert sorted(got) == sorted(expected), (got, expected)
    assert got[0] == f"NanoBPF {cores} core(s), console on the UART"
    assert any(line.startswith("eth: rx 0 frames 0 bytes, tx 0 frames 0 bytes") for line in got)
    assert got[-1] == "board firmware done"


def test_missing_hart_fails_the_run():
    """Core 0 of this variant never wakes hart 1: the rendezvous must time out and the run fail."""
    r = sim.run(4, "hello-skipwake", max_cycles=2_000_000)
    assert r.returncode == 1, r.output
    assert r.verdict == "FAIL"
    assert "FAIL: hart 1 did not report in" in r.lines(0)
    assert r.lines(1) == [], "hart 1 was never woken, yet it printed"
    for h in (2, 3):
        assert any(line.startswith(f"hello from hart {h} ") for line in r.lines(h))


def test_max_cycles_guard_stops_a_run():
    r = sim.run(1, "hello", max_cycles=2000)
    assert r.returncode == sim.EXIT_TIMEOUT, r.output
    assert r.verdict.startswith("TIMEOUT") and r.cycles == 2000


def test_wave_file_is_written(tmp_path):
    wave = tmp_path / "boot.fst"
    r = sim.run(1, "hello", max_cycles=500, args=["--wave", str(wave)])
    assert r.returncode == sim.EXIT_TIMEOUT
    assert wave.stat().st_size > 1000


@pytest.mark.parametrize("args, message", [
    ([], "--firmware is required"),
    (["--firmware", "/nonexistent.hex"], "cannot read firmware image"),
    (["--firmware", "x.hex", "--max-cycles", "lots"], "not a positive number"),
    (["--bogus"], "unknown argument"),
])
def test_bad_command_lines_are_refused(args, message):
    import subprocess
    p = subprocess.run([str(sim.sim_binary(1)), *args], capture_output=True, text=True)
    assert p.returncode == sim.EXIT_USAGE
    assert message in p.stderr


def test_help():
    import subprocess
    p = subprocess.run([str(sim.sim_binary(1)), "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "--max-cycles" in p.stdout


@pytest.mark.parametrize("cores", CORES)
def test_bus_statistics_add_up(cores):
    """--bus-stats without Ethernet input counts the whole run: the slaves' transactions and busy
    cycles add up to the cores', every core booted from the boot ROM and ran out of main memory, and a
    core waits for another only when there is one."""
    import re
    r = sim.run(cores, "hello", max_cycles=2_000_000, args=["--bus-stats"])
    assert r.returncode == 0, r.output
    head = re.search(r"nanobpf-sim: bus over the run: (\d+) cycles, busy (\d+) ", r.output)
    assert head, r.output
    window, busy = int(head[1]), int(head[2])
    assert 0 < busy < window <= r.cycles
    slaves = {m[1]: (int(m[2]), int(m[4])) for m in
              re.finditer(r"nanobpf-sim: bus slave (\S+) +(\d+) transactions \((\d+) writes\) +(\d+) cycles", r.output)}
    writes = {m[1]: int(m[2]) for m in re.finditer(r"nanobpf-sim: bus slave (\S+) +\d+ transactions \((\d+) writes\)", r.output)}
    # the boot ROM is only read; the boot stores its stack and data to main memory
    assert writes["bootrom"] == 0 and 0 < writes["main_mem"] < slaves["main_mem"][0], writes
    per_core = {int(m[1]): (int(m[2]), int(m[3]), int(m[4]), dict((k, int(v)) for k, v in re.findall(r"(\S+) (\d+)", m[5])))
                for m in re.finditer(r"nanobpf-sim: bus core (\d+) +(\d+) transactions +(\d+) cycles served +(\d+)"
                                     r" cycles waited for another core;(.*)", r.output)}
    assert set(per_core) == set(range(cores)), per_core
    assert "(unmapped)" not in slaves and slaves["bootrom"][0] > 0 and slaves["main_mem"][0] > 0, slaves
    assert sum(t for t, _ in slaves.values()) == sum(c[0] for c in per_core.values())
    assert sum(c for _, c in slaves.values()) == sum(c[1] for c in per_core.values()) == busy
    for name, (t, c) in slaves.items():
        assert c >= t == sum(pc[3].get(name, 0) for pc in per_core.values()), name
    for h, (t, _, _, by) in per_core.items():
        assert t == sum(by.values()) and by.get("bootrom", 0) > 0 and by.get("main_mem", 0) > 0, (h, by)
    waited = sum(c[2] for c in per_core.values())
    assert (waited > 0) == (cores > 1), waited


@pytest.mark.parametrize("cores", CORES)
def test_bus_trace_agrees_with_the_statistics(cores, tmp_path):
    """--bus-trace writes one line per transaction the interconnect grants: as many per core and per
    slave as --bus-stats counts over the run, in cycle order; each core's first one an instruction
    fetch from the boot ROM (CVA6's reset vector), the boot ROM only ever read and only by fetches, and
    every main-memory address inside main memory."""
    import re
    import nanobpf_soc as soc
    names = [n for n, reg in soc.REGIONS.items() if "detached" not in reg.attrs]  # the slave numbers
    boot, main_mem = soc.REGIONS[soc.RESET_VECTOR], soc.REGIONS["main_mem"]
    trace = tmp_path / "bus.txt"
    r = sim.run(cores, "hello", max_cycles=2_000_000, args=["--bus-stats", "--bus-trace", str(trace)])
    assert r.returncode == 0, r.output
    lines = [ln.split() for ln in trace.read_text().splitlines()]
    assert lines and all(len(x) == 6 and x[3] in "rw" and x[4] in "id" for x in lines), lines[:3]
    cycles = [int(x[0]) for x in lines]
    assert cycles == sorted(cycles)
    per_core = {int(m[1]): int(m[2]) for m in re.finditer(r"nanobpf-sim: bus core (\d+) +(\d+) transactions", r.output)}
    assert {c: sum(1 for x in lines if int(x[1]) == c) for c in range(cores)} == per_core
    slaves = {m[1]: (int(m[2]), int(m[3])) for m in
              re.finditer(r"nanobpf-sim: bus slave (\S+) +(\d+) transactions \((\d+) writes\)", r.output)}
    for name, (t, w) in slaves.items():
        mine = [x for x in lines if names[int(x[2])] == name]
        assert (len(mine), sum(1 for x in mine if x[3] == "w")) == (t, w), name
    for c in range(cores):
        first = next(x for x in lines if int(x[1]) == c)
        assert first[3:5] == ["r", "i"] and int(first[5], 16) == boot.base, first
    assert all(x[3:5] == ["r", "i"] for x in lines if names[int(x[2])] == "bootrom")
    main = [int(x[5], 16) for x in lines if names[int(x[2])] == "main_mem"]
    assert main and all(main_mem.base <= a < main_mem.base + main_mem.size for a in main)


@pytest.mark.parametrize("cores", [1, 4])
def test_atomics_through_the_interconnect(cores):
    """AMOs (AXI atomics) and LR/SC (AXI exclusives) are exact, alone and under contention."""
    r = sim.run(cores, "atomics", max_cycles=3_000_000)
    assert r.returncode == 0, r.output
    assert r.bus_errors == 0
    assert "single-hart AMO and LR/SC checks: 0 failure(s)" in r.lines(0)
    assert r.lines(0)[-1] == "PASS: 0 failure(s)"
    import re
    counts = {h: [int(m[1]) for line in r.lines(h) if (m := re.match(rf"hart {h}: (\d+) increments each", line))]
              for h in range(cores)}
    assert all(len(c) == 1 and c[0] > 0 for c in counts.values()), counts
    assert len({c[0] for c in counts.values()}) == 1, counts  # the firmware checks the exact totals itself


def test_refused_accesses_fail_the_run():
    """Writes to a read-only register, to a hole in the DPU block and to no region are reported, and
    a run with bus errors does not pass even though the firmware returned 0."""
    from nanobpf.soc import REGIONS, REGS, reg_addr
    dpu = REGIONS["dpu"]
    r = sim.run(1, "buserror", max_cycles=200_000)
    assert r.returncode == sim.EXIT_BUS_ERROR, r.output
    assert r.bus_errors == 3
    past_mailboxes = reg_addr("dpu", "mailbox", REGS[("dpu", "mailbox")].count)
    for addr in (dpu.base, past_mailboxes, dpu.base + dpu.size):
        assert f"[bus] error: core 0 write at 0x{addr:016x}" in r.output
    assert r.lines(0) == ["made three stores the bus must refuse"]


@pytest.mark.parametrize("kind,mcause", [("load", 4), ("store", 6), ("fetch", 1)])
def test_refused_accesses_trap(kind, mcause):
    """A misaligned load or store and a fetch outside the execute regions trap (load/store address
    misaligned, instruction access fault) with the faulting address in mtval, and the run fails: the
    checks CVA6's MMU made, kept by the MMU-less core of hw/defs/soc.toml [cva6] mmu = false."""
    from nanobpf.soc import REGIONS
    r = sim.run(1, f"traps-{kind}", max_cycles=200_000)
    assert r.returncode == sim.SIM_EXIT["trap"], r.output
    first = r.lines(0)[0]
    addr = int(first.rsplit(" at ", 1)[1], 16)
    if kind == "fetch":
        assert addr == REGIONS["packet_mem"].base  # no exec attribute
    else:
        assert addr % 8 == 4  # an 8-byte access half-way into a word
    trap = [line for line in r.lines(0) if line.startswith("TRAP on hart 0:")]
    assert len(trap) == 1, r.output
    assert f"mcause=0x{mcause:x} " in trap[0] and trap[0].endswith(f"mtval=0x{addr:x}"), trap
    assert "no trap" not in r.lines(0)


def test_no_files_left_in_the_working_directory(tmp_path):
    """CVA6's Verilator tracer would write trace_hart_00.dasm into the current directory."""
    import subprocess
    p = subprocess.run([str(sim.sim_binary(4)), "--firmware", str(sim.firmware_image("hello")), "--quiet"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert list(tmp_path.iterdir()) == []


def test_instruction_trace_option(tmp_path):
    """--insn-trace keeps CVA6's retired-instruction trace: the boot ROM's first instruction is in it."""
    trace = tmp_path / "run.dasm"
    r = sim.run(1, "hello", max_cycles=2_000_000, args=["--insn-trace", str(trace)])
    assert r.returncode == 0, r.output
    lines = trace.read_text().splitlines()
    assert len(lines) > 1000
    assert lines[0].split()[1] == "0x10000"  # reset vector: the boot ROM
