"""The MAC reference (nanobpf.models.ethmac) that the eth_mac and eth_rgmii cocotb tests share."""
import zlib

from nanobpf.models.ethmac import MAX_FRAME, MIN_FRAME, rx_verdict, wire_frame
from nanobpf.soc import ENUMS


def test_fcs_gives_the_crc32_residue():
    # IEEE 802.3 clause 3.2.9: the CRC over a frame and its FCS leaves the magic residue 0xC704DD7B;
    # zlib's CRC-32 (reflected, inverted) of such a frame is 0x2144DF1C (= ~0xDEBB20E3).
    for n in (0, 1, 60, 1514):
        assert zlib.crc32(wire_frame(bytes(i & 0xFF for i in range(n)))) == 0x2144DF1C


def test_verdicts_are_counters_and_in_priority_order():
    good = wire_frame(bytes(60))
    assert rx_verdict(good) == "rx_frames"
    assert rx_verdict(good, error=True) == "rx_phy_err"
    assert rx_verdict(wire_frame(bytes(MIN_FRAME - 5))) == "rx_runt"
    assert rx_verdict(wire_frame(bytes(MIN_FRAME - 4))) == "rx_frames"
    assert rx_verdict(wire_frame(bytes(MAX_FRAME - 4))) == "rx_frames"
    assert rx_verdict(wire_frame(bytes(MAX_FRAME - 3))) == "rx_oversize"
    bad = bytearray(good)
    bad[10] ^= 1
    assert rx_verdict(bad) == "rx_fcs_err"
    assert rx_verdict(bad[:30]) == "rx_runt"  # too short comes before a bad FCS
    for v in ("rx_frames", "rx_phy_err", "rx_runt", "rx_oversize", "rx_fcs_err"):
        assert v in ENUMS["eth_counter"]
