"""Reference model of the AES-128-GCM engine (hw/src/main/scala/nanobpf/aead/, docs/aead.md).

The engine works on a byte-addressed packet memory and a key table storage of `struct
nanobpf_quic_keys` values (ebpf abi), one per connection slot, `KEY_STRIDE` bytes apart. A request
(`Request`) is what a core writes to core_ctl / core_addr / core_pn; `execute(mem, keytable, req)`
does what the engine does to memory and returns the aead_status name. Crypto from the `cryptography`
library, nonce and mask as RFC 9001 5.3 / 5.4.3 define them. The cocotb test (sim/cocotb/aead) and the
benchmark drive the RTL with these words and compare memory and completions with this model.
"""
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from nanobpf.soc import ENUMS, pack_layout, unpack_layout
import nanobpf_ebpf_defs as abi
from nanobpf_ebpf_defs import STRUCTS

KEYS = STRUCTS["quic_keys"]
KEY_STRIDE = KEYS.size
TAG_LEN = 16
OP = dict(ENUMS["aead_op"])
STATUS = dict(ENUMS["aead_status"])
STATUS_NAME = {v: k for k, v in STATUS.items()}


def keys_value(key, iv, hp, next_key=None, next_iv=None, key_phase=0, cid_len=8):
    """The 80-byte key table value (struct nanobpf_quic_keys) of one connection."""
    v = bytearray(KEY_STRIDE)
    f = {name: (off, size) for name, off, size in KEYS.fields}
    has_next = next_key is not None
    v[f["key_phase"][0]] = key_phase
    v[f["flags"][0]] = int(has_next)
    v[f["cid_len"][0]] = cid_len
    k, i = f["key"][0], f["iv"][0]
    v[k:k + 16] = key
    v[i:i + 12] = iv
    if has_next:
        v[k + 16:k + 32] = next_key
        v[i + 12:i + 24] = next_iv
    v[f["hp"][0]:f["hp"][0] + 16] = hp
    return bytes(v)


@dataclass
class Request:
    op: str  # seal, open, hp_mask, seal_hp
    slot: int
    aad_addr: int = 0
    aad_len: int = 0
    data_addr: int = 0
    data_len: int = 0
    pn: int = 0
    next_phase: bool = False
    id: int = 0

    def ctl_word(self):
        return pack_layout("aead_ctl", op=OP[self.op] if isinstance(self.op, str) else self.op,
                           next_phase=int(self.next_phase), slot=self.slot, aad_len=self.aad_len,
                           data_len=self.data_len, id=self.id)

    def addr_word(self):
        return pack_layout("aead_addr", aad_addr=self.aad_addr, data_addr=self.data_addr)


def nonce(iv: bytes, pn: int) -> bytes:
    return bytes(a ^ b for a, b in zip(iv, (pn & (1 << 64) - 1).to_bytes(12, "big")))


def aes_block(key: bytes, block: bytes) -> bytes:
    enc = Cipher(algorithms.AES(bytes(key)), modes.ECB()).encryptor()
    return enc.update(bytes(block)) + enc.finalize()


def slot_keys(keytable: bytes, slot: int, next_phase: bool):
    f = {name: (off, size) for name, off, size in KEYS.fields}
    v = keytable[slot * KEY_STRIDE:(slot + 1) * KEY_STRIDE]
    k, i, h = f["key"][0] + 16 * next_phase, f["iv"][0] + 12 * next_phase, f["hp"][0]
    return v[k:k + 16], v[i:i + 12], v[h:h + 16], bool(v[f["flags"][0]] & 1)


def execute(mem: bytearray, keytable: bytes, req: Request, key_slots=None, max_data=2048):
    """Apply one request to `mem` as the engine does; returns the aead_status name."""
    op = OP[req.op] if isinstance(req.op, str) else req.op
    key_slots = abi.NANOBPF_KEYTABLE_SLOTS if key_slots is None else key_slots
    if op not in OP.values() or req.slot >= key_slots:
        return "bad_request"
    hp = op == OP["hp_mask"]
    if (req.data_len > max_data or req.aad_addr + (16 if hp else req.aad_len) > len(mem)
            or req.data_addr + req.data_len + TAG_LEN > len(mem) or (op == OP["seal_hp"] and req.aad_len < 2)):
        return "bad_length"
    key, iv, hp_key, has_next = slot_keys(keytable, req.slot, req.next_phase)
    if req.next_phase and not has_next:
        return "no_key"
    if hp:
        mem[req.data_addr:req.data_addr + 16] = aes_block(hp_key, mem[req.aad_addr:req.aad_addr + 16])
        return "ok"
    aad = bytes(mem[req.aad_addr:req.aad_addr + req.aad_len])
    d0, d1 = req.data_addr, req.data_addr + req.data_len
    gcm = AESGCM(bytes(key))
    n = nonce(iv, req.pn)
    if op == OP["seal_hp"]:
        # the header read as the AAD names the packet number's length; checked before any write
        pn_len = (aad[0] & 3) + 1
        pn_at = req.aad_addr + req.aad_len - pn_len
        if req.aad_len < pn_len + 1 or pn_at + 4 + 16 > d1 + TAG_LEN:
            return "bad_length"
    if op in (OP["seal"], OP["seal_hp"]):
        out = gcm.encrypt(n, bytes(mem[d0:d1]), aad)
        mem[d0:d1 + TAG_LEN] = out
        if op == OP["seal_hp"]:
            # RFC 9001 5.4.1 on the sealed bytes: the sample is read after the seal wrote them, the
            # first byte written before the packet number is read back (as the engine does)
            mask = aes_block(hp_key, mem[pn_at + 4:pn_at + 20])
            mem[req.aad_addr] = aad[0] ^ (mask[0] & (0x0F if aad[0] & 0x80 else 0x1F))
            for i in range(pn_len):
                mem[pn_at + i] ^= mask[1 + i]
        return "ok"
    ct, tag = bytes(mem[d0:d1]), bytes(mem[d1:d1 + TAG_LEN])
    # The engine decrypts in place whatever the tag says: the keystream XOR is the same either way.
    ks = gcm.encrypt(n, bytes(req.data_len), b"")[:req.data_len]
    mem[d0:d1] = bytes(a ^ b for a, b in zip(ct, ks))
    try:
        gcm.decrypt(n, ct + tag, aad)
        return "ok"
    except InvalidTag:
        return "tag_mismatch"


def comp_fields(word):
    return unpack_layout("aead_comp", word)


# NIST GCM test cases for AES-128 with 96-bit IVs (McGrew & Viega, "The Galois/Counter Mode of
# Operation", test cases 1-4, as used by SP 800-38D's validation): key, iv, plaintext, aad, ciphertext, tag.
_TC3_P = ("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
          "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255")
_TC3_C = ("42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
          "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985")
NIST_GCM = [
    ("00000000000000000000000000000000", "000000000000000000000000", "", "", "",
     "58e2fccefa7e3061367f1d57a4e7455a"),
    ("00000000000000000000000000000000", "000000000000000000000000", "00000000000000000000000000000000", "",
     "0388dace60b6a392f328c2b971b2fe78", "ab6e47d42cec13bdf53a67b21257bddf"),
    ("feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", _TC3_P, "", _TC3_C,
     "4d5c2af327cd64a62cf35abd2ba6fab4"),
    ("feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", _TC3_P[:120],
     "feedfacedeadbeeffeedfacedeadbeefabaddad2", _TC3_C[:120], "5bc94fbc3221a5db94fae95ae7121a47"),
]
