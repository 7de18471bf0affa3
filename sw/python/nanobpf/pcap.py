"""Classic pcap files and Ethernet/IP/UDP frames, with the standard library only (no scapy).

    frames = [udp_frame(b"hi", "10.0.0.1", "10.0.0.2", 1234, 443, vlan=10)]
    write_pcap("out.pcap", frames)
    for ts, frame in read_pcap("out.pcap"):
        info = parse_udp(frame)          # None when the frame is not IPv4/IPv6 UDP

Frames are Ethernet II, optionally with 802.1Q tags (0x8100; 0x88a8 is accepted when reading),
carrying IPv4 (no options written, IHL honoured when reading) or IPv6 (no extension headers).
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from pathlib import Path

MAGIC_USEC = 0xA1B2C3D4
MAGIC_NSEC = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
SNAPLEN = 262144

ETH_IPV4 = 0x0800
ETH_IPV6 = 0x86DD
ETH_VLAN = 0x8100
ETH_QINQ = 0x88A8
IPPROTO_UDP = 17


class MalformedFrame(ValueError):
    """An IPv4/IPv6/UDP frame whose lengths or header fields do not fit its bytes."""


# ---- pcap files ---------------------------------------------------------------------------------

def read_pcap(path) -> list[tuple[float, bytes]]:
    """[(timestamp seconds, frame bytes)] of a classic pcap file of Ethernet frames (either byte
    order, microsecond or nanosecond timestamps). Raises ValueError for other link types, pcapng
    and truncated files."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        raise ValueError(f"{path}: {len(data)} bytes, too short for a pcap file header")
    for endian in "<>":
        magic = struct.unpack(endian + "I", data[:4])[0]
        if magic in (MAGIC_USEC, MAGIC_NSEC):
            break
    else:
        raise ValueError(f"{path}: not a classic pcap file (magic {data[:4].hex()}; pcapng is not "
                         f"supported)")
    scale = 1e-9 if magic == MAGIC_NSEC else 1e-6
    linktype = struct.unpack(endian + "I", data[20:24])[0] & 0xFFFF
    if linktype != LINKTYPE_ETHERNET:
        raise ValueError(f"{path}: link type {linktype} is not Ethernet (1)")
    out, off = [], 24
    while off < len(data):
        if off + 16 > len(data):
            raise ValueError(f"{path}: truncated record header at offset {off}")
        sec, frac, incl, _orig = struct.unpack(endian + "IIII", data[off:off + 16])
        off += 16
        if off + incl > len(data):
            raise ValueError(f"{path}: record of {incl} bytes at offset {off - 16} is truncated")
        out.append((sec + frac * scale, data[off:off + incl]))
        off += incl
    return out


def write_pcap(path, frames, timestamps=None) -> None:
    """Write Ethernet frames to a little-endian microsecond pcap file. timestamps: seconds per
    frame; default i * 1 us for frame i (deterministic files)."""
    frames = [bytes(f) for f in frames]
    if timestamps is None:
        timestamps = [i * 1e-6 for i in range(len(frames))]
    timestamps = list(timestamps)
    if len(timestamps) != len(frames):
        raise ValueError(f"{len(timestamps)} timestamps for {len(frames)} frames")
    parts = [struct.pack("<IHHiIII", MAGIC_USEC, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET)]
    for ts, frame in zip(timestamps, frames):
        if ts < 0:
            raise ValueError(f"negative timestamp {ts}")
        usec = round(ts * 1e6)
        sec, usec = divmod(usec, 1_000_000)
        parts.append(struct.pack("<IIII", sec, usec, len(frame), len(frame)))
        parts.append(frame)
    Path(path).write_bytes(b"".join(parts))


# ---- checksums and frames -----------------------------------------------------------------------

def inet_checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071): ones' complement of the ones' complement sum."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _mac(value) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        mac = bytes(value)
    else:
        mac = bytes(int(part, 16) for part in str(value).replace("-", ":").split(":"))
    if len(mac) != 6:
        raise ValueError(f"bad MAC address {value!r}")
    return mac


def _pseudo_header(src, dst, length: int) -> bytes:
    if src.version == 4:
        return src.packed + dst.packed + struct.pack("!BBH", 0, IPPROTO_UDP, length)
    return src.packed + dst.packed + struct.pack("!I3xB", length, IPPROTO_UDP)


def udp_checksum(src, dst, udp: bytes) -> int:
    """UDP checksum over the IPv4/IPv6 pseudo-header and the UDP header + payload (checksum field
    taken as it is in udp: pass it zeroed to compute); 0 is sent as 0xffff (RFC 768, RFC 8200)."""
    src, dst = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    value = inet_checksum(_pseudo_header(src, dst, len(udp)) + udp)
    return value or 0xFFFF


def udp_frame(payload: bytes, src: str, dst: str, sport: int, dport: int, vlan: int | None = None,
              src_mac="02:00:00:00:00:01", dst_mac="02:00:00:00:00:02", ttl: int = 64,
              ip_id: int = 0) -> bytes:
    """An Ethernet [802.1Q] IPv4 or IPv6 (by the address family of src/dst) UDP frame with correct
    IPv4 header and UDP checksums. vlan: VLAN ID 0..4095 (priority 0), None for untagged. ttl is
    the IPv6 hop limit for IPv6; ip_id the IPv4 identification (flags and fragment offset 0)."""
    s, d = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    if s.version != d.version:
        raise ValueError(f"address families differ: {src} and {dst}")
    for port in (sport, dport):
        if not 0 <= port <= 0xFFFF:
            raise ValueError(f"bad UDP port {port}")
    udp_len = 8 + len(payload)
    if udp_len > 0xFFFF:
        raise ValueError(f"UDP payload of {len(payload)} bytes is too long")
    udp = struct.pack("!HHHH", sport, dport, udp_len, 0) + bytes(payload)
    udp = udp[:6] + struct.pack("!H", udp_checksum(s, d, udp)) + udp[8:]
    if s.version == 4:
        if 20 + udp_len > 0xFFFF:
            raise ValueError("IPv4 total length exceeds 65535")
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, ip_id, 0, ttl, IPPROTO_UDP, 0,
                         s.packed, d.packed)
        ip = ip[:10] + struct.pack("!H", inet_checksum(ip)) + ip[12:]
        ethertype = ETH_IPV4
    else:
        ip = struct.pack("!IHBB16s16s", 6 << 28, udp_len, IPPROTO_UDP, ttl, s.packed, d.packed)
        ethertype = ETH_IPV6
    eth = _mac(dst_mac) + _mac(src_mac)
    if vlan is not None:
        if not 0 <= vlan <= 0xFFF:
            raise ValueError(f"VLAN ID {vlan} out of range 0..4095")
        eth += struct.pack("!HH", ETH_VLAN, vlan)
    return eth + struct.pack("!H", ethertype) + ip + udp


@dataclass(frozen=True)
class UdpInfo:
    """A parsed UDP frame. ethertype is the IP one (after any VLAN tags); vlan the first tag's
    VLAN ID or None. ipv4_checksum_ok is None for IPv6. udp_checksum_ok is True for an IPv4
    datagram sent without a checksum (field 0)."""
    ethertype: int
    vlan: int | None
    ip_version: int
    src: str
    dst: str
    sport: int
    dport: int
    payload_offset: int
    payload: bytes
    ipv4_checksum_ok: bool | None
    udp_checksum_ok: bool
    udp_checksum_offset: int


def parse_udp(frame: bytes) -> UdpInfo | None:
    """Parse an Ethernet frame. None when it is not UDP over IPv4/IPv6 (other ethertypes or
    protocols, IPv6 extension headers, IPv4 fragments); raises MalformedFrame when it claims to
    be one but its lengths or version fields do not fit. Ethernet padding is ignored."""
    frame = bytes(frame)
    if len(frame) < 14:
        raise MalformedFrame(f"frame of {len(frame)} bytes is shorter than an Ethernet header")
    off, vlan = 12, None
    ethertype = struct.unpack_from("!H", frame, off)[0]
    while ethertype in (ETH_VLAN, ETH_QINQ):
        if off + 6 > len(frame):
            raise MalformedFrame("truncated 802.1Q tag")
        tci = struct.unpack_from("!H", frame, off + 2)[0]
        vlan = tci & 0xFFF if vlan is None else vlan
        off += 4
        ethertype = struct.unpack_from("!H", frame, off)[0]
    ip = off + 2
    if ethertype == ETH_IPV4:
        if len(frame) < ip + 20:
            raise MalformedFrame("truncated IPv4 header")
        vihl, proto = frame[ip], frame[ip + 9]
        total, frag = struct.unpack_from("!H2xH", frame, ip + 2)
        ihl = (vihl & 0xF) * 4
        if vihl >> 4 != 4 or ihl < 20:
            raise MalformedFrame(f"bad IPv4 version/IHL byte 0x{vihl:02x}")
        if total < ihl or ip + total > len(frame):
            raise MalformedFrame(f"IPv4 total length {total} does not fit the frame "
                                 f"({len(frame) - ip} bytes after the Ethernet header)")
        if proto != IPPROTO_UDP or frag & 0x3FFF:         # not UDP, or a fragment
            return None
        ipv4_ok = inet_checksum(frame[ip:ip + ihl]) == 0
        src, dst = (str(ipaddress.IPv4Address(frame[ip + 12:ip + 16])),
                    str(ipaddress.IPv4Address(frame[ip + 16:ip + 20])))
        udp, ip_end, version = ip + ihl, ip + total, 4
    elif ethertype == ETH_IPV6:
        if len(frame) < ip + 40:
            raise MalformedFrame("truncated IPv6 header")
        if frame[ip] >> 4 != 6:
            raise MalformedFrame(f"bad IPv6 version nibble in 0x{frame[ip]:02x}")
        plen, nexthdr = struct.unpack_from("!HB", frame, ip + 4)
        if nexthdr != IPPROTO_UDP:
            return None
        if ip + 40 + plen > len(frame):
            raise MalformedFrame(f"IPv6 payload length {plen} does not fit the frame")
        ipv4_ok = None
        src, dst = (str(ipaddress.IPv6Address(frame[ip + 8:ip + 24])),
                    str(ipaddress.IPv6Address(frame[ip + 24:ip + 40])))
        udp, ip_end, version = ip + 40, ip + 40 + plen, 6
    else:
        return None
    if udp + 8 > ip_end:
        raise MalformedFrame("truncated UDP header")
    sport, dport, ulen, csum = struct.unpack_from("!HHHH", frame, udp)
    if ulen < 8 or udp + ulen > ip_end:
        raise MalformedFrame(f"UDP length {ulen} does not fit the IP payload "
                             f"({ip_end - udp} bytes)")
    if csum == 0:
        udp_ok = version == 4
    else:
        udp_ok = inet_checksum(_pseudo_header(ipaddress.ip_address(src), ipaddress.ip_address(dst),
                                              ulen) + frame[udp:udp + ulen]) == 0
    return UdpInfo(ethertype=ethertype, vlan=vlan, ip_version=version, src=src, dst=dst,
                   sport=sport, dport=dport, payload_offset=udp + 8,
                   payload=frame[udp + 8:udp + ulen], ipv4_checksum_ok=ipv4_ok,
                   udp_checksum_ok=udp_ok, udp_checksum_offset=udp + 6)


def ipv4_checksum_ok(frame: bytes) -> bool:
    """Whether the IPv4 header checksum of an Ethernet [802.1Q] IPv4 frame verifies (False for
    frames that are not IPv4)."""
    frame = bytes(frame)
    off = 12
    while len(frame) >= off + 2 and struct.unpack_from("!H", frame, off)[0] in (ETH_VLAN, ETH_QINQ):
        off += 4
    if len(frame) < off + 2 + 20 or struct.unpack_from("!H", frame, off)[0] != ETH_IPV4:
        return False
    ihl = (frame[off + 2] & 0xF) * 4
    if ihl < 20 or len(frame) < off + 2 + ihl:
        return False
    return inet_checksum(frame[off + 2:off + 2 + ihl]) == 0


def fix_udp_checksum(frame: bytes) -> bytes:
    """The frame with its UDP checksum recomputed (e.g. frames captured on `lo`, where checksum
    offload leaves a partial checksum). Raises ValueError when the frame is not UDP."""
    info = parse_udp(frame)
    if info is None:
        raise ValueError("not a UDP frame")
    start = info.payload_offset - 8
    udp = bytearray(frame[start:info.payload_offset + len(info.payload)])
    udp[6:8] = b"\0\0"
    csum = udp_checksum(info.src, info.dst, bytes(udp))
    return frame[:start + 6] + struct.pack("!H", csum) + frame[start + 8:]


def with_payload(frame, payload):
    """frame with its UDP payload replaced: lengths, IPv4 header checksum and UDP checksum fixed."""
    u = parse_udp(frame)
    head = bytearray(frame[:u.payload_offset])
    udp_off = u.payload_offset - 8
    struct.pack_into(">H", head, udp_off + 4, 8 + len(payload))
    if u.ip_version == 4:
        ip = udp_off - ((head[14 + 4 * bool(u.vlan)] & 0xf) * 4)
        struct.pack_into(">H", head, ip + 2, udp_off - ip + 8 + len(payload))
        struct.pack_into(">H", head, ip + 10, 0)
        struct.pack_into(">H", head, ip + 10, inet_checksum(bytes(head[ip:udp_off])))
    else:
        struct.pack_into(">H", head, udp_off - 40 + 4, 8 + len(payload))
    return fix_udp_checksum(bytes(head) + payload)
