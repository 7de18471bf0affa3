"""The pcap and frame helpers (sw/python/nanobpf/pcap.py), checked against scapy: udp_frame()
builds the same bytes as scapy (IPv4/IPv6, with and without 802.1Q), parse_udp() reads them back
with checksums verified, and pcap files round-trip both ways in both byte orders and timestamp
resolutions."""
import struct

import pytest

from nanobpf.pcap import (MalformedFrame, fix_udp_checksum, inet_checksum, ipv4_checksum_ok,
                          parse_udp, read_pcap, udp_checksum, udp_frame, write_pcap)

pytest.importorskip("scapy.all")
from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, PcapWriter, Raw, rdpcap  # noqa: E402

SRC_MAC, DST_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"

CASES = [
    ("10.0.0.1", "10.0.0.2", 40000, 443, None, b"hello quic"),
    ("192.168.1.10", "192.168.1.20", 443, 51234, 10, bytes(range(256)) * 5),
    ("127.0.0.1", "127.0.0.1", 1, 65535, 4095, b"x"),            # odd length
    ("10.1.2.3", "10.3.2.1", 5353, 5353, 0, b""),                 # empty payload, VLAN 0
    ("2001:db8::1", "2001:db8::2", 40000, 443, None, b"hello v6"),
    ("fe80::1", "ff02::fb", 5353, 5353, 100, bytes(1201)),
]


def scapy_frame(src, dst, sport, dport, vlan, payload):
    eth = Ether(src=SRC_MAC, dst=DST_MAC)
    if vlan is not None:
        eth = eth / Dot1Q(vlan=vlan)
    ip = IP(src=src, dst=dst, id=0, ttl=64) if ":" not in src else IPv6(src=src, dst=dst, hlim=64)
    return bytes(eth / ip / UDP(sport=sport, dport=dport) / Raw(payload))


@pytest.mark.parametrize("src, dst, sport, dport, vlan, payload", CASES)
def test_udp_frame_matches_scapy(src, dst, sport, dport, vlan, payload):
    frame = udp_frame(payload, src, dst, sport, dport, vlan=vlan, src_mac=SRC_MAC, dst_mac=DST_MAC)
    assert frame == scapy_frame(src, dst, sport, dport, vlan, payload)
    info = parse_udp(frame)
    v6 = ":" in src
    assert info.ethertype == (0x86DD if v6 else 0x0800) and info.ip_version == (6 if v6 else 4)
    assert (info.src, info.dst, info.sport, info.dport, info.vlan) == (src, dst, sport, dport, vlan)
    assert info.payload == payload
    assert info.payload_offset == 14 + (4 if vlan is not None else 0) + (40 if v6 else 20) + 8
    assert frame[info.payload_offset:] == payload
    assert info.udp_checksum_ok
    assert info.ipv4_checksum_ok is (None if v6 else True)
    assert ipv4_checksum_ok(frame) is (not v6)


def test_checksums_detect_corruption():
    frame = udp_frame(b"payload bytes", "10.0.0.1", "10.0.0.2", 1000, 2000, vlan=7)
    bad_payload = frame[:-1] + bytes([frame[-1] ^ 0x40])
    info = parse_udp(bad_payload)
    assert not info.udp_checksum_ok and info.ipv4_checksum_ok
    ttl = 18 + 8
    bad_ip = frame[:ttl] + bytes([frame[ttl] - 1]) + frame[ttl + 1:]
    assert not ipv4_checksum_ok(bad_ip) and parse_udp(bad_ip).ipv4_checksum_ok is False
    assert fix_udp_checksum(bad_payload) != bad_payload
    assert parse_udp(fix_udp_checksum(bad_payload)).udp_checksum_ok
    partial = bytearray(frame)                      # what loopback checksum offload leaves
    at = parse_udp(frame).udp_checksum_offset
    assert at == 18 + 20 + 6
    partial[at:at + 2] = b"\x12\x34"
    assert not parse_udp(bytes(partial)).udp_checksum_ok
    assert fix_udp_checksum(bytes(partial)) == frame
    v6 = udp_frame(b"abc", "2001:db8::1", "2001:db8::2", 1, 2)
    assert fix_udp_checksum(v6[:-1] + b"x") != v6[:-1] + b"x"
    assert parse_udp(fix_udp_checksum(v6[:-1] + b"x")).udp_checksum_ok


def test_zero_udp_checksum():
    v4 = bytearray(udp_frame(b"abc", "10.0.0.1", "10.0.0.2", 1, 2))
    v4[14 + 20 + 6:14 + 20 + 8] = b"\0\0"           # IPv4: "no checksum" is allowed
    assert parse_udp(bytes(v4)).udp_checksum_ok
    v6 = bytearray(udp_frame(b"abc", "2001:db8::1", "2001:db8::2", 1, 2))
    v6[14 + 40 + 6:14 + 40 + 8] = b"\0\0"           # IPv6: mandatory (RFC 8200 8.1)
    assert not parse_udp(bytes(v6)).udp_checksum_ok


def test_inet_checksum_rfc1071_example():
    # RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (checksum 220d)
    assert inet_checksum(bytes.fromhex("0001f203f4f5f6f7")) == 0x220D


def test_ipv4_options_and_ethernet_padding():
    payload = b"after options"
    udp = struct.pack("!HHHH", 7, 9, 8 + len(payload), 0) + payload
    udp = udp[:6] + struct.pack("!H", udp_checksum("10.0.0.1", "10.0.0.2", udp)) + udp[8:]
    opts = b"\x01\x01\x01\x00"                      # NOP NOP NOP EOL: IHL 6
    ip = struct.pack("!BBHHHBBH4s4s", 0x46, 0, 24 + len(udp), 1, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])) + opts
    ip = ip[:10] + struct.pack("!H", inet_checksum(ip)) + ip[12:]
    frame = bytes.fromhex("020000000002020000000001 0800") + ip + udp + bytes(20)   # padding
    info = parse_udp(frame)
    assert info.payload == payload and info.payload_offset == 14 + 24 + 8
    assert info.ipv4_checksum_ok and (info.sport, info.dport) == (7, 9)
    assert info.udp_checksum_ok
    parsed = Ether(frame)                           # scapy sees the same datagram and checksums
    assert parsed[IP].ihl == 6 and bytes(parsed[UDP].payload)[:len(payload)] == payload
    sent = (parsed[IP].chksum, parsed[UDP].chksum)
    del parsed[IP].chksum, parsed[UDP].chksum
    again = Ether(bytes(parsed))
    assert (again[IP].chksum, again[UDP].chksum) == sent


def test_not_udp_is_none():
    arp = bytes(12) + b"\x08\x06" + bytes(28)
    assert parse_udp(arp) is None
    from scapy.all import TCP, IPv6ExtHdrHopByHop
    assert parse_udp(bytes(Ether() / IP(src="1.1.1.1", dst="2.2.2.2") / TCP())) is None
    hop = Ether() / IPv6(src="::1", dst="::2") / IPv6ExtHdrHopByHop() / UDP() / Raw(b"x")
    assert parse_udp(bytes(hop)) is None
    frag = Ether() / IP(src="1.1.1.1", dst="2.2.2.2", flags="MF") / UDP() / Raw(b"x" * 20)
    assert parse_udp(bytes(frag)) is None
    assert ipv4_checksum_ok(bytes(Ether() / IPv6() / UDP())) is False


@pytest.mark.parametrize("v6", [False, True])
def test_every_truncation_is_malformed(v6):
    src, dst = ("2001:db8::1", "2001:db8::2") if v6 else ("10.0.0.1", "10.0.0.2")
    frame = udp_frame(b"0123456789", src, dst, 1, 2, vlan=5)
    for n in range(len(frame)):
        with pytest.raises(MalformedFrame):
            parse_udp(frame[:n])


def test_bad_lengths_are_malformed():
    frame = bytearray(udp_frame(b"0123456789", "10.0.0.1", "10.0.0.2", 1, 2))
    long_udp = bytearray(frame)
    long_udp[14 + 20 + 4:14 + 20 + 6] = struct.pack("!H", 100)
    with pytest.raises(MalformedFrame, match="UDP length"):
        parse_udp(bytes(long_udp))
    short_udp = bytearray(frame)
    short_udp[14 + 20 + 4:14 + 20 + 6] = struct.pack("!H", 7)
    with pytest.raises(MalformedFrame, match="UDP length"):
        parse_udp(bytes(short_udp))
    bad_ihl = bytearray(frame)
    bad_ihl[14] = 0x44
    with pytest.raises(MalformedFrame, match="IHL"):
        parse_udp(bytes(bad_ihl))
    with pytest.raises(ValueError):
        udp_frame(b"", "10.0.0.1", "2001:db8::1", 1, 2)
    with pytest.raises(ValueError):
        udp_frame(b"", "10.0.0.1", "10.0.0.2", 1, 2, vlan=4096)


def test_pcap_round_trip_and_scapy_reads_it(tmp_path):
    frames = [udp_frame(bytes([i]) * (i + 1), "10.0.0.1", "10.0.0.2", 1000 + i, 443)
              for i in range(5)]
    stamps = [1700000000.25, 1700000000.5, 1700000001.0, 1700000001.000001, 1700000002.999999]
    path = tmp_path / "a.pcap"
    write_pcap(path, frames, stamps)
    back = read_pcap(path)
    assert [f for _, f in back] == frames
    assert all(abs(t - s) < 1e-6 for (t, _), s in zip(back, stamps))
    pkts = rdpcap(str(path))
    assert [bytes(p) for p in pkts] == frames
    assert all(abs(float(p.time) - s) < 1e-6 for p, s in zip(pkts, stamps))
    write_pcap(path, frames)                        # default timestamps: i microseconds
    assert [t for t, _ in read_pcap(path)] == pytest.approx([i * 1e-6 for i in range(5)])
    with pytest.raises(ValueError):
        write_pcap(path, frames, stamps[:2])


@pytest.mark.parametrize("endianness, nano", [("<", False), (">", False), ("<", True),
                                              (">", True)])
def test_read_scapy_pcaps(tmp_path, endianness, nano):
    frames = [udp_frame(b"abc" * i, "2001:db8::1", "2001:db8::2", i, 443) for i in range(1, 4)]
    path = tmp_path / "s.pcap"
    w = PcapWriter(str(path), linktype=1, endianness=endianness, nano=nano, sync=True)
    stamps = [1700000000.123456, 1700000001.5, 1700000002.000001]
    for frame, ts in zip(frames, stamps):
        pkt = Ether(frame)
        pkt.time = ts
        w.write(pkt)
    w.close()
    magic = path.read_bytes()[:4]
    want = b"\xa1\xb2\x3c\x4d" if nano else b"\xa1\xb2\xc3\xd4"
    assert magic == (want if endianness == ">" else want[::-1])
    back = read_pcap(path)
    assert [f for _, f in back] == frames
    assert [t for t, _ in back] == pytest.approx(stamps, abs=2e-6)


def test_read_pcap_refuses(tmp_path):
    path = tmp_path / "raw.pcap"
    PcapWriter(str(path), linktype=101, sync=True).write(IP() / UDP())   # LINKTYPE_RAW
    with pytest.raises(ValueError, match="link type 101"):
        read_pcap(path)
    ng = tmp_path / "x.pcapng"
    ng.write_bytes(bytes.fromhex("0a0d0d0a") + bytes(28))
    with pytest.raises(ValueError, match="pcapng"):
        read_pcap(ng)
    good = tmp_path / "good.pcap"
    write_pcap(good, [udp_frame(b"x" * 10, "10.0.0.1", "10.0.0.2", 1, 2)])
    data = good.read_bytes()
    for cut in (10, 24 + 8, len(data) - 1):
        bad = tmp_path / f"cut{cut}.pcap"
        bad.write_bytes(data[:cut])
        with pytest.raises(ValueError, match="short|truncated"):
            read_pcap(bad)
