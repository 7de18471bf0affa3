"""The control channel's device key (docs/control.md "The device key"), and the tool that makes one.

A device key is 16 random bytes that the device's image carries (built in at `make firmware` /
`make bitstream` time) and the host is given (`nanobpfctl dev attach IF key FILE`, `--key FILE` of the
Python tools). From it come two keys, one per direction (hw/defs/ctrl.toml [protocol]):

    K_req  = AES-128_K("NanoBPF ctrl req")    requests: body encrypted and authenticated, AES-128-GCM
    K_resp = AES-128_K("NanoBPF ctrl rsp")    responses: authenticated, AES-CMAC

A request is  ctrl_hdr | nonce (12, random) | AES-128-GCM_{K_req}(nonce, aad = ctrl_hdr, body) | tag (16),
a response   ctrl_hdr | its request's nonce | body | AES-CMAC_{K_resp}(ctrl_hdr | nonce | body) (16).

Responses are not encrypted: none carries key material (the device refuses MAP_LOOKUP of the key
table), and a deterministic MAC stays safe when the device answers a replayed request again, where a
second GCM encryption under the request's nonce would not.

The key file is text: 32 hexadecimal digits (whitespace and lines starting with "#" ignored). The
build's default is build/keys/ctrl.key, made on first use with the mode 0600; NANOBPF_CTRL_KEY names
another file for every tool.
"""
import argparse
import os
import struct
import sys
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.cmac import CMAC

import nanobpf_ctrl_defs as D
from nanobpf import BUILD, pcap

KEY_LEN, NONCE_LEN, TAG_LEN = D.NANOBPF_CTRL_KEY_LEN, D.NANOBPF_CTRL_NONCE_LEN, D.NANOBPF_CTRL_TAG_LEN
ENV = "NANOBPF_CTRL_KEY"
DEFAULT_PATH = BUILD / "keys/ctrl.key"


class AuthError(ValueError):
    """A control frame whose tag does not verify under the device key."""


class KeyFileError(Exception):
    """A key file that is missing or not 16 bytes in hexadecimal."""


def aes_block(key, block):
    e = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return e.update(block) + e.finalize()


class DeviceKey:
    """The device key and the two keys derived from it."""

    def __init__(self, key):
        key = bytes(key)
        if len(key) != KEY_LEN:
            raise ValueError(f"a device key is {KEY_LEN} bytes, not {len(key)}")
        self.key = key
        self.req = aes_block(key, D.AUTH_REQ_LABEL)
        self.resp = aes_block(key, D.AUTH_RESP_LABEL)
        self._gcm = AESGCM(self.req)

    def __repr__(self):
        return f"DeviceKey(id {self.id()})"   # never the key itself

    def id(self):
        """A short name of the key that gives nothing of it away: the first 4 bytes of K_resp's CMAC of
        nothing, as hex (`nanobpf-ctrl-key id`, the device's boot line)."""
        return self.cmac(b"")[:4].hex()

    def seal(self, hdr, nonce, body):
        """A request's encrypted body and tag (AES-128-GCM under K_req, the header as associated data)."""
        ct = self._gcm.encrypt(nonce, bytes(body), bytes(hdr))
        return ct[:-TAG_LEN], ct[-TAG_LEN:]

    def open(self, hdr, nonce, ct, tag):
        """A request's body; AuthError when the tag does not verify (nothing of the body is returned)."""
        try:
            return self._gcm.decrypt(nonce, bytes(ct) + bytes(tag), bytes(hdr))
        except InvalidTag:
            raise AuthError("control request: tag does not verify under the device key") from None

    def cmac(self, data):
        c = CMAC(algorithms.AES(self.resp))
        c.update(bytes(data))
        return c.finalize()

    def resp_tag(self, hdr, nonce, body):
        return self.cmac(bytes(hdr) + bytes(nonce) + bytes(body))


def parse_key_text(text, where="key"):
    digits = "".join(w for line in text.splitlines() if not line.lstrip().startswith("#") for w in line.split())
    try:
        raw = bytes.fromhex(digits)
    except ValueError:
        raise KeyFileError(f"{where}: not hexadecimal (expected {2 * KEY_LEN} hex digits)") from None
    if len(raw) != KEY_LEN:
        raise KeyFileError(f"{where}: {len(raw)} bytes, a device key is {KEY_LEN} ({2 * KEY_LEN} hex digits)")
    return raw


def key_path(path=None):
    """The key file to use: path, else $NANOBPF_CTRL_KEY, else build/keys/ctrl.key."""
    return Path(path or os.environ.get(ENV) or DEFAULT_PATH)


def load(path=None):
    """The DeviceKey of a key file (key_path's choice); KeyFileError with what to do when there is none."""
    p = key_path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise KeyFileError(f"device key {p}: {e.strerror}; `make firmware` makes the build's key, "
                           f"`nanobpf-ctrl-key new FILE` another (docs/control.md \"The device key\")") from None
    return DeviceKey(parse_key_text(text, str(p)))


_default = {}


def default():
    """The key of key_path() (read once per path)."""
    p = key_path()
    if p not in _default:
        _default[p] = load(p)
    return _default[p]


def new(path):
    """Write a fresh random key to path (mode 0600); refuse to overwrite one."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("# NanoBPF device key (docs/control.md \"The device key\"): keep it secret, never commit it\n")
        f.write(os.urandom(KEY_LEN).hex() + "\n")
    return p


def decrypt_frame(frame, key):
    """A control request with its body decrypted in place (for the Wireshark dissector's "request bodies
    in clear"), or None when the frame is no request whose tag verifies under key. 802.1Q/802.1ad tags
    before the EtherType are kept."""
    off = _ethertype_at(frame)
    hdr_at = off + 2
    if len(frame) < hdr_at + D.CTRL_HDR_SIZE + NONCE_LEN + TAG_LEN or struct.unpack_from(">H", frame, off)[0] != D.ETHERTYPE:
        return None
    hdr = frame[hdr_at:hdr_at + D.CTRL_HDR_SIZE]
    h = D.unpack("ctrl_hdr", hdr)
    body_at = hdr_at + D.CTRL_HDR_SIZE + NONCE_LEN
    if h["flags"] & D.NANOBPF_CTRL_F_RESPONSE or len(frame) < body_at + h["length"] + TAG_LEN:
        return None
    try:
        body = key.open(hdr, frame[body_at - NONCE_LEN:body_at], frame[body_at:body_at + h["length"]],
                        frame[body_at + h["length"]:body_at + h["length"] + TAG_LEN])
    except AuthError:
        return None
    return frame[:body_at] + body + frame[body_at + h["length"]:]


def decrypt_pcap(src, dst, key):
    """Write src's frames to dst with every authentic control request's body decrypted; the numbers of
    (requests decrypted, control requests left as they were because their tag did not verify)."""
    out, done, left = [], 0, []
    records = pcap.read_pcap(src)
    for i, (_, frame) in enumerate(records):
        d = decrypt_frame(frame, key)
        if d is not None:
            done += 1
        elif ctrl_request(frame):
            left.append(i + 1)
        out.append(d if d is not None else frame)
    pcap.write_pcap(dst, out, [t for t, _ in records])
    return done, left


def _ethertype_at(frame):
    """Offset of the EtherType behind any 802.1Q/802.1ad tags."""
    off = 12
    while len(frame) >= off + 2 and struct.unpack_from(">H", frame, off)[0] in (pcap.ETH_VLAN, pcap.ETH_QINQ):
        off += 4
    return off


def ctrl_request(frame):
    off = _ethertype_at(frame)
    return (len(frame) >= off + 2 + D.CTRL_HDR_SIZE and struct.unpack_from(">H", frame, off)[0] == D.ETHERTYPE
            and not frame[off + 4] & D.NANOBPF_CTRL_F_RESPONSE)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="nanobpf-ctrl-key", description=(
        "Make and inspect the control channel's device key (docs/control.md \"The device key\"). "
        f"FILE defaults to ${ENV}, else {DEFAULT_PATH}."))
    sub = ap.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("new", help="write a fresh random key (mode 0600); an existing file is kept")
    n.add_argument("file", nargs="?")
    n.add_argument("--force", action="store_true", help="replace an existing key (devices built with it stop answering)")
    i = sub.add_parser("id", help="print the key's id (as the device's boot line shows it), never the key")
    i.add_argument("file", nargs="?")
    b = sub.add_parser("bin", help="write the key's 16 bytes to OUT (the firmware build links them in); "
                       "an OUT with the same bytes is left untouched")
    b.add_argument("file")
    b.add_argument("out")
    d = sub.add_parser("decrypt", help="copy a pcap with its control requests' bodies decrypted, for Wireshark's "
                       "NanoBPF dissector with its preference \"Request bodies in clear\" (nanobpf.decrypted)")
    d.add_argument("pcap_in")
    d.add_argument("pcap_out")
    d.add_argument("--key", metavar="FILE", help="the device key (default: as FILE above)")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "new":
            p = key_path(a.file)
            if p.exists() and not a.force:
                load(p)   # an existing key must at least be a key
                print(f"nanobpf-ctrl-key: {p} exists (id {load(p).id()}); kept", file=sys.stderr)
                return 0
            if p.exists():
                p.unlink()
            new(p)
            print(f"nanobpf-ctrl-key: new device key {p} (id {load(p).id()})", file=sys.stderr)
        elif a.cmd == "id":
            print(load(a.file).id())
        elif a.cmd == "bin":
            k = load(a.file)
            out = Path(a.out)
            if out.exists() and out.read_bytes() == k.key:
                return 0        # unchanged: left as it is, so what is built from it is not rebuilt
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(k.key)
            tmp.replace(out)
        elif a.cmd == "decrypt":
            done, left = decrypt_pcap(a.pcap_in, a.pcap_out, load(a.key))
            print(f"nanobpf-ctrl-key: {done} control request(s) decrypted into {a.pcap_out}", file=sys.stderr)
            if left:
                print(f"nanobpf-ctrl-key: {len(left)} control request(s) did not verify under this key and stay "
                      f"encrypted (frames {', '.join(map(str, left[:20]))}{' ...' if len(left) > 20 else ''}): "
                      "the dissector would decode their bytes as if in clear", file=sys.stderr)
    except (KeyFileError, ValueError, OSError) as e:
        print(f"nanobpf-ctrl-key: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
