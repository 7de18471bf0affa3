"""The PISA model's deparser checksums (nanobpf.models.pisa.fix_frame_checksums), which the device's egress
applies to frames whose program called bpf_xdp_csum_offload: correct sums for IPv4 and IPv6, with and
without VLAN tags, behind the host link's shim, and nothing changed where the headers do not parse."""
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
