"""The test bench's traffic classes (nanobpf.netbed): what the bottleneck's share measurement counts."""
import pytest

from nanobpf.netbed import _classify, parse_classes
from nanobpf.pcap import udp_frame


def test_classes_by_protocol_and_either_port():
    c = parse_classes(["quic=udp:4433,4434", "iperf=tcp:5201"])
    assert _classify(udp_frame(b"x" * 40, "10.0.0.1", "10.0.0.2", 4433, 50000), c) == "quic"
    assert _classify(udp_frame(b"x" * 40, "fd77::2", "fd77::1", 50000, 4434), c) == "quic"
    assert _classify(udp_frame(b"x" * 40, "10.0.0.1", "10.0.0.2", 5201, 1), c) == "other"   # UDP, not TCP
    tcp = bytearray(udp_frame(b"x" * 40, "10.0.0.1", "10.0.0.2", 5201, 1))
    tcp[23] = 6
    assert _classify(bytes(tcp), c) == "iperf"
    assert _classify(b"\x00" * 12 + b"\x08\x06" + bytes(28), c) == "other"
    assert _classify(b"\x00" * 10, c) == "other"


@pytest.mark.parametrize("bad", ["quic", "quic=udp", "quic=sctp:1", "quic=udp:x"])
def test_malformed_classes_refused(bad):
    with pytest.raises(ValueError, match="NAME=udp"):
        parse_classes([bad])
