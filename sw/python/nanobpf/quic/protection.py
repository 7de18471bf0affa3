"""QUIC v1 packet protection (RFC 9001 section 5) for AES-128-GCM: the reference the device is
checked against.

    info = header_info(datagram, short_cid_len=8)       # first packet of a UDP datagram
    u = unprotect(datagram, keys, largest_pn=-1)        # u.plain = header (unmasked) + plaintext
    assert protect(u.plain, keys, largest_pn=-1) == datagram[:info.end]

Packet numbers follow RFC 9000 17.1 and Appendix A (encode_pn, decode_pn). Header protection is
AES-ECB of a 16-byte sample taken at pn_offset + 4 (RFC 9001 5.4.2, 5.4.3); the AEAD nonce is the
iv XOR the full packet number, the associated data the unprotected header (RFC 9001 5.3).
"""
from __future__ import annotations

from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .keys import PacketKeys

TAG_LEN = 16
SAMPLE_LEN = 16
MAX_CID_LEN_V1 = 20
MAX_PN = (1 << 62) - 1

INITIAL, ZERO_RTT, HANDSHAKE, RETRY = 0, 1, 2, 3
"""Long header packet types of QUIC version 1 (RFC 9000 17.2)."""


class MalformedPacket(ValueError):
    """The bytes are not a well-formed QUIC packet (truncated, lengths out of range, ...)."""


class TagMismatch(ValueError):
    """The AEAD tag did not verify: wrong keys, wrong packet number or altered bytes."""


@dataclass(frozen=True)
class HeaderInfo:
    """What the (still protected) header of the first packet of a datagram says.

    type: long header type 0..3 (INITIAL, ZERO_RTT, HANDSHAKE, RETRY) for version 1; None for short
    headers, Version Negotiation and versions other than 1 (whose format past the CIDs is unknown).
    pn_offset: offset of the packet number, None where there is none (VN, Retry, other versions).
    end: end of this packet in the datagram (pn_offset + Length for long headers with a length).
    """
    long: bool
    type: int | None
    version: int | None
    dcid: bytes
    scid: bytes | None
    pn_offset: int | None
    end: int
    token: bytes | None = None


@dataclass(frozen=True)
class Unprotected:
    """unprotect()'s result: plain = unprotected header + decrypted payload (no tag)."""
    plain: bytes
    pn: int
    pn_len: int
    key_phase: int | None
    header_len: int


def _varint(buf: bytes, off: int, what: str) -> tuple[int, int]:
    """Decode a QUIC variable-length integer (RFC 9000 16) at off: (value, next offset)."""
    if off >= len(buf):
        raise MalformedPacket(f"truncated before the {what} field (offset {off})")
    size = 1 << (buf[off] >> 6)
    if off + size > len(buf):
        raise MalformedPacket(f"truncated {what} field: {size}-byte varint at offset {off}, "
                              f"packet has {len(buf)} bytes")
    value = int.from_bytes(buf[off:off + size], "big") & ((1 << (8 * size - 2)) - 1)
    return value, off + size


def _cid(buf: bytes, off: int, what: str, limit: int) -> tuple[bytes, int]:
    if off >= len(buf):
        raise MalformedPacket(f"truncated before the {what} length (offset {off})")
    n = buf[off]
    if n > limit:
        raise MalformedPacket(f"{what} length {n} exceeds {limit}")
    if off + 1 + n > len(buf):
        raise MalformedPacket(f"truncated {what}: {n} bytes at offset {off + 1}, "
                              f"packet has {len(buf)} bytes")
    return bytes(buf[off + 1:off + 1 + n]), off + 1 + n


def _parse(packet: bytes, short_cid_len: int, missing_tail: int) -> HeaderInfo:
    """header_info(), allowing the packet to end missing_tail bytes before its Length says
    (protect() parses plain text, whose Length already counts the tag it does not have yet)."""
    if not packet:
        raise MalformedPacket("empty packet")
    first = packet[0]
    if not first & 0x80:                                   # short header (RFC 9000 17.3.1)
        if not 0 <= short_cid_len <= MAX_CID_LEN_V1:
            raise ValueError(f"short_cid_len {short_cid_len} out of range 0..{MAX_CID_LEN_V1}")
        pn_offset = 1 + short_cid_len
        if len(packet) <= pn_offset:
            raise MalformedPacket(f"short header packet of {len(packet)} bytes ends before its "
                                  f"packet number (offset {pn_offset})")
        return HeaderInfo(long=False, type=None, version=None,
                          dcid=bytes(packet[1:pn_offset]), scid=None,
                          pn_offset=pn_offset, end=len(packet))
    if len(packet) < 5:
        raise MalformedPacket(f"long header packet truncated in the version field "
                              f"({len(packet)} bytes)")
    version = int.from_bytes(packet[1:5], "big")
    limit = MAX_CID_LEN_V1 if version == 1 else 255       # invariants (RFC 8999) allow 255
    dcid, off = _cid(packet, 5, "destination connection ID", limit)
    scid, off = _cid(packet, off, "source connection ID", limit)
    if version == 0:                                      # Version Negotiation (RFC 9000 17.2.1)
        rest = len(packet) - off
        if rest == 0 or rest % 4:
            raise MalformedPacket(f"Version Negotiation packet has {rest} bytes of versions, "
                                  f"not a positive multiple of 4")
        return HeaderInfo(True, None, 0, dcid, scid, None, len(packet))
    if version != 1:
        return HeaderInfo(True, None, version, dcid, scid, None, len(packet))
    ptype = (first >> 4) & 3
    token = None
    if ptype == RETRY:                                    # RFC 9000 17.2.5: token + 16-byte tag
        if len(packet) - off < TAG_LEN:
            raise MalformedPacket(f"Retry packet too short for its integrity tag "
                                  f"({len(packet) - off} bytes after the CIDs)")
        return HeaderInfo(True, RETRY, 1, dcid, scid, None, len(packet),
                          token=bytes(packet[off:len(packet) - TAG_LEN]))
    if ptype == INITIAL:
        tlen, off = _varint(packet, off, "token length")
        if off + tlen > len(packet):
            raise MalformedPacket(f"truncated token: {tlen} bytes at offset {off}, "
                                  f"packet has {len(packet)} bytes")
        token = bytes(packet[off:off + tlen])
        off += tlen
    length, pn_offset = _varint(packet, off, "Length")
    end = pn_offset + length
    if end > len(packet) + missing_tail:
        raise MalformedPacket(f"Length field says the packet ends at {end - missing_tail}, "
                              f"but there are only {len(packet)} bytes")
    return HeaderInfo(True, ptype, 1, dcid, scid, pn_offset, end, token)


def header_info(packet: bytes, short_cid_len: int = 8) -> HeaderInfo:
    """Parse the header of the first QUIC packet in a UDP datagram (nothing is decrypted).

    short_cid_len: the Destination Connection ID length of short header packets, which the packet
    does not carry. Raises MalformedPacket when the header or its Length do not fit the bytes."""
    return _parse(packet, short_cid_len, 0)


def hp_mask(hp_key: bytes, sample: bytes) -> bytes:
    """Header protection mask (RFC 9001 5.4.3): the first 5 bytes of AES-ECB(hp_key, sample)."""
    if len(sample) != SAMPLE_LEN:
        raise ValueError(f"header protection sample must be {SAMPLE_LEN} bytes, got {len(sample)}")
    enc = Cipher(algorithms.AES(bytes(hp_key)), modes.ECB()).encryptor()
    return (enc.update(bytes(sample)) + enc.finalize())[:5]


def encode_pn(full_pn: int, largest_acked: int | None) -> bytes:
    """Truncated packet number encoding (RFC 9000 A.2): the fewest bytes that represent at least
    twice the number of unacknowledged packet numbers. largest_acked None or -1: nothing acked."""
    if not 0 <= full_pn <= MAX_PN:
        raise ValueError(f"packet number {full_pn} out of range 0..2^62-1")
    if largest_acked is None or largest_acked < 0:
        num_unacked = full_pn + 1
    else:
        if largest_acked >= full_pn:
            raise ValueError(f"packet number {full_pn} is not above largest_acked {largest_acked}")
        num_unacked = full_pn - largest_acked
    # min_bits = log2(num_unacked) + 1, num_bytes = ceil(min_bits / 8)  <=>  2^(8n) >= 2*num_unacked
    nbytes = max(1, ((2 * num_unacked - 1).bit_length() + 7) // 8)
    if nbytes > 4:
        raise ValueError(f"{num_unacked} unacknowledged packet numbers need {nbytes} bytes (max 4)")
    return (full_pn & ((1 << (8 * nbytes)) - 1)).to_bytes(nbytes, "big")


def decode_pn(largest_pn: int, truncated_pn: int, pn_nbits: int) -> int:
    """Recover a full packet number (RFC 9000 A.3): the value closest to largest_pn + 1 whose low
    pn_nbits bits are truncated_pn. largest_pn = -1 when no packet has been processed yet."""
    if pn_nbits not in (8, 16, 24, 32):
        raise ValueError(f"pn_nbits must be 8, 16, 24 or 32, got {pn_nbits}")
    if not 0 <= truncated_pn < (1 << pn_nbits):
        raise ValueError(f"truncated packet number {truncated_pn} does not fit {pn_nbits} bits")
    if not -1 <= largest_pn <= MAX_PN:
        raise ValueError(f"largest_pn {largest_pn} out of range -1..2^62-1")
    expected = largest_pn + 1
    win = 1 << pn_nbits
    hwin = win // 2
    candidate = (expected & ~(win - 1)) | truncated_pn
    if candidate <= expected - hwin and candidate < (1 << 62) - win:
        return candidate + win
    if candidate > expected + hwin and candidate >= win:
        return candidate - win
    return candidate


def aead_nonce(iv: bytes, pn: int) -> bytes:
    """The AEAD nonce of packet number pn (RFC 9001 5.3): iv XOR pn left-padded to len(iv)."""
    if not 0 <= pn <= MAX_PN:
        raise ValueError(f"packet number {pn} out of range 0..2^62-1")
    return bytes(a ^ b for a, b in zip(iv, pn.to_bytes(len(iv), "big")))


def _first_byte_mask(long: bool) -> int:
    return 0x0F if long else 0x1F


def _protected(info: HeaderInfo) -> int:
    if info.pn_offset is None:
        kind = {0: "Version Negotiation"}.get(info.version, f"version 0x{info.version:08x}")
        if info.type == RETRY:
            kind = "Retry"
        raise MalformedPacket(f"{kind} packet has no packet number and no packet protection")
    return info.pn_offset


def unprotect(packet: bytes, keys: PacketKeys, largest_pn: int = -1,
              short_cid_len: int = 8) -> Unprotected:
    """Remove header protection and decrypt the first packet of a datagram (bytes after its end
    are ignored). largest_pn: the largest packet number received so far in this packet number
    space (-1: none). Raises MalformedPacket, or TagMismatch when the AEAD tag does not verify."""
    packet = bytes(packet)
    info = header_info(packet, short_cid_len)
    pn_offset = _protected(info)
    sample_at = pn_offset + 4
    if sample_at + SAMPLE_LEN > info.end:
        raise MalformedPacket(f"packet ends at {info.end}, before the end of the header "
                              f"protection sample ({sample_at}..{sample_at + SAMPLE_LEN})")
    mask = hp_mask(keys.hp, packet[sample_at:sample_at + SAMPLE_LEN])
    first = packet[0] ^ (mask[0] & _first_byte_mask(info.long))
    pn_len = (first & 3) + 1
    truncated = bytes(a ^ b for a, b in zip(packet[pn_offset:pn_offset + pn_len], mask[1:]))
    header = bytes([first]) + packet[1:pn_offset] + truncated
    pn = decode_pn(largest_pn, int.from_bytes(truncated, "big"), 8 * pn_len)
    try:
        payload = AESGCM(keys.key).decrypt(aead_nonce(keys.iv, pn), packet[len(header):info.end],
                                           header)
    except InvalidTag:
        raise TagMismatch(f"AEAD tag mismatch (packet number {pn}, {info.end} bytes)") from None
    return Unprotected(plain=header + payload, pn=pn, pn_len=pn_len,
                       key_phase=None if info.long else (first >> 2) & 1, header_len=len(header))


def protect(plain: bytes, keys: PacketKeys, largest_pn: int = -1, short_cid_len: int = 8) -> bytes:
    """Encrypt and header-protect one packet: the inverse of unprotect().

    plain: unprotected header with the truncated packet number (its length in the first byte's
    low 2 bits) followed by the plaintext payload; a long header's Length already counts the
    16-byte tag. largest_pn: the sender's largest packet number so far (-1: none), from which the
    full packet number is decoded. Raises MalformedPacket when plain is not one such packet."""
    plain = bytes(plain)
    info = _parse(plain, short_cid_len, TAG_LEN)
    pn_offset = _protected(info)
    if info.long and info.end != len(plain) + TAG_LEN:
        raise MalformedPacket(f"Length field says the protected packet ends at {info.end}, but "
                              f"{len(plain)} bytes of plain text + {TAG_LEN}-byte tag end at "
                              f"{len(plain) + TAG_LEN}")
    pn_len = (plain[0] & 3) + 1
    header_len = pn_offset + pn_len
    if len(plain) < header_len:
        raise MalformedPacket(f"plain text of {len(plain)} bytes ends inside its {pn_len}-byte "
                              f"packet number")
    header = plain[:header_len]
    pn = decode_pn(largest_pn, int.from_bytes(header[pn_offset:], "big"), 8 * pn_len)
    sealed = AESGCM(keys.key).encrypt(aead_nonce(keys.iv, pn), plain[header_len:], header)
    sample_at = 4 - pn_len                                 # pn_offset + 4, relative to sealed
    if sample_at + SAMPLE_LEN > len(sealed):
        raise MalformedPacket(f"payload of {len(plain) - header_len} bytes is too short for the "
                              f"header protection sample: packet number + payload must be at "
                              f"least 4 bytes")
    mask = hp_mask(keys.hp, sealed[sample_at:sample_at + SAMPLE_LEN])
    first = plain[0] ^ (mask[0] & _first_byte_mask(info.long))
    pn_bytes = bytes(a ^ b for a, b in zip(header[pn_offset:], mask[1:]))
    return bytes([first]) + header[1:pn_offset] + pn_bytes + sealed
