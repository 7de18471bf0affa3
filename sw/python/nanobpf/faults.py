"""Faults on the control link, for tests: control frames lost, duplicated and held back behind the next
one, in both directions, from a seeded RNG (docs/control.md: the protocol converges whatever happens
to its frames).

- LinkFaults: the fault model alone. The reference device model applies it inside (set_faults), the
  control-protocol tests on the host's end of a port (tests/ctrl FaultyPort).
- Relay: a man in the middle between a host's interface and a device's (e.g. the TAP of a QEMU guest
  running nanobpf.ko and the host TAP of the RTL DPU): every frame passes, control frames through
  LinkFaults, and what the device answered is recorded (before any fault), so a test can tell, from the
  wire alone, that no request was applied twice. It can also reset the device, as another host would.

Directions are the device's: "in" (host -> device), "out" (device -> host).
"""
import random
import select
import threading
import time

import nanobpf_ctrl_defs as D

from . import ctrl

__all__ = ["LinkFaults", "Relay"]


class LinkFaults:
    """Loss, duplication and reordering probabilities (0 each: frames pass untouched)."""

    def __init__(self, rng=None, seed=None):
        self.rng = rng if rng is not None else random.Random(seed)
        self.loss = self.dup = self.reorder = 0.0
        self._held = {}           # direction -> a frame held back until the next one
        self._lock = threading.Lock()

    def set(self, loss=0.0, dup=0.0, reorder=0.0):
        """New probabilities; setting all to 0 also drops a frame still held back (lost, as on a link)."""
        for name, p in (("loss", loss), ("dup", dup), ("reorder", reorder)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} is a probability, 0..1: {p}")
        with self._lock:
            self.loss, self.dup, self.reorder = loss, dup, reorder
            if not (loss or dup or reorder):
                self._held.clear()

    def through(self, direction, frame):
        """The frames to deliver now for one frame sent in `direction`: none (lost), one, two copies,
        and the frame held back before, if any, after them."""
        with self._lock:
            if not (self.loss or self.dup or self.reorder):
                return [frame]
            out = []
            if self.rng.random() >= self.loss:
                out = [frame, frame] if self.rng.random() < self.dup else [frame]
            if out and self.rng.random() < self.reorder and direction not in self._held:
                self._held[direction] = out.pop()
                return out
            if direction in self._held:
                out.append(self._held.pop(direction))
            return out


class Relay:
    """Frames between host_port (the host's side) and dev_port (the device's), both nanobpf.ctrl ports
    (PacketPort on existing interfaces), in a thread. Control frames (EtherType NANOBPF_CTRL) pass
    through `faults`; data frames pass as they are.

    answers: (epoch, seq, type, status, flags) of every response the device sent, in order, seen
    before any fault; applied: (epoch, seq, type) of those with status OK and without the REPLAY flag,
    i.e. every request it applied.
    epoch: the epoch of the device's latest response (0 before any)."""

    def __init__(self, host_port, dev_port, seed=0):
        self.host_port, self.dev_port = host_port, dev_port
        self.faults = LinkFaults(seed=seed)
        self.answers, self.applied = [], []
        self.epoch = 0
        self.last_request = None          # (epoch, seq) of the host's latest request
        self.frames = {"in": 0, "out": 0}
        self._answers = {}                # seq -> the device's response, for requests sent by reset()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._run, name="relay", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def set_faults(self, loss=0.0, dup=0.0, reorder=0.0):
        self.faults.set(loss, dup, reorder)

    def to_host(self, frame):
        """Send a frame to the host as if the device had sent it (no faults)."""
        self.host_port.send(frame)

    def reset(self, timeout=120.0):
        """RESET the device as another host on the link would: in the host's session (its epoch, a
        sequence number 1000 past its latest), so the host learns of it only by STALE_EPOCH. Returns
        the device's new epoch."""
        with self._lock:
            if self.last_request is None:
                raise RuntimeError("no request seen from the host yet: its session is unknown")
            epoch, seq = self.last_request
            seq = (seq + 1000) & 0xFFFFFFFF
            self._answers[seq] = None
        self.dev_port.send(ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, D.NANOBPF_CTRL_MSG_RESET, seq, epoch))
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                f = self._answers.get(seq)
            if f is not None:
                with self._lock:
                    del self._answers[seq]
                if f.hdr["status"] != D.NANOBPF_CTRL_ST_OK:
                    raise RuntimeError(f"RESET refused: status {f.hdr['status']} {f.body!r}")
                return f.hdr["epoch"]
            time.sleep(0.02)
        raise TimeoutError(f"no answer to RESET within {timeout} s")

    def _run(self):
        ports = {self.host_port.fileno(): ("in", self.host_port, self.dev_port),
                 self.dev_port.fileno(): ("out", self.dev_port, self.host_port)}
        while not self._stop.is_set():
            ready, _, _ = select.select(list(ports), [], [], 0.1)
            for fd in ready:
                direction, src, dst = ports[fd]
                frame = src.recv(0)
                if frame is None:
                    continue
                self.frames[direction] += 1
                try:
                    f = ctrl.parse(frame)
                except ValueError:
                    f = None              # a malformed control frame passes as it is: the device judges
                if f is None:
                    dst.send(frame)
                    continue
                if direction == "in" and not f.hdr["flags"] & D.NANOBPF_CTRL_F_RESPONSE:
                    with self._lock:
                        self.last_request = (f.hdr["epoch"], f.hdr["seq"])
                elif direction == "out":
                    if self._seen_answer(f):
                        continue          # the answer to reset(): not the host's
                for fr in self.faults.through(direction, frame):
                    dst.send(fr)

    def _seen_answer(self, f):
        h = f.hdr
        with self._lock:
            self.epoch = h["epoch"] or self.epoch
            if h["flags"] & D.NANOBPF_CTRL_F_RESPONSE:
                self.answers.append((h["epoch"], h["seq"], h["type"], h["status"], h["flags"]))
            if h["seq"] in self._answers and h["type"] == D.NANOBPF_CTRL_MSG_RESET:
                self._answers[h["seq"]] = f
                self.applied.append((h["epoch"], h["seq"], h["type"]))
                return True
            if h["flags"] & D.NANOBPF_CTRL_F_RESPONSE and h["status"] == D.NANOBPF_CTRL_ST_OK \
                    and not h["flags"] & D.NANOBPF_CTRL_F_REPLAY:
                self.applied.append((h["epoch"], h["seq"], h["type"]))
        return False
