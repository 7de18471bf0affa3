"""The DPU wire to wire: frames from pcap files into the simulated SoC's host and network ports, through
the PISA pipeline, the reassembly buffer, the core select, the data cores running the built-in XDP
program (firmware dpu-wire, program tests/ebpf/device/xdp_wire.c), the reorder unit, the egress and
the deparser, out of the ports; the same frames through the device model (nanobpf.devmodel with its
PISA stage). The frames out of each port must be the same, in the same order per ingress port, and
every frame is accounted for: frames in = frames out + drops by reason.

Needs `make test-prereqs` (the 1- and 4-core models and the firmware)."""
import random

import pytest

import nanobpf_ctrl_defs as D
from nanobpf import BUILD, ctrl, wire
from nanobpf.pcap import udp_frame

IMAGE = BUILD / "firmware/bpf/xdp_wire.nbpf"


def frames(seed, n):
    """n frames per port of what xdp_wire does something with, plus what the PISA parser drops."""
    rng = random.Random(seed)
    host, net, parse_frames = [], [], []
    for i in range(n):
        for side, out in (("host", host), ("net", net)):
            kind = rng.choice(["pass", "pass", "pass", "v6", "drop", "echo", "redirect", "tag", "arp", "parse",
                               "bad_csum", "runt", "truncated_ip", "jumbo", "seal", "bad_shim"]
                              + (["ctrl"] if side == "net" else []))
            size = rng.choice([1, 7, 60, 200, 512, 1000, 1400, 1472])
            payload = bytes(rng.randrange(256) for _ in range(size))
            src, dst = ("10.0.0.1", "10.0.0.2") if side == "host" else ("10.0.0.2", "10.0.0.1")
            dport = {"drop": 9, "echo": 7, "redirect": 19}.get(kind, 443)
            if kind == "v6":
                f = udp_frame(payload, "fd00::1", "fd00::2", 1000 + i, 443)
            elif kind == "parse":       # the program finds UDP where PISA said and echoes PISA's parse
                payload = payload[:1400] + bytes(12)
                # IPv4 and IPv6 in turn (VLAN-tagged frames have no logical port in the boot tables: PISA drops them)
                parse_frames.append(side)
                v6 = len(parse_frames) % 2 == 0
                f = udp_frame(payload, *(("fd00::1", "fd00::2") if v6 else (src, dst)), 1000 + i, 13)
            else:
                f = udp_frame(payload, src, dst, 1000 + i, dport)
            if kind == "tag":   # removed by the program on frames from the host, passed as they are from the network
                f = f[:12] + b"\x88\xb7" + bytes([i & 0xFF, side == "host"]) + f[12:]
            elif kind == "arp":
                f = bytes(6 * [0xFF]) + bytes([2, 0, 0, 0, 0, i & 0xFF]) + b"\x08\x06" + bytes(28 + (i % 19))
            elif kind == "bad_csum":   # the PISA parser drops it (bad_ip_csum)
                f = f[:24] + bytes([f[24] ^ 0x55]) + f[25:]
            elif kind == "runt":        # shorter than an Ethernet header
                f = f[:rng.randrange(1, 14)]
            elif kind == "truncated_ip":
                f = f[:14 + rng.randrange(1, 20)]
            elif kind == "jumbo":       # longer than the 1522-byte maximum frame
                f = udp_frame(bytes(1600), src, dst, 1, 443)
            elif kind == "seal":        # "seal this": xdp_wire cannot, so it must never leave (fail closed)
                f = ctrl.add_shim(f, D.NANOBPF_SHIM_F_ENCRYPT, rng.randrange(21))
            elif kind == "bad_shim":    # DECRYPTED from the host, a CID longer than 20, a cut shim
                f = rng.choice([ctrl.add_shim(f, D.NANOBPF_SHIM_F_DECRYPTED), ctrl.add_shim(f, D.NANOBPF_SHIM_F_ENCRYPT, 21),
                                ctrl.add_shim(f, D.NANOBPF_SHIM_F_ENCRYPT)[:15]])
            elif kind == "ctrl":        # a control frame from the network: never obeyed, dropped by the parser
                f = ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, D.NANOBPF_CTRL_MSG_HELLO, i + 1, 0, b"")
            out.append(f)
    return host, net


def parse_echoes(frames):
    """The frames xdp_wire echoed with PISA's parse result (UDP to port 13): (parse fields in the payload,
    what they must be from the frame's own headers)."""
    out = []
    for f in frames:
        f = f[1] if isinstance(f, tuple) else f   # the model's: (ingress port, frame)
        o = 12
        while int.from_bytes(f[o:o + 2], "big") in (0x8100, 0x88A8):
            o += 4
        et, l3 = int.from_bytes(f[o:o + 2], "big"), o + 2
        l4 = l3 + (20 if et == 0x0800 else 40 if et == 0x86DD else 0)
        if et not in (0x0800, 0x86DD) or f[l4 + 2:l4 + 4] != b"\x00\x0d":
            continue
        got = tuple(int.from_bytes(f[l4 + 8 + 2 * k:l4 + 10 + 2 * k], "big") for k in range(6))
        out.append((got, (l3, l4, 0, 0, 0, 0)))   # no QUIC profile in the boot tables: no QUIC fields
    return out


def accounted(dev, ref):
    """Frames in = frames out + drops, on the DPU's own counters; and the model counts the same drops."""
    pisa, pkt = dev.counters["pisa"], dev.counters["pkt"]
    drops = dev.counters["pisa_drops"]
    frames_in = dev.sent["host"] + dev.sent["net"]
    assert pisa["rx"] == frames_in
    assert pisa["dropped"] == sum(drops.values())
    assert pisa["rx"] == pisa["to_cores"] + pisa["to_host"] + pisa["to_network"] + pisa["dropped"]
    assert pkt["rx"] + pkt["drop_full"] == pisa["to_cores"]
    assert pkt["rx"] == pkt["released"] and pkt["released"] == pkt["released_drop"] + pkt["egress"] + pkt["egress_bad"]
    assert pkt["free_slots"] == 64 and pkt["bad_completions"] == 0
    assert pisa["tx"] + pisa["tx_dropped"] == pkt["egress"] + pisa["to_host"] + pisa["to_network"]
    out = len(dev.out["host"]) + len(dev.out["net"])
    assert pisa["tx"] == out
    ports = dev.counters["ports"]   # per port, as the host can read them (pkt.counter rx_port*/tx_port*)
    assert (ports["host_rx"], ports["net_rx"]) == (dev.sent["host"], dev.sent["net"])
    assert (ports["host_tx"], ports["net_tx"]) == (len(dev.out["host"]), len(dev.out["net"]))
    assert frames_in == out + pisa["dropped"] + pkt["drop_full"] + pkt["released_drop"] + pkt["egress_bad"] + pisa["tx_dropped"]
    # the model drops the same frames in the PISA stage, in the program and in its shim rules
    assert ref.counters["pisa_drop"] == pisa["dropped"]
    assert ref.counters["xdp_drop"] + ref.counters["encrypt_unsealed"] + ref.counters["bad_shim"] == pkt["released_drop"]
    cores = [v for k, v in dev.counters.items() if k.startswith("core")]
    assert sum(c["encrypt_unsealed"] for c in cores) == ref.counters["encrypt_unsealed"]
    assert sum(c["bad_shim"] for c in cores) == ref.counters["bad_shim"]


@pytest.mark.parametrize("cores", [1, 4])
def test_wire_to_wire_agrees_with_the_model(cores, tmp_path):
    host, net = frames(seed=cores, n=24 if cores == 1 else 40)
    ref = wire.run_model(IMAGE, host, net)
    dev = wire.run_sim(cores, "dpu-wire", host, net, workdir=tmp_path)
    assert dev.result.returncode == 0 and dev.result.bus_errors == 0, dev.result.output
    assert not wire.compare(dev, ref), (wire.compare(dev, ref), dev.result.output)
    accounted(dev, ref)
    # the program found UDP at the offset PISA parsed (IPv4 and IPv6), not by parsing
    echoes = parse_echoes(dev.out["host"] + dev.out["net"])
    assert echoes and all(got == want for got, want in echoes), echoes
    assert len({want for _, want in echoes}) == 2, echoes   # both header layouts
    # every kind of way out was taken, on each core count
    per_core = [dev.counters[f"core{c}"] for c in range(cores)]
    total = {k: sum(c[k] for c in per_core) for k in ("drop", "pass", "tx", "redirect")}
    assert all(total.values()), total
    if cores > 1:   # the core select spread the packets over the cores (JBSQ: the least loaded)
        assert sum(1 for c in per_core if c["packets"]) >= 2, per_core


def test_back_pressure_slots_run_out_and_come_back(tmp_path):
    """More frames than packet-memory slots, back to back on both ports at full speed into one core: the
    reassembly buffer drops what finds no slot (counted: rx_drop_full), everything else goes through,
    and every slot is free again at the end."""
    host = [udp_frame(bytes([i & 0xFF]) * 64, "10.0.0.1", "10.0.0.2", 7000 + i, 443) for i in range(150)]
    net = [udp_frame(bytes([i & 0xFF]) * 64, "10.0.0.2", "10.0.0.1", 443, 7000 + i) for i in range(150)]
    dev = wire.run_sim(1, "dpu-wire", host, net, workdir=tmp_path)
    assert dev.result.returncode == 0, dev.result.output
    pisa, pkt = dev.counters["pisa"], dev.counters["pkt"]
    assert pkt["drop_full"] > 0, pkt            # the core is slower than the wire
    assert pkt["free_slots"] == 64
    out = len(dev.out["host"]) + len(dev.out["net"])
    assert out == pkt["rx"] and out + pkt["drop_full"] == 300
    # what got through is in order per port
    for port, sent in (("host", net), ("net", host)):
        got = dev.out[port]
        assert got == [f for f in sent if f in set(got)]


def test_control_frames_only_from_the_host(tmp_path):
    """Control frames (EtherType 0x88B5) from the host go to core 0's queue and are answered there (these
    HELLOs have no body: BAD_LENGTH); from the network the parser drops them (ctrl_foreign), and
    data-frame shims from the network likewise (shim_foreign): nothing answers them, nothing of them
    leaves the DPU."""
    hello = [ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, D.NANOBPF_CTRL_MSG_HELLO, seq, 0, b"") for seq in range(1, 7)]
    shim = [ctrl.add_shim(udp_frame(b"x" * 40, "10.0.0.2", "10.0.0.1", 443, 5), D.NANOBPF_SHIM_F_DECRYPTED)] * 3
    data = [udp_frame(bytes([i]) * 50, "10.0.0.2", "10.0.0.1", 443, 1000 + i) for i in range(4)]
    dev = wire.run_sim(4, "dpu-wire", hello, hello[:3] + shim + data, workdir=tmp_path)
    assert dev.result.returncode == 0, dev.result.output
    drops = dev.counters["pisa_drops"]
    assert drops["ctrl_foreign"] == 3 and drops["shim_foreign"] == 3, drops
    assert dev.counters["core0"]["ctrl"] == 6 and dev.counters["core0"]["packets"] == 0   # core 0 runs no data
    assert sum(dev.counters[f"core{c}"]["ctrl"] for c in (1, 2, 3)) == 0
    answers = [ctrl.parse(f) for f in dev.out["host"] if ctrl.parse(f) is not None]
    assert [f for f in dev.out["host"] if ctrl.parse(f) is None] == data and dev.out["net"] == []
    assert sorted(a.hdr["seq"] for a in answers) == list(range(1, 7))
    assert all(a.hdr["status"] == D.NANOBPF_CTRL_ST_BAD_LENGTH and a.dst == ctrl.HOST_MAC for a in answers)


QUIC_IMAGE = BUILD / "firmware/bpf/xdp_quic_hw.nbpf"


def test_quic_protection_wire_to_wire(tmp_path):
    """QUIC packet protection through the datapath (firmware dpu-quic_hw: sw/ebpf/quic/xdp_quic_hw.c
    with the keys of nanobpf.quic.workload in its boot configuration, the crypto on the AEAD engine):
    six connections (CIDs of 0, 5, 6, 8, 12 and 20 bytes, IPv4 and IPv6), 1-RTT packets from the
    network opened for the host (with the DECRYPTED shim), plaintext from the host marked for sealing
    sealed for the network: byte for byte what the reference protection (nanobpf.quic) gives, and what
    the device model does with the same program and keys."""
    from nanobpf.quic.workload import workload
    w = workload(seed=1)
    dev = wire.run_sim(1, "dpu-quic_hw", w.host, w.net, workdir=tmp_path, max_cycles=150_000_000, timeout=3000)
    assert dev.result.returncode == 0 and dev.result.bus_errors == 0, dev.result.output
    assert dev.out["host"] == w.expect_host
    assert dev.out["net"] == w.expect_net
    ref = wire.run_model(QUIC_IMAGE, w.host, w.net, boot=w.boot)
    assert not wire.compare(dev, ref)
    core = dev.counters["core0"]
    assert core["encrypt_unsealed"] == 0 and core["bad_shim"] == 0


def test_quic_forged_tags_never_reach_the_host(tmp_path):
    """Frames from the network with a forged tag (one bit of it flipped) among authentic ones, six
    connections (CIDs of 0 to 20 bytes, IPv4 and IPv6), through the 4-core DPU. xdp_quic_hw leaves the
    verdict to the engine (quic_aead_open with NANOBPF_AEAD_COMMIT): the core holds the frame while it
    runs the next and releases it once the engine is done. A forged frame is never delivered, and it
    is counted as the program counts a forged tag when it sees the verdict itself: an XDP_DROP, in the
    program's quic_drops as tag_mismatch and in quic_stats as dropped, never as opened; and frames in =
    frames out + drops by reason, as in the device model."""
    from nanobpf.quic.workload import workload
    w = workload(seed=1)
    forged = set(range(1, len(w.net), 3))
    net = [f[:-1] + bytes([f[-1] ^ 0x20]) if i in forged else f for i, f in enumerate(w.net)]
    dev = wire.run_sim(4, "dpu-quic_hw", w.host, net, workdir=tmp_path, max_cycles=60_000_000, timeout=2400)
    assert dev.result.returncode == 0 and dev.result.bus_errors == 0, dev.result.output
    assert dev.out["host"] == [f for i, f in enumerate(w.expect_host) if i not in forged]
    assert dev.out["net"] == w.expect_net
    ref = wire.run_model(QUIC_IMAGE, w.host, net, boot=w.boot)
    assert not wire.compare(dev, ref)
    accounted(dev, ref)
    cores = [dev.counters[f"core{c}"] for c in (1, 2, 3)]
    good = len(net) - len(forged)
    assert sum(c["drop"] for c in cores) == len(forged) and sum(c["opened"] for c in cores) == good
    stats, drops = dev.counters["quic_stats"], dev.counters["quic_drops"]
    assert (stats["opened"], stats["dropped"], drops["tag_mismatch"]) == (good, len(forged), len(forged))
    assert sum(drops.values()) == len(forged) and stats["sealed"] == len(w.host)


# SJBSQ's run in make test-long (the policy's own checks are sim/cocotb/coresel's, in make test)
def tag(frame, vid):
    """The frame with an 802.1Q tag of VLAN `vid` (priority 0) after its MAC addresses."""
    return frame[:12] + b"\x81\x00" + vid.to_bytes(2, "big") + frame[12:]


def untag(frame):
    """(VLAN ID or None, the frame without its outer 802.1Q tag)."""
    if frame[12:14] == b"\x81\x00":
        return int.from_bytes(frame[14:16], "big") & 0xFFF, frame[:12] + frame[16:]
    return None, frame


def test_quic_one_arm_vlans(tmp_path):
    """The board's one-arm mode in the SoC: the host link and the network link as two VLANs on the host
    physical port (the default board's board.toml [dpu] host_vid and net_vid; firmware dpu-quic_onearm:
    the board's tables, written at boot by the same entries as the board's image, with the QUIC
    workload's keys). The workload both ways, interleaved on that one port: the ingress takes each tag
    off, the program sees the frames as on an untagged link, and every frame leaves on the same port
    tagged with the other link's VLAN, byte for byte what the reference protection gives, in order per
    VLAN. A control frame on the host VLAN is answered there; on the network VLAN it is dropped
    (ctrl_foreign); untagged frames and another VLAN's are dropped too (no_lport): in = out + drops."""
    from nanobpf.board import facts
    from nanobpf.quic.workload import workload
    dpu = facts.load(facts.DEFAULT_BOARD).dpu
    host_vid, net_vid = dpu.host_vid, dpu.net_vid
    w = workload(seed=1)
    hello = ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, D.NANOBPF_CTRL_MSG_HELLO, 1, 0, b"")   # no body: BAD_LENGTH
    stray = udp_frame(b"stray" * 10, "10.0.0.2", "10.0.0.1", 443, 5)
    strays = [stray, tag(stray, 99), tag(hello, net_vid)]
    ins = [tag(hello, host_vid)] + [tag(f, vid) for _, f, vid in sorted(
        [(2 * i, f, host_vid) for i, f in enumerate(w.host)] + [(2 * i + 1, f, net_vid) for i, f in enumerate(w.net)],
        key=lambda x: x[0])] + strays
    dev = wire.run_sim(1, "dpu-quic_onearm", ins, [], workdir=tmp_path, max_cycles=150_000_000, timeout=3000)
    assert dev.result.returncode == 0 and dev.result.bus_errors == 0, dev.result.output
    assert dev.out["net"] == []                      # one port: everything leaves where it came in
    by_vid = {}
    for f in dev.out["host"]:
        vid, inner = untag(f)
        by_vid.setdefault(vid, []).append(inner)
    assert set(by_vid) == {host_vid, net_vid}, set(by_vid)
    answers = [ctrl.parse(f) for f in by_vid[host_vid] if ctrl.parse(f) is not None]
    assert len(answers) == 1 and answers[0].hdr["status"] == D.NANOBPF_CTRL_ST_BAD_LENGTH
    assert [f for f in by_vid[host_vid] if ctrl.parse(f) is None] == w.expect_host
    assert by_vid[net_vid] == w.expect_net
    drops = dev.counters["pisa_drops"]
    assert drops["no_lport"] == 2 and drops["ctrl_foreign"] == 1, drops
    assert dev.counters["pisa"]["rx"] == len(ins) and len(dev.out["host"]) + sum(drops.values()) == len(ins)


@pytest.mark.parametrize("firmware", ["dpu-quic_hw", pytest.param("dpu-quic_hw_sjbsq", marks=pytest.mark.long)])
def test_quic_one_connection_on_every_core(tmp_path, firmware):
    """One connection's packets in both directions spread over the three data cores (JBSQ spreads them;
    SJBSQ starts at the connection's core and spills over when its queue is full), with some host
    frames sent twice back to back, so that two cores race to seal the same packet number: no number
    is sealed twice (the copy is dropped), every packet opened, byte for byte what the reference
    protection gives and what the device model does. A seal that cores overtook by NANOBPF_QUIC_PN_CLAIMS
    or more of its connection's numbers is refused as PN_REUSED and counted (the claim window,
    docs/ebpf-quic.md): whether that happens depends on the cores' timing, so the sealed frames must be
    the reference's in order with such gaps, each gap a counted drop. Core 0 applies the build host's
    verification record of xdp_quic_hw and JIT-compiles it (about 5M cycles of the run)."""
    from nanobpf.quic.workload import workload
    w = workload(seed=1, connections=1, packets=24)   # connection 0 of the firmware's boot configuration
    host = []
    for i, f in enumerate(w.host):
        host += [f, f] if i % 5 == 2 else [f]
    copies = len(host) - len(w.host)
    dev = wire.run_sim(4, firmware, host, w.net, workdir=tmp_path, max_cycles=30_000_000, timeout=2400)
    assert dev.result.returncode == 0 and dev.result.bus_errors == 0, dev.result.output
    assert dev.out["host"] == w.expect_host                            # every packet opened, in order
    rest = iter(w.expect_net)                                          # sealed: the reference's, in order, gaps allowed
    assert all(f in rest for f in dev.out["net"]), "a sealed frame out of order, twice, or not the reference's"
    lost = len(w.expect_net) - len(dev.out["net"])
    ref = wire.run_model(QUIC_IMAGE, host, w.net, boot=w.boot)       # the model (one packet at a time) loses none
    assert [f for _, f in ref.out["host"]] == dev.out["host"] and [f for _, f in ref.out["net"]] == w.expect_net
    cores = [dev.counters[f"core{c}"] for c in (1, 2, 3)]
    assert all(c["packets"] > 0 for c in cores), cores                 # the connection was on every data core
    assert sum(c["drop"] for c in cores) == copies + lost              # each copy and each gap refused and counted
    assert lost <= len(w.expect_net) // 2, f"{lost} of {len(w.expect_net)} seals refused"   # not a sealing path that fails
    assert sum(c["encrypt_unsealed"] + c["bad_shim"] for c in cores) == 0


@pytest.mark.long   # about 5 minutes of simulation: what make demo runs
def test_quic_demo(tmp_path):
    """make demo's run (nanobpf-wire --quic): the synthetic connections, the aioquic exchange captured
    when the firmware was built (when it could be) and RFC 9001 A.2 through the 4-core DPU with
    dpu-quic_demo; the tool checks every frame against the reference protection and the model."""
    from nanobpf import BUILD
    r = wire.main(["--quic", "--cores", "4", "--out", str(tmp_path)])
    assert r == 0
    if not (BUILD / "firmware/bpf/quic_capture/meta.json").exists():
        pytest.skip("passed, but without the aioquic capture (making it needs root when the firmware is built)")


def test_tap_ports(tmp_path):
    """The simulated DPU on two TAP devices, as a host stack or the Python tools would use it: frames
    written on the network TAP come out of the host TAP through the 4-core DPU, an echo (UDP port 7)
    comes back on the network TAP; SIGINT drains the run, which ends with the firmware's counters."""
    import os
    import signal
    import subprocess
    import time
    from nanobpf import sim
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        pytest.skip("needs root and /dev/net/tun for TAP devices")
    host_if, net_if = "nbsimh0", "nbsimn0"
    proc = subprocess.Popen([str(sim.sim_binary(4)), "--firmware", str(sim.firmware_image("dpu-wire")),
                             "--host-tap", host_if, "--net-tap", net_if, "--max-cycles", "100000000"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not all(os.path.exists(f"/sys/class/net/{i}") for i in (host_if, net_if)):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            time.sleep(0.2)
        host, net = ctrl.PacketPort(host_if), ctrl.PacketPort(net_if)
        marker = os.urandom(8)
        sent = [udp_frame(marker + bytes([i]) * 40, "10.0.0.2", "10.0.0.1", 443, 2000 + i) for i in range(5)]
        echo = udp_frame(marker + b"echo" * 10, "10.0.0.2", "10.0.0.1", 5, 7)
        time.sleep(2)   # the firmware is configured within a few seconds (frames wait in the TAP meanwhile)
        for f in sent + [echo]:
            net.send(f)
        got_host, got_net = [], []
        deadline = time.monotonic() + 240
        while (len(got_host) < len(sent) or not got_net) and time.monotonic() < deadline:
            for port, got in ((host, got_host), (net, got_net)):
                f = port.recv(0.2)       # frames the simulated DPU sent (a packet socket skips our own)
                if f is not None and marker in f:
                    got.append(f)
        assert got_host == sent, (len(got_host), len(sent))
        assert len(got_net) == 1 and got_net[0][:6] == echo[6:12] and got_net[0][6:12] == echo[:6]  # MACs swapped
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
        assert "DPU pkt" in out and "nanobpf-sim: eth: host in" in out, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("case", ["not_pcap", "pcapng", "not_ethernet", "cut_record", "cut_header", "empty_frame", "snapped"])
def test_bad_capture_files_are_refused(case, tmp_path):
    """nanobpf-sim refuses an input file it cannot take whole, naming the file and the record, before it
    simulates anything (exit code `usage`)."""
    import struct
    import subprocess
    from nanobpf import sim
    hdr = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    frame = udp_frame(b"x" * 20, "10.0.0.2", "10.0.0.1", 1, 2)
    rec = struct.pack("<IIII", 0, 0, len(frame), len(frame)) + frame
    content, message = {
        "not_pcap": (b"hello, this is not a capture", "bad magic"),
        "pcapng": (struct.pack("<I", 0x0A0D0D0A) + bytes(40), "pcapng is not supported"),
        "not_ethernet": (struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101) + rec, "is not Ethernet"),
        "cut_record": (hdr + rec[:-5], "record 1: truncated"),
        "cut_header": (hdr + rec + rec[:9], "record 2: truncated header"),
        "empty_frame": (hdr + struct.pack("<IIII", 0, 0, 0, 0), "record 1: empty frame"),
        "snapped": (hdr + struct.pack("<IIII", 0, 0, 10, len(frame)) + frame[:10], "larger snap length"),
    }[case]
    bad = tmp_path / "in.pcap"
    bad.write_bytes(content)
    p = subprocess.run([str(sim.sim_binary(1)), "--firmware", str(sim.firmware_image("dpu-wire")), "--net-in", str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == sim.EXIT_USAGE, p.stdout + p.stderr
    assert message in p.stderr and str(bad) in p.stderr, p.stderr
