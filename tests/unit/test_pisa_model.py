"""The PISA model's deparser checksums (nanobpf.models.pisa.fix_frame_checksums), which the device's egress
applies to frames whose program called bpf_xdp_csum_offload: correct sums for IPv4 and IPv6, with and
without VLAN tags, behind the host link's shim, and nothing changed where the headers do not parse;
and the lengths from the frame's end (pkt_comp.fix_len, set_lengths), which the device's QUIC helpers
leave to the egress when a seal grows a datagram by its tag or an open shrinks it."""
import random

import pytest

from nanobpf import ctrl
from nanobpf.models import pisa
from nanobpf.pcap import udp_frame


def valid_udp(frame, p):
    """The frame's IPv4 header checksum and UDP checksum verify (ones' complement sums of 0xffff)."""
    o, u = p.l3off, p.l4off
    if p.ipver == 4:
        hl = (frame[o] & 15) * 4
        if pisa.fold(pisa.word_sum(frame[o:o + hl])) != 0xFFFF:
            return False
        pseudo = pisa.word_sum(frame[o + 12:o + 20]) + 17 + p.ulen
    else:
        pseudo = pisa.word_sum(frame[o + 8:o + 40]) + 17 + p.ulen
    return pisa.fold(pseudo + pisa.word_sum(frame[u:u + p.ulen])) == 0xFFFF


def shimmed(frame, flags=2, cid_len=0):
    return ctrl.add_shim(frame, flags, cid_len)


def tagged(frame, vid=5):
    return frame[:12] + b"\x81\x00" + vid.to_bytes(2, "big") + frame[12:]


@pytest.mark.parametrize("v6", [False, True])
@pytest.mark.parametrize("shape", ["plain", "tag", "shim", "shim+tag"])
def test_fix_checksums_everywhere(v6, shape):
    rng = random.Random(hash((v6, shape)) & 0xFFFF)
    for n in (0, 1, 2, 7, 100, 1201):
        f = udp_frame(rng.randbytes(n), *(("2001:db8::1", "2001:db8::2") if v6 else ("10.0.0.1", "10.0.0.2")), 4433, 443)
        if "tag" in shape:
            f = tagged(f)
        if "shim" in shape:
            f = shimmed(f)
        stale = bytearray(f)
        p = pisa.parse(stale, len(stale), step_shim=True)
        assert p.udp and p.l3off == 14 + 4 * len(shape.split("+")) - (4 if shape == "plain" else 0)
        stale[p.l4off + 6:p.l4off + 8] = rng.randbytes(2)          # stale UDP checksum
        if not v6:
            stale[p.l3off + 10:p.l3off + 12] = rng.randbytes(2)    # and IPv4 header checksum
        pisa.fix_frame_checksums(stale)
        assert valid_udp(stale, p), (shape, n)
        assert stale[p.l4off + 6:p.l4off + 8] != b"\0\0"            # a computed 0 is sent as 0xffff


def test_ingress_does_not_step_over_the_shim():
    """Only the deparser looks behind the shim: at ingress the frame is a shim frame (no IP)."""
    f = shimmed(udp_frame(b"x" * 40, "10.0.0.1", "10.0.0.2", 1, 2), flags=1, cid_len=8)
    p = pisa.parse(f, len(f))
    assert p.shim and p.ipver == 0 and not p.udp
    q = pisa.parse(f, len(f), step_shim=True)
    assert q.ipver == 4 and q.udp and q.vlans == 0


def test_shim_cut_short_is_truncated():
    f = shimmed(udp_frame(b"x" * 40, "10.0.0.1", "10.0.0.2", 1, 2))
    assert "truncated" in pisa.parse(f[:17], 2000, step_shim=True).bad
    assert "truncated" in pisa.parse(f[:16] + b"\x81\x00\x00", 2000, step_shim=True).bad


@pytest.mark.parametrize("v6", [False, True])
@pytest.mark.parametrize("shape", ["plain", "tag", "shim", "shim+tag"])
@pytest.mark.parametrize("delta", [16, -16, 0])
def test_lengths_from_the_frame(v6, shape, delta):
    """A datagram grown or shrunk at its end (a seal's tag, an open's) leaves with its IP and UDP lengths
    those of a datagram built at the new size, and checksums that verify; IPv4 with options too."""
    rng = random.Random(hash((v6, shape, delta)) & 0xFFFF)
    addrs = ("2001:db8::1", "2001:db8::2") if v6 else ("10.0.0.1", "10.0.0.2")
    for n in (20, 100, 1201):
        payload = rng.randbytes(n)
        new = payload + rng.randbytes(delta) if delta > 0 else payload[:n + delta]
        f, want = udp_frame(payload, *addrs, 4433, 443), udp_frame(new, *addrs, 4433, 443)
        for wrap in ([tagged] if "tag" in shape else []) + ([shimmed] if "shim" in shape else []):
            f, want = wrap(f), wrap(want)
        p = pisa.parse(f, len(f), step_shim=True)
        changed = bytearray(f[:p.l4off + 8] + new)   # the datagram's bytes changed, its lengths not yet
        pisa.fix_frame_checksums(changed, fix_len=True)
        assert bytes(changed) == want, (shape, n)


def test_lengths_from_the_frame_ipv4_options_and_padding():
    """IHL > 5: the UDP header where the options end; Ethernet padding after the datagram becomes part of
    it (the frame's end decides: the device's helpers end the frame at the datagram first)."""
    f = bytearray(udp_frame(b"y" * 30, "10.0.0.1", "10.0.0.2", 1, 2))
    opts = bytes([1, 1, 1, 0])   # NOP NOP NOP EOL: 4 bytes of options
    f[14] = 0x46
    f[34:34] = opts
    f += b"\0" * 6
    pisa.fix_frame_checksums(f, fix_len=True)
    p = pisa.parse(f, len(f), step_shim=True)
    assert p.l4off == 14 + 24 and int.from_bytes(f[16:18], "big") == len(f) - 14
    assert p.ulen == len(f) - p.l4off and not p.bad and valid_udp(f, p)


def test_lengths_left_where_headers_do_not_parse():
    """Not IP, or a frame cut inside its IP header: nothing is set (the checksums neither, as with fix_csum);
    a UDP header cut short keeps its length, the IP length is still set."""
    arp = bytes(12) + b"\x08\x06" + bytes(28)
    f = bytearray(arp)
    pisa.fix_frame_checksums(f, fix_len=True)
    assert bytes(f) == arp
    g = udp_frame(b"z" * 10, "10.0.0.1", "10.0.0.2", 1, 2)[:30]   # inside the IPv4 header
    h = bytearray(g)
    pisa.fix_frame_checksums(h, fix_len=True)
    assert bytes(h) == g
    u = bytearray(udp_frame(b"z" * 10, "10.0.0.1", "10.0.0.2", 1, 2)[:14 + 20 + 6])   # UDP header cut short
    pisa.fix_frame_checksums(u, fix_len=True)
    assert int.from_bytes(u[16:18], "big") == 26 and u[14 + 20 + 4:14 + 20 + 6] == bytes([0, 18])
