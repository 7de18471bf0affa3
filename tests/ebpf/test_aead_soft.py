"""The crypto backend of the QUIC protection helpers (firmware/ebpf/aead.h, software implementation
aead_soft.c) through its test driver (tests/ebpf/runtime/aead_test.c), built for the host and for RV64
Linux user mode (run by qemu-riscv64, the same C the device compiles), and the host-fast build whose
AES-128 and AES-128-GCM come from libcrypto (aead_openssl.c, the device model's native data path): the
AES-128 test vector of
FIPS 197, the AES-128 / 96-bit IV cases of the GCM specification (McGrew and Viega, "The Galois/Counter
Mode of Operation", test cases 1-4, which NIST's SP 800-38D validation also uses), and random cases
against the Python `cryptography` library, forged tags included. Needs `make ebpf-tools`."""
import random
import shutil
import subprocess

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.cmac import CMAC

from nanobpf import BUILD

DRIVERS = {"host": [str(BUILD / "ebpf/host/aead-test")],
           "host-fast": [str(BUILD / "ebpf/host-fast/aead-test")],
           "rv64": ["qemu-riscv64", str(BUILD / "ebpf/rv64/aead-test")]}

# (key, iv, aad, plaintext, ciphertext, tag) of the GCM specification's test cases 1-4 (AES-128, 96-bit IV)
P3 = ("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
      "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255")
C3 = ("42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
      "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985")
GCM_SPEC = [
    ("00000000000000000000000000000000", "000000000000000000000000", "", "", "", "58e2fccefa7e3061367f1d57a4e7455a"),
    ("00000000000000000000000000000000", "000000000000000000000000", "", "00000000000000000000000000000000",
     "0388dace60b6a392f328c2b971b2fe78", "ab6e47d42cec13bdf53a67b21257bddf"),
    ("feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", "", P3, C3, "4d5c2af327cd64a62cf35abd2ba6fab4"),
    ("feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2",
     P3[:120], C3[:120], "5bc94fbc3221a5db94fae95ae7121a47"),
]
# RFC 4493 section 4: AES-CMAC with the key 2b7e1516..., messages of 0, 16, 40 and 64 bytes
CMAC_KEY = "2b7e151628aed2a6abf7158809cf4f3c"
CMAC_MSG = ("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
            "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
RFC4493 = [("", "bb1d6929e95937287fa37d129b756746"), (CMAC_MSG[:32], "070a16b46b4d4144f79bdd9dd04a287c"),
           (CMAC_MSG[:80], "dfa66747de9ae63030ca32611497c827"), (CMAC_MSG, "51f0bebf7e3b9d92fc49741779363cfe")]
FIPS197_C1 = ("000102030405060708090a0b0c0d0e0f", "00112233445566778899aabbccddeeff", "69c4e0d86a7b0430d8cdb78070b4c55a")


def h(b):
    return b.hex() or "-"


class Driver:
    def __init__(self, name):
        cmd = DRIVERS[name]
        if not (BUILD / "ebpf" / name / "aead-test").exists():
            pytest.skip(f"{cmd[-1]} is not built (make ebpf-tools)")
        if name == "rv64" and not shutil.which("qemu-riscv64"):
            pytest.skip("qemu-riscv64 is not installed")
        self.cmd = cmd

    def run(self, lines):
        """All commands in one process; one result line each."""
        p = subprocess.run(self.cmd, input="".join(line + "\n" for line in lines), capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        out = p.stdout.splitlines()
        assert len(out) == len(lines), p.stdout[-2000:]
        return out


@pytest.fixture(params=sorted(DRIVERS))
def drv(request):
    return Driver(request.param)


def test_vectors_agree_with_the_reference_library():
    """The transcribed vectors themselves, so a typo shows up as such."""
    for key, iv, aad, pt, ct, tag in GCM_SPEC:
        out = AESGCM(bytes.fromhex(key)).encrypt(bytes.fromhex(iv), bytes.fromhex(pt), bytes.fromhex(aad))
        assert out.hex() == ct + tag
    key, block, want = FIPS197_C1
    enc = Cipher(algorithms.AES(bytes.fromhex(key)), modes.ECB()).encryptor()
    assert enc.update(bytes.fromhex(block)).hex() == want


def test_fips197_block(drv):
    key, block, want = FIPS197_C1
    assert drv.run([f"block {key} {block}"]) == [want]


def test_gcm_specification_cases(drv):
    seal = [f"seal {key} {iv} {aad or '-'} {pt or '-'}" for key, iv, aad, pt, ct, tag in GCM_SPEC]
    opens = [f"open {key} {iv} {aad or '-'} {ct or '-'} {tag}" for key, iv, aad, pt, ct, tag in GCM_SPEC]
    out = drv.run(seal + opens)
    for k, (key, iv, aad, pt, ct, tag) in enumerate(GCM_SPEC):
        assert out[k] == f"{ct or '-'} {tag}", f"case {k + 1}"
        assert out[len(GCM_SPEC) + k] == f"ok {pt or '-'}", f"case {k + 1}"


def random_cases(rng, n):
    sizes = [0, 1, 15, 16, 17, 31, 32, 33, 255, 256, 1200, 1504, 2048]
    for k in range(n):
        key, iv = rng.randbytes(16), rng.randbytes(12)
        aad = rng.randbytes(rng.choice([0, 1, 7, 16, 20, 63, 64, 65, 255]))
        pt = rng.randbytes(sizes[k % len(sizes)] if k < 3 * len(sizes) else rng.randrange(0, 300))
        yield key, iv, aad, pt


def test_random_against_cryptography(drv):
    rng = random.Random(9001)
    cases = list(random_cases(rng, 120))
    lines, want = [], []
    for key, iv, aad, pt in cases:
        sealed = AESGCM(key).encrypt(iv, pt, aad)
        ct, tag = sealed[:-16], sealed[-16:]
        lines.append(f"seal {h(key)} {h(iv)} {h(aad)} {h(pt)}")
        want.append(f"{h(ct)} {tag.hex()}")
        lines.append(f"open {h(key)} {h(iv)} {h(aad)} {h(ct)} {tag.hex()}")
        want.append(f"ok {h(pt)}")
        # a forgery: one bit of the tag, the ciphertext or the AAD changed
        where = rng.choice(["tag", "ct", "aad"] if ct and aad else ["tag"])
        bad_tag, bad_ct, bad_aad = bytearray(tag), bytearray(ct), bytearray(aad)
        target = {"tag": bad_tag, "ct": bad_ct, "aad": bad_aad}[where]
        target[rng.randrange(len(target))] ^= 1 << rng.randrange(8)
        lines.append(f"open {h(key)} {h(iv)} {h(bytes(bad_aad))} {h(bytes(bad_ct))} {bytes(bad_tag).hex()}")
        dec = Cipher(algorithms.AES(key), modes.CTR(iv + b"\0\0\0\2")).decryptor().update(bytes(bad_ct))
        want.append(f"fail {h(dec)}")  # the unauthenticated plaintext is left in place
    for k in range(20):
        key, block = rng.randbytes(16), rng.randbytes(16)
        lines.append(f"block {h(key)} {h(block)}")
        want.append(Cipher(algorithms.AES(key), modes.ECB()).encryptor().update(block).hex())
    got = drv.run(lines)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"line {k}: {lines[k][:120]}"


def cmac(key, msg):
    c = CMAC(algorithms.AES(key))
    c.update(msg)
    return c.finalize()


def test_cmac_rfc4493_and_random(drv):
    """AES-CMAC (the control channel's response tags), by key bytes and with a prepared key: RFC 4493's
    examples, then random keys and lengths around the block boundaries against `cryptography`."""
    for msg, tag in RFC4493:
        assert cmac(bytes.fromhex(CMAC_KEY), bytes.fromhex(msg)).hex() == tag     # the transcription
    lines = [f"{c} {CMAC_KEY} {msg or '-'}" for msg, _ in RFC4493 for c in ("cmac", "cmack")]
    want = [tag for _, tag in RFC4493 for _ in range(2)]
    rng = random.Random(4493)
    for n in [1, 15, 16, 17, 31, 32, 33, 44, 100, 1400, 1444] + [rng.randrange(0, 600) for _ in range(20)]:
        key, msg = rng.randbytes(16), rng.randbytes(n)
        lines += [f"cmac {h(key)} {h(msg)}", f"cmack {h(key)} {h(msg)}"]
        want += [cmac(key, msg).hex()] * 2
    assert drv.run(lines) == want


def test_prepared_key_open_agrees(drv):
    """ebpf_aead_open_key (the control channel's request check) opens what `cryptography` seals and
    refuses one changed bit, as ebpf_aead_open does."""
    rng = random.Random(38)
    lines, want = [], []
    for key, iv, aad, pt in random_cases(rng, 30):
        sealed = AESGCM(key).encrypt(iv, pt, aad)
        ct, tag = sealed[:-16], sealed[-16:]
        lines.append(f"openk {h(key)} {h(iv)} {h(aad)} {h(ct)} {tag.hex()}")
        want.append(f"ok {h(pt)}")
        bad = bytearray(tag)
        bad[rng.randrange(16)] ^= 1 << rng.randrange(8)
        lines.append(f"openk {h(key)} {h(iv)} {h(aad)} {h(ct)} {bytes(bad).hex()}")
        want.append(f"fail {h(pt)}")
    assert drv.run(lines) == want
