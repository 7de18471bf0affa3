"""The QUIC protection programs fail closed (issue 21), on every backend (device interpreter, device
JIT under qemu-riscv64, Linux BPF_PROG_TEST_RUN for xdp_quic):

- the seal contract: a host frame asks for sealing with the ENCRYPT shim naming its destination CID's
  length; what cannot be sealed is dropped and counted by reason, never sent; unmarked host frames
  are forwarded unchanged; a shim from the network is dropped;
- nonce uniqueness: a packet number is sealed at most once per connection, across key phases;
- one key table holding connections of CID lengths 0..20 in both directions, zero-length CIDs on
  either side keyed by the peer's address (the shape that reused nonces before: finding 2);
- key updates: previous-phase keys open reordered old packets; a phase flip without keys drops;
- coalesced datagrams pass untouched (open) or drop (seal);
- small IPv4 packets open (finding 4);
- a bit flipped anywhere in a frame never yields plaintext that the reference would not accept;
- a three-way differential corpus (IPv4/IPv6, CID lengths 0, 1, 4, 8, 18, 20, packet-number lengths
  1..4, payloads 1 byte to the MTU, key updates every 3 packets with reordering, coalesced datagrams)
  gives the same actions, bytes and counters on every backend, and the reference's bytes."""
import pytest

import nanobpf_ctrl_defs as ctrl
from nanobpf.pcap import parse_udp, udp_frame
from nanobpf.quic import unprotect
from nanobpf.quic.vectors import A2_PLAIN, A2_PROTECTED, CLIENT_KEYS, DCID
from quic_device import backend, obj, prog, pytest_generate_tests  # noqa: F401 (fixtures, parametrisation)
from quic_device import (BACKENDS, CID, DEVICE_ONLY, K0, K1, K2, KS, LO, OPEN, SEAL, XDP_DROP, XDP_PASS, XDP_TX,
                         Device, addr_id, available, const, frame_of, short_packet, shim)
from nanobpf.quic import PacketKeys


@pytest.fixture
def dev(obj, backend):
    d = Device(obj, backend, host_ifindex=LO)
    yield d
    d.close()


def payload_of(n, seed=0):
    return bytes((7 * i + n + seed) & 0xff for i in range(n)) + bytes(max(0, 3 - n))


# ---------------------------------------------------------------- the seal contract
def test_unmarked_host_frames_are_forwarded_unchanged(dev):
    dev.add_keys(CID, K0)
    plain, _ = short_packet(1, b"the host protected this itself")
    for f in (frame_of(plain), udp_frame(b"dns", "10.0.0.1", "10.0.0.2", 5353, 53), frame_of(plain)[:14]):
        assert dev.run(f, ifindex=LO) == (XDP_TX, f)
    assert dev.stat("FORWARDED") == 3 and dev.stat("SEALED") == 0 and dev.drops() == {}


def test_marked_frames_that_cannot_be_sealed_are_dropped_never_sent(dev):
    """Every way a marked frame can fail drops it with its reason (and nothing leaves)."""
    offload = const("NANOBPF_QUIC_CFG_OFFLOAD_LONG")
    dev.add_keys(CID, K0, dirs=(OPEN,))  # only the open direction: the seal must not borrow it (finding 2)
    other = bytes.fromhex("a1a2a3a4")
    dev.add_keys(other, K0, prev=K1, key_phase=1, dirs=(OPEN, SEAL))
    plain = frame_of(short_packet(7, b"secret payload 123")[0])
    plain_other = frame_of(short_packet(8, b"secret payload 456", cid=other, phase=0)[0])
    coalesced = udp_frame(A2_PLAIN + short_packet(1, b"behind", cid=DCID)[0], "192.0.2.2", "192.0.2.1", 50000, 443)
    dev.add_keys(DCID, CLIENT_KEYS, dirs=(SEAL,))
    cases = [
        (shim(plain, 8), "NO_SEAL_KEYS"),                       # no SEAL entry for the CID
        (shim(plain, 4), "NO_SEAL_KEYS"),                       # the shim names another length
        (shim(plain, 21), "BAD_SHIM"),                          # longer than any CID
        (shim(plain, 8, flags=ctrl.NANOBPF_SHIM_F_DECRYPTED), "BAD_SHIM"),
        (shim(plain, 8, flags=0), "BAD_SHIM"),
        (shim(udp_frame(b"not quic", "10.0.0.1", "10.0.0.2", 5353, 53), 8), "NOT_SEALABLE"),
        (shim(udp_frame(A2_PLAIN, "192.0.2.2", "192.0.2.1", 50000, 443), 8), "NOT_SEALABLE"),  # long, not offloaded
        (shim(plain_other, 4), "NO_KEYS"),                      # phase bit 0: the previous keys never seal
        (shim(plain, 8)[:30], "TRUNCATED"),
        (shim(plain, 8)[:18], "TRUNCATED"),
    ]
    for f, _ in cases:
        assert dev.run(f, ifindex=LO)[0] == XDP_DROP, f.hex()
    want = {}
    for _, r in cases:
        want[r] = want.get(r, 0) + 1
    assert dev.drops() == want
    dev.config(host_ifindex=LO, flags=offload)
    assert dev.run(shim(coalesced, 8), ifindex=LO)[0] == XDP_DROP  # sealed entirely or not at all
    assert dev.drops()["NOT_SEALABLE"] == want["NOT_SEALABLE"] + 1
    assert dev.stat("SEALED") == 0


def test_shim_from_the_network_is_dropped(dev):
    dev.add_keys(CID, K0)
    _, prot = short_packet(1, b"x" * 30)
    for flags in (ctrl.NANOBPF_SHIM_F_ENCRYPT, ctrl.NANOBPF_SHIM_F_DECRYPTED):
        assert dev.run(shim(frame_of(prot), 8, flags=flags))[0] == XDP_DROP
    assert dev.drops() == {"BAD_SHIM": 2}


def test_a_packet_number_is_sealed_once(dev):
    """AES-GCM nonce = IV xor packet number: the device never seals a number twice, across a key phase
    change (finding 2's invariant); a number reached a little out of order (C + 4 below C + 5, C =
    NANOBPF_QUIC_PN_CLAIMS) is sealed, one whose class modulo C has seen a larger number (C + 3 after
    2C + 3, 5 after C + 5) is refused."""
    c = const("NANOBPF_QUIC_PN_CLAIMS")
    dev.add_keys(CID, K0, K1)
    seq = [(c + 5, 0, XDP_TX), (c + 5, 0, XDP_DROP), (c + 4, 0, XDP_TX), (c + 4, 0, XDP_DROP), (c + 6, 0, XDP_TX),
           (c + 6, 1, XDP_DROP), (2 * c + 3, 1, XDP_TX), (c + 3, 1, XDP_DROP), (5, 1, XDP_DROP)]
    largest = -1
    for pn, phase, want in seq:
        keys = K1 if phase else K0
        plain, prot = short_packet(pn, b"payload of %d" % pn, keys=keys, phase=phase, largest=largest, pn_len=2)
        action, out = dev.seal(frame_of(plain), 8)
        assert action == want, (pn, phase)
        if want == XDP_TX:
            assert out == frame_of(prot)
            largest = max(largest, pn)
    assert dev.drops() == {"PN_REUSED": 5}
    st = dev.pn_state(CID, SEAL)
    want = [0] * c
    for pn in (c + 4, c + 5, c + 6, 2 * c + 3):
        want[pn % c] = pn + 1
    assert [st[f"claim{k}"] for k in range(c)] == want


def test_packet_number_claims_match_the_rule(dev):
    """A random order of packet numbers, with repeats (what racing cores and a confused host produce):
    each is sealed exactly when the claim rule says (at least its class's word, which then becomes it
    + 1), so no number is ever sealed twice; and the counters add up."""
    import random
    rnd = random.Random(5)
    claims = const("NANOBPF_QUIC_PN_CLAIMS")
    dev.add_keys(CID, K0)
    pns = [p for base in range(0, 40, 8) for p in rnd.sample(range(base, base + 8), 8)]
    pns += rnd.sample(pns, 10)                      # repeats, some long after
    words, sealed = [0] * claims, []
    for pn in pns:
        plain, prot = short_packet(pn, b"claim %d" % pn, pn_len=4)
        action, out = dev.seal(frame_of(plain), 8)
        ok = pn >= words[pn % claims]
        assert action == (XDP_TX if ok else XDP_DROP), (pn, words)
        if ok:
            words[pn % claims] = pn + 1
            sealed.append(pn)
            assert out == frame_of(prot)
    assert len(sealed) == len(set(sealed)) and len(sealed) >= 30
    assert dev.stat("SEALED") == len(sealed) and dev.drops() == {"PN_REUSED": len(pns) - len(sealed)}


def test_zero_length_cids_each_direction_its_own_entry(dev):
    """Finding 2's shape: the client uses a zero-length CID, the server an 8-byte one. Before, the seal
    lookup of the empty CID found the open entry, so every packet was sealed with the peer's keys and a
    nonce made of CID bytes. Now each direction has its own entry; the seal uses the host's keys."""
    dev.config(cid_lens=(0,), host_ifindex=LO)
    # the host is the client (uses zero-length CIDs): packets from the server carry an empty DCID
    net = lambda q: udp_frame(q, "198.51.100.7", "10.0.0.2", 443, 40000)   # server -> host
    host = lambda q: udp_frame(q, "10.0.0.2", "198.51.100.7", 40000, 443)  # host -> server
    server_cid = bytes.fromhex("5e5e5e5e5e5e5e5e")
    dev.x.map_update("nanobpf_quic_keys", Device.key(b"", OPEN, ident=addr_id("198.51.100.7", 443, 40000)),
                     value_of(KS))
    dev.add_keys(server_cid, K0, dirs=(SEAL,))
    for pn in range(6):
        plain, prot = short_packet(pn, b"from the server %d" % pn, keys=KS, cid=b"", largest=pn - 1)
        assert dev.run(net(prot)) == (XDP_PASS, net(plain))
        plain, prot = short_packet(pn, b"from the client %d" % pn, keys=K0, cid=server_cid, largest=pn - 1)
        assert dev.seal(host(plain), 8) == (XDP_TX, host(prot))
    # the same ports from another peer address: not this connection
    _, prot = short_packet(9, b"elsewhere", keys=KS, cid=b"", largest=8)
    other = udp_frame(prot, "198.51.100.8", "10.0.0.2", 443, 40000)
    assert dev.run(other) == (XDP_PASS, other) and dev.stat("UNKNOWN_CID") == 1


def value_of(cur, nxt=None, prev=None, key_phase=0, cid_len=0):
    from quic_device import pack
    second = nxt or prev
    flags = const("NANOBPF_QUIC_KEY_NEXT") if nxt else const("NANOBPF_QUIC_KEY_PREV") if prev else 0
    return pack("quic_keys", key_phase, flags, cid_len, 0, cur.key + (second.key if second else bytes(16)),
                cur.iv + (second.iv if second else bytes(12)), cur.hp, b"")


CID_LENS = [0, 1, 4, 5, 6, 8, 12, 18, 20]


def connections(v6):
    """One connection per (local, peer) CID length pair: distinct keys each way and distinct peers."""
    out = []
    for i, (local, peer) in enumerate([(a, b) for a in CID_LENS for b in (0, 5, 20, a)][:24]):
        lcid = bytes((0x10 + i + 3 * k) & 0xff for k in range(local))
        pcid = bytes((0x90 + i + 5 * k) & 0xff for k in range(peer))
        rx = PacketKeys.from_secret(bytes((i + k) & 0xff for k in range(32)))
        tx = PacketKeys.from_secret(bytes((200 + i + k) & 0xff for k in range(32)))
        peer_ip = f"2001:db8:{i}::7" if v6 else f"10.{i}.0.7"
        local_ip = "2001:db8:ff::2" if v6 else "10.255.0.2"
        out.append(dict(lcid=lcid, pcid=pcid, rx=rx, tx=tx, peer=(peer_ip, 4000 + i), local=(local_ip, 443)))
    return out


@pytest.mark.parametrize("v6", [False, True])
def test_one_table_every_cid_length_both_directions(dev, v6):
    """Connections with local and peer CIDs of 0..20 bytes mixed in one table (zero-length on either
    side): every packet opens with the peer's keys and seals with the host's, bit-exactly."""
    conns = connections(v6)
    dev.config(cid_lens=sorted({len(c["lcid"]) for c in conns}), host_ifindex=LO)
    for c in conns:
        (pip, pport), (lip, lport) = c["peer"], c["local"]
        dev.x.map_update("nanobpf_quic_keys", Device.key(c["lcid"], OPEN, ident=addr_id(pip, pport, lport)),
                         value_of(c["rx"], cid_len=len(c["lcid"])))
        dev.x.map_update("nanobpf_quic_keys", Device.key(c["pcid"], SEAL, ident=addr_id(pip, pport, lport)),
                         value_of(c["tx"], cid_len=len(c["pcid"])))
    for rnd in range(2):
        for i, c in enumerate(conns):
            (pip, pport), (lip, lport) = c["peer"], c["local"]
            pn = 10 * rnd + i % 3
            plain, prot = short_packet(pn, payload_of(20 + i, rnd), keys=c["rx"], cid=c["lcid"], largest=pn - 1)
            inbound = lambda q: udp_frame(q, pip, lip, pport, lport)
            assert dev.run(inbound(prot)) == (XDP_PASS, inbound(plain)), (i, len(c["lcid"]), len(c["pcid"]))
            plain, prot = short_packet(pn, payload_of(30 + i, rnd), keys=c["tx"], cid=c["pcid"], largest=pn - 1)
            outbound = lambda q: udp_frame(q, lip, pip, lport, pport)
            assert dev.seal(outbound(plain), len(c["pcid"])) == (XDP_TX, outbound(prot)), i
    assert dev.drops() == {}


# ---------------------------------------------------------------- key updates
def test_key_update_keeps_previous_keys_for_reordered_packets(dev):
    """RFC 9001 6: the host installs next keys; the peer flips; the host updates (previous keys kept);
    a reordered old-phase packet still opens; a flip beyond the installed keys drops as NO_KEYS and
    is never opened with the wrong keys; with next keys installed again the new phase opens."""
    def pkt(pn, keys, phase, largest):
        plain, prot = short_packet(pn, b"pn %d" % pn + bytes(20), keys=keys, phase=phase, largest=largest)
        return frame_of(plain), frame_of(prot)

    dev.add_keys(CID, K0, K1, dirs=(OPEN,))
    for pn in range(3):
        p, c = pkt(pn, K0, 0, pn - 1)
        assert dev.run(c) == (XDP_PASS, p)
    late_p, late_c = pkt(3, K0, 0, 2)       # held back: arrives after the flip
    p, c = pkt(4, K1, 1, 2)
    assert dev.run(c) == (XDP_PASS, p)       # next keys
    dev.add_keys(CID, K1, prev=K0, key_phase=1, dirs=(OPEN,))  # the host's KEY_UPDATE
    p, c = pkt(5, K1, 1, 4)
    assert dev.run(c) == (XDP_PASS, p)
    assert dev.run(late_c) == (XDP_PASS, late_p)  # previous keys
    p, c = pkt(9, K2, 0, 5)                  # the peer flips again before the host has next keys
    assert dev.run(c)[0] == XDP_DROP and dev.drops() == {"NO_KEYS": 1}
    dev.add_keys(CID, K1, K2, key_phase=1, dirs=(OPEN,))
    assert dev.run(c) == (XDP_PASS, p)
    _, c = pkt(2, K0, 0, 1)                  # an old packet once the previous keys are gone: the tag fails
    assert dev.run(c)[0] == XDP_DROP and dev.drops() == {"NO_KEYS": 1, "TAG_MISMATCH": 1}


# ---------------------------------------------------------------- coalesced datagrams, small packets
def test_coalesced_datagrams_pass_untouched(dev):
    """Initial + 1-RTT in one datagram: from the network the whole datagram goes to the host as it came
    (counted COALESCED), also with long headers offloaded and keys for both."""
    from nanobpf.quic.vectors import CLIENT_KEYS
    one_rtt = short_packet(3, b"coalesced 1-RTT", cid=DCID)[1]
    dgram = udp_frame(A2_PROTECTED + one_rtt, "192.0.2.2", "192.0.2.1", 50000, 443)
    dev.add_keys(DCID, CLIENT_KEYS)
    for flags in (0, const("NANOBPF_QUIC_CFG_OFFLOAD_LONG")):
        dev.config(host_ifindex=LO, flags=flags)
        assert dev.run(dgram) == (XDP_PASS, dgram)
    assert dev.stat("COALESCED") == 2 and dev.stat("OPENED") == 0


@pytest.mark.parametrize("v6", [False, True])
def test_small_packets_open(dev, v6):
    """Finding 4: 1-RTT packets that end less than 40 bytes after the IP header once opened (a 1-byte
    CID, 1-byte packet number, a 1..4-byte payload) open; IPv4 used to drop them after rx_next moved."""
    small = b"\x01"
    dev.config(cid_lens=(1,), host_ifindex=LO)
    dev.add_keys(small, K0)
    for pn, n in enumerate((3, 4, 5, 6)):  # a header-protection sample needs 4 bytes after the pn
        plain, prot = short_packet(pn, bytes(range(1, n + 1)), cid=small, pn_len=1, largest=pn - 1)
        assert dev.run(frame_of(prot, v6)) == (XDP_PASS, frame_of(plain, v6)), n
        assert dev.seal(frame_of(plain, v6), 1) == (XDP_TX, frame_of(prot, v6)), n
    assert dev.drops() == {}
    assert dev.pn_state(small, OPEN)["rx_next"] == 4


# ---------------------------------------------------------------- bit flips
def flip_cases():
    out = []
    for v6 in (False, True):
        plain, prot = short_packet(11, b"authenticated payload, 40 bytes long....", largest=10)
        f = frame_of(prot, v6)
        for pos in range(len(f)):
            for bit in (0, 7):
                b = bytearray(f)
                b[pos] ^= 1 << bit
                out.append((v6, pos, bytes(b)))
    return out


def test_a_flipped_bit_never_yields_unauthenticated_plaintext(dev):
    """A bit flipped in every byte of a protected frame (Ethernet, IP, UDP, QUIC header, ciphertext,
    tag): the program drops it, passes it untouched, or passes exactly what the reference opens from
    those bytes; it never delivers anything the reference rejects."""
    dev.add_keys(CID, K0)
    seen = {"drop": 0, "untouched": 0, "opened": 0}
    for v6, pos, f in flip_cases():
        dev.set_pn(CID, rx_next=11)
        action, out = dev.run(f)
        if action == XDP_DROP:
            seen["drop"] += 1
            continue
        assert action == XDP_PASS, (v6, pos)
        if out == f:
            seen["untouched"] += 1
            continue
        ref = unprotect(parse_udp(f).payload, K0, largest_pn=10, short_cid_len=8)  # raises when not authentic
        # the plaintext is the reference's (an IPv4 header checksum the flip broke stays broken)
        assert parse_udp(out).payload == ref.plain, (v6, pos)
        seen["opened"] += 1
    assert seen["drop"] > 100 and seen["untouched"] > 0 and seen["opened"] > 0, seen


# ---------------------------------------------------------------- three-way differential
def corpus():
    """(frame, ingress, reference): a protected/plain stream over the corpus's shapes; reference is the
    frame the reference model says comes out (None when the frame must be dropped or is not checked)."""
    frames = []
    setup = []
    pid = 0
    for v6 in (False, True):
        for cl in (0, 1, 4, 8, 18, 20):
            pid += 1
            cid = bytes((0x40 + pid + k) & 0xff for k in range(cl))
            peer_ip = f"2001:db8:{pid}::1" if v6 else f"10.1.{pid}.1"
            local_ip = "2001:db8::2" if v6 else "10.0.0.2"
            inbound = lambda q, a=peer_ip, l=local_ip, p=pid: udp_frame(q, a, l, 5000 + p, 443)
            outbound = lambda q, a=peer_ip, l=local_ip, p=pid: udp_frame(q, l, a, 443, 5000 + p)
            ident = addr_id(peer_ip, 5000 + pid, 443)
            gens = [K0, K1, K2, PacketKeys.from_secret(bytes(range(1, 33)), hp=K0.hp)]
            setup.append(("keys", cid, ident, gens))
            # key updates every 3 packets; the last packet of each phase arrives after the next's first
            pns = list(range(12))
            order = [0, 1, 3, 2, 4, 6, 5, 7, 9, 8, 10, 11]
            for i, pn in enumerate(order):
                g = pn // 3
                pn_len = 1 + (pn % 4)
                mtu = 1500 - (40 if v6 else 20) - 8 - 1 - cl - pn_len - 16  # the IP packet fills a 1500-byte MTU
                size = [1, 16, 17, 100, 1000, mtu][(pn + cl) % 6]
                plain, prot = short_packet(pn, payload_of(size, pn), keys=gens[g], phase=g & 1, cid=cid,
                                           pn_len=pn_len, largest=max(order[:i], default=-1))
                frames.append(("net", cid, ident, g, inbound(prot), inbound(plain)))
            for pn in pns:
                g = pn // 3
                plain, prot = short_packet(pn, payload_of(40 + pn, cl), keys=gens[g], phase=g & 1, cid=cid,
                                           pn_len=1 + (pn + 1) % 4, largest=pn - 1)
                frames.append(("host", cid, ident, g, outbound(plain), outbound(prot)))
            # coalesced and corrupted
            frames.append(("net", cid, ident, 0, inbound(A2_PROTECTED + short_packet(1, b"wxyz", cid=cid)[1]), None))
            bad = bytearray(inbound(short_packet(50, b"y" * 40, cid=cid, largest=49)[1]))
            bad[-1] ^= 1
            frames.append(("net", cid, ident, 0, bytes(bad), None))
    return setup, frames


def run_corpus(obj, backend):
    setup, frames = corpus()
    d = Device(obj, backend, cid_lens=(0, 1, 4, 8, 18, 20), host_ifindex=LO)
    out = []
    try:
        tables = {}
        for _, cid, ident, gens in setup:
            tables[(cid, ident)] = gens
        state = {}
        for kind, cid, ident, g, f, want in frames:
            gens = tables[(cid, ident)]
            d_ = OPEN if kind == "net" else SEAL
            # the host's control plane: next keys until a packet of the next phase was seen, then the
            # previous keys for one packet, then next keys again
            cur = state.get((kind, cid, ident), 0)
            if g > cur:
                state[(kind, cid, ident)] = cur = g
            val = value_of(gens[cur], nxt=gens[cur + 1] if cur + 1 < len(gens) else None, key_phase=cur & 1,
                           cid_len=len(cid))
            if kind == "net" and cur > 0 and g < cur:
                val = value_of(gens[cur], prev=gens[cur - 1], key_phase=cur & 1, cid_len=len(cid))
            d.x.map_update("nanobpf_quic_keys", Device.key(cid, d_, ident=ident), val)
            if kind == "net":
                out.append((d.run(f), want))
            else:
                out.append((d.seal(f, len(cid)), want))
        return out, d.counters("quic_stats"), d.counters("quic_drops")
    finally:
        d.close()


def test_three_way_differential(obj, prog):
    """The corpus through every backend that can run the program: the same action, bytes and counters,
    and where the reference says what must come out, exactly that."""
    results = {}
    for name in BACKENDS:
        ok, _ = available(name)
        if ok and not (name == "linux" and prog in DEVICE_ONLY):
            results[name] = run_corpus(obj, name)
    if not results:
        pytest.skip("no backend can run here")
    ref_name, (runs, stats, drops) = next(iter(results.items()))
    checked = 0
    for (action, out), want in runs:
        if want is None:
            assert action in (XDP_DROP, XDP_PASS)
            continue
        assert out == want and action in (XDP_PASS, XDP_TX), ref_name
        checked += 1
    assert checked == 2 * 6 * 24, checked  # every 1-RTT packet of the 12 connections, both ways
    for name, (r, s, dr) in results.items():
        assert [x[0] for x in r] == [x[0] for x in runs], name
        assert (s, dr) == (stats, drops), name
    assert stats[const("NANOBPF_QUIC_STAT_COALESCED")] == 12
