"""The Genesys2 board simulated from its pins (make board-sim; nanobpf.board.exchange): the board's top
with its image, the DPU, booted from the fw_image ROM into main memory in LiteDRAM's simulation core,
cabled to a TAP device with the host's two links as VLANs on it (one-arm mode). A control session on
the host VLAN installs the QUIC workload's keys and settings; QUIC packets go both ways; every frame out
must be the reference protection's and the device model's, byte for byte and in order; a control frame
on the network VLAN, an untagged frame and another VLAN's are dropped and counted (STATS).

The short run (2 cores, the build make test makes: test-prereqs; about 4 minutes, most of it the boot)
is part of make test; the board's default build (4 cores, about 5 minutes) is in make test-long."""
import os
import subprocess

import pytest

from nanobpf import ROOT
from nanobpf.board import exchange, facts

BOARD = facts.load(facts.DEFAULT_BOARD)
needs_root = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"),
                                reason="needs root and /dev/net/tun (a TAP device)")


def run(cores, packets, tmp_path, connections=6):
    binary = exchange.model_path(BOARD.name, cores)
    if not binary.exists():
        pytest.skip(f"{binary} not built (make board-sim-model BOARD_CORES={cores})")
    sim = exchange.BoardSim(binary, BOARD.dpu.host_vid, BOARD.dpu.net_vid, tap=f"nbbt{cores}{os.getpid() % 1000}",
                            ready_timeout=2400)
    sim.start()
    try:
        report = exchange.exchange(sim, connections=connections, packets=packets)
    finally:
        code = sim.stop()
    (tmp_path / "console.txt").write_text("\n".join(sim.lines))
    return report, code, sim


@needs_root
def test_quic_through_the_board_pins_on_one_arm_vlans(tmp_path):
    report, code, sim = run(2, 4, tmp_path)
    assert report.ok, "\n".join(report.lines + sim.lines[-30:])
    assert code == 0, "\n".join(sim.lines[-30:])   # no bad frame on the wire, no UART framing error
    uart = sim.uart()
    assert any(l.startswith("dpu: 2 core(s), program xdp_quic_hw") for l in uart), uart
    assert any(l.startswith("dpu: ready at cycle") for l in uart), uart


@pytest.mark.long
@needs_root
def test_quic_through_the_default_board(tmp_path):
    """The board as make bitstream builds it (its default cores: the control core and 3 data cores)."""
    cores = BOARD.default_cores
    r = subprocess.run(["make", "-s", "board-sim-model", f"BOARD={BOARD.name}", f"BOARD_CORES={cores}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=7200)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    report, code, sim = run(cores, 4, tmp_path)
    assert report.ok and code == 0, "\n".join(report.lines + sim.lines[-30:])


def test_link_self_test_behind_sw0(tmp_path):
    """SW0 on: the link self-test holds the port from reset (no firmware needed): every good frame into
    the RGMII pins comes back out of them with its MAC addresses swapped, the rest unchanged (pcap in and
    out, no TAP)."""
    from nanobpf.pcap import read_pcap, udp_frame, write_pcap
    binary = exchange.model_path(BOARD.name, 2)
    if not binary.exists():
        pytest.skip(f"{binary} not built (make board-sim-model BOARD_CORES=2)")
    frames = [udp_frame(bytes([i]) * n, "192.0.2.1", "192.0.2.2", 1000 + i, 2000, vlan=v)
              for i, (n, v) in enumerate([(18, None), (100, 10), (1400, None), (40, 20)])]
    write_pcap(tmp_path / "in.pcap", frames)
    r = subprocess.run([str(binary), "--in", str(tmp_path / "in.pcap"), "--out", str(tmp_path / "out.pcap"),
                        "--switches", "1", "--start-after", "", "--drain-cycles", "20000", "--max-cycles", "2000000"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    got = [f for _, f in read_pcap(tmp_path / "out.pcap")]
    want = [exchange.on_the_wire(f[6:12] + f[:6] + f[12:], tagged=False) for f in frames]
    assert got == want
    assert "out 4 good, 0 bad" in r.stdout, r.stdout
