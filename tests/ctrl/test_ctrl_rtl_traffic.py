"""The control plane of the RTL DPU (4 cores: core 0 answers the control protocol, cores 1-3 run the
program) changing things while traffic flows, through the ports only (nanobpf.rtldev):
- key updates (RFC 9001 phase flips) under QUIC traffic on every data core: each packet sees the whole
  old entry or the whole new one, so every packet opens (a torn entry would fail its tag): 0 lost;
- a program swap under traffic: every frame is handled by the old program or the new one, whole, none
  lost, and every frame sent after the commit was answered meets the new one;
- a flood of control requests while data flows: the data frames all go through, and every request is
  answered or counted as dropped.
Needs root (TAP devices) and `make sim CORES=4 firmware`."""
import select
import struct
import threading
import time

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
import pytest

from ctrl_device import M, Raw, map_req, rtl_available, stand_in_image, stats_of, status
from nanobpf import ctrl, sim
from nanobpf.pcap import udp_frame
from nanobpf.quic import PacketKeys, protect

ok, why = rtl_available()
try:
    sim.sim_binary(4)
except FileNotFoundError as e:
    ok, why = False, str(e)
pytestmark = pytest.mark.skipif(not ok, reason=why)


def rtl(firmware):
    from nanobpf.rtldev import RtlDevice
    # dpu-quic_hw's boot (the record applied, the JIT, the boot configuration) takes some 5M cycles
    return RtlDevice(cores=4, firmware=firmware, ready_timeout=900)


def collect(port, until, n=None):
    """Data frames (not control) arriving on port until time `until` (or n of them)."""
    out = []
    while time.monotonic() < until and (n is None or len(out) < n):
        f = port.recv(max(0.0, until - time.monotonic()))
        if f is not None and ctrl.parse(f) is None:
            out.append(f)
    return out


def collect_until(ports, until, done):
    """Data frames arriving on any of `ports` ({port: [frames]}), until done(frames) says every frame
    the test waits for is in, or time `until` (then the test's assertions say what is missing)."""
    got = {p: [] for p in ports}
    while not done(got) and time.monotonic() < until:
        ready, _, _ = select.select(list(ports), [], [], max(0.0, until - time.monotonic()))
        for p in ready:
            f = p.recv(0)
            if f is not None and ctrl.parse(f) is None:
                got[p].append(f)
    return got


def answers_until_stats(r, first, n, quiet=60.0):
    """Answers to the n STATS requests from seq `first` on, then the stats: a STATS request sent now is
    taken after all of them (core 0 takes control frames in arrival order), so when its answer is in,
    every earlier request has been answered or shed. While the burst still holds packet memory that
    closing request may be shed itself (ctrl_shed) or dropped (drop_full): after `quiet` seconds
    without an answer another is sent. Returns (the seqs answered, the stats, the closing requests sent
    before the one answered: each is in ctrl_shed or drop_full)."""
    closers, answered = [r.send(M.NANOBPF_CTRL_MSG_STATS)], set()
    while True:
        f = r.answer(quiet)
        if f is None:
            assert len(closers) < 10, f"no answer to the closing STATS (seqs {closers})"
            closers.append(r.send(M.NANOBPF_CTRL_MSG_STATS))
            continue
        if f.hdr["type"] != M.NANOBPF_CTRL_MSG_STATS:
            continue
        assert status(f) == "ok"
        if f.hdr["seq"] in closers:
            return answered, stats_of(f.body), closers.index(f.hdr["seq"])
        if first <= f.hdr["seq"] < first + n:
            answered.add(f.hdr["seq"])


def test_key_updates_under_traffic_lose_no_packet():
    """Two entries for one connection that both open both key phases (E1: phase 0 with K0, next K1;
    E2: phase 1 with K1, next K0), swapped 12 times while 48 packets of alternating phases arrive: all
    48 open and reach the host in order, marked DECRYPTED, with their plaintext."""
    k0 = PacketKeys.from_secret(bytes(range(32)))
    k1 = PacketKeys.from_secret(bytes(range(1, 33)), hp=k0.hp)
    cid = bytes.fromhex("c1d2e3f4a5b6c7d8")
    value = lambda kp, cur, nxt: struct.pack(abi.STRUCTS["quic_keys"].fmt, kp, abi.NANOBPF_QUIC_KEY_NEXT, len(cid), 0,
                                             cur.key + nxt.key, cur.iv + nxt.iv, k0.hp, b"")
    e1, e2 = value(0, k0, k1), value(1, k1, k0)
    frames, plains = [], []
    for pn in range(48):
        phase = pn & 1
        plain = bytes([0x40 | (phase << 2)]) + cid + bytes([pn]) + bytes([pn]) * 40
        frames.append(udp_frame(protect(plain, k1 if phase else k0, largest_pn=pn - 1, short_cid_len=len(cid)),
                                "10.9.0.2", "10.0.0.1", 50000, 443))
        plains.append(ctrl.add_shim(udp_frame(plain, "10.9.0.2", "10.0.0.1", 50000, 443), D.NANOBPF_SHIM_F_DECRYPTED))
    with rtl("dpu-quic_hw") as dev:        # the QUIC program built in (its boot configuration: port 443)
        r = Raw(ctrl.PacketPort(dev.host_if))  # a socket of its own: it sees every frame, as collect() does
        r.hello()
        f = r.ask(M.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", cid_len=len(cid), dir=0, cid=cid, keys=e1))
        assert status(f) == "ok", f.body
        updates = []

        def flip():
            for i in range(12):
                time.sleep(0.4)
                f = r.ask(M.NANOBPF_CTRL_MSG_KEY_UPDATE,
                          D.pack("key_msg", cid_len=len(cid), dir=0, cid=cid, keys=e2 if i % 2 == 0 else e1))
                updates.append(status(f))
        t = threading.Thread(target=flip)
        t.start()
        # three at a time: JBSQ gives a burst one frame per data core, so every core opens some while
        # the entry flips (frames paced one by one went to the first idle cores only, as many as the
        # simulation's speed on the day made them overlap: [37, 11, 0] on a fast day)
        for k in range(0, len(frames), 3):
            for fr in frames[k:k + 3]:
                dev.net.send(fr)
            time.sleep(0.3)
        t.join()
        got = collect(dev.host, time.monotonic() + 120, n=len(frames))
        s = r.stats()
    assert updates == ["ok"] * 12
    assert got == plains, f"{len(got)} of {len(plains)} opened"
    assert s["decrypted"] == 48 and s["xdp_drop"] == 0
    core_packets = [dev.counters[f"core{c}"]["packets"] for c in range(1, 4)]
    assert sum(core_packets) == 48 and all(core_packets), f"packets per data core: {core_packets}"


def test_program_swap_under_traffic_loses_no_packet():
    """dpu-wire's built-in program echoes UDP to port 7 (back to the network, MAC addresses swapped);
    the stand-in program loaded over it passes such frames on to the host unchanged. 60 frames stream
    in while the new program is verified, compiled and published: each comes out exactly once, from
    one program or the other, and every frame sent after the commit's answer meets the new one."""
    frames = [udp_frame(i.to_bytes(2, "big") * 20, "10.9.0.2", "10.0.0.1", 40000 + i, 7) for i in range(60)]
    swapped = lambda f: f[6:12] + f[0:6] + f[12:]
    with rtl("dpu-wire") as dev:
        r = Raw(ctrl.PacketPort(dev.host_if))
        r.hello()
        result, sent = {}, []

        def load():
            from ctrl_device import load_raw
            try:
                result["f"] = load_raw(r, stand_in_image())
                result["at"] = len(sent)         # frames from here on were sent after the answer
            except BaseException as e:           # reported by the test, not lost with the thread
                result["error"] = e
        t = threading.Thread(target=load)
        t.start()
        for i, fr in enumerate(frames[:50]):
            dev.net.send(fr)
            sent.append(i)
            time.sleep(0.5)
        t.join()
        for i, fr in enumerate(frames[50:], 50):
            dev.net.send(fr)
            sent.append(i)
            time.sleep(0.2)
        got = collect_until([dev.net, dev.host], time.monotonic() + 120,
                            lambda got: sum(map(len, got.values())) >= len(frames))
        echoed, passed = got[dev.net], got[dev.host]
    assert "error" not in result, f"loading the program failed: {result['error']!r}"
    assert status(result["f"]) == "ok", result["f"].body
    assert set(echoed) <= {swapped(f) for f in frames} and set(passed) <= set(frames)
    idx = sorted([frames.index(swapped(f)) for f in echoed] + [frames.index(f) for f in passed])
    assert idx == list(range(len(frames))), f"lost or doubled: {sorted(set(range(60)) - set(idx))}"
    after = set(range(result["at"], len(frames)))
    assert after <= {frames.index(f) for f in passed}, "a frame sent after the commit met the old program"
    assert echoed and passed                     # the swap happened while frames were flowing


def test_a_control_flood_does_not_stop_the_data_path():
    """200 STATS requests sent back to back while 40 data frames stream through the data cores. While
    control frames wait they hold packet-memory slots; with a quarter of them or fewer free, core 0
    drops control frames unanswered (ctrl_shed), so the data path keeps going. A burst can still fill
    every slot before core 0 sheds it (the packet path then drops whatever arrives, data included, and
    counts it: drop_full; a hardware limit on control frames would bound this): every frame is
    accounted for, every request answered or counted, and once the burst is over data flows again."""
    frames = [udp_frame(i.to_bytes(2, "big") * 20, "10.9.0.2", "10.0.0.1", 41000 + i, 7) for i in range(50)]
    with rtl("dpu-wire") as dev:
        r = Raw(ctrl.PacketPort(dev.host_if))
        r.hello()
        first = r.seq + 1

        def flood():
            for _ in range(200):
                r.send(M.NANOBPF_CTRL_MSG_STATS)
        t = threading.Thread(target=flood)
        t.start()
        for fr in frames[:40]:
            dev.net.send(fr)
            time.sleep(0.05)
        t.join()
        answers, s, lost_closers = answers_until_stats(r, first, 200)
        for fr in frames[40:]:                   # after the burst: everything goes through
            dev.net.send(fr)
            time.sleep(0.05)
        # the burst's frames came out or were dropped long before these 10 are through
        late = {f[6:12] + f[0:6] + f[12:] for f in frames[40:]}
        out = collect_until([dev.net], time.monotonic() + 120, lambda got: late <= set(got[dev.net]))[dev.net]
    swapped = {f[6:12] + f[0:6] + f[12:] for f in frames}
    echoed, after = [f for f in out if f not in late], [f for f in out if f in late]
    assert set(out) <= swapped and len(after) == 10
    full = dev.counters["pkt"]["drop_full"]
    assert len(echoed) + len(answers) + s["ctrl_shed"] + full == 240 + lost_closers, \
        (len(echoed), len(answers), s["ctrl_shed"], full, lost_closers)
    # the data path kept going through the flood: frames sent during it came out. How many depends on
    # the simulation's speed against this test's wall-clock pacing (the slower the simulation, the more
    # of the 40 arrive while the burst fills the slots): 30 or more on an idle machine, 23 seen with a
    # synthesis running alongside, so only "some" is asserted; the accounting above is exact either way
    assert answers and echoed, (len(echoed), full)
