"""Host/device control protocol (docs/control.md): frames, ports and a reference host client.

Everything shared with the driver and the device comes from the generated module `nanobpf_ctrl_defs`
(hw/defs/ctrl.toml). `Client` is the host algorithm of nanobpf.ko in Python: an authoritative key
table, program and PISA table words, mirrored to the device with one request in flight, retransmission
with back-off, and a full replay when the device was reset or answers were lost. Tests use it against
the reference device model (nanobpf.devmodel) to show the protocol converges under injected faults.

    link = MemoryLink()
    dev = DeviceModel(host=link.b); dev.start()
    host = Client(link.a)
    host.key_add(cid, keys)                      # an open entry (local CID): the device's slot
    host.key_add(peer_cid, keys2, dir=SEAL)      # the seal entry of the same connection (peer's CID)
    host.key_add(b"", keys3, addr=addr_id("10.0.0.1", 4433, 443))   # a peer with zero-length CIDs

Key table entries are named by KeyId(dir, cid_len, id) (key_id() builds one): one connection has an
entry per direction (NANOBPF_QUIC_DIR_OPEN: our CID, packets from the network; _SEAL: the peer's CID,
packets the host sends); a zero-length CID names the peer by address and ports (addr_id()).
"""
import fcntl
import hmac
import ipaddress
import os
import select
import socket
import struct
import time
import zlib

from collections import namedtuple

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
from nanobpf import ctrlkey

__all__ = ["AuthError", "BROADCAST", "HOST_MAC", "DEVICE_MAC", "OPEN", "SEAL", "CtrlError", "CtrlTimeout", "Frame", "KeyId",
           "key_id", "addr_id", "build", "parse", "add_shim", "has_shim", "strip_shim", "crc32", "Port", "MemoryLink", "TapPort",
           "PacketPort", "Client", "parse_events"]

BROADCAST = b"\xff" * 6
HOST_MAC = bytes.fromhex("024e42000002")
DEVICE_MAC = D.DEVICE_MAC  # hw/defs/ctrl.toml [protocol]
HDR = D.CTRL_HDR_SIZE
NONCE, TAG = D.NANOBPF_CTRL_NONCE_LEN, D.NANOBPF_CTRL_TAG_LEN
ETH = 14
OPEN, SEAL = abi.NANOBPF_QUIC_DIR_OPEN, abi.NANOBPF_QUIC_DIR_SEAL
MAX_CID = D.NANOBPF_CTRL_MAX_CID
AuthError = ctrlkey.AuthError


class CtrlError(Exception):
    """The device refused a request: status (NANOBPF_CTRL_ST_*), its name and the device's text."""

    def __init__(self, status, message=""):
        self.status, self.message = status, message
        self.name = D.STATUS_NAMES.get(status, f"status {status}")
        super().__init__(f"device: {self.name}" + (f": {message}" if message else ""))


# Answers meaning the device no longer knows this session: replay it (HELLO, then the host's state).
RESYNC_STATUSES = frozenset((D.NANOBPF_CTRL_ST_STALE_EPOCH, D.NANOBPF_CTRL_ST_NEED_HELLO, D.NANOBPF_CTRL_ST_STALE_SEQ))


class CtrlTimeout(Exception):
    """No answer after every retransmission."""


class Frame:
    """A parsed, authenticated control frame: dst, src, header fields (dict), body (plaintext) and nonce."""
    __slots__ = ("dst", "src", "hdr", "body", "nonce")

    def __init__(self, dst, src, hdr, body, nonce=b""):
        self.dst, self.src, self.hdr, self.body, self.nonce = dst, src, hdr, body, nonce

    def __repr__(self):
        h = self.hdr
        return (f"Frame({D.MSG_NAMES.get(h['type'], h['type'])} seq={h['seq']} flags={h['flags']} "
                f"status={h['status']} epoch={h['epoch']:#x} body={len(self.body)}B)")


def build(dst, src, type_, seq, epoch=0, body=b"", flags=0, status=0, version=D.VERSION, key=None, nonce=None):
    """A control frame (without FCS), protected under the device key (a ctrlkey.DeviceKey; None: the
    default, ctrlkey.default()): a request's body encrypted and authenticated under a nonce (default:
    12 random bytes), a response (flags with RESPONSE) authenticated with its request's nonce (then
    required). Bodies above NANOBPF_CTRL_MAX_BODY are refused."""
    if len(body) > D.NANOBPF_CTRL_MAX_BODY:
        raise ValueError(f"control body of {len(body)} bytes, at most {D.NANOBPF_CTRL_MAX_BODY}")
    key = key or ctrlkey.default()
    hdr = D.pack("ctrl_hdr", version=version, type=type_, flags=flags, status=status, seq=seq & 0xFFFFFFFF,
                 epoch=epoch, length=len(body))
    eth = dst + src + struct.pack(">H", D.ETHERTYPE)
    if flags & D.NANOBPF_CTRL_F_RESPONSE:
        if nonce is None or len(nonce) != NONCE:
            raise ValueError("a response repeats its request's 12-byte nonce")
        return eth + hdr + nonce + bytes(body) + key.resp_tag(hdr, nonce, body)
    nonce = os.urandom(NONCE) if nonce is None else bytes(nonce)
    if len(nonce) != NONCE:
        raise ValueError(f"a request's nonce is {NONCE} bytes")
    ct, tag = key.seal(hdr, nonce, body)
    return eth + hdr + nonce + ct + tag


def parse(frame, key=None):
    """Frame of a control frame, None for other EtherTypes; ValueError for a malformed one (short, body
    beyond the frame or above the limit, reserved bits set), ctrlkey.AuthError (a ValueError) for one
    whose tag does not verify under key (None: the default key). A request's body comes decrypted.
    Padding after the tag is ignored."""
    if len(frame) < ETH or struct.unpack_from(">H", frame, 12)[0] != D.ETHERTYPE:
        return None
    if len(frame) < ETH + HDR + NONCE + TAG:
        raise ValueError(f"control frame of {len(frame)} bytes: shorter than its header, nonce and tag")
    hdr = D.unpack("ctrl_hdr", frame, ETH)
    n = hdr["length"]
    if n > D.NANOBPF_CTRL_MAX_BODY or ETH + HDR + NONCE + n + TAG > len(frame):
        raise ValueError(f"control body length {n} beyond the frame or the limit")
    if hdr["reserved"] or hdr["version"] == 0:
        raise ValueError("control header: reserved bits set or version 0")
    key = key or ctrlkey.default()
    raw_hdr = bytes(frame[ETH:ETH + HDR])
    nonce = bytes(frame[ETH + HDR:ETH + HDR + NONCE])
    body = bytes(frame[ETH + HDR + NONCE:ETH + HDR + NONCE + n])
    tag = bytes(frame[ETH + HDR + NONCE + n:ETH + HDR + NONCE + n + TAG])
    if hdr["flags"] & D.NANOBPF_CTRL_F_RESPONSE:
        if not hmac.compare_digest(key.resp_tag(raw_hdr, nonce, body), tag):
            raise ctrlkey.AuthError("control response: tag does not verify under the device key")
    else:
        body = key.open(raw_hdr, nonce, body, tag)
    return Frame(frame[0:6], frame[6:12], hdr, body, nonce)


def add_shim(frame, flags, cid_len=0):
    """The frame with the metadata shim (EtherType 0x88B6, flags, cid_len) after the MAC addresses.
    cid_len: with ENCRYPT, the length of the QUIC packet's destination CID (0..20). Not checked: tests
    build malformed shims with it too."""
    return frame[:12] + struct.pack(">HBB", D.SHIM_ETHERTYPE, flags, cid_len) + frame[12:]


def has_shim(frame):
    """The frame's EtherType is the shim's (whatever follows)."""
    return len(frame) >= ETH and struct.unpack_from(">H", frame, 12)[0] == D.SHIM_ETHERTYPE


def strip_shim(frame):
    """(flags, cid_len, frame without the shim), or (None, None, frame) when there is none. ValueError for
    a malformed shim: shorter than the shim and an EtherType, flags not exactly DECRYPTED or ENCRYPT, a
    CID length above 20 or one without ENCRYPT, or an inner EtherType that is no EtherType (below
    0x600) or is the control or shim EtherType (the checks nanobpf.ko makes)."""
    if not has_shim(frame):
        return None, None, frame
    if len(frame) < ETH + 4:
        raise ValueError(f"malformed shim: frame of {len(frame)} bytes")
    flags, cid_len, inner = frame[14], frame[15], struct.unpack_from(">H", frame, 16)[0]
    if flags not in (D.NANOBPF_SHIM_F_DECRYPTED, D.NANOBPF_SHIM_F_ENCRYPT):
        raise ValueError(f"malformed shim: flags {flags:#x}")
    if cid_len > MAX_CID or (cid_len and flags != D.NANOBPF_SHIM_F_ENCRYPT):
        raise ValueError(f"malformed shim: CID length {cid_len} with flags {flags:#x}")
    if inner < 0x600 or inner in (D.ETHERTYPE, D.SHIM_ETHERTYPE):
        raise ValueError(f"malformed shim: inner EtherType {inner:#06x}")
    return flags, cid_len, frame[:12] + frame[16:]


# ---------------------------------------------------------------- key table entry names
class KeyId(namedtuple("KeyId", "dir cid_len id")):
    """The name of a key table entry: direction (OPEN/SEAL), CID length (0..20) and the 20-byte id (the
    CID, zero after cid_len; for length 0 the peer's address id, addr_id()). key_id() builds and checks
    one."""
    __slots__ = ()

    @property
    def cid(self):
        """The CID bytes (b"" for a zero-length CID)."""
        return self.id[:self.cid_len]

    def fields(self):
        """The key_msg/key_del fields that name the entry."""
        return dict(cid_len=self.cid_len, dir=self.dir, cid=self.id)

    def pack(self):
        """struct nanobpf_quic_cid as the device stores it: the key of the key table and quic_pn maps."""
        return struct.pack(abi.STRUCTS["quic_cid"].fmt, self.cid_len, self.id, self.dir, bytes(2))

    @classmethod
    def unpack(cls, b):
        """The entry named by a key of the key table map (pack()'s inverse)."""
        cid_len, id_, dir_, _ = struct.unpack(abi.STRUCTS["quic_cid"].fmt, b)
        return cls(dir_, cid_len, id_)

    def __repr__(self):
        d = {OPEN: "open", SEAL: "seal"}.get(self.dir, f"dir{self.dir}")
        if self.cid_len:
            return f"KeyId({d}, cid={self.cid.hex()})"
        return f"KeyId({d}, addr={self.id.hex()})"


def addr_id(ip, peer_port, local_port):
    """The 20-byte id of a peer that uses zero-length CIDs (NANOBPF_QUIC_ADDR_*): its IPv6 address (an
    IPv4 address as ::ffff:a.b.c.d), its UDP port and the local UDP port, big-endian."""
    a = ipaddress.ip_address(ip)
    if a.version == 4:
        a = ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + a.packed)
    if not (0 <= peer_port <= 0xFFFF and 0 <= local_port <= 0xFFFF):
        raise ValueError(f"ports {peer_port}, {local_port}: 0..65535")
    return a.packed + struct.pack(">HH", peer_port, local_port)


def key_id(cid=b"", dir=OPEN, addr=None):
    """KeyId of an entry: cid (1..20 bytes), or an empty cid and addr (addr_id(), 20 bytes, not all zero)
    for a peer with zero-length CIDs; dir OPEN (default) or SEAL. ValueError otherwise. A KeyId passes
    through (dir and addr must then be left out)."""
    if isinstance(cid, KeyId):
        if addr is not None or dir not in (OPEN, cid.dir):
            raise ValueError("a KeyId already names the direction and the address")
        return cid
    cid = bytes(cid)
    if dir not in (OPEN, SEAL):
        raise ValueError(f"direction {dir}: {OPEN} (open) or {SEAL} (seal)")
    if len(cid) > MAX_CID:
        raise ValueError(f"connection ID of {len(cid)} bytes: 0..{MAX_CID}")
    if cid:
        if addr is not None:
            raise ValueError("an address names a zero-length CID only")
        return KeyId(dir, len(cid), cid.ljust(MAX_CID, b"\0"))
    if addr is None:
        raise ValueError("a zero-length CID needs the peer's address (addr_id())")
    addr = bytes(addr)
    if len(addr) != MAX_CID or not any(addr):
        raise ValueError(f"address id of {len(addr)} bytes: exactly {MAX_CID}, not all zero")
    return KeyId(dir, 0, addr)


def crc32(data):
    """CRC-32 (IEEE 802.3) as PROG_BEGIN/COMMIT carry it."""
    return zlib.crc32(data) & 0xFFFFFFFF


# ---------------------------------------------------------------- ports
class Port:
    """A frame port: send(frame), recv(timeout) -> frame or None, fileno() for select, close()."""
    name = "port"

    def recv(self, timeout=None):
        r, _, _ = select.select([self], [], [], timeout)
        return self._read() if r else None


class _DgramEnd(Port):
    def __init__(self, sock, name):
        self.sock, self.name = sock, name

    def fileno(self):
        return self.sock.fileno()

    def send(self, frame):
        self.sock.send(bytes(frame))

    def _read(self):
        return self.sock.recv(65536)

    def close(self):
        self.sock.close()


class MemoryLink:
    """Two connected in-memory ports (a and b), like a cable: for tests without TAP devices."""

    def __init__(self):
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        for s in (a, b):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.a, self.b = _DgramEnd(a, "link-a"), _DgramEnd(b, "link-b")

    def close(self):
        self.a.close()
        self.b.close()


_TUNSETIFF = 0x400454CA
_IFF_TAP, _IFF_NO_PI = 0x0002, 0x1000


class TapPort(Port):
    """A TAP device this process creates and owns (frames the kernel sends on it arrive here; frames
    sent here arrive in the kernel as received on it). Needs root (CAP_NET_ADMIN). The interface is
    brought up with IPv6 off, so the kernel stays quiet on it."""

    def __init__(self, name):
        if len(name.encode()) > 15:
            raise ValueError(f"interface name '{name}' longer than 15 bytes")
        self.name = name
        try:
            self.fd = os.open("/dev/net/tun", os.O_RDWR)
        except OSError as e:
            raise OSError(f"TAP {name}: cannot open /dev/net/tun: {e.strerror} (root or CAP_NET_ADMIN needed)") from e
        try:
            fcntl.ioctl(self.fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TAP | _IFF_NO_PI))
        except OSError as e:
            os.close(self.fd)
            raise OSError(f"TAP {name}: TUNSETIFF failed: {e.strerror}") from e
        _quiet_up(name)

    def fileno(self):
        return self.fd

    def send(self, frame):
        os.write(self.fd, bytes(frame))

    def _read(self):
        return os.read(self.fd, 65536)

    def close(self):
        os.close(self.fd)


class PacketPort(Port):
    """An existing interface (e.g. the TAP QEMU opened) through an AF_PACKET socket: frames received on
    the interface arrive here (those of EtherType `proto` only, default all), frames sent here leave on
    it. The kernel's own outgoing frames are ignored. quiet: bring the interface up with IPv6 off (a
    port of its own, as a device model's); False leaves a host's interface as it is. Needs root."""

    def __init__(self, ifname, proto=0x0003, quiet=True):
        self.name = ifname
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(proto))
        try:    # a device model drains slower than a host can burst: queue, as a device's RX FIFO would
            self.sock.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)        # SO_RCVBUFFORCE (root)
        except OSError:
            pass
        try:
            self.sock.bind((ifname, proto))
        except OSError as e:
            self.sock.close()
            raise OSError(f"interface {ifname}: {e.strerror}") from e
        if quiet:
            _quiet_up(ifname)

    def fileno(self):
        return self.sock.fileno()

    def send(self, frame):
        self.sock.send(bytes(frame))

    def _read(self):
        data, addr = self.sock.recvfrom(65536)
        return None if addr[2] == socket.PACKET_OUTGOING else data

    def recv(self, timeout=None):
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if end is None else max(0.0, end - time.monotonic())
            r, _, _ = select.select([self], [], [], left)
            if not r:
                return None
            frame = self._read()
            if frame is not None:
                return frame

    def close(self):
        self.sock.close()


class VlanPort(PacketPort):
    """One VLAN of an interface, as a VLAN sub-interface would give it (ifname.vid), through an AF_PACKET
    socket on the interface itself: frames sent here leave tagged with `vid` (priority 0); frames
    received on the interface with that VLAN arrive here untagged, and with vid None the untagged ones.
    The kernel takes a received tag off into the packet's metadata before packet sockets see it, so the
    VLAN is read from PACKET_AUXDATA. For hosts whose kernel has no 802.1Q module (this project's build
    machines); a host with one uses a VLAN sub-interface. Needs root."""

    _PACKET_AUXDATA, _TP_STATUS_VLAN_VALID = 8, 0x10

    def __init__(self, ifname, vid, quiet=True):
        super().__init__(ifname, quiet=quiet)
        self.vid = vid
        self.name = f"{ifname}.{vid}" if vid is not None else ifname
        self.sock.setsockopt(263, self._PACKET_AUXDATA, 1)                      # SOL_PACKET

    def send(self, frame):
        frame = bytes(frame)
        if self.vid is not None:
            frame = frame[:12] + struct.pack(">HH", 0x8100, self.vid) + frame[12:]
        self.sock.send(frame)

    def _read(self):
        data, anc, _, addr = self.sock.recvmsg(65536, socket.CMSG_SPACE(20))
        if addr[2] == socket.PACKET_OUTGOING:
            return None
        vid = None
        for level, kind, value in anc:
            if level == 263 and kind == self._PACKET_AUXDATA and len(value) >= 20:
                status, _, _, _, _, tci = struct.unpack_from("<IIIHHH", value)
                if status & self._TP_STATUS_VLAN_VALID or tci:
                    vid = tci & 0xFFF
        if vid is None and len(data) >= 16 and data[12:14] == b"\x81\x00":   # a tag the kernel left in
            vid, data = struct.unpack_from(">H", data, 14)[0] & 0xFFF, data[:12] + data[16:]
        return data if vid == self.vid else None


def _quiet_up(ifname):
    try:
        with open(f"/proc/sys/net/ipv6/conf/{ifname}/disable_ipv6", "w") as f:
            f.write("1")
    except OSError:
        pass
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifr = struct.pack("16sh", ifname.encode(), 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, 0x8913, ifr))[1]          # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sh", ifname.encode(), flags | 0x1))  # SIOCSIFFLAGS, IFF_UP
    finally:
        s.close()


def parse_events(body):
    """An EVENTS response body -> (lost, pending, [(index, data)]); ValueError when malformed."""
    head = D.unpack("events_resp", body)
    off, records = D.EVENTS_RESP_SIZE, []
    for _ in range(head["count"]):
        rec = D.unpack("event_rec", body, off)
        off += D.EVENT_REC_SIZE
        if rec["reserved"] or rec["len"] > D.NANOBPF_CTRL_MAX_EVENT or off + rec["len"] > len(body):
            raise ValueError(f"EVENTS response: record {len(records)} of {head['count']} is malformed")
        records.append((rec["index"], bytes(body[off:off + rec["len"]])))
        off += rec["len"]
    if off != len(body) or head["reserved"]:
        raise ValueError(f"EVENTS response: {len(body) - off} bytes after {head['count']} records")
    return head["lost"], head["pending"], records


# ---------------------------------------------------------------- reference host
class Client:
    """The host side (nanobpf.ko's algorithm): authoritative state, mirrored with acknowledgements.

    A change enters the host state when the device acknowledged it; a refusal or a timeout raises
    (CtrlError, CtrlTimeout) and leaves the host state as it was. A timeout (the device may or may not
    have applied the request) or STALE_EPOCH/NEED_HELLO marks the link out of sync: the next request
    first replays everything (HELLO, KEY_FLUSH, program, tables, keys), then is sent itself."""

    def __init__(self, port, mac=HOST_MAC, retry_ms=D.NANOBPF_CTRL_RETRY_MS, retry_max_ms=D.NANOBPF_CTRL_RETRY_MAX_MS,
                 retries=D.NANOBPF_CTRL_RETRIES, first_seq=1, key=None):
        self.port, self.mac = port, mac
        self.key = key or ctrlkey.default()     # the device key (ctrlkey.DeviceKey)
        self.retry_ms, self.retry_max_ms, self.retries = retry_ms, retry_max_ms, retries
        self.seq = first_seq - 1
        self.epoch, self.version, self.peer = 0, None, BROADCAST
        self.synced = False
        self.keys = {}         # KeyId -> 80-byte struct nanobpf_quic_keys
        self.slots = {}        # KeyId -> the device's slot (this epoch)
        self.program = None    # (name, image)
        self.tables = {}       # (table, index) -> word
        self.limits = {}
        self.counters = dict(tx=0, retransmits=0, timeouts=0, rx=0, unmatched=0, resyncs=0, auth_fail=0)

    # ------------------------------------------------------------ transport
    def exchange(self, type_, body=b""):
        """Send one request and wait for its response: (status, flags, body). Raises CtrlTimeout."""
        self.seq = (self.seq + 1) & 0xFFFFFFFF or 1
        epoch = 0 if type_ == D.NANOBPF_CTRL_MSG_HELLO else self.epoch
        nonce = os.urandom(NONCE)        # fresh per request; its retransmissions are the same frame
        frame = build(self.peer, self.mac, type_, self.seq, epoch, body, version=self.version or D.VERSION,
                      key=self.key, nonce=nonce)
        wait = self.retry_ms / 1000
        for attempt in range(self.retries + 1):
            if attempt:
                self.counters["retransmits"] += 1
            self.port.send(frame)
            self.counters["tx"] += 1
            end = time.monotonic() + wait
            while (left := end - time.monotonic()) > 0:
                raw = self.port.recv(left)
                if raw is None:
                    break
                try:
                    f = parse(raw, self.key)
                except ctrlkey.AuthError:
                    self.counters["auth_fail"] += 1      # forged or another device's: never believed
                    continue
                except ValueError:
                    continue
                if f is None or not f.hdr["flags"] & D.NANOBPF_CTRL_F_RESPONSE:
                    continue
                self.counters["rx"] += 1
                if f.hdr["seq"] != self.seq or f.hdr["type"] != type_ or f.nonce != nonce:
                    self.counters["unmatched"] += 1
                    continue
                self.peer = f.src
                if f.hdr["status"] == D.NANOBPF_CTRL_ST_OK or type_ == D.NANOBPF_CTRL_MSG_HELLO:
                    self.epoch = f.hdr["epoch"]
                return f.hdr["status"], f.hdr["flags"], f.body
            wait = min(wait * 2, self.retry_max_ms / 1000)
        self.counters["timeouts"] += 1
        hint = (f" ({self.counters['auth_fail']} answers failed authentication: is this the device's key?)"
                if self.counters["auth_fail"] else " (a device with another key drops the requests unanswered: "
                f"check the key, id {self.key.id()})")
        raise CtrlTimeout(f"{D.MSG_NAMES.get(type_, type_)} seq {self.seq}: no answer after {self.retries} retries{hint}")

    def _checked(self, type_, body=b""):
        status, _, rbody = self.exchange(type_, body)
        if status != D.NANOBPF_CTRL_ST_OK:
            raise CtrlError(status, rbody.decode(errors="replace"))
        return rbody

    def hello(self):
        req = D.pack("hello_req", ver_min=D.MIN_VERSION, ver_max=D.VERSION)
        status, _, body = self.exchange(D.NANOBPF_CTRL_MSG_HELLO, req)
        if status == D.NANOBPF_CTRL_ST_STALE_SEQ and len(body) == 4:
            self.seq = struct.unpack(">I", body)[0]       # a restarted host continues after the device's window
            status, _, body = self.exchange(D.NANOBPF_CTRL_MSG_HELLO, req)
        if status != D.NANOBPF_CTRL_ST_OK:
            raise CtrlError(status, body.decode(errors="replace"))
        self.limits = D.unpack("hello_resp", body)
        self.version = self.limits["version"]
        return self.limits

    def resync(self):
        """HELLO, then the whole host state replayed: the device converges to it."""
        self.counters["resyncs"] += 1
        self.hello()
        self._checked(D.NANOBPF_CTRL_MSG_KEY_FLUSH)
        if self.program:
            self._send_program(*self.program)
        for (table, index), word in sorted(self.tables.items()):
            self._checked(D.NANOBPF_CTRL_MSG_TABLE_SET, D.pack("table_msg", table=table, index=index, value=word))
        self.slots = {}
        for kid, keys in self.keys.items():
            body = self._checked(D.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", **kid.fields(), keys=keys))
            self.slots[kid] = D.unpack("key_resp", body)["slot"]
        self.synced = True

    def _in_session(self, step):
        """Run `step()` in the session: replay first when out of sync. An answer saying the session is gone
        (RESYNC_STATUSES) marks the link out of sync and `step` runs again, at most 3 times; a timeout
        marks it out of sync and is raised (the device may or may not have applied the request)."""
        for _ in range(3):
            try:
                if not self.synced:
                    self.resync()
                return step()
            except CtrlTimeout:
                self.synced = False
                raise
            except CtrlError as e:
                if e.status in RESYNC_STATUSES:
                    self.synced = False      # STALE_SEQ: another host instance used these numbers; HELLO moves on
                    continue
                raise
        raise CtrlError(D.NANOBPF_CTRL_ST_STALE_EPOCH, "the device keeps changing epochs")

    def call(self, type_, body=b""):
        """A request in the session, replaying first when out of sync; response body or raises."""
        return self._in_session(lambda: self._checked(type_, body))

    # ------------------------------------------------------------ keys
    def key_add(self, cid, keys, dir=OPEN, addr=None):
        """Add a key table entry (key_id(cid, dir, addr), or a KeyId as cid) with keys never used before
        (fresh from a handshake: the device starts its packet-number state anew): its slot on the device."""
        kid, keys = key_id(cid, dir, addr), bytes(keys)
        if kid in self.keys:
            raise CtrlError(D.NANOBPF_CTRL_ST_EXIST, "already in the host table")
        body = self.call(D.NANOBPF_CTRL_MSG_KEY_ADD, D.pack("key_msg", **kid.fields(), keys=keys))
        self.keys[kid] = keys
        self.slots[kid] = D.unpack("key_resp", body)["slot"]
        return self.slots[kid]

    def key_update(self, cid, keys, dir=OPEN, addr=None):
        """Replace an entry's keys (a key update of a live connection; the packet-number state stays): its slot."""
        kid, keys = key_id(cid, dir, addr), bytes(keys)
        if kid not in self.keys:
            raise CtrlError(D.NANOBPF_CTRL_ST_NOENT, "not in the host table")
        body = self.call(D.NANOBPF_CTRL_MSG_KEY_UPDATE, D.pack("key_msg", **kid.fields(), keys=keys))
        self.keys[kid] = keys
        return D.unpack("key_resp", body)["slot"]

    def key_del(self, cid, dir=OPEN, addr=None):
        kid = key_id(cid, dir, addr)
        if kid not in self.keys:
            raise CtrlError(D.NANOBPF_CTRL_ST_NOENT, "not in the host table")
        self.call(D.NANOBPF_CTRL_MSG_KEY_DEL, D.pack("key_del", **kid.fields()))
        del self.keys[kid]
        self.slots.pop(kid, None)

    # ------------------------------------------------------------ program
    def _send_program(self, name, image):
        meta = D.pack("prog_begin", total=len(image), crc32=crc32(image), name=name)
        self._checked(D.NANOBPF_CTRL_MSG_PROG_BEGIN, meta)
        for off in range(0, len(image), D.NANOBPF_CTRL_CHUNK):
            self._checked(D.NANOBPF_CTRL_MSG_PROG_CHUNK,
                          D.pack("prog_chunk", offset=off) + image[off:off + D.NANOBPF_CTRL_CHUNK])
        return D.unpack("prog_info", self._checked(D.NANOBPF_CTRL_MSG_PROG_COMMIT, meta))

    def prog_load(self, image, name="prog"):
        """Load and attach a program image (nanobpf-load output): its prog_info. A refused program
        leaves the attached one in place."""
        image = bytes(image)
        if not 1 <= len(image) <= D.NANOBPF_CTRL_MAX_IMAGE:
            raise ValueError(f"image of {len(image)} bytes: 1..{D.NANOBPF_CTRL_MAX_IMAGE}")
        if len(name.encode()) > D.NANOBPF_CTRL_NAME_LEN:
            raise ValueError(f"program name longer than {D.NANOBPF_CTRL_NAME_LEN} bytes")
        info = self._in_session(lambda: self._send_program(name, image))
        self.program = (name, image)
        return info

    def prog_unload(self):
        self.call(D.NANOBPF_CTRL_MSG_PROG_UNLOAD)
        self.program = None

    def prog_info(self):
        return D.unpack("prog_info", self.call(D.NANOBPF_CTRL_MSG_PROG_INFO))

    # ------------------------------------------------------------ maps, tables, stats
    def _map(self, type_, name, key=b"", value=b"", flags=0):
        body = D.pack("map_req", name=name, flags=flags, key_len=len(key), value_len=len(value)) + bytes(key) + bytes(value)
        return self.call(type_, body)

    def map_lookup(self, name, key):
        try:
            return self._map(D.NANOBPF_CTRL_MSG_MAP_LOOKUP, name, key)
        except CtrlError as e:
            if e.status == D.NANOBPF_CTRL_ST_NOENT:
                return None
            raise

    def map_update(self, name, key, value, flags=0):
        self._map(D.NANOBPF_CTRL_MSG_MAP_UPDATE, name, key, value, flags)

    def map_delete(self, name, key):
        self._map(D.NANOBPF_CTRL_MSG_MAP_DELETE, name, key)

    def map_keys(self, name):
        """Every key of a map (MAP_NEXT until NOENT)."""
        keys, key = [], b""
        while True:
            try:
                key = self._map(D.NANOBPF_CTRL_MSG_MAP_NEXT, name, key)
            except CtrlError as e:
                if e.status == D.NANOBPF_CTRL_ST_NOENT:
                    return keys
                raise
            keys.append(key)

    def events(self, name, max=0):
        """One EVENTS request: (lost, pending, [(index, data)]): the records the event map `name` dropped
        since the last EVENTS, the records still waiting after these, and the oldest records, as many as
        one response holds (at most max; 0: no limit). The device forgets the records it sent."""
        body = self.call(D.NANOBPF_CTRL_MSG_EVENTS, D.pack("events_req", name=name, max=max))
        return parse_events(body)

    def events_all(self, name):
        """EVENTS until none are waiting: (lost, [(index, data)])."""
        lost, records = 0, []
        while True:
            n, pending, recs = self.events(name)
            lost += n
            records += recs
            if not pending:
                return lost, records

    def table_set(self, table, index, word):
        self.call(D.NANOBPF_CTRL_MSG_TABLE_SET, D.pack("table_msg", table=table, index=index, value=word))
        self.tables[(table, index)] = word

    def table_del(self, table, index):
        self.call(D.NANOBPF_CTRL_MSG_TABLE_DEL, D.pack("table_msg", table=table, index=index))
        self.tables.pop((table, index), None)

    def stats(self):
        """{counter name: value} of the device."""
        body = self.call(D.NANOBPF_CTRL_MSG_STATS)
        out = {}
        for off in range(0, len(body) - len(body) % D.STAT_ENTRY_SIZE, D.STAT_ENTRY_SIZE):
            e = D.unpack("stat_entry", body, off)
            out[D.STAT_NAMES.get(e["id"], f"stat{e['id']}")] = e["value"]
        return out

    def device_reset(self):
        """RESET the device, then replay the host state to it."""
        self.call(D.NANOBPF_CTRL_MSG_RESET)
        self.synced = False
        self.resync()
