"""The transfer payload pattern of nanobpf.quic.transfer is the one nanobpf-quinn computes
(sw/quic-offload/src/transfer.rs; its tests/pattern.rs holds the same digests)."""
import hashlib

import pytest

transfer = pytest.importorskip("nanobpf.quic.transfer")    # needs aioquic

# SHA-256 of BLOCK, and of the first 1,000,000 and 100 bytes of the payload (BLOCK repeated)
BLOCK_SHA256 = "31e8231d8ccf90100a3135581e95ad6d69c6461817a9febefa05a1598ebb2fd4"
DIGESTS = {1_000_000: "6e845e71f0f0894783da21e765dd2388908ff6fa49569dd35dad9e47f3f2659a",
           100: "f8bf783131e0bed64d87b6a898a1396b23d609ba8066fa552614898f04079caf"}


def test_block_is_sha256_counter_mode():
    assert len(transfer.BLOCK) == 65536
    assert transfer.BLOCK[:32] == hashlib.sha256(b"nanobpf-xfer pattern" + bytes(4)).digest()
    assert hashlib.sha256(transfer.BLOCK).hexdigest() == BLOCK_SHA256


def test_digests_match_rust():
    for size, digest in DIGESTS.items():
        assert transfer.payload_digest(size) == digest
    assert b"".join(transfer.payload_chunks(70000)) == (transfer.BLOCK * 2)[:70000]
