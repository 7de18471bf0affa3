"""The Verilator DPU as a device on two TAP interfaces: nanobpf-sim running a data-plane firmware
(firmware/apps/dpu; by default dpu-ctrl, which has no built-in program) with its host and network
ports on TAPs, so that anything that talks to a DPU over Ethernet (nanobpf.ctrl.Client, the driver in
QEMU through a bridge, a user's tools) talks to the RTL: core 0 answers the control protocol.

    with RtlDevice(cores=1) as dev:          # root: creates the TAPs nbrh<N>/nbrn<N>
        host = Client(dev.host, retry_ms=2000, retry_max_ms=8000)
        host.hello()
    dev.counters   # the firmware's DPU lines after the run (wire.parse_counters), dev.ctrl_costs

The simulation runs at about 100k cycles/s (1 core): a request of a few thousand cycles is answered in
tens of milliseconds, a program load in seconds, so clients should retry slowly (retransmissions are
answered from the replay cache, never applied twice). stop() raises dpu.sim_drain (SIGINT): the
firmware prints its counters and ends the run.
"""
from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import threading
import time

from . import ctrl, sim, wire

__all__ = ["RtlDevice", "RtlDeviceError", "available"]

_COST = re.compile(r"DPU ctrl_(\w+) n=(\d+) cycles=(\d+) max=(\d+)$")
_counter = itertools.count()


class RtlDeviceError(RuntimeError):
    pass


def available(cores=1, firmware="dpu-ctrl"):
    """(ok, why): the RTL DPU needs root (TAPs), the simulator of `cores` cores and the firmware."""
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        return False, "needs root and /dev/net/tun (TAP devices)"
    try:
        sim.sim_binary(cores), sim.firmware_image(firmware)
    except FileNotFoundError as e:
        return False, str(e)
    return True, ""


def _ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True)


class RtlDevice:
    """nanobpf-sim with `firmware` on `cores` cores, its ports on TAPs (created here, removed at stop)."""

    def __init__(self, cores=1, firmware="dpu-ctrl", host_if=None, net_if=None, max_cycles=2_000_000_000,
                 ready_timeout=120.0, log=None):
        n = f"{os.getpid() % 10000}{next(_counter)}"
        self.host_if, self.net_if = host_if or f"nbrh{n}"[:15], net_if or f"nbrn{n}"[:15]
        self.cores, self.firmware, self.max_cycles = cores, firmware, max_cycles
        self.ready_timeout, self.log = ready_timeout, log
        self.lines: list[str] = []
        self.proc = None
        self.host = self.net = None
        self.counters: dict = {}
        self.ctrl_costs: dict = {}
        self.returncode = None
        self._ready = threading.Event()

    # ------------------------------------------------------------ life
    def start(self):
        for ifname in (self.host_if, self.net_if):
            subprocess.run(["ip", "link", "del", ifname], capture_output=True)
            _ip("tuntap", "add", "dev", ifname, "mode", "tap")
            try:   # IPv6 off before the link is up: the kernel sends nothing of its own into the DPU
                with open(f"/proc/sys/net/ipv6/conf/{ifname}/disable_ipv6", "w") as f:
                    f.write("1")
            except OSError:
                pass
            _ip("link", "set", ifname, "up")
        image = sim.firmware_image(self.firmware)
        cmd = [str(sim.sim_binary(self.cores)), "--firmware", str(image), "--max-cycles", str(self.max_cycles),
               "--host-tap", self.host_if, "--net-tap", self.net_if]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._reader, name="rtldev-console", daemon=True).start()
        if not self._ready.wait(self.ready_timeout) or self.proc.poll() is not None:
            out = "\n".join(self.lines[-20:])
            self.stop()
            raise RtlDeviceError(f"the simulated DPU did not get ready in {self.ready_timeout:.0f} s:\n{out}")
        self.host, self.net = ctrl.PacketPort(self.host_if), ctrl.PacketPort(self.net_if)
        return self

    def _reader(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.lines.append(line)
            if self.log:
                self.log(line)
            if "dpu: ready at cycle" in line:
                self._ready.set()
        self._ready.set()

    def stop(self, timeout=300.0):
        """End the run (drain, counters printed), remove the TAPs. Returns the simulator's exit code."""
        for p in (self.host, self.net):
            if p is not None:
                p.close()
        self.host = self.net = None
        if self.proc is not None and self.returncode is None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.returncode = self.proc.returncode
            time.sleep(0.2)  # the console reader's last lines
            console = [re.sub(r"^\[core \d+\] ", "", line) for line in self.lines]
            self.counters = wire.parse_counters(console)
            for line in console:
                m = _COST.match(line)
                if m:
                    self.ctrl_costs[m[1]] = dict(n=int(m[2]), cycles=int(m[3]), max=int(m[4]))
        for ifname in (self.host_if, self.net_if):
            if ifname:          # None: handed to another namespace (nanobpf.netbed), which removes it
                subprocess.run(["ip", "link", "del", ifname], capture_output=True)
        return self.returncode

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def console(self, pattern):
        """Console lines (core prefixes removed) matching the regular expression."""
        rx = re.compile(pattern)
        return [line for line in (re.sub(r"^\[core \d+\] ", "", x) for x in self.lines) if rx.search(line)]
