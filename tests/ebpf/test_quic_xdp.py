"""The QUIC protection XDP programs against the reference packet protection (nanobpf.quic): RFC 9001
A.2 and A.3 opened and sealed bit-exactly (the long-header path), every 1-RTT packet of a real aioquic
exchange opened and re-sealed, and bad input (truncation at every length, forged tags and ciphertext,
missing next keys, unknown CIDs, fixed bit clear, oversize payloads, packet numbers across 2^32) with
the right action and drop counter each time.

Two programs share the protection code (sw/ebpf/quic/quic_protect.h): xdp_quic.c computes AES-GCM in
eBPF, xdp_quic_hw.c calls the device helpers quic_aead_seal/open and quic_hp_mask. Every test runs
each program on the device runtime's interpreter ("interp") and its RV64 JIT under qemu-riscv64
("jit"), both verified by the device verifier (nanobpf.ebpf.device), and xdp_quic also on the host
kernel with BPF_PROG_TEST_RUN ("linux", nanobpf.ebpf.linux; skipped where the kernel refuses; Linux
has no device helpers, so xdp_quic_hw is not run there). The default build (QUIC_MAX_PAYLOAD=1504) is
tested. test_linux_and_device_agree compares the backends directly, test_helpers_match_ebpf_crypto
the two programs, test_pisa_parse_result_gives_what_classification_gives xdp_quic_hw's open path with
and without PISA's parse result in its context."""
import pytest

from nanobpf.pcap import fix_udp_checksum, parse_udp, read_pcap, udp_frame
from nanobpf.quic import PacketKeys, next_secret, unprotect
from nanobpf.quic.vectors import A2_PROTECTED, A3_PLAIN, A3_PROTECTED, SERVER_KEYS
from quic_device import backend, obj, prog, pytest_generate_tests  # noqa: F401 (fixtures, parametrisation)
from quic_device import (BACKENDS, CID, DEVICE_ONLY, K0, K1, LO, MAX_PAYLOAD, NET, OPEN, SEAL, XDP_DROP,
                         XDP_PASS, XDP_TX, Device, available, build, const, frame_of, short_packet, shim, with_payload)


@pytest.fixture
def dev(obj, backend):
    d = Device(obj, backend)
    yield d
    d.close()


def test_rfc9001_a3_server_initial_open_and_seal(dev):
    """The long-header path (OFFLOAD_LONG) with the RFC's server Initial keys: bit-exact both ways."""
    dev.config(flags=const("NANOBPF_QUIC_CFG_OFFLOAD_LONG"), host_ifindex=LO)
    prot = udp_frame(A3_PROTECTED, "192.0.2.1", "192.0.2.2", 443, 50000)
    plain = udp_frame(A3_PLAIN, "192.0.2.1", "192.0.2.2", 443, 50000)
    dev.add_keys(b"", SERVER_KEYS, frame=prot)  # A.3's destination CID is empty: keyed by the peer's address
    # A.3's Length field counts the tag, as the plain form keeps it
    assert dev.run(prot) == (XDP_PASS, plain)
    assert dev.seal(plain, 0) == (XDP_TX, prot)
    stats = dev.counters("quic_stats")
    assert stats[const("NANOBPF_QUIC_STAT_OPENED")] == 1 and stats[const("NANOBPF_QUIC_STAT_SEALED")] == 1


def test_rfc9001_a2_client_initial_open_and_seal(dev):
    """A.2's client Initial (a 1162-byte payload padded to the 1200-byte minimum): bit-exact both ways."""
    from nanobpf.quic.vectors import A2_PLAIN, CLIENT_KEYS, DCID
    dev.config(flags=const("NANOBPF_QUIC_CFG_OFFLOAD_LONG"), host_ifindex=LO)
    dev.add_keys(DCID, CLIENT_KEYS)
    prot = udp_frame(A2_PROTECTED, "192.0.2.2", "192.0.2.1", 50000, 443)
    plain = udp_frame(A2_PLAIN, "192.0.2.2", "192.0.2.1", 50000, 443)
    assert dev.run(prot) == (XDP_PASS, plain)
    assert dev.seal(plain, len(DCID)) == (XDP_TX, prot)


def test_long_headers_pass_without_offload(dev):
    frame = udp_frame(A3_PROTECTED, "192.0.2.1", "192.0.2.2", 443, 50000)
    dev.add_keys(b"", SERVER_KEYS, frame=frame)
    assert dev.run(frame) == (XDP_PASS, frame)
    assert dev.stat("LONG_HEADER") == 1
    # the host cannot have them sealed: a marked long header is dropped, not sent as it is
    dev.config(host_ifindex=LO)
    assert dev.seal(udp_frame(A3_PLAIN, "192.0.2.1", "192.0.2.2", 443, 50000), 0)[0] == XDP_DROP
    assert dev.drops() == {"NOT_SEALABLE": 1}


# ---------------------------------------------------------------- 1-RTT packets built with the reference
@pytest.mark.parametrize("v6,vlan", [(False, None), (True, None), (False, 7), (True, 9)])
@pytest.mark.parametrize("size", [1, 15, 16, 17, 100, 496, MAX_PAYLOAD - 16])
def test_short_header_open_and_seal(obj, backend, v6, vlan, size):
    d = Device(obj, backend, host_ifindex=LO)
    try:
        d.add_keys(CID, K0, K1)
        payload = bytes((7 * i + size) & 0xff for i in range(size)) + bytes(max(0, 3 - size))
        plain, prot = short_packet(5, payload)
        pf, cf = frame_of(plain, v6, vlan), frame_of(prot, v6, vlan)
        assert d.run(cf) == (XDP_PASS, pf)
        assert d.seal(pf, len(CID)) == (XDP_TX, cf)
    finally:
        d.close()


def test_key_phase_selects_next_keys_and_missing_next_keys_drop(dev):
    dev.add_keys(CID, K0, K1)
    plain, prot = short_packet(9, b"phase one" * 3, keys=K1, phase=1)
    assert dev.run(frame_of(prot)) == (XDP_PASS, frame_of(plain))
    dev.add_keys(CID, K0)  # no next keys installed
    _, prot = short_packet(10, b"phase one again", keys=K1, phase=1, largest=9)
    assert dev.run(frame_of(prot))[0] == XDP_DROP
    assert dev.counters("quic_drops")[const("NANOBPF_QUIC_DROP_NO_KEYS")] == 1


def test_forgeries_are_dropped_never_passed(dev):
    dev.add_keys(CID, K0, K1)
    _, prot = short_packet(3, b"authentic data, 32 bytes long..")
    frame = frame_of(prot)
    hdr = len(frame) - len(prot)
    for pos in (len(frame) - 1, len(frame) - 16, hdr + 1 + 8 + 2, len(frame) - 20):  # tag, tag, ciphertext
        bad = bytearray(frame)
        bad[pos] ^= 0x01
        assert dev.run(fix_udp_checksum(bytes(bad)))[0] == XDP_DROP, pos
    assert dev.counters("quic_drops")[const("NANOBPF_QUIC_DROP_TAG_MISMATCH")] == 4
    assert dev.counters("quic_stats")[const("NANOBPF_QUIC_STAT_OPENED")] == 0


def test_unknown_cid_fixed_bit_and_other_ports(dev):
    dev.add_keys(CID, K0)
    _, prot = short_packet(1, b"x" * 40)
    other = bytes([prot[0]]) + bytes(8) + prot[9:]
    assert dev.run(frame_of(other)) == (XDP_PASS, frame_of(other))
    nofix = bytes([prot[0] & ~0x40]) + prot[1:]
    assert dev.run(frame_of(nofix))[0] == XDP_DROP
    dns = udp_frame(b"q" * 30, "10.0.0.1", "10.0.0.2", 5353, 53)
    assert dev.run(dns) == (XDP_PASS, dns)
    stats, drops = dev.counters("quic_stats"), dev.counters("quic_drops")
    assert stats[const("NANOBPF_QUIC_STAT_UNKNOWN_CID")] == 1 and stats[const("NANOBPF_QUIC_STAT_NOT_QUIC")] == 1
    assert drops[const("NANOBPF_QUIC_DROP_NO_FIXED_BIT")] == 1


def test_oversize_payload_dropped(dev):
    dev.add_keys(CID, K0)
    _, prot = short_packet(1, b"y" * (MAX_PAYLOAD + 1))
    assert dev.run(frame_of(prot))[0] == XDP_DROP
    assert dev.counters("quic_drops")[const("NANOBPF_QUIC_DROP_OVERSIZE")] == 1


def test_truncation_at_every_length(dev):
    """Every cut of a valid frame drops, for the reason the headers say (the IPv4 total length then
    lies beyond the frame; below the IPv4 header the frame is truncated). Linux test runs need at
    least the 14-byte Ethernet header."""
    dev.add_keys(CID, K0)
    _, prot = short_packet(1, b"z" * 64)
    frame = frame_of(prot)
    for n in range(14, len(frame)):
        assert dev.run(frame[:n])[0] == XDP_DROP, n
    drops = dev.counters("quic_drops")
    assert drops[const("NANOBPF_QUIC_DROP_TRUNCATED")] == 20
    assert drops[const("NANOBPF_QUIC_DROP_BAD_IPV4")] == len(frame) - 34
    assert sum(drops) == len(frame) - 14


def test_packet_numbers_across_2_to_the_32(dev):
    """RFC 9000 A.3 decoding near a wrap of the truncated number: 1- and 2-byte encodings."""
    dev.add_keys(CID, K0)
    base = (1 << 32) - 3
    dev.set_pn(CID, rx_next=base, direction=OPEN)
    largest = base - 1
    for pn in range(base, base + 6):
        for pn_len in (1, 2):
            plain, prot = short_packet(pn, b"pn %d" % pn + bytes(20), largest=largest, pn_len=pn_len)
            assert unprotect(prot, K0, largest_pn=largest).pn == pn
            assert dev.run(frame_of(prot)) == (XDP_PASS, frame_of(plain)), (pn, pn_len)
        largest = pn


# ---------------------------------------------------------------- real traffic
@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    from nanobpf.quic.capture import CaptureNotPermitted, capture as run_capture
    out = tmp_path_factory.mktemp("cap")
    try:
        meta = run_capture(out, streams=3, nbytes=800, key_update=True)
    except CaptureNotPermitted as e:
        pytest.skip(str(e))
    return out, meta


def test_aioquic_traffic_open_and_reseal(obj, backend, capture):
    from nanobpf.quic import parse_keylog, traffic_secrets
    out, meta = capture
    (c0, s0), = traffic_secrets(parse_keylog((out / "keylog.txt").read_text()))
    gens = {}
    for name, secret in (("client", c0), ("server", s0)):
        k0 = PacketKeys.from_secret(secret)
        gens[name] = (k0, PacketKeys.from_secret(next_secret(secret), hp=k0.hp))
    frames = [f for _, f in read_pcap(out / "quic.pcap")]
    short = [f for f in frames if not parse_udp(f).payload[0] & 0x80]
    assert short, "no 1-RTT packets captured"
    rx = Device(obj, backend, ports=(meta["server_port"],))
    tx = Device(obj, backend, ports=(meta["server_port"],), host_ifindex=LO)
    largest, opened, oversize, phases = {}, 0, 0, set()
    try:
        for f in short:
            u = parse_udp(f)
            side = "client" if u.dport == meta["server_port"] else "server"
            cid = u.payload[1:9]
            for d in (rx, tx):
                d.add_keys(cid, *gens[side])
            ref = None  # the key phase is under header protection: try both generations
            for k in gens[side]:
                try:
                    ref = unprotect(u.payload, k, largest_pn=largest.get(cid, -1))
                    break
                except ValueError:
                    continue
            assert ref is not None
            largest[cid] = max(largest.get(cid, -1), ref.pn)
            phases.add((side, ref.key_phase))
            action, got = rx.run(f)
            if len(u.payload) - ref.header_len - 16 > MAX_PAYLOAD:
                assert action == XDP_DROP
                oversize += 1
                continue
            want = with_payload(f, ref.plain)
            assert (action, got) == (XDP_PASS, want)
            assert tx.seal(want, len(cid)) == (XDP_TX, f)  # re-sealing gives the original bytes
            opened += 1
    finally:
        rx.close()
        tx.close()
    assert opened >= 10, (opened, oversize)
    assert {("client", 0), ("client", 1)} <= phases


# ---------------------------------------------------------------- the backends against each other
def oracle_frames():
    """Valid 1-RTT packets of several sizes and families, each cut short, corrupted and re-keyed."""
    out = []
    for size in (1, 33, 700, 1400):
        payload = bytes((3 * i) & 0xff for i in range(size)) + bytes(max(0, 3 - size))
        _, prot = short_packet(20 + size, payload, keys=K0)
        for v6, vlan in ((False, None), (True, 5)):
            f = frame_of(prot, v6, vlan)
            out += [f, f[:len(f) // 2], f[:-1]]
            bad = bytearray(f)
            bad[-3] ^= 0x80
            out.append(bytes(bad))
            out.append(frame_of(short_packet(20 + size, payload, keys=K1, phase=1)[1], v6, vlan))
    out.append(udp_frame(b"not quic", "10.0.0.1", "10.0.0.2", 1234, 53))
    return out


def test_linux_and_device_agree(obj):
    """The same frames through Linux, the device interpreter and the device JIT: the same action, the
    same bytes out and the same counters (Linux only for programs it can load)."""
    results = {}
    for name in BACKENDS:
        ok, why = available(name)
        if not ok or (name == "linux" and obj.stem in DEVICE_ONLY):
            continue
        d = Device(obj, name)
        try:
            d.add_keys(CID, K0, K1)
            runs = [d.run(f) for f in oracle_frames()]
            results[name] = (runs, d.counters("quic_stats"), d.counters("quic_drops"))
        finally:
            d.close()
    if len(results) < 2:
        pytest.skip(f"only {list(results)} can run here")
    ref_name, ref = next(iter(results.items()))
    assert sum(a == XDP_PASS for a, _ in ref[0]) >= 8  # the valid packets were opened
    for name, got in results.items():
        for k, (a, b) in enumerate(zip(ref[0], got[0])):
            assert a == b, f"frame {k}: {ref_name} {a[0]} vs {name} {b[0]}"
        assert got[1:] == ref[1:], name


# ---------------------------------------------------------------- the helper backend against the eBPF crypto
def comparison_sessions():
    """(name, setup, frames): each session starts from fresh maps; frames are (frame, ingress ifindex)."""
    from nanobpf.quic.vectors import A2_PLAIN, CLIENT_KEYS, DCID
    offload = const("NANOBPF_QUIC_CFG_OFFLOAD_LONG")
    families = [(False, None), (True, None), (False, 7), (True, 9)]
    sizes = [1, 15, 16, 17, 33, 100, 496, 700, 1400, MAX_PAYLOAD - 16]

    def payload(n):
        return bytes((5 * i + n) & 0xff for i in range(n)) + bytes(max(0, 3 - n))

    opened = oracle_frames()
    _, prot = short_packet(7, payload(64))
    cut = frame_of(prot)
    opened += [cut[:n] for n in range(14, len(cut))]  # truncation at every length
    opened += [with_payload(cut, prot[:n]) for n in range(1, 40)]  # QUIC packet cut inside a valid datagram
    opened += [frame_of(short_packet(100 + n, payload(n), keys=K1, phase=1, largest=99 + n)[1], v6, vlan)
               for n in (1, 17, 600) for v6, vlan in families]
    opened.append(frame_of(short_packet(1, b"y" * (MAX_PAYLOAD + 1))[1]))  # oversize
    # each sealed packet has a packet number of its own: the device refuses to seal one twice
    sealed = [frame_of(short_packet(200 + k, payload(n), phase=phase, largest=199 + k)[0], v6, vlan)
              for k, (n, (v6, vlan), phase) in enumerate((n, f, ph) for n in sizes for f in families for ph in (0, 1))]
    plain = frame_of(short_packet(300, payload(40))[0])
    sealed += [plain[:n] for n in range(14, len(plain), 3)]
    sealed += [with_payload(plain, parse_udp(plain).payload[:n]) for n in range(1, 30)]
    sealed.append(frame_of(short_packet(301, b"y" * (MAX_PAYLOAD + 1))[0]))
    # empty and 2-byte connection IDs: headers of 2..7 bytes (checksums of fewer than 8 bytes)
    tiny = {cid: [short_packet(400 + 4 * n + k, payload(n), pn_len=k, cid=cid, largest=399 + 4 * n + k)
                  for n in (4, 5, 7, 20) for k in (1, 2, 3, 4)] for cid in (b"", b"\x5a\xa5")}
    a3 = udp_frame(A3_PROTECTED, "192.0.2.1", "192.0.2.2", 443, 50000)
    a2 = udp_frame(A2_PROTECTED, "192.0.2.2", "192.0.2.1", 50000, 443)
    a2_plain = udp_frame(A2_PLAIN, "192.0.2.2", "192.0.2.1", 50000, 443)
    a3_plain = udp_frame(A3_PLAIN, "192.0.2.1", "192.0.2.2", 443, 50000)
    empty_v4, empty_v6 = frame_of(tiny[b""][0][1]), frame_of(tiny[b""][0][1], True)

    def open_empty(d):
        d.config(cid_lens=(0,))
        for f in (empty_v4, empty_v6):  # one connection per address family, keyed by the peer's address
            d.add_keys(b"", K0, frame=f)
            d.set_pn(b"", rx_next=400, frame=f)

    return [
        ("open", lambda d: d.add_keys(CID, K0, K1), [(f, NET) for f in opened]),
        ("open without next keys", lambda d: d.add_keys(CID, K0), [(f, NET) for f in opened[:40]]),
        ("seal", lambda d: (d.config(host_ifindex=LO), d.add_keys(CID, K0, K1)), [(shim(f, 8), LO) for f in sealed]),
        ("seal without next keys", lambda d: (d.config(host_ifindex=LO), d.add_keys(CID, K0)),
         [(shim(f, 8), LO) for f in sealed[:40]]),
        # IPv4 packets that end less than 40 bytes after the IP header start included (finding 4)
        ("open, empty CID", open_empty,
         [(frame_of(prot, v6, vlan), NET) for _, prot in tiny[b""] for v6 in (False, True) for vlan in (None, 4)]),
        ("seal, 2-byte CID", lambda d: (d.config(cid_lens=(2,), host_ifindex=LO), d.add_keys(b"\x5a\xa5", K0)),
         [(shim(frame_of(plain, False, 3), 2), LO) for plain, _ in tiny[b"\x5a\xa5"]]),
        ("long headers", lambda d: (d.config(flags=offload, host_ifindex=2), d.add_keys(b"", SERVER_KEYS, frame=a3),
                                    d.add_keys(DCID, CLIENT_KEYS)),
         [(a3, LO), (a2, LO), (shim(a3_plain, 0), 2), (shim(a2_plain, 8), 2), (a3[:-5], LO),
          (shim(a2_plain[:100], 8), 2)]),
    ]


def run_sessions(obj, backend):
    out = {}
    for name, setup, frames in comparison_sessions():
        d = Device(obj, backend)
        try:
            setup(d)
            runs = [d.run(f, ifindex=i) for f, i in frames]
            out[name] = (runs, d.counters("quic_stats"), d.counters("quic_drops"))
        finally:
            d.close()
    return out


def test_helpers_match_ebpf_crypto(tmp_path_factory):
    """xdp_quic_hw (device helpers) on the interpreter and the JIT against xdp_quic (eBPF AES-GCM) on the
    interpreter: the same action, bytes out (dropped frames included) and counters for every frame of
    several sessions - 1-RTT open and seal at ten sizes over IPv4/IPv6/VLAN in both key phases, forged
    tags, truncation at every length, oversize, missing next keys, and RFC 9001 A.2/A.3 long headers."""
    out = tmp_path_factory.mktemp("quic-cmp")
    ref = run_sessions(build("xdp_quic", out), "interp")
    checked = 0
    for backend in ("interp", "jit"):
        ok, why = available(backend)
        if not ok:
            continue
        got = run_sessions(build("xdp_quic_hw", out), backend)
        for name, (runs, stats, drops) in ref.items():
            g_runs, g_stats, g_drops = got[name]
            for k, (a, b) in enumerate(zip(runs, g_runs)):
                assert a == b, f"{backend}, {name}, frame {k}: xdp_quic {a[0]} vs xdp_quic_hw {b[0]}"
            assert len(runs) == len(g_runs)
            assert (stats, drops) == (g_stats, g_drops), f"{backend}, {name}: counters"
        checked += 1
    assert checked, "no device backend available"
    # the sessions exercise what they should: opened, sealed and dropped frames of every kind; short
    # headers of 2..7 bytes opened and sealed (checked against the reference where the frames say it)
    assert all(a == XDP_PASS for a, _ in ref["open, empty CID"][0])
    assert ref["open, empty CID"][1][const("NANOBPF_QUIC_STAT_OPENED")] == len(ref["open, empty CID"][0])
    assert all(a == XDP_TX for a, _ in ref["seal, 2-byte CID"][0])
    stats = [sum(c) for c in zip(*(r[1] for r in ref.values()))]
    drops = [sum(c) for c in zip(*(r[2] for r in ref.values()))]
    for s in ("OPENED", "SEALED", "DROPPED", "ONE_RTT"):
        assert stats[const(f"NANOBPF_QUIC_STAT_{s}")] > 0, s
    for r in ("TAG_MISMATCH", "NO_KEYS", "OVERSIZE", "TRUNCATED", "BAD_IPV4", "QUIC_TRUNCATED"):
        assert drops[const(f"NANOBPF_QUIC_DROP_{r}")] > 0, r


@pytest.mark.parametrize("backend_name", ["interp", "jit"])
def test_pisa_parse_result_gives_what_classification_gives(tmp_path_factory, backend_name):
    """xdp_quic_hw with PISA's parse result in its context (conn set: the open path skips parsing and the
    quic_ports lookup, quic_pisa_classify) leaves the same bytes, takes the same action and counts the
    same as without it (the classification's way): IPv4 and IPv6, VLAN-tagged, a packet it opens, one
    whose fixed bit is clear (NO_FIXED_BIT), one whose CID has no keys although PISA named a slot (a
    stale conn: UNKNOWN_CID, passed unchanged), a forged one (TAG_MISMATCH) and a truncated one."""
    ok, why = available(backend_name)
    if not ok:
        pytest.skip(why)
    obj = build("xdp_quic_hw", tmp_path_factory.mktemp("pisa_hint"))
    cases = []
    for v6, vlan in [(False, None), (True, None), (False, 7), (True, 9)]:
        _, prot = short_packet(5, b"z" * 300)
        cases.append(("opened", frame_of(prot, v6, vlan), v6, vlan))
        cases.append(("no fixed bit", frame_of(bytes([prot[0] & ~0x40]) + prot[1:], v6, vlan), v6, vlan))
        cases.append(("stale conn", frame_of(prot[:1] + bytes(8) + prot[9:], v6, vlan), v6, vlan))
        forged = bytearray(prot)
        forged[-1] ^= 1
        cases.append(("forged", frame_of(bytes(forged), v6, vlan), v6, vlan))
        cases.append(("truncated", frame_of(prot[:1 + 8 + 1 + 10], v6, vlan), v6, vlan))
    def pisa_parse(v6, vlan):
        """The context fields PISA gives such a frame (frame_of's layout; conn: any slot)."""
        l3 = 14 + (4 if vlan else 0)
        l4 = l3 + (40 if v6 else 20)
        return (l3, l4, l4 + 8, l4 + 8 + 1 + len(CID), len(CID), 3)

    devs = [Device(obj, backend_name) for _ in range(2)]
    try:
        for d in devs:
            d.add_keys(CID, K0)
        for name, frame, v6, vlan in cases:
            plain = devs[0].x.run(frame, ingress_ifindex=NET)
            hinted = devs[1].x.run(frame, ingress_ifindex=NET, parse=pisa_parse(v6, vlan))
            assert hinted == plain, (name, v6, vlan)
        assert devs[1].counters("quic_stats") == devs[0].counters("quic_stats")
        assert devs[1].drops() == devs[0].drops()
        assert devs[0].stat("OPENED") == 4 and devs[0].stat("UNKNOWN_CID") == 4
        assert devs[0].drops() == {"NO_FIXED_BIT": 4, "TAG_MISMATCH": 4, "QUIC_TRUNCATED": 4}
        # the hint is what decided: with the port gone from quic_ports, PISA's profile still makes the
        # frame QUIC (opened), where the classification calls it NOT_QUIC and passes it unchanged
        _, prot = short_packet(6, b"w" * 100)
        frame = frame_of(prot)
        for d in devs:
            d.x.map_delete("quic_ports", (443).to_bytes(2, "little"))
        assert devs[0].x.run(frame, ingress_ifindex=NET) == (XDP_PASS, frame)
        action, out = devs[1].x.run(frame, ingress_ifindex=NET, parse=pisa_parse(False, None))
        assert action == XDP_PASS and out != frame and devs[1].stat("OPENED") == 5
    finally:
        for d in devs:
            d.close()


@pytest.mark.parametrize("backend_name", ["interp", "jit"])
def test_pisa_parse_result_for_frames_to_seal(tmp_path_factory, backend_name):
    """xdp_quic_hw with PISA's parse of a frame to seal in its context (the ingress parser stepped over
    the shim: offsets that count it; the host's QUIC profile matched; the seal path skips parsing and
    the quic_ports lookup) leaves the same bytes, takes the same action and counts the same as without
    it: IPv4 and IPv6, a VLAN tag behind the shim, 8-byte and zero-length CIDs, one whose fixed bit is
    clear (NO_FIXED_BIT), one without keys (NO_SEAL_KEYS), a shim that names a CID longer than the
    packet (QUIC_TRUNCATED), a packet number sealed before (PN_REUSED). The hinted device has no
    quic_ports at all, so a frame that took the classification's way instead would be NOT_SEALABLE;
    a long header, which PISA's parse does not describe, takes it there (and is dropped so)."""
    ok, why = available(backend_name)
    if not ok:
        pytest.skip(why)
    obj = build("xdp_quic_hw", tmp_path_factory.mktemp("pisa_seal"))
    cases, pn = [], 10
    for v6, vlan in [(False, None), (True, None), (False, 7), (True, 9)]:
        for cid in (CID, b""):
            pn += 1
            plain, prot = short_packet(pn, b"s" * 300, cid=cid)
            cases.append(("sealed", frame_of(plain, v6, vlan), len(cid), v6, vlan, frame_of(prot, v6, vlan)))
            cases.append(("again", frame_of(plain, v6, vlan), len(cid), v6, vlan, None))
        plain, _ = short_packet(pn + 100, b"t" * 40)
        cases.append(("no fixed bit", frame_of(bytes([plain[0] & ~0x40]) + plain[1:], v6, vlan), len(CID), v6, vlan, None))
        cases.append(("no keys", frame_of(plain[:1] + bytes(8) + plain[9:], v6, vlan), len(CID), v6, vlan, None))
        cases.append(("cid cut", frame_of(plain[:1 + 8 + 1 + 10], v6, vlan), 20, v6, vlan, None))

    def pisa_parse(v6, vlan, long=False):
        """The context fields PISA gives a frame to seal: offsets counting the 4-byte shim (and a tag
        behind it), the host profile's CID length 0, no CID table slot; a long header's has no pn_off."""
        l3 = 14 + 4 + (4 if vlan else 0)
        l4 = l3 + (40 if v6 else 20)
        return (l3, l4, l4 + 8, 0 if long else l4 + 8 + 1, 0, 0)

    devs = [Device(obj, backend_name, host_ifindex=LO, flags=const("NANOBPF_QUIC_CFG_OFFLOAD_LONG"))
            for _ in range(2)]
    try:
        devs[1].x.map_delete("quic_ports", (443).to_bytes(2, "little"))  # PISA's profile decides there
        for d in devs:
            d.add_keys(CID, K0)
            d.add_keys(b"", SERVER_KEYS, frame=udp_frame(A3_PROTECTED, "192.0.2.1", "192.0.2.2", 443, 50000))
            for v6 in (False, True):
                d.add_keys(b"", K0, frame=frame_of(b"\x40", v6))
        for name, frame, n, v6, vlan, want in cases:
            plain_run = devs[0].x.run(shim(frame, n), ingress_ifindex=LO)
            hinted = devs[1].x.run(shim(frame, n), ingress_ifindex=LO, parse=pisa_parse(v6, vlan))
            assert hinted == plain_run, (name, v6, vlan, n)
            if want:
                assert hinted == (XDP_TX, want), (name, v6, vlan, n)
        assert devs[1].counters("quic_stats") == devs[0].counters("quic_stats")
        assert devs[1].drops() == devs[0].drops()
        assert devs[0].stat("SEALED") == 8
        assert devs[0].drops() == {"NO_FIXED_BIT": 4, "NO_SEAL_KEYS": 4, "QUIC_TRUNCATED": 4, "PN_REUSED": 8}
        # a long header: no hint (pn_off 0), so the program parses it, and without the port in quic_ports
        # the hinted device cannot call it QUIC
        a3 = udp_frame(A3_PLAIN, "192.0.2.1", "192.0.2.2", 443, 50000)
        assert devs[0].x.run(shim(a3, 0), ingress_ifindex=LO) == (XDP_TX, udp_frame(A3_PROTECTED, "192.0.2.1", "192.0.2.2", 443, 50000))
        assert devs[1].x.run(shim(a3, 0), ingress_ifindex=LO, parse=pisa_parse(False, None, long=True))[0] == XDP_DROP
        assert devs[1].drops()["NOT_SEALABLE"] == 1
    finally:
        for d in devs:
            d.close()


def conn_devices(obj, backend_name, direction, **config):
    """Two devices with the same keys in one direction: CID's (K0, next K1) and, for a zero-length CID,
    K0 under the address of each frame of IPv4/IPv6, untagged/VLAN-tagged (combos, frames)."""
    devs = [Device(obj, backend_name, **config) for _ in range(2)]
    combos = [(v6, vlan) for v6 in (False, True) for vlan in (None, 5)]
    frames = [frame_of(b"\x40", v6, vlan) for v6, vlan in combos]
    for d in devs:
        d.add_keys(CID, K0, K1, dirs=(direction,))
        for f in frames:
            d.add_keys(b"", K0, dirs=(direction,), frame=f)
    return devs, combos, frames


def conn_parse(x, frame, cid_len, direction, conn_of=None):
    """PISA's parse of frame (a frame to seal: offsets that count the shim) and its connection, 1 + the
    connection tag of the entry its CID (or address) names in direction; conn_of, a key, names another
    entry, a number is the connection itself."""
    u = parse_udp(frame)
    l3 = 14 + (4 if direction == SEAL else 0) + (4 if u.vlan is not None else 0)
    l4 = l3 + (40 if u.ip_version == 6 else 20)
    conn = conn_of if isinstance(conn_of, int) else x.map_conn("nanobpf_quic_keys",
                                                              conn_of or Device.key(CID if cid_len else b"", direction, frame))
    assert conn
    return (l3, l4, l4 + 8, l4 + 8 + 1 + cid_len, cid_len, conn)


def stale_conn(devs, direction, keys):
    """The connection PISA gave the CID entry's frames before the entry left and came back (on every
    device alike: a fresh entry, its packet numbers anew), in the same slot or not: it names no entry now."""
    x = devs[-1].x
    old = x.map_conn("nanobpf_quic_keys", Device.key(CID, direction))
    for d in devs:
        d.del_keys(CID, dirs=(direction,))
        d.add_keys(CID, *keys, dirs=(direction,))
    assert x.map_conn("nanobpf_quic_keys", Device.key(CID, direction)) != old
    return old


def egress_strip(run, sent):
    """A run's result as the device's egress sends it: xdp_quic_hw leaves the host's ENCRYPT shim of a
    frame it seals in one call where it came, and the egress leaves those 4 bytes out (egress_shim
    strip; the firmware checks they are the ones that came)."""
    action, out = run
    return (action, out[:12] + out[16:]) if out[12:16] == sent[12:16] else run


@pytest.mark.parametrize("backend_name", ["interp", "jit"])
def test_pisa_connection_seals_in_one_call(tmp_path_factory, backend_name):
    """A frame to seal that PISA classified with its connection (conn: 1 + the SEAL entry's key table
    slot, cid_len: the shim's, as the ingress parser gives them) is sealed by one device helper,
    bpf_quic_seal_conn, which does quic_seal's steps itself: xdp_quic_hw leaves the same bytes (once the
    egress has left out the shim it keeps, egress_strip), takes the same action and counts the same as without the parse result (the program's own way), for every
    way it can end - sealed with the current and with the next keys (IPv4 and IPv6, a VLAN tag behind
    the shim, 8-byte and zero-length CIDs), a packet number sealed before (PN_REUSED), the next key
    phase without next keys (NO_KEYS), a payload over the program's limit (OVERSIZE), the fixed bit
    clear (NO_FIXED_BIT), a CID past the frame's end (QUIC_TRUNCATED) - and for a stale conn, PISA's
    for an entry that has left its slot since (the helper leaves it to the program's way)."""
    ok, why = available(backend_name)
    if not ok:
        pytest.skip(why)
    obj = build("xdp_quic_hw", tmp_path_factory.mktemp("seal_conn"))
    devs, combos, frames = conn_devices(obj, backend_name, SEAL, host_ifindex=LO)
    try:
        x = devs[1].x

        def parse(frame, cid_len, conn_of=None):
            return conn_parse(x, frame, cid_len, SEAL, conn_of)

        cases, pn = [], 40
        for v6, vlan in combos:
            for cid in (CID, b""):
                pn += 1
                plain, prot = short_packet(pn, b"s" * 200, cid=cid)
                cases.append(("sealed", frame_of(plain, v6, vlan), len(cid), None, frame_of(prot, v6, vlan)))
                cases.append(("again", frame_of(plain, v6, vlan), len(cid), None, None))
            pn += 1
            plain, prot = short_packet(pn, b"n" * 100, keys=K1, phase=1)
            cases.append(("next keys", frame_of(plain, v6, vlan), len(CID), None, frame_of(prot, v6, vlan)))
            pn += 1
            plain, _ = short_packet(pn, b"p" * 50, cid=b"", phase=1)
            cases.append(("no next keys", frame_of(plain, v6, vlan), 0, None, None))
            pn += 1
            plain, _ = short_packet(pn, b"o" * (MAX_PAYLOAD + 1))
            cases.append(("oversize", frame_of(plain, v6, vlan), len(CID), None, None))
            pn += 1
            plain, _ = short_packet(pn, b"f" * 40)
            cases.append(("no fixed bit", frame_of(bytes([plain[0] & ~0x40]) + plain[1:], v6, vlan), len(CID), None, None))
            cases.append(("cid cut", frame_of(plain[:1 + 8 + 1 + 10], v6, vlan), 20, Device.key(CID, SEAL), None))
            pn += 1
            plain, prot = short_packet(pn, b"t" * 30)
            cases.append(("stale conn", frame_of(plain, v6, vlan), len(CID), "stale", frame_of(prot, v6, vlan)))
        for name, frame, n, conn_of, want in cases:
            if conn_of == "stale":
                conn_of = stale_conn(devs, SEAL, (K0, K1))
            sent = shim(frame, n)
            plain_run = devs[0].x.run(sent, ingress_ifindex=LO)
            hinted = egress_strip(x.run(sent, ingress_ifindex=LO, parse=parse(frame, n, conn_of)), sent)
            assert hinted == plain_run, name
            if want:
                assert hinted == (XDP_TX, want), name
        assert devs[1].counters("quic_stats") == devs[0].counters("quic_stats")
        assert devs[1].drops() == devs[0].drops()
        assert devs[0].stat("SEALED") == 4 * 4
        assert devs[0].stat("ONE_RTT") == 4 * 8
        assert devs[0].drops() == {"PN_REUSED": 8, "NO_KEYS": 4, "OVERSIZE": 4, "NO_FIXED_BIT": 4, "QUIC_TRUNCATED": 4}
    finally:
        for d in devs:
            d.close()


@pytest.mark.parametrize("backend_name", ["interp", "jit"])
def test_pisa_connection_opens_in_one_call(tmp_path_factory, backend_name):
    """A frame from the network that PISA classified with its connection (conn: 1 + the OPEN entry's key
    table slot) is opened by one device helper, bpf_quic_open_conn, which does quic_open's steps
    itself: xdp_quic_hw leaves the same bytes, takes the same action, counts the same and keeps the same
    packet-number state as without the parse result, for every way it can end - opened with the
    current keys and across a key update with the next ones, then a late packet with the previous
    ones (IPv4 and IPv6, VLAN-tagged, 8-byte and zero-length CIDs), a forged tag (TAG_MISMATCH), the
    next key phase without next keys (NO_KEYS), a ciphertext over the program's limit (OVERSIZE), the
    fixed bit clear (NO_FIXED_BIT), the sample cut short (QUIC_TRUNCATED) - and for a stale conn (an
    entry that has left its slot since PISA's lookup) or a CID length quic_config does not list (the
    helper leaves those to the program's way)."""
    ok, why = available(backend_name)
    if not ok:
        pytest.skip(why)
    obj = build("xdp_quic_hw", tmp_path_factory.mktemp("open_conn"))
    devs, combos, frames = conn_devices(obj, backend_name, OPEN, cid_lens=(0, 8))
    try:
        x = devs[1].x

        def parse(frame, cid_len, conn_of=None):
            return conn_parse(x, frame, cid_len, OPEN, conn_of)

        def run_both(name, frame, cid_len, conn_of=None, want=None):
            plain_run = devs[0].x.run(frame, ingress_ifindex=NET)
            hinted = x.run(frame, ingress_ifindex=NET, parse=parse(frame, cid_len, conn_of))
            assert hinted == plain_run, name
            if want:
                assert hinted == (XDP_PASS, want), name

        pn = 100
        for v6, vlan in combos:
            for cid in (CID, b""):
                pn += 1
                plain, prot = short_packet(pn, b"o" * 200, cid=cid, largest=pn - 1)
                run_both("opened", frame_of(prot, v6, vlan), len(cid), want=frame_of(plain, v6, vlan))
                forged = bytearray(prot)
                forged[-1] ^= 1
                run_both("forged", frame_of(bytes(forged), v6, vlan), len(cid))
            pn += 1
            _, prot = short_packet(pn, b"p" * 50, cid=b"", phase=1, largest=pn - 1)
            run_both("no next keys", frame_of(prot, v6, vlan), 0)
            pn += 1
            _, prot = short_packet(pn, b"b" * (MAX_PAYLOAD + 1), largest=pn - 1)
            run_both("oversize", frame_of(prot, v6, vlan), len(CID))
            pn += 1
            _, prot = short_packet(pn, b"f" * 40, largest=pn - 1)
            run_both("no fixed bit", frame_of(bytes([prot[0] & ~0x40]) + prot[1:], v6, vlan), len(CID))
            run_both("sample cut", frame_of(prot[:1 + 8 + 4 + 10], v6, vlan), len(CID))
            pn += 1
            plain, prot = short_packet(pn, b"s" * 30, largest=pn - 1)
            run_both("stale conn", frame_of(prot, v6, vlan), len(CID), conn_of=stale_conn(devs, OPEN, (K0, K1)),
                     want=frame_of(plain, v6, vlan))
        # a key update (the next phase's keys open, then the old phase's late packet with the kept
        # previous keys), both ways: by the helper and by the program
        for d in devs:
            d.add_keys(CID, K1, prev=K0, key_phase=1, dirs=(OPEN,))
        plain, prot = short_packet(pn + 10, b"u" * 64, keys=K1, phase=1, largest=pn)
        run_both("next phase", frame_of(prot), len(CID), want=frame_of(plain))
        plain, prot = short_packet(pn + 5, b"l" * 64, keys=K0, phase=0, pn_len=2)
        run_both("late, previous keys", frame_of(prot), len(CID), want=frame_of(plain))
        # a CID length quic_config does not list: the program's way, whose one trial (length 0) finds
        # the address's entry, whose keys have no next phase (NO_KEYS)
        for d in devs:
            d.config(cid_lens=(0,))
        _, prot = short_packet(pn + 11, b"n" * 64, keys=K1, phase=1, largest=pn + 10)
        run_both("length not listed", frame_of(prot), len(CID))
        assert devs[1].counters("quic_stats") == devs[0].counters("quic_stats")
        assert devs[1].drops() == devs[0].drops()
        assert devs[1].pn_state(CID) == devs[0].pn_state(CID)
        assert devs[0].stat("OPENED") == 4 * 3 + 2
        assert devs[0].drops() == {"TAG_MISMATCH": 8, "NO_KEYS": 5, "OVERSIZE": 4, "NO_FIXED_BIT": 4, "QUIC_TRUNCATED": 4}
    finally:
        for d in devs:
            d.close()
