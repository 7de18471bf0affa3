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
    assert aead.execute(mem, kt, aead.Request(3, 0)) == "bad_request"
    assert aead.execute(mem, kt, aead.Request("seal", abi.NANOBPF_KEYTABLE_SLOTS)) == "bad_request"
    assert aead.execute(mem, kt, aead.Request("seal", 3, data_addr=200, data_len=41)) == "bad_length"
    assert aead.execute(mem, kt, aead.Request("seal", 3, data_len=2049)) == "bad_length"
    assert aead.execute(mem, kt, aead.Request("seal", 3, next_phase=True)) == "no_key"
    assert mem == bytearray(256)
