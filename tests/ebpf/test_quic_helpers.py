"""The QUIC packet protection device helpers (quic_aead_seal, with the header-protection mask or not,
quic_aead_open, quic_hp_mask, quic_hp_mask_at, and xdp_csum_offload;
firmware/ebpf/helpers.c) at run time, on the device interpreter and the JIT (qemu-riscv64): results
against the Python `cryptography` library (RFC 9001 5.3 nonce, AAD = header, tag after the payload;
5.4.3 mask, of a block or of the sample in the frame), the checksum request (reported by nanobpf-run,
applied by DeviceXdp as the device's egress does), and every run-time check with its documented code - bad request size, flags, header and
payload lengths, packet numbers of 2^62 and more, ranges outside the frame (overflowing sums
included), next-phase keys missing, forged tags - leaving the frame untouched on errors.

A small program runs one helper per frame with the request, size and block taken from a map and
stores the helper's result in another. Needs `make ebpf-tools`."""
import platform
import struct
import subprocess

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import nanobpf_ebpf_defs as abi
from nanobpf import BUILD, ROOT
from nanobpf.ebpf import device
from nanobpf.quic.vectors import A2_HEADER, A2_PROTECTED, CLIENT_KEYS

PROG = r"""#include "nanobpf_xdp.h"
#include "nanobpf_helpers.h"
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_keys);
} nanobpf_quic_keys SEC(".maps");
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4);
    __type(key, struct nanobpf_quic_cid);
    __type(value, struct nanobpf_quic_pn_state);
} quic_pn SEC(".maps"); /* the device's packet-number map: where quic_aead_open's COMMIT records */
struct cmd {
    __u32 op;   /* 1 seal, 2 open, 3 header-protection mask, 4 mask of the sample at req.hdr_off, 5 checksum offload,
                 * 6 whether the keys have a packet-number state */
    __u32 size; /* request or block size - 1 (the verifier needs a bounded size of at least 1) */
    struct nanobpf_aead_req req;
    __u8 block[16];
};
struct result {
    __s64 rc;
    __u8 block[16];
};
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct cmd);
} cmd SEC(".maps");
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct result);
} result SEC(".maps");
SEC("xdp")
int prog(struct xdp_md *ctx) {
    __u32 zero = 0;
    struct nanobpf_quic_cid cid = {};
    struct cmd *c = bpf_map_lookup_elem(&cmd, &zero);
    struct result *r = bpf_map_lookup_elem(&result, &zero);
    const struct nanobpf_quic_keys *keys = bpf_map_lookup_elem(&nanobpf_quic_keys, &cid);
    if (!c || !r || !keys)
        return XDP_ABORTED;
    if (c->op == 6) {
        r->rc = bpf_quic_pn_of(&quic_pn, keys) != 0; /* binds the device's packet-number map */
    } else if (c->op == 4) {
        r->rc = bpf_quic_hp_mask_at(ctx, keys, c->req.hdr_off);
    } else if (c->op == 5) {
        r->rc = bpf_xdp_csum_offload(ctx);
    } else if (c->op == 3) {
        __builtin_memcpy(r->block, c->block, sizeof r->block);
        r->rc = bpf_quic_hp_mask(keys, r->block, (c->size & 15) + 1);
    } else if (c->op == 1) {
        r->rc = bpf_quic_aead_seal(ctx, keys, &c->req, (c->size & 31) + 1);
    } else {
        r->rc = bpf_quic_aead_open(ctx, keys, &c->req, (c->size & 31) + 1);
    }
    return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
"""
SEAL, OPEN, HP, HP_AT, CSUM = 1, 2, 3, 4, 5
REQ = abi.STRUCTS["aead_req"]
EINVAL, EBADMSG, ENOKEY = abi.NANOBPF_EINVAL, abi.NANOBPF_EBADMSG, abi.NANOBPF_ENOKEY
NEXT, HP_MASK, HP_APPLY = abi.NANOBPF_AEAD_NEXT_PHASE, abi.NANOBPF_AEAD_HP_MASK, abi.NANOBPF_AEAD_HP_APPLY
COMMIT = abi.NANOBPF_AEAD_COMMIT
KEY, KEY_NEXT = bytes(range(16)), bytes(range(100, 116))
IV, IV_NEXT = bytes.fromhex("0123456789abcdef00112233"), bytes.fromhex("a0a1a2a3a4a5a6a7a8a9aaab")
HP_KEY = CLIENT_KEYS.hp  # RFC 9001 A.2's client header-protection key


@pytest.fixture(scope="module")
def obj(tmp_path_factory):
    d = tmp_path_factory.mktemp("helpers")
    (d / "p.c").write_text(PROG)
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-Wall", "-Werror",
                    f"-I/usr/include/{platform.machine()}-linux-gnu", f"-I{ROOT}/sw/ebpf/include",
                    f"-I{BUILD}/generated/include", "-c", str(d / "p.c"), "-o", str(d / "p.o")], check=True)
    return d / "p.o"


@pytest.fixture(params=["interp", "jit"])
def dev(request, obj):
    ok, why = device.available(jit=request.param == "jit")
    if not ok:
        pytest.skip(why)
    with device.DeviceXdp(obj, jit=request.param == "jit") as d:
        set_keys(d, next_keys=True)
        yield d


def set_keys(d, next_keys):
    value = struct.pack(abi.STRUCTS["quic_keys"].fmt, 0, 1 if next_keys else 0, 0, 0, KEY + KEY_NEXT, IV + IV_NEXT,
                        HP_KEY, b"")
    d.map_update(abi.KEYTABLE_MAP_NAME, bytes(abi.STRUCTS["quic_cid"].size), value)


def run(d, op, frame, hdr_off=0, hdr_len=0, payload_len=0, flags=0, pn=0, size=None, block=bytes(16)):
    """Run one helper over frame: (result code, frame after, result block)."""
    size = (REQ.size if op != HP else 16) if size is None else size
    req = struct.pack(REQ.fmt, hdr_off, hdr_len, payload_len, flags, pn)
    d.map_update("cmd", bytes(4), struct.pack("<II", op, size - 1) + req + block)
    action, out = d.run(frame)
    assert action == 2  # XDP_PASS
    rc, got_block = struct.unpack("<q16s", d.map_lookup("result", bytes(4)))
    return rc, out, got_block


def nonce(iv, pn):
    return bytes(a ^ b for a, b in zip(iv, pn.to_bytes(12, "big")))


def frame_with(hdr, body, pre=b"", post=b""):
    return pre + hdr + body + post


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 100, 1200, 2048])
def test_seal_then_open_match_cryptography(dev, n):
    pre, hdr = bytes(range(14)), b"\x41" + bytes(range(8, 20))  # the header somewhere inside the frame
    plain, pn = bytes((7 * i) & 0xff for i in range(n)), 0x1234567
    frame = frame_with(hdr, plain + bytes(16), pre, b"\xee" * 3)
    rc, out, _ = run(dev, SEAL, frame, len(pre), len(hdr), n, pn=pn)
    sealed = AESGCM(KEY).encrypt(nonce(IV, pn), plain, hdr)
    assert rc == 0
    assert out == frame_with(hdr, sealed, pre, b"\xee" * 3)
    rc, back, _ = run(dev, OPEN, out, len(pre), len(hdr), n, pn=pn)
    assert rc == 0 and back == frame_with(hdr, plain + sealed[-16:], pre, b"\xee" * 3)


@pytest.mark.parametrize("pn_len", [1, 2, 3, 4])
def test_seal_with_the_header_protection_mask(dev, pn_len):
    """quic_aead_seal with NANOBPF_AEAD_HP_MASK: the frame sealed as without the flag, and the result is
    the mask of the sealed packet's sample (4 bytes after the packet number, the header's last
    (first byte & 3) + 1 bytes) as quic_hp_mask_at gives it; a sample past the frame's end is -EINVAL
    with nothing written, and open takes no such flag."""
    pre, cid = bytes(range(14)), bytes(range(8, 16))
    hdr = bytes([0x40 | (pn_len - 1)]) + cid + bytes(range(200, 200 + pn_len))
    plain, pn = bytes(range(40)), 0x2345
    frame = frame_with(hdr, plain + bytes(16), pre)
    rc, out, _ = run(dev, SEAL, frame, len(pre), len(hdr), len(plain), HP_MASK | NEXT, pn)
    sealed = hdr + AESGCM(KEY_NEXT).encrypt(nonce(IV_NEXT, pn), plain, hdr)
    assert out == pre + sealed
    sample = sealed[len(hdr) - pn_len + 4:][:16]
    mask = Cipher(algorithms.AES(HP_KEY), modes.ECB()).encryptor().update(sample)[:5]
    assert rc == int.from_bytes(mask, "big")
    # the sample must be inside the frame: with an empty payload it ends past the tag by 4 - pn_len
    # bytes (a 4-byte number: exactly at the end, which is allowed)
    short = frame_with(hdr, bytes(16), pre)
    rc, out, _ = run(dev, SEAL, short, len(pre), len(hdr), 0, HP_MASK, pn)
    if pn_len == 4:
        assert rc >= 0
    else:
        assert rc == -EINVAL and out == short
    rc, out, _ = run(dev, OPEN, pre + sealed, len(pre), len(hdr), len(plain), HP_MASK | NEXT, pn)
    assert rc == -EINVAL and out == pre + sealed


def protected(hdr, body, pn_len, hp_key=HP_KEY):
    """RFC 9001 5.4.1: the header of a sealed packet (body: ciphertext and tag) with header protection
    applied, then the body."""
    sample = (hdr + body)[len(hdr) - pn_len + 4:][:16]
    mask = Cipher(algorithms.AES(hp_key), modes.ECB()).encryptor().update(sample)
    first = hdr[0] ^ (mask[0] & (0x0F if hdr[0] & 0x80 else 0x1F))
    return bytes([first]) + hdr[1:-pn_len] + bytes(a ^ b for a, b in zip(hdr[-pn_len:], mask[1:])) + body


@pytest.mark.parametrize("long_hdr", [False, True], ids=["short", "long"])
@pytest.mark.parametrize("pn_len", [1, 2, 3, 4])
def test_seal_with_header_protection_applied(dev, pn_len, long_hdr):
    """quic_aead_seal with NANOBPF_AEAD_HP_APPLY: sealed as without the flag, then header protection
    applied in place (5 bits of a short header's first byte, 4 of a long one's, the packet number);
    result 0; the bytes around the packet untouched."""
    pre, post = bytes(range(14)), b"\xee" * 3
    hdr = bytes([(0xC0 if long_hdr else 0x40) | (pn_len - 1)]) + bytes(range(8, 16)) + bytes(range(200, 200 + pn_len))
    plain, pn = bytes(range(40)), 0x2345
    rc, out, _ = run(dev, SEAL, pre + hdr + plain + bytes(16) + post, len(pre), len(hdr), len(plain), HP_APPLY | NEXT, pn)
    body = AESGCM(KEY_NEXT).encrypt(nonce(IV_NEXT, pn), plain, hdr)
    assert rc == 0 and out == pre + protected(hdr, body, pn_len) + post


def test_seal_with_header_protection_applied_gives_rfc9001_a2(dev):
    """The RFC's client Initial (A.2), unprotected in, protected out, in one call."""
    value = struct.pack(abi.STRUCTS["quic_keys"].fmt, 0, 0, 0, 0, CLIENT_KEYS.key + bytes(16), CLIENT_KEYS.iv + bytes(12),
                        CLIENT_KEYS.hp, b"")
    dev.map_update(abi.KEYTABLE_MAP_NAME, bytes(abi.STRUCTS["quic_cid"].size), value)
    from nanobpf.quic.vectors import A2_PLAIN
    rc, out, _ = run(dev, SEAL, A2_PLAIN + bytes(16), 0, len(A2_HEADER), len(A2_PLAIN) - len(A2_HEADER), HP_APPLY, 2)
    assert rc == 0 and out == A2_PROTECTED


def test_header_protection_applied_needs_the_packet_to_hold_it(dev):
    """HP_APPLY refuses (-EINVAL, nothing written) what the engine's seal_hp refuses: a header without
    room for the first byte and the packet number, a sample ending past the tag (even inside the
    frame, where HP_MASK takes it); not with HP_MASK, and not for open."""
    hdr, plain, pn = b"\x40" + bytes(range(8)) + b"\x07", bytes(2), 3   # 1-byte packet number
    frame = hdr + plain + bytes(16) + bytes(10)
    rc, out, _ = run(dev, SEAL, frame, 0, len(hdr), len(plain), HP_APPLY, pn)
    assert rc == -EINVAL and out == frame          # the sample ends 1 byte past the tag
    rc, out, _ = run(dev, SEAL, frame, 0, len(hdr), len(plain), HP_MASK, pn)
    assert rc >= 0                                  # inside the frame: the mask alone is fine
    rc, out, _ = run(dev, SEAL, frame, 0, len(hdr), len(plain) + 1, HP_APPLY, pn)
    assert rc == 0 and out[len(hdr) + 3 + 16:] == bytes(9)    # 3 bytes of payload: the sample fits
    four = b"\x43\x01\x02\x03\x04"
    frame = four + bytes(64)
    rc, out, _ = run(dev, SEAL, frame, 0, 4, 20, HP_APPLY, pn)
    assert rc == -EINVAL and out == frame          # no first byte before a 4-byte packet number
    rc, out, _ = run(dev, SEAL, frame, 0, 5, 20, HP_APPLY, pn)
    assert rc == 0
    rc, out, _ = run(dev, SEAL, frame, 0, 5, 20, HP_APPLY | HP_MASK, pn)
    assert rc == -EINVAL and out == frame
    rc, out, _ = run(dev, OPEN, frame, 0, 5, 20, HP_APPLY, pn)
    assert rc == -EINVAL and out == frame


def test_next_phase_keys(dev):
    hdr, plain, pn = b"\x45" + bytes(8) + b"\x07", b"next phase" * 5, (1 << 62) - 1
    rc, out, _ = run(dev, SEAL, hdr + plain + bytes(16), 0, len(hdr), len(plain), NEXT, pn)
    assert rc == 0 and out == hdr + AESGCM(KEY_NEXT).encrypt(nonce(IV_NEXT, pn), plain, hdr)
    rc, back, _ = run(dev, OPEN, out, 0, len(hdr), len(plain), NEXT, pn)
    assert rc == 0 and back[:len(hdr) + len(plain)] == hdr + plain


def test_forged_tag_ciphertext_or_header_is_ebadmsg(dev):
    hdr, plain, pn = b"\x40" + bytes(range(8)) + b"\x01", bytes(range(50)), 9
    sealed = hdr + AESGCM(KEY).encrypt(nonce(IV, pn), plain, hdr)
    for pos in (len(sealed) - 1, len(sealed) - 16, len(hdr) + 3, 0):
        bad = bytearray(sealed)
        bad[pos] ^= 0x04
        rc, out, _ = run(dev, OPEN, bytes(bad), 0, len(hdr), len(plain), pn=pn)
        assert rc == -EBADMSG, pos
        # decrypted in place all the same: unauthenticated plaintext, which the program must drop
        ct = bytes(bad[len(hdr):-16])
        ctr = Cipher(algorithms.AES(KEY), modes.CTR(nonce(IV, pn) + b"\0\0\0\2")).decryptor().update(ct)
        assert out == bytes(bad[:len(hdr)]) + ctr + bytes(bad[-16:]), pos
    rc, _, _ = run(dev, OPEN, sealed, 0, len(hdr), len(plain), pn=pn + 1)  # another nonce
    assert rc == -EBADMSG


@pytest.mark.parametrize("first,flags", [(0x40, 0), (0x44, NEXT), (0xc0, 0)])
def test_open_with_commit_records_the_packet_number(dev, first, flags):
    """quic_aead_open with NANOBPF_AEAD_COMMIT: an authentic open records its packet number in the
    connection's packet-number state as xdp_quic does after an open (rx_next = largest + 1; for the current
    keys of a short header the phase, 2 | key_phase, and its smallest number); a forged tag records
    nothing and is -EBADMSG; without the flag nothing is recorded. (Here the helper waits for its verdict;
    the data-plane firmware's deferred verdict is tested through the DPU: sim/soc/test_datapath.py.)"""
    key, iv = (KEY_NEXT, IV_NEXT) if flags & NEXT else (KEY, IV)
    cid = bytes(abi.STRUCTS["quic_cid"].size)

    def state():
        rx_next, phase_pn, phase = struct.unpack(abi.STRUCTS["quic_pn_state"].fmt, dev.map_lookup("quic_pn", cid))[:3]
        return rx_next, phase_pn, phase

    def opened(pn, commit=COMMIT, forge=False):
        hdr, plain = bytes([first]) + bytes(range(8)) + bytes([pn & 0xff]), bytes(range(40))
        sealed = bytearray(hdr + AESGCM(key).encrypt(nonce(iv, pn), plain, hdr))
        sealed[-1] ^= forge
        rc, out, _ = run(dev, OPEN, bytes(sealed), 0, len(hdr), len(plain), flags | commit, pn)
        assert rc == (-EBADMSG if forge else 0) and (forge or out[len(hdr):len(hdr) + len(plain)] == plain)

    current_short = not flags & NEXT and not first & 0x80
    assert state() == (0, 0, 0)
    opened(5)
    assert state() == ((6, 5, 2) if current_short else (6, 0, 0))
    opened(3)                       # an older number: rx_next stays, the phase began earlier
    assert state() == ((6, 3, 2) if current_short else (6, 0, 0))
    opened(9, forge=True)           # forged: nothing recorded
    opened(12, commit=0)            # no COMMIT: the program records (xdp_quic), not the helper
    assert state() == ((6, 3, 2) if current_short else (6, 0, 0))
    opened(7)
    assert state() == ((8, 3, 2) if current_short else (8, 0, 0))


def test_commit_is_for_open_only(dev):
    hdr, plain = b"\x40" + bytes(9), bytes(20)
    rc, out, _ = run(dev, SEAL, hdr + plain + bytes(16), 0, len(hdr), len(plain), COMMIT, 1)
    assert rc == -EINVAL and out == hdr + plain + bytes(16)


def test_header_protection_mask(dev):
    sample = A2_PROTECTED[len(A2_HEADER):len(A2_HEADER) + 16]  # A.2: 4-byte packet number ends the header
    assert sample.hex() == "d1b1c98dd7689fb8ec11d242b123dc9b"
    rc, out, block = run(dev, HP, b"\x00" * 20, block=sample)
    assert rc == 0 and out == b"\x00" * 20  # the packet is not touched
    assert block == Cipher(algorithms.AES(HP_KEY), modes.ECB()).encryptor().update(sample)
    assert block[:5] == bytes.fromhex("437b9aec36")  # the RFC's mask


@pytest.mark.parametrize("off", [0, 1, 7, 29])
def test_header_protection_mask_of_the_sample_in_the_frame(dev, off):
    """quic_hp_mask_at: the mask of the 16 bytes at the offset, bytes 0..4 as a number; the frame is
    untouched; a sample reaching past the frame's end is -EINVAL."""
    sample = A2_PROTECTED[len(A2_HEADER):len(A2_HEADER) + 16]
    frame = bytes(range(off)) + sample + b"\xaa" * 3
    rc, out, _ = run(dev, HP_AT, frame, hdr_off=off)
    assert out == frame and rc == int.from_bytes(bytes.fromhex("437b9aec36"), "big")
    for bad in (off + 4, len(frame) - 15, len(frame), 1 << 31):
        rc, out, _ = run(dev, HP_AT, frame, hdr_off=bad)
        assert rc == -EINVAL and out == frame, bad


def test_checksum_offload(dev):
    """xdp_csum_offload: nanobpf-run reports the request (CSUM 1) for this packet only, and DeviceXdp
    gives the frame as the egress sends it: IPv4 header and UDP checksums recomputed (stale ones in)."""
    import nanobpf_ctrl_defs as abi_ctrl
    from nanobpf import ctrl
    from nanobpf.models import pisa
    from nanobpf.pcap import udp_frame
    good = udp_frame(b"some payload", "10.0.0.1", "10.0.0.2", 4433, 443)
    stale = bytearray(good)
    stale[24:26] = b"\x12\x34"              # the IPv4 header checksum (14 + 10)
    stale[40:42] = b"\x56\x78"              # the UDP checksum (14 + 20 + 6)
    rc, out, _ = run(dev, CSUM, bytes(stale))
    assert rc == 0 and dev.csum_offload and out == good
    _, raw = dev.run(bytes(stale), egress_csum=False)
    assert dev.csum_offload and raw == bytes(stale)     # the program itself changed nothing
    rc, out, _ = run(dev, HP_AT, bytes(stale) + bytes(16), hdr_off=0)
    assert not dev.csum_offload and out == bytes(stale) + bytes(16)   # not asked: left as it is
    v6 = udp_frame(b"x" * 33, "2001:db8::1", "2001:db8::2", 1, 2)
    shimmed = bytearray(ctrl.add_shim(v6, abi_ctrl.NANOBPF_SHIM_F_DECRYPTED))   # behind the host link's shim
    shimmed[14 + 4 + 40 + 6:14 + 4 + 40 + 8] = b"\0\1"
    rc, out, _ = run(dev, CSUM, bytes(shimmed))
    assert out == ctrl.add_shim(v6, abi_ctrl.NANOBPF_SHIM_F_DECRYPTED)
    assert pisa.parse(out, len(out), step_shim=True).l4off == 14 + 4 + 40


@pytest.mark.parametrize("size", [1, 8, 15])
def test_header_protection_size_not_16_is_einval(dev, size):
    sample = bytes(range(16))
    rc, _, block = run(dev, HP, b"\x00" * 20, size=size, block=sample)
    assert rc == -EINVAL and block == sample


FRAME = 64  # bytes in the frames of the range checks
# (name, request fields, expected code): each on a 64-byte frame; the valid request is header 10 at
# offset 4, payload 34, tag at 48..63 (the frame's last byte)
BAD = [
    ("valid", {}, 0),
    ("size 23", {"size": 23}, -EINVAL),
    ("size 25", {"size": 25}, -EINVAL),
    ("size 32", {"size": 32}, -EINVAL),
    ("unknown flag", {"flags": 16}, -EINVAL),
    ("all flags", {"flags": 0xffffffff}, -EINVAL),
    ("empty header", {"hdr_len": 0, "payload_len": 44}, -EINVAL),
    ("header 256", {"hdr_off": 0, "hdr_len": 256, "payload_len": 0}, -EINVAL),
    ("payload 2049", {"payload_len": 2049}, -EINVAL),
    ("pn 2^62", {"pn": 1 << 62}, -EINVAL),
    ("pn 2^64-1", {"pn": (1 << 64) - 1}, -EINVAL),
    ("tag one byte past the end", {"payload_len": 35}, -EINVAL),
    ("header past the end", {"hdr_off": 60}, -EINVAL),
    ("offset 2^32-1", {"hdr_off": 0xffffffff, "hdr_len": 1, "payload_len": 0}, -EINVAL),
    ("sum wraps 32 bits", {"hdr_off": 0xfffffff0, "hdr_len": 16, "payload_len": 16}, -EINVAL),
    ("next keys missing", {"flags": NEXT}, -ENOKEY),
    ("bad range before missing keys", {"flags": NEXT, "payload_len": 2049}, -EINVAL),
]


@pytest.mark.parametrize("op", [SEAL, OPEN], ids=["seal", "open"])
@pytest.mark.parametrize("name,fields,want", BAD, ids=[b[0] for b in BAD])
def test_request_checks(dev, op, name, fields, want):
    set_keys(dev, next_keys=False)
    frame = bytes((i * 37 + 11) & 0xff for i in range(FRAME))
    args = {"hdr_off": 4, "hdr_len": 10, "payload_len": 34, "flags": 0, "pn": 77, "size": None, **fields}
    if op == OPEN and want == 0:
        want = -EBADMSG  # the ranges are right, the frame's bytes are no sealed packet
    rc, out, _ = run(dev, op, frame, **args)
    assert rc == want, name
    if want in (-EINVAL, -ENOKEY):
        assert out == frame, f"{name}: the frame was written"
    elif op == SEAL:
        hdr, plain = frame[4:14], frame[14:48]
        assert out == frame[:4] + hdr + AESGCM(KEY).encrypt(nonce(IV, 77), plain, hdr)


def test_largest_header_and_payload(dev):
    hdr, plain, pn = bytes(range(255)), bytes(2048), 5
    frame = hdr + plain + bytes(16)
    rc, out, _ = run(dev, SEAL, frame, 0, 255, 2048, pn=pn)
    assert rc == 0 and out == hdr + AESGCM(KEY).encrypt(nonce(IV, pn), plain, hdr)
