"""The packetization buffer model (sw/python/nanobpf/models/packetizer.py) against scapy: every frame made
from a batch equals the packet scapy builds from scratch for that segment (IP/UDP lengths, IPv4
identification and QUIC packet number of segment i; checksums left as in the template), and each
malformed batch is refused or cut as documented, with its counters."""
import random

import pytest

from nanobpf.models.packetizer import gso_batch, packetize

pytest.importorskip("scapy.all")
from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, Raw  # noqa: E402

DCID = bytes(range(0xA0, 0xA8))


def packet(v6, vlan, pn, pn_len, ip_id, body=b""):
    """Ethernet [/ 802.1Q] / IPv4 or IPv6 / UDP / QUIC short header (8-byte DCID) / body."""
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    if vlan is not None:
        eth = eth / Dot1Q(vlan=vlan)
    ip = IPv6(src="2001:db8::1", dst="2001:db8::2") if v6 else IP(src="192.0.2.1", dst="198.51.100.2", id=ip_id, chksum=0)
    quic = bytes([0x40 | (pn_len - 1)]) + DCID + (pn % (1 << 8 * pn_len)).to_bytes(pn_len, "big")
    return bytes(eth / ip / UDP(sport=4433, dport=443, chksum=0) / Raw(quic + body))


CASES = [  # v6, vlan, seg_size, payload length, pn, pn_len, ip_id
    (False, None, 100, 1000, 7, 1, 1),
    (False, 5, 1200, 2401, 0xFE, 1, 0xFFFE),      # pn and ip_id wrap
    (True, None, 1, 64, 0x1FFFF, 2, 0),
    (True, 4094, 300, 18000, 0xFFFFFFFE, 4, 9),   # 60 segments, pn wraps at 32 bits
    (False, None, 1400, 1400, 123456, 3, 77),
    (False, None, 13, 13 * 63 + 1, 5, 2, 3),      # 64 segments, the last one byte
]


@pytest.mark.parametrize("v6, vlan, size, total, pn, pn_len, ip_id", CASES)
def test_segments_match_scapy(v6, vlan, size, total, pn, pn_len, ip_id):
    rng = random.Random(size)
    payload = rng.randbytes(total)
    batch = gso_batch(packet(v6, vlan, pn, pn_len, ip_id), payload, size, pn, pn_len, ip_id)
    frames, count = packetize(batch)
    segs = -(-total // size)
    assert count == dict(gso_batches=1, gso_segments=segs, gso_bad=0)
    assert len(frames) == segs
    for i, (f, bad) in enumerate(frames):
        want = packet(v6, vlan, pn + i, pn_len, (ip_id + i) & 0xFFFF, payload[i * size:(i + 1) * size])
        assert not bad and f == want, f"segment {i}"


def test_payload_length():
    t = packet(False, None, 0, 2, 0)
    p = bytes(range(250))
    # ends inside segment 2 of 4: 0 and 1 good, 2 sent bad
    frames, count = packetize(gso_batch(t, p, 100, 0, 2, 0, segs=4))
    assert [len(f) - len(t) for f, _ in frames] == [100, 100, 50] and [b for _, b in frames] == [False, False, True]
    assert count == dict(gso_batches=1, gso_segments=2, gso_bad=1)
    # ends on a segment boundary before the last segment: nothing cut, still short
    frames, count = packetize(gso_batch(t, p[:200], 100, 0, 2, 0, segs=3))
    assert [b for _, b in frames] == [False, False] and count["gso_bad"] == 1
    # longer than declared: segs full frames, the rest discarded
    frames, count = packetize(gso_batch(t, p, 100, 0, 2, 0, segs=2))
    assert [b for _, b in frames] == [False, False] and count == dict(gso_batches=1, gso_segments=2, gso_bad=1)
    # no payload at all
    frames, count = packetize(gso_batch(t, b"", 100, 0, 2, 0, segs=1))
    assert frames == [] and count == dict(gso_batches=1, gso_segments=0, gso_bad=1)


T4 = packet(False, None, 0, 2, 0)  # 53 bytes: l3_off 14, l4_off 34, pn_off 51, pn_len 2 (last byte 52)


@pytest.mark.parametrize("fields", [
    dict(segs=0), dict(segs=65), dict(seg_size=0), dict(seg_size=1522 - 53 + 1), dict(hdr_len=193),
    dict(l4_off=14), dict(l4_off=10), dict(l4_off=46), dict(pn_off=52), dict(pn_len=3),
])
def test_refused(fields):
    args = dict(seg_size=50, pn_len=2)
    args.update(fields)
    batch = gso_batch(T4, bytes(100), pn=0, ip_id=0, **args)
    assert packetize(batch) == ([], dict(gso_batches=0, gso_segments=0, gso_bad=1))


def test_limits_accepted():
    """The largest segment (template + segment = 1522 bytes) and a packet number ending the template."""
    frames, count = packetize(gso_batch(T4, bytes(3000), 1522 - 53, 0, 2, 0))
    assert [len(f) for f, _ in frames] == [1522, 1522, 3000 - 2 * 1469 + 53] and count["gso_bad"] == 0


def test_refused_template():
    t = packet(True, None, 0, 2, 0)
    bad_ver = bytearray(t)
    bad_ver[14] = 0x55
    for batch in (gso_batch(t, bytes(10), 10, 0, 2, 0)[:16 + len(t) - 1],  # template cut
                  gso_batch(t, b"", 10, 0, 2, 0)[:15],                      # header cut
                  b"",
                  gso_batch(bytes(bad_ver), bytes(10), 10, 0, 2, 0, l4_off=54)):
        assert packetize(batch) == ([], dict(gso_batches=0, gso_segments=0, gso_bad=1))
