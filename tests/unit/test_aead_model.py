"""The AEAD engine's reference model (nanobpf.models.aead) against the published vectors and its own rules."""
import os

import pytest

import nanobpf_ebpf_defs as abi
from nanobpf.models import aead
from nanobpf.quic import protection, vectors


def test_nist_vectors_agree_with_cryptography():
    for key, iv, p, a, c, t in aead.NIST_GCM:
        out = aead.AESGCM(bytes.fromhex(key)).encrypt(bytes.fromhex(iv), bytes.fromhex(p), bytes.fromhex(a))
        assert out.hex() == c + t


def _setup(key, iv, hp=bytes(16), slot=3, **kw):
    kt = bytearray(aead.KEY_STRIDE * 8)
    kt[slot * aead.KEY_STRIDE:(slot + 1) * aead.KEY_STRIDE] = aead.keys_value(key, iv, hp, **kw)
    return kt


@pytest.mark.parametrize("case", range(len(aead.NIST_GCM)))
def test_model_seal_open_nist(case):
    key, iv, p, a, c, t = (bytes.fromhex(x) for x in aead.NIST_GCM[case])
    kt = _setup(key, iv)
    mem = bytearray(512)
    mem[5:5 + len(a)] = a
    mem[101:101 + len(p)] = p
    req = aead.Request("seal", 3, aad_addr=5, aad_len=len(a), data_addr=101, data_len=len(p), pn=0)
    assert aead.execute(mem, kt, req) == "ok"
    assert mem[101:101 + len(p) + 16] == c + t
    req.op = "open"
    assert aead.execute(mem, kt, req) == "ok"
    assert mem[101:101 + len(p)] == p
    mem[101 + len(p)] ^= 1  # a tag bit
    assert aead.execute(mem, kt, req) == "tag_mismatch"


def test_model_rfc9001_client_initial():
    k = vectors.CLIENT_KEYS
    kt = _setup(k.key, k.iv, k.hp)
    hdr, pay = vectors.A2_HEADER, vectors.A2_CRYPTO + bytes(1162 - len(vectors.A2_CRYPTO))
    mem = bytearray(2048 + 64)
    mem[:len(hdr)] = hdr
    mem[len(hdr):len(hdr) + len(pay)] = pay
    req = aead.Request("seal", 3, 0, len(hdr), len(hdr), len(pay), pn=2)
    assert aead.execute(mem, kt, req) == "ok"
    # header protection changes only header bytes: payload and tag are the RFC's
    assert bytes(mem[len(hdr):len(hdr) + len(pay) + 16]) == vectors.A2_PROTECTED[len(hdr):]
    # the mask of the RFC's sample (the 16 bytes 4 after the packet number offset)
    pn_off = len(hdr) - 4
    mem[1024:1040] = vectors.A2_PROTECTED[pn_off + 4:pn_off + 20]
    assert aead.execute(mem, kt, aead.Request("hp_mask", 3, aad_addr=1024, data_addr=1100)) == "ok"
    assert bytes(mem[1100:1105]) == protection.hp_mask(k.hp, vectors.A2_PROTECTED[pn_off + 4:pn_off + 20])
    assert bytes(mem[1100:1105]).hex() == "437b9aec36"  # RFC 9001 A.2


def test_model_refusals():
    kt = _setup(bytes(16), bytes(12))
    mem = bytearray(256)
    assert aead.execute(mem, kt, aead.Request(4, 0)) == "bad_request"  # the RTL's 2-bit op has no such value
    assert aead.execute(mem, kt, aead.Request("seal", abi.NANOBPF_KEYTABLE_SLOTS)) == "bad_request"
    assert aead.execute(mem, kt, aead.Request("seal", 3, data_addr=200, data_len=41)) == "bad_length"
    assert aead.execute(mem, kt, aead.Request("seal", 3, data_len=2049)) == "bad_length"
    assert aead.execute(mem, kt, aead.Request("seal", 3, next_phase=True)) == "no_key"
    assert mem == bytearray(256)


@pytest.mark.parametrize("which", ["client", "server"])
def test_model_seal_hp_gives_rfc9001_protected_packets(which):
    """seal_hp: one request turns RFC 9001's unprotected Initial (A.2) and Handshake-less server
    Initial (A.3) into the RFC's protected packets, header protection included."""
    k, hdr, pay, protected = ((vectors.CLIENT_KEYS, vectors.A2_HEADER, vectors.A2_CRYPTO + bytes(1162 - len(vectors.A2_CRYPTO)),
                               vectors.A2_PROTECTED) if which == "client" else
                              (vectors.SERVER_KEYS, vectors.A3_HEADER, vectors.A3_PAYLOAD, vectors.A3_PROTECTED))
    kt = _setup(k.key, k.iv, k.hp)
    mem = bytearray(2048 + 64)
    at = 7
    mem[at:at + len(hdr) + len(pay)] = hdr + pay
    pn = int.from_bytes(hdr[-(hdr[0] & 3) - 1:], "big")
    assert aead.execute(mem, kt, aead.Request("seal_hp", 3, at, len(hdr), at + len(hdr), len(pay), pn=pn)) == "ok"
    assert bytes(mem[at:at + len(protected)]) == protected
    assert mem[:at] == bytes(at) and mem[at + len(protected):] == bytes(len(mem) - at - len(protected))


def test_model_seal_hp_refusals_write_nothing():
    kt = _setup(bytes(16), bytes(12))
    mem = bytearray(256)
    mem[10] = 0x43  # a short header whose packet number is 4 bytes long
    before = bytes(mem)
    # no room for a first byte and a packet number byte
    assert aead.execute(mem, kt, aead.Request("seal_hp", 3, 10, 1, 11, 64)) == "bad_length"
    # the header is shorter than its first byte and 4-byte packet number
    assert aead.execute(mem, kt, aead.Request("seal_hp", 3, 10, 4, 14, 64)) == "bad_length"
    # the sample (4 bytes after the packet number's start, 16 bytes) must end at the tag's end or before:
    # a 1-byte packet number needs 3 bytes of payload
    mem[10] = 0x40
    before = bytes(mem)
    assert aead.execute(mem, kt, aead.Request("seal_hp", 3, 10, 2, 12, 2)) == "bad_length"
    assert bytes(mem) == before
    assert aead.execute(mem, kt, aead.Request("seal_hp", 3, 10, 2, 12, 3)) == "ok"
    assert mem[10] != 0x40 or mem[11] != 0  # protected (a zero mask would leave them: not with this key)
