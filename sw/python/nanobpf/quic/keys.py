"""QUIC v1 key derivation (RFC 9001 section 5 and 6.1) for AES-128-GCM with SHA-256.

    client, server = initial_secrets(dcid)        # Initial packets (RFC 9001 5.2)
    keys = PacketKeys.from_secret(client)         # key, iv, hp ("quic key", "quic iv", "quic hp")
    later = PacketKeys.from_secret(next_secret(client), hp=keys.hp)   # after a key update

HKDF (RFC 5869) is written out with hmac/hashlib; HKDF-Expand-Label is the TLS 1.3 one (RFC 8446
7.1) with the "tls13 " label prefix.
"""
from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

HASH_LEN = 32
KEY_LEN = 16
IV_LEN = 12
HP_LEN = 16

INITIAL_SALT_V1 = bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a")
"""RFC 9001 section 5.2: the salt of Initial secrets for QUIC version 1."""


def hkdf_extract(salt: bytes, ikm: bytes) -> bytes:
    """HKDF-Extract with SHA-256 (RFC 5869 2.2): HMAC(salt, ikm)."""
    return hmac.new(salt, ikm, hashlib.sha256).digest()


def hkdf_expand(prk: bytes, info: bytes, length: int) -> bytes:
    """HKDF-Expand with SHA-256 (RFC 5869 2.3)."""
    if not 0 <= length <= 255 * HASH_LEN:
        raise ValueError(f"HKDF-Expand length {length} out of range 0..{255 * HASH_LEN}")
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def hkdf_label(label: str, context: bytes, length: int) -> bytes:
    """The TLS 1.3 HkdfLabel structure (RFC 8446 7.1): uint16 length, opaque label<7..255> =
    "tls13 " + label, opaque context<0..255>; the info of HKDF-Expand."""
    full = b"tls13 " + label.encode("ascii")
    if len(full) > 255 or len(context) > 255:
        raise ValueError("HKDF-Expand-Label label or context longer than 255 bytes")
    if not 0 <= length <= 0xFFFF:
        raise ValueError(f"HKDF-Expand-Label length {length} does not fit 16 bits")
    return length.to_bytes(2, "big") + bytes([len(full)]) + full + bytes([len(context)]) + context


def hkdf_expand_label(secret: bytes, label: str, context: bytes, length: int) -> bytes:
    """TLS 1.3 HKDF-Expand-Label (RFC 8446 7.1) with SHA-256."""
    return hkdf_expand(secret, hkdf_label(label, context, length), length)


def initial_secrets(dcid: bytes) -> tuple[bytes, bytes]:
    """(client_initial_secret, server_initial_secret) from the client's first Destination CID."""
    initial = hkdf_extract(INITIAL_SALT_V1, dcid)
    return (hkdf_expand_label(initial, "client in", b"", HASH_LEN),
            hkdf_expand_label(initial, "server in", b"", HASH_LEN))


def next_secret(secret: bytes) -> bytes:
    """The secret after a key update (RFC 9001 6.1):
    HKDF-Expand-Label(secret, "quic ku", "", 32)."""
    return hkdf_expand_label(secret, "quic ku", b"", HASH_LEN)


@dataclass(frozen=True)
class PacketKeys:
    """AES-128-GCM packet protection keys of one direction and key phase."""
    key: bytes
    iv: bytes
    hp: bytes

    def __post_init__(self):
        for name, want in (("key", KEY_LEN), ("iv", IV_LEN), ("hp", HP_LEN)):
            got = getattr(self, name)
            if not isinstance(got, (bytes, bytearray)) or len(got) != want:
                raise ValueError(f"PacketKeys.{name} must be {want} bytes")

    @classmethod
    def from_secret(cls, secret: bytes, hp: bytes | None = None) -> "PacketKeys":
        """Derive key, iv and hp from a traffic secret (RFC 9001 5.1).

        hp: keep this header protection key instead of deriving it; a key update changes only
        key and iv (RFC 9001 6.1), so pass the first generation's hp for later generations."""
        return cls(key=hkdf_expand_label(secret, "quic key", b"", KEY_LEN),
                   iv=hkdf_expand_label(secret, "quic iv", b"", IV_LEN),
                   hp=hp if hp is not None else hkdf_expand_label(secret, "quic hp", b"", HP_LEN))


def key_generations(secret: bytes, count: int) -> list[PacketKeys]:
    """Keys of generations 0..count-1 of a 1-RTT secret: generation g is used with key phase g % 2;
    every generation keeps generation 0's header protection key."""
    if count < 1:
        raise ValueError("count must be at least 1")
    first = PacketKeys.from_secret(secret)
    out = [first]
    for _ in range(count - 1):
        secret = next_secret(secret)
        out.append(PacketKeys.from_secret(secret, hp=first.hp))
    return out
