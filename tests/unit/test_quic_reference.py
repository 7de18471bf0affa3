"""The reference QUIC v1 packet protection (sw/python/nanobpf/quic): RFC 9001 Appendix A vectors
bit-exact, RFC 9000 Appendix A packet number examples, key updates (RFC 9001 A.5 "quic ku" and
aioquic as a second implementation), malformed and forged input, SSLKEYLOGFILE parsing, and a real
aioquic connection captured on lo whose every packet is decrypted and re-protected.

Test vectors: RFC 9001 Appendix A (A.1 keys, A.2 client Initial, A.3 server Initial, A.4 Retry,
A.5 key/iv/hp/ku and nonce of the ChaCha20 example), transcribed from the RFC text; RFC 9000
Appendix A.2/A.3 packet number examples. The hex blocks below keep the RFC's line layout.
"""
import json
import os
import random
import shutil
import socket
import subprocess
import sys

import pytest

from nanobpf import ROOT, command
from nanobpf.pcap import parse_udp, read_pcap
from nanobpf.quic import (INITIAL_SALT_V1, MalformedPacket, PacketKeys, TagMismatch, aead_nonce,
                          decode_pn, encode_pn, header_info, hkdf_expand_label, hkdf_extract,
                          hkdf_label, hp_mask, initial_secrets, key_generations, next_secret,
                          parse_keylog, protect, traffic_secrets, unprotect)
from nanobpf.quic.protection import HANDSHAKE, INITIAL, RETRY


from nanobpf.quic.vectors import (DCID, INITIAL_SECRET, CLIENT_INITIAL_SECRET, SERVER_INITIAL_SECRET, CLIENT_KEYS, SERVER_KEYS, A2_CRYPTO, A2_HEADER, A2_PROTECTED, A3_PAYLOAD, A3_HEADER, A3_PROTECTED, A2_PLAIN, A3_PLAIN, A4_RETRY, A5_SECRET, A5_KEY, A5_IV, A5_HP, A5_KU, A5_PN, A5_NONCE, h)  # noqa: F401


def test_hkdf_labels_rfc9001_a1():
    assert hkdf_label("client in", b"", 32) == h("00200f746c73313320636c69656e7420696e00")
    assert hkdf_label("server in", b"", 32) == h("00200f746c7331332073657276657220696e00")
    assert hkdf_label("quic key", b"", 16) == h("00100e746c7331332071756963206b657900")
    assert hkdf_label("quic iv", b"", 12) == h("000c0d746c733133207175696320697600")
    assert hkdf_label("quic hp", b"", 16) == h("00100d746c733133207175696320687000")


def test_initial_keys_rfc9001_a1():
    assert INITIAL_SALT_V1 == h("38762cf7f55934b34d179ae6a4c80cadccbb7f0a")
    assert hkdf_extract(INITIAL_SALT_V1, DCID) == INITIAL_SECRET
    assert hkdf_expand_label(INITIAL_SECRET, "client in", b"", 32) == CLIENT_INITIAL_SECRET
    assert initial_secrets(DCID) == (CLIENT_INITIAL_SECRET, SERVER_INITIAL_SECRET)
    assert PacketKeys.from_secret(CLIENT_INITIAL_SECRET) == CLIENT_KEYS
    assert PacketKeys.from_secret(SERVER_INITIAL_SECRET) == SERVER_KEYS


def test_client_initial_rfc9001_a2():
    assert len(A2_PROTECTED) == 1200
    info = header_info(A2_PROTECTED)
    assert (info.long, info.type, info.version) == (True, INITIAL, 1)
    assert (info.dcid, info.scid, info.token) == (DCID, b"", b"")
    assert (info.pn_offset, info.end) == (18, 1200)
    assert hp_mask(CLIENT_KEYS.hp, h("d1b1c98dd7689fb8ec11d242b123dc9b")) == h("437b9aec36")
    packet = protect(A2_PLAIN, CLIENT_KEYS)
    assert packet[:22] == h("c000000001088394c8f03e5157080000449e7b9aec34")
    assert packet[22:38] == h("d1b1c98dd7689fb8ec11d242b123dc9b")      # the sample
    assert packet == A2_PROTECTED
    u = unprotect(A2_PROTECTED, CLIENT_KEYS)
    assert u.plain == A2_PLAIN
    assert (u.pn, u.pn_len, u.header_len, u.key_phase) == (2, 4, 22, None)


def test_server_initial_rfc9001_a3():
    assert len(A3_PROTECTED) == 135
    info = header_info(A3_PROTECTED)
    assert (info.long, info.type, info.version) == (True, INITIAL, 1)
    assert (info.dcid, info.scid, info.token) == (b"", h("f067a5502a4262b5"), b"")
    assert (info.pn_offset, info.end) == (18, 135)
    assert hp_mask(SERVER_KEYS.hp, h("2cd0991cd25b0aac406a5816b6394100")) == h("2ec0d8356a")
    packet = protect(A3_PLAIN, SERVER_KEYS)
    assert packet[:20] == h("cf000000010008f067a5502a4262b5004075c0d9")
    assert packet == A3_PROTECTED
    u = unprotect(A3_PROTECTED, SERVER_KEYS)
    assert u.plain == A3_PLAIN
    assert (u.pn, u.pn_len, u.header_len) == (1, 2, 20)


def test_coalesced_datagram_only_first_packet():
    datagram = A3_PROTECTED + A2_PROTECTED
    assert header_info(datagram).end == len(A3_PROTECTED)
    assert unprotect(datagram, SERVER_KEYS).plain == A3_PLAIN
    second = datagram[header_info(datagram).end:]
    assert unprotect(second, CLIENT_KEYS).plain == A2_PLAIN


def test_retry_and_version_negotiation_have_no_packet_number():
    info = header_info(A4_RETRY)
    assert (info.type, info.version, info.dcid) == (RETRY, 1, b"")
    assert info.scid == h("f067a5502a4262b5")
    assert (info.token, info.pn_offset, info.end) == (b"token", None, len(A4_RETRY))
    with pytest.raises(MalformedPacket, match="Retry"):
        unprotect(A4_RETRY, CLIENT_KEYS)
    vn = h("80 00000000 08") + DCID + h("00") + h("00000001 6b3343cf")
    info = header_info(vn)
    assert (info.long, info.type, info.version) == (True, None, 0)
    assert (info.dcid, info.scid, info.pn_offset, info.end) == (DCID, b"", None, len(vn))
    with pytest.raises(MalformedPacket, match="Version Negotiation"):
        unprotect(vn, CLIENT_KEYS)
    with pytest.raises(MalformedPacket, match="multiple of 4"):
        header_info(vn[:-1])
    other = h("c0 6b3343cf 08") + DCID + h("00") + bytes(30)        # version 2 is not parsed
    info = header_info(other)
    assert (info.type, info.version, info.pn_offset, info.end) == (None, 0x6B3343CF, None, 45)


def test_key_update_derivation_rfc9001_a5():
    # A.5 uses the ChaCha20 suite's 32-byte key/hp; the derivation (SHA-256 HKDF) is the same
    assert hkdf_expand_label(A5_SECRET, "quic key", b"", 32) == A5_KEY
    assert hkdf_expand_label(A5_SECRET, "quic iv", b"", 12) == A5_IV
    assert hkdf_expand_label(A5_SECRET, "quic hp", b"", 32) == A5_HP
    assert next_secret(A5_SECRET) == A5_KU
    assert aead_nonce(A5_IV, A5_PN) == A5_NONCE
    # its 3-byte packet number encoding: "49140 is encoded" as 00bff4
    assert A5_PN & 0xFFFFFF == 49140
    assert decode_pn(A5_PN - 1, 49140, 24) == A5_PN


def test_key_generations():
    gens = key_generations(A5_SECRET, 3)
    assert gens[0] == PacketKeys.from_secret(A5_SECRET)
    assert gens[1] == PacketKeys.from_secret(A5_KU, hp=gens[0].hp)
    assert gens[2] == PacketKeys.from_secret(next_secret(A5_KU), hp=gens[0].hp)
    assert len({g.key for g in gens}) == 3 and len({g.iv for g in gens}) == 3
    assert {g.hp for g in gens} == {gens[0].hp}
    assert PacketKeys.from_secret(A5_KU).hp != gens[0].hp       # a fresh hp would differ
    assert next_secret(A5_SECRET) != A5_SECRET


def _short_plain(key_phase, pn_bytes, payload, dcid=b"\x11" * 8):
    first = 0x40 | (key_phase << 2) | (len(pn_bytes) - 1)
    return bytes([first]) + dcid + pn_bytes + payload


@pytest.mark.parametrize("pn_len", [1, 2, 3, 4])
@pytest.mark.parametrize("key_phase", [0, 1])
def test_short_header_round_trip(pn_len, key_phase):
    keys = key_generations(CLIENT_INITIAL_SECRET, 2)[key_phase]
    full_pn = (0x40 << (8 * pn_len)) | (0x12345678 & ((1 << (8 * pn_len)) - 1))
    largest = full_pn - 3
    pn_bytes = (full_pn & ((1 << (8 * pn_len)) - 1)).to_bytes(pn_len, "big")
    plain = _short_plain(key_phase, pn_bytes, b"\x01" + bytes(range(40)))
    packet = protect(plain, keys, largest_pn=largest)
    assert len(packet) == len(plain) + 16 and packet[1:9] == plain[1:9]
    assert packet[0] & 0xE0 == plain[0] & 0xE0                  # 0x1f of the first byte masked
    u = unprotect(packet, keys, largest_pn=largest)
    assert (u.plain, u.pn, u.pn_len) == (plain, full_pn, pn_len)
    assert (u.key_phase, u.header_len) == (key_phase, 9 + pn_len)
    info = header_info(packet)
    assert (info.long, info.type, info.dcid) == (False, None, b"\x11" * 8)
    assert (info.pn_offset, info.end) == (9, len(packet))
    other_cid = header_info(packet, short_cid_len=4)
    assert (other_cid.dcid, other_cid.pn_offset) == (b"\x11" * 4, 5)


def test_aioquic_cross_check_key_phase_1():
    """aioquic (a second implementation) protects a phase-1 short header packet after a key update;
    the reference removes it, and the other way round."""
    crypto = pytest.importorskip("aioquic.quic.crypto")
    from aioquic.tls import CipherSuite
    secret = CLIENT_INITIAL_SECRET
    ctx = crypto.CryptoContext()
    ctx.setup(cipher_suite=CipherSuite.AES_128_GCM_SHA256, secret=secret, version=1)
    crypto.apply_key_phase(ctx, crypto.next_key_phase(ctx), "test")   # keeps the old hp
    assert ctx.key_phase == 1
    keys = key_generations(secret, 2)[1]
    plain = _short_plain(1, b"\x07\x08", b"\x01" * 30)
    theirs = ctx.encrypt_packet(plain[:11], plain[11:], 0x0708)
    assert unprotect(theirs, keys, largest_pn=0x0700).plain == plain
    assert protect(plain, keys, largest_pn=0x0700) == theirs
    header, payload, pn, _ = ctx.decrypt_packet(protect(plain, keys, 0x0700), 9, 0x0701)
    assert (header + payload, pn) == (plain, 0x0708)


# ---- packet numbers (RFC 9000 Appendix A) --------------------------------------------------------

def test_encode_pn_rfc9000_a2():
    # "acknowledgment for packet 0xabe8b3 and is sending ... 0xac5c02 ... 16 bits are required"
    assert encode_pn(0xAC5C02, 0xABE8B3) == h("5c02")
    # "sending a packet with a number of 0xace8fe uses the 24-bit encoding"
    assert encode_pn(0xACE8FE, 0xABE8B3) == h("ace8fe")


def test_encode_pn_edges():
    assert encode_pn(0, None) == h("00") and encode_pn(0, -1) == h("00")
    assert encode_pn(127, None) == h("7f")              # 128 unacked: 2^8 >= 2 * 128
    assert encode_pn(128, None) == h("0080")            # 129 unacked needs 9 bits
    assert encode_pn(1000 + 128, 1000) == h("68")
    assert encode_pn(1000 + 129, 1000) == h("0469")
    assert encode_pn((1 << 31) - 1, -1) == h("7fffffff")
    with pytest.raises(ValueError):
        encode_pn(1 << 31, -1)                          # would need 5 bytes
    with pytest.raises(ValueError):
        encode_pn(5, 5)
    with pytest.raises(ValueError):
        encode_pn(1 << 62, None)


def test_decode_pn_rfc9000_a3_and_wraparound():
    # "highest successfully authenticated packet ... 0xa82f30ea ... 16-bit value of 0x9b32 will be
    # decoded as 0xa82f9b32"
    assert decode_pn(0xA82F30EA, 0x9B32, 16) == 0xA82F9B32
    assert decode_pn(-1, 0, 8) == 0 and decode_pn(-1, 2, 32) == 2
    assert decode_pn(-1, 0xFF, 8) == 0xFF               # cannot go below 0
    assert decode_pn(0xFF, 0x00, 8) == 0x100            # wraps forwards
    assert decode_pn(0x17F, 0x01, 8) == 0x101            # 127 below beats 129 above
    assert decode_pn(0x180, 0x01, 8) == 0x201            # a tie of 128 goes upwards
    assert decode_pn(0x100, 0xFF, 8) == 0xFF            # late packet, wraps backwards
    assert decode_pn(0xFFFF, 0x0000, 16) == 0x10000
    assert decode_pn(0x1_0000_0005, 0xFFFFFFFF, 32) == 0xFFFFFFFF
    assert decode_pn(0xFFFFFFFE, 0x00000001, 32) == 0x1_0000_0001
    top = (1 << 62) - 1                                 # never decodes past 2^62 - 1
    assert decode_pn(top - 1, 0x00, 8) == top - 0xFF
    assert decode_pn(top - 1, 0xFF, 8) == top
    for bad in [(0, 0x100, 8), (0, 0, 12), (-2, 0, 8)]:
        with pytest.raises(ValueError):
            decode_pn(*bad)


def test_pn_encode_decode_round_trip():
    rng = random.Random(9000)
    for _ in range(3000):
        acked = rng.choice([-1, rng.randrange(1 << rng.choice([4, 12, 20, 30, 40]))])
        full = acked + 1 + rng.randrange(1 << rng.choice([0, 3, 7, 12, 15, 20, 23, 30]))
        enc = encode_pn(full, acked)
        # any receiver whose largest lies between the sender's largest acked and full - 1
        largest = rng.randrange(acked, full)
        assert decode_pn(largest, int.from_bytes(enc, "big"), 8 * len(enc)) == full, (acked, full)


# ---- forged and malformed input ------------------------------------------------------------------

def _flip(data, index):
    b = bytearray(data)
    b[index] ^= 0x01
    return bytes(b)


def test_tag_mismatch():
    for index in (30, 600, 1190, 1199):                 # ciphertext and tag bytes
        with pytest.raises(TagMismatch):
            unprotect(_flip(A2_PROTECTED, index), CLIENT_KEYS)
    with pytest.raises(TagMismatch):                    # header bytes are associated data
        unprotect(_flip(A2_PROTECTED, 7), CLIENT_KEYS)
    with pytest.raises(TagMismatch):
        unprotect(A2_PROTECTED, SERVER_KEYS)
    with pytest.raises(TagMismatch):                    # the 2-byte pn 1 decoded as 0x10001
        unprotect(A3_PROTECTED, SERVER_KEYS, largest_pn=0x10000)
    assert issubclass(TagMismatch, ValueError) and issubclass(MalformedPacket, ValueError)


@pytest.mark.parametrize("name", ["A2", "A3"])
def test_every_truncation_is_malformed(name):
    packet, keys, plain = {"A2": (A2_PROTECTED, CLIENT_KEYS, A2_PLAIN),
                           "A3": (A3_PROTECTED, SERVER_KEYS, A3_PLAIN)}[name]
    for n in range(len(packet)):
        with pytest.raises(MalformedPacket):
            header_info(packet[:n])
        with pytest.raises(MalformedPacket):
            unprotect(packet[:n], keys)
    for n in range(len(plain)):
        with pytest.raises(MalformedPacket):
            protect(plain[:n], keys)
    with pytest.raises(MalformedPacket, match="Length"):  # trailing bytes in plain text
        protect(plain + b"\0", keys)


def test_malformed_headers():
    with pytest.raises(MalformedPacket, match="empty"):
        header_info(b"")
    long_cid = h("c3 00000001 15") + bytes(21) + h("00 00 41 00") + bytes(300)
    with pytest.raises(MalformedPacket, match="exceeds 20"):
        header_info(long_cid)
    token_too_long = h("c3 00000001 00 00 44 00") + bytes(100)
    with pytest.raises(MalformedPacket, match="token"):
        header_info(token_too_long)
    handshake = h("e3 00000001 00 00 40 20") + bytes(0x20)
    assert header_info(handshake).type == HANDSHAKE and header_info(handshake).end == len(handshake)
    tiny = h("e3 00000001 00 00 13") + bytes(0x13)    # pn + payload 19 bytes: no full sample
    with pytest.raises(MalformedPacket, match="sample"):
        unprotect(tiny, CLIENT_KEYS)
    with pytest.raises(MalformedPacket, match="packet number"):
        header_info(b"\x40" + bytes(8))                # short header ending after its CID
    with pytest.raises(MalformedPacket, match="sample"):
        unprotect(b"\x40" + bytes(8) + bytes(19), CLIENT_KEYS)
    with pytest.raises(MalformedPacket, match="at least 4 bytes"):   # 1-byte pn + 2-byte payload
        protect(_short_plain(0, b"\x05", b"\x01\x01"), CLIENT_KEYS)
    assert len(protect(_short_plain(0, b"\x05", b"\x01\x01\x01"), CLIENT_KEYS)) == 9 + 4 + 16
    with pytest.raises(ValueError):
        PacketKeys(key=bytes(16), iv=bytes(11), hp=bytes(16))
    with pytest.raises(ValueError):
        hp_mask(bytes(16), bytes(15))


# ---- SSLKEYLOGFILE -------------------------------------------------------------------------------

R1, R2 = "11" * 32, "ab" * 32
KEYLOG = f"""# a comment
CLIENT_HANDSHAKE_TRAFFIC_SECRET {R1} {"01" * 32}

SERVER_HANDSHAKE_TRAFFIC_SECRET {R1} {"02" * 32}
  CLIENT_TRAFFIC_SECRET_0 {R1} {"03" * 32}
SERVER_TRAFFIC_SECRET_0\t{R1}\t{"04" * 32}
CLIENT_TRAFFIC_SECRET_0 {R2.upper()} {"05" * 48}
SERVER_TRAFFIC_SECRET_0 {R2} {"06" * 48}
CLIENT_TRAFFIC_SECRET_0 {"22" * 32} {"07" * 32}
CLIENT_TRAFFIC_SECRET_0 {R1} {"03" * 32}
"""


def test_parse_keylog():
    conns = parse_keylog(KEYLOG)
    assert list(conns) == [bytes.fromhex(R1), bytes.fromhex(R2), bytes.fromhex("22" * 32)]
    assert conns[bytes.fromhex(R1)] == {"CLIENT_HANDSHAKE_TRAFFIC_SECRET": bytes([1]) * 32,
                                        "SERVER_HANDSHAKE_TRAFFIC_SECRET": bytes([2]) * 32,
                                        "CLIENT_TRAFFIC_SECRET_0": bytes([3]) * 32,
                                        "SERVER_TRAFFIC_SECRET_0": bytes([4]) * 32}
    # the third connection has no server secret and is left out
    assert traffic_secrets(conns) == [(bytes([3]) * 32, bytes([4]) * 32),
                                      (bytes([5]) * 48, bytes([6]) * 48)]
    assert parse_keylog("") == {} and parse_keylog("# only\n\n") == {}


@pytest.mark.parametrize("line, match", [
    (f"CLIENT_TRAFFIC_SECRET_0 {R1}", "got 2 field"),
    (f"CLIENT_TRAFFIC_SECRET_0 {R1} 0102 extra", "got 4 field"),
    (f"client_traffic_secret_0 {R1} 0102", "bad label"),
    (f"CLIENT_TRAFFIC_SECRET_0 {'11' * 31} 0102", "client random"),
    (f"CLIENT_TRAFFIC_SECRET_0 {'zz' * 32} 0102", "client random"),
    (f"CLIENT_TRAFFIC_SECRET_0 {R1} 010", "hex"),
    (f"CLIENT_TRAFFIC_SECRET_0 {R1} 01xy", "hex"),
    (f"CLIENT_TRAFFIC_SECRET_0 {R1} 0304", "different"),
])
def test_parse_keylog_errors(line, match):
    text = f"# header\nCLIENT_TRAFFIC_SECRET_0 {R1} 0102\n\n{line}\n"
    with pytest.raises(ValueError, match=match) as e:
        parse_keylog(text)
    assert "line 4" in str(e.value)


# ---- a real connection: aioquic over loopback, captured on lo ---------------------------------

def _can_capture():
    if os.geteuid() != 0:
        return "not root: capturing on lo needs an AF_PACKET socket"
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close()
    except (PermissionError, AttributeError, OSError) as e:
        return f"AF_PACKET not permitted: {e}"
    return None


def _handshake_secrets(conn):
    return (conn["CLIENT_HANDSHAKE_TRAFFIC_SECRET"], conn["SERVER_HANDSHAKE_TRAFFIC_SECRET"])


def test_capture_decrypts_every_packet(tmp_path):
    reason = _can_capture()
    if reason:
        pytest.skip(reason)
    pytest.importorskip("aioquic")
    from nanobpf.quic.capture import stream_data, capture
    meta = capture(tmp_path, streams=4, nbytes=3000, key_update=True)
    saved = json.loads((tmp_path / "meta.json").read_text())
    assert saved == meta and meta["cid_len"] == 8
    frames = read_pcap(tmp_path / "quic.pcap")
    assert len(frames) == meta["frames"] > 10
    conns = parse_keylog((tmp_path / "keylog.txt").read_text())
    assert len(conns) == 1
    conn = next(iter(conns.values()))
    (client_1rtt, server_1rtt), = traffic_secrets(conns)
    hs_client, hs_server = _handshake_secrets(conn)

    first = parse_udp(frames[0][1])
    assert first.dport == meta["server_port"] and first.sport == meta["client_port"]
    odcid = header_info(first.payload).dcid           # the client's first Destination CID
    init_client, init_server = initial_secrets(odcid)
    keys = {  # (direction, space) -> [keys of generation 0, 1]
        ("c2s", "initial"): [PacketKeys.from_secret(init_client)],
        ("s2c", "initial"): [PacketKeys.from_secret(init_server)],
        ("c2s", "handshake"): [PacketKeys.from_secret(hs_client)],
        ("s2c", "handshake"): [PacketKeys.from_secret(hs_server)],
        ("c2s", "1rtt"): key_generations(client_1rtt, 2),
        ("s2c", "1rtt"): key_generations(server_1rtt, 2),
    }
    largest = {k: -1 for k in keys}
    phases = {("c2s", 0): 0, ("c2s", 1): 0, ("s2c", 0): 0, ("s2c", 1): 0}
    plaintexts = {("c2s", 0): b"", ("c2s", 1): b"", ("s2c", 0): b"", ("s2c", 1): b""}
    packets = 0
    for _, frame in frames:
        udp = parse_udp(frame)
        assert udp is not None and udp.ipv4_checksum_ok and udp.udp_checksum_ok
        assert udp.src == udp.dst == "127.0.0.1"
        direction = "c2s" if udp.dport == meta["server_port"] else "s2c"
        assert {udp.sport, udp.dport} == {meta["server_port"], meta["client_port"]}
        datagram, off, had_initial = udp.payload, 0, False
        while off < len(datagram):
            rest = datagram[off:]
            if rest[0] == 0:
                # aioquic pads datagrams that carry an Initial packet with zero bytes after the
                # packets (RFC 9000 14.1); a QUIC packet never starts with 0 (fixed bit)
                assert had_initial and rest == bytes(len(rest))
                break
            info = header_info(rest, short_cid_len=meta["cid_len"])
            if info.long:
                assert info.type in (INITIAL, HANDSHAKE), info
                space = "initial" if info.type == INITIAL else "handshake"
                had_initial |= info.type == INITIAL
                packet, k = rest[:info.end], keys[(direction, space)][0]
            else:
                space, packet = "1rtt", rest
                # the key phase bit is under header protection, whose key never changes
                hp = keys[(direction, space)][0].hp
                sample = packet[info.pn_offset + 4:info.pn_offset + 20]
                phase = ((packet[0] ^ hp_mask(hp, sample)[0]) >> 2) & 1
                k = keys[(direction, space)][phase]
            before = largest[(direction, space)]
            u = unprotect(packet, k, largest_pn=before)
            assert u.pn > before, "packet numbers of one sender only grow"
            assert protect(u.plain, k, largest_pn=before) == packet
            largest[(direction, space)] = u.pn
            packets += 1
            if not info.long:
                assert u.key_phase == phase
                phases[(direction, phase)] += 1
                plaintexts[(direction, phase)] += u.plain[u.header_len:]
            off += len(packet)
    assert packets >= len(frames)
    # aioquic's key update: the client updates its send keys; the server follows when it sees
    # phase 1 (RFC 9001 6.2), so both directions carry both phases
    assert all(phases.values()), phases
    # the streams' data is in the decrypted payloads: the first half under phase 0, the second
    # half under phase 1, both ways (32-byte windows, as STREAM frames split the data anywhere)
    for s in range(4):
        data = stream_data(s, 3000)
        for phase, part in ((0, data[:1500]), (1, data[1500:])):
            windows = [part[i:i + 32] for i in range(0, len(part) - 32, 32)]
            for direction in ("c2s", "s2c"):
                found = sum(w in plaintexts[(direction, phase)] for w in windows)
                assert found >= len(windows) // 2, (s, phase, direction, found, len(windows))


def test_capture_cli(tmp_path):
    tool = command("nanobpf-quic-capture")
    p = subprocess.run([tool, "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "--key-update" in p.stdout and "--streams" in p.stdout
    reason = _can_capture()
    if reason:
        pytest.skip(reason)
    pytest.importorskip("aioquic")
    setpriv = shutil.which("setpriv")
    if setpriv:                                   # without CAP_NET_RAW: a clear exit 2
        p = subprocess.run([setpriv, "--bounding-set", "-net_raw", tool,
                            "-o", str(tmp_path / "no")], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 2 and "AF_PACKET" in p.stderr, p.stderr
        assert not (tmp_path / "no").exists()
    p = subprocess.run([tool, "-o", str(tmp_path), "--streams", "1",
                        "--bytes", "200", "--no-key-update"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    meta = json.loads(p.stdout)
    assert meta == json.loads((tmp_path / "meta.json").read_text())
    assert meta["key_update"] is False and meta["frames"] == len(read_pcap(tmp_path / "quic.pcap"))
    assert traffic_secrets(parse_keylog((tmp_path / "keylog.txt").read_text()))
