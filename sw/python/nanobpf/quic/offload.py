"""aioquic on the DPU: the device does 1-RTT packet protection (docs/offload.md).

One line turns it on for an aioquic server or client, given the interface that leads to the DPU's host
port:

    dpu = Dpu("eth1")                                   # HELLO; the QUIC program attached if none is
    await serve(host, port, configuration=cfg, create_protocol=dpu.protocol(MyProtocol))
    ...
    dpu.close()                                         # every key this process installed removed

What happens per connection, once aioquic has confirmed the handshake (before that, and for anything
the device cannot do, aioquic protects packets itself, as without the DPU):
- keys: the connection's 1-RTT keys go into the device's key table: an OPEN entry per local CID the
  peer uses (the peer's keys and the next phase's, to open what the peer sends) and a SEAL entry for the peer's CID
  (our keys and the next phase's). Zero-length CIDs are keyed by address and ports. On each key
  update (ours or the peer's) the entries follow; when aioquic discards the 1-RTT keys (connection
  closed) they are removed.
- sending: a datagram of one 1-RTT packet leaves aioquic unprotected (header and payload plain, with
  room for the tag) and goes to the device with the ENCRYPT shim: the device seals it or drops it and
  counts why, it never leaves in plaintext. A datagram that would carry such a packet and is anything
  else is dropped here (counted `unsealable`): it cannot happen after the handshake, and would leak.
- receiving: frames the device delivers with the DECRYPTED shim (its tag verified) skip aioquic's
  header protection and AEAD; everything else arrives through the UDP socket and aioquic opens it.
  Only the DPU link's shim frames are trusted as opened; no other packet skips the tag check.

The path is user space (no kernel module needed): control frames with nanobpf.ctrl.Client over an
AF_PACKET socket on the DPU link, shim frames through AF_PACKET too; the kernel's UDP socket keeps the
port and carries the rest. One process owns the device's control session (the key table is flushed
when a session replays). Needs root or CAP_NET_RAW.

aioquic internals used (the methods checked at import; aioquic is pinned to 1.7.2 in sw/tools/setup.sh):
QuicConnection._initialize, ._cryptos, ._host_cids, .host_cid, ._peer_cid, ._network_paths,
._handshake_confirmed, CryptoPair._update_key, CryptoContext._setup_cb.
"""
from __future__ import annotations

import ipaddress
import json
import socket
import struct
import subprocess
from collections import Counter
from pathlib import Path

import aioquic
import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
from aioquic import tls
from aioquic.quic.connection import QuicConnection
from aioquic.quic.crypto import CryptoError, CryptoPair
from aioquic.quic.packet import decode_packet_number

from .. import ctrl
from .keys import PacketKeys, next_secret
from .workload import keys_value

__all__ = ["Dpu", "OffloadUnsupported", "keys_for"]

TAG_LEN = abi.NANOBPF_AEAD_TAG_LEN
_TAG_ROOM = bytes(TAG_LEN)
PENDING_KEY = 24            # first bytes of an unprotected packet kept to know it again (header + number)

_NEEDED = (("QuicConnection", QuicConnection, ("_initialize", "_discard_epoch", "datagrams_to_send")),
           ("CryptoPair", CryptoPair, ("_update_key", "decrypt_packet", "encrypt_packet")))


class OffloadUnsupported(RuntimeError):
    """This aioquic lacks what the offload relies on (another major version)."""


def _check_aioquic():
    if not aioquic.__version__.startswith("1."):
        raise OffloadUnsupported(f"aioquic {aioquic.__version__}: the offload is written for aioquic 1.x")
    for name, cls, attrs in _NEEDED:
        missing = [a for a in attrs if not hasattr(cls, a)]
        if missing:
            raise OffloadUnsupported(f"aioquic {aioquic.__version__}: {name} lacks {', '.join(missing)}")


_check_aioquic()


def keys_for(secret: bytes, hp: bytes, phase: int, cid_len: int, second: bytes | None = None, flag: int = 0) -> bytes:
    """struct nanobpf_quic_keys for a traffic secret: key phase `phase`, the secret's keys as current,
    and in the second slot the keys of `second` (a secret) with flag NEXT or PREV."""
    cur = PacketKeys.from_secret(secret, hp=hp)
    other = PacketKeys.from_secret(second, hp=hp) if second is not None else None
    return keys_value(cur, cid_len, other, flag=flag if other else 0, phase=phase)


def _ip_json(*args):
    cmd = ["ip", "-j", *args]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out or "[]")


class _Route:
    """Where a peer's frames go on the DPU link: source MAC/IP and the next hop's MAC (the kernel's
    routing and neighbour tables; the kernel resolved them when it sent the handshake). eth4/eth6[n]:
    the Ethernet header with the ENCRYPT shim for an n-byte destination CID."""

    def __init__(self, src_mac, src_ip, dst_mac, dst_ip):
        self.src_packed, self.dst_packed, self.v4 = ipaddress.ip_address(src_ip).packed, dst_ip.packed, dst_ip.version == 4
        base = bytes.fromhex(dst_mac.replace(":", "")) + src_mac
        self.eth4, self.eth6 = ([base + struct.pack("!HBBH", D.SHIM_ETHERTYPE, D.NANOBPF_SHIM_F_ENCRYPT, n, et)
                                 for n in range(ctrl.MAX_CID + 1)] for et in (0x0800, 0x86DD))
        # IPv4 header checksum: the sum of the words that do not change (version..TOS, flags, TTL and
        # protocol, addresses); total length and identification are added per packet
        if self.v4:
            self.sum4 = (0x4500 + 0x4000 + (64 << 8 | 17) + sum(struct.unpack("!4H", self.src_packed + self.dst_packed)))

    def ipv4_header(self, total, ident):
        c = self.sum4 + total + ident
        c = (c & 0xFFFF) + (c >> 16)
        c = (c & 0xFFFF) + (c >> 16)
        return struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, ident, 0x4000, 64, 17, ~c & 0xFFFF,
                           self.src_packed, self.dst_packed)


class _Conn:
    """The offload state of one aioquic connection."""

    def __init__(self, dpu, proto):
        self.dpu, self.proto, self.quic = dpu, proto, proto._quic
        self.active = False           # keys on the device: 1-RTT packets go through it
        self.offloaded = False        # was active at some point (the device protected this connection)
        self.failed = False           # the device refused: this connection stays in software
        self.open_ids = {}            # KeyId -> local CID bytes
        self.seal_id = None           # KeyId of the peer CID we seal for
        self.extra_seal_ids = []      # SEAL entries of peer CIDs a datagram used before aioquic moved to them
        self.seal_cid_len = 0
        self.device_opened = False    # the datagram being handled was opened by the device
        self.phase_first_pn = None    # smallest packet number received in the current key phase
        self.prev_kept = False        # OPEN entries hold the previous phase's keys (PREV), not the next's
        self.pending = {}             # (length, first bytes) of an unprotected packet -> shim cid_len, until sent
        self.cids = None              # (peer CID, local CIDs seen...) the entries were last made for
        self.seen = set()             # local CIDs the peer has sent 1-RTT packets to
        self.local_port = None
        self.hp_recv = self.hp_send = None   # header protection keys of the first 1-RTT secrets
        self._prev_recv = None        # the previous phase's receive secret (for PREV)

    # ------------------------------------------------------------ addresses
    def _peer(self):
        return self.quic._network_paths[0].addr

    def _addr_id(self, addr):
        host = ipaddress.ip_address(addr[0])
        if host.version == 6 and host.ipv4_mapped:
            host = host.ipv4_mapped
        return ctrl.addr_id(str(host), addr[1], self.proto._nb_local_port())

    def _key_id(self, cid, dir_):
        if cid:
            return ctrl.key_id(cid, dir_)
        return ctrl.key_id(b"", dir_, addr=self._addr_id(self._peer()))

    # ------------------------------------------------------------ keys
    def _secrets(self):
        pair = self.quic._cryptos[tls.Epoch.ONE_RTT]
        return pair.recv, pair.send

    def _open_value(self, cid_len):
        recv, _ = self._secrets()
        hp = self._hp(recv)
        if self.prev_kept:
            return keys_for(recv.secret, hp, recv.key_phase, cid_len, self._prev_recv, abi.NANOBPF_QUIC_KEY_PREV)
        return keys_for(recv.secret, hp, recv.key_phase, cid_len, next_secret(recv.secret), abi.NANOBPF_QUIC_KEY_NEXT)

    def _seal_value(self, cid_len):
        _, send = self._secrets()
        return keys_for(send.secret, self._hp(send), send.key_phase, cid_len, next_secret(send.secret),
                        abi.NANOBPF_QUIC_KEY_NEXT)

    def _hp(self, context):
        """The header protection key of a direction: derived from the first 1-RTT secret (a key update
        keeps it, RFC 9001 6.1), remembered when the keys were set up."""
        return self.hp_send if context is self._secrets()[1] else self.hp_recv

    def activate(self):
        """Install this connection's keys (called once aioquic confirmed the handshake)."""
        if self.active or self.failed:
            return
        pair = self.quic._cryptos[tls.Epoch.ONE_RTT]
        if pair.recv.cipher_suite != tls.CipherSuite.AES_128_GCM_SHA256 or pair.recv.version != 1:
            self.failed = True        # the device does AES-128-GCM of QUIC v1 only
            self.dpu.counters["not_offloadable"] += 1
            return
        try:
            self.dpu._route(self._peer())
            self.sync_open()
            self.sync_seal()
            self.cids = self.cid_state()
        except (ctrl.CtrlError, ctrl.CtrlTimeout, OSError, RuntimeError) as e:
            self.fail("activate_failed", e)
            return
        self.active = self.offloaded = True
        self.dpu.counters["connections"] += 1

    def fail(self, why, err):
        """The device could not follow (a refused or unanswered request): this connection goes back to
        aioquic's own protection for good, its entries removed."""
        self.failed = True
        self.dpu.counters[why] += 1
        self.dpu._log(f"offload of a connection stopped ({why}: {err}); aioquic protects it")
        self.remove()

    def sync_open(self):
        """OPEN entries for the local CIDs the peer uses: the one of the handshake and those it has sent
        to since (seen in packets aioquic opened itself); none for a CID aioquic has retired. A CID the
        peer moves to arrives through the UDP socket until its entry is there (one round trip each,
        instead of one per CID aioquic issues, eight, before the first packet)."""
        issued = {c.cid for c in self.quic._host_cids}
        want = {}
        for cid in ({self.quic.host_cid} | self.seen) & issued:
            want[self._key_id(cid, ctrl.OPEN)] = cid
        for kid in [k for k in self.open_ids if k not in want]:
            self.dpu._key_del(kid, self)
            del self.open_ids[kid]
        for kid, cid in want.items():
            if kid not in self.open_ids:
                self.dpu._key_add(kid, self._open_value(len(cid)), self)
                self.open_ids[kid] = cid

    def cid_state(self):
        return (self.quic._peer_cid.cid, len(self.seen), *(c.cid for c in self.quic._host_cids))

    def sync_seal(self):
        """The SEAL entry for the peer CID aioquic sends to."""
        cid = self.quic._peer_cid.cid
        kid = self._key_id(cid, ctrl.SEAL)
        if kid == self.seal_id:
            return
        old = self.seal_id
        if kid in self.extra_seal_ids:     # on the device already (seal_for)
            self.extra_seal_ids.remove(kid)
        else:
            self.dpu._key_add(kid, self._seal_value(len(cid)), self)
        self.seal_id, self.seal_cid_len = kid, len(cid)
        if old is not None:
            self.dpu._key_del(old, self)

    def seal_for(self, cid):
        """A SEAL entry for the peer CID a datagram to seal carries, when that is not aioquic's current
        one: aioquic may send a datagram to the CID it is moving to before it moves (seen in a transfer
        with a key update: one datagram to the new CID, then the old one again). Without the entry the
        device drops the datagram (NO_SEAL_KEYS). Kept until aioquic moves to it (sync_seal) or the
        connection ends."""
        kid = self._key_id(bytes(cid), ctrl.SEAL)
        if kid != self.seal_id and kid not in self.extra_seal_ids:
            self.dpu._key_add(kid, self._seal_value(len(cid)), self)
            self.extra_seal_ids.append(kid)

    def key_update(self, trigger, prev_recv):
        """aioquic moved to the next key phase (both directions): the device's entries follow.

        The second key slot of the OPEN entries: after our own update, the previous phase's keys (PREV):
        the peer sends with them until it sees our new phase, for about one round trip; from its first
        packet in the new phase on (current_phase_seen), the next phase's (NEXT). After the peer's
        update, NEXT at once: aioquic (like the device with NEXT) keeps one set of keys and may update
        again as soon as it likes, and a next-phase packet the device cannot open would be lost for
        good (its sender then waits for an answer it never gets)."""
        if not self.active:
            return
        self._prev_recv = prev_recv
        self.prev_kept = trigger == "local_update"
        self.phase_first_pn = None
        try:
            self._update_entries()
        except (ctrl.CtrlError, ctrl.CtrlTimeout) as e:
            self.fail("key_update_failed", e)
            return
        self.dpu.counters["key_updates"] += 1

    def _update_entries(self, seal=True):
        for kid, cid in self.open_ids.items():
            self.dpu._key_update(kid, self._open_value(len(cid)))
        if seal and self.seal_id is not None:
            self.dpu._key_update(self.seal_id, self._seal_value(self.seal_cid_len))
        for kid in self.extra_seal_ids if seal else ():
            self.dpu._key_update(kid, self._seal_value(kid.cid_len))

    def current_phase_seen(self, pn):
        """A packet of the current phase was opened: the peer has the new keys; PREV gives way to NEXT."""
        if self.phase_first_pn is None or pn < self.phase_first_pn:
            self.phase_first_pn = pn
        if self.prev_kept:
            self.prev_kept = False
            try:
                self._update_entries(seal=False)
            except (ctrl.CtrlError, ctrl.CtrlTimeout) as e:
                self.fail("key_update_failed", e)

    def remove(self):
        """Every entry of this connection off the device."""
        for kid in list(self.open_ids):
            self.dpu._key_del(kid, self)
        self.open_ids.clear()
        if self.seal_id is not None:
            self.dpu._key_del(self.seal_id, self)
            self.seal_id = None
        while self.extra_seal_ids:
            self.dpu._key_del(self.extra_seal_ids.pop(), self)
        if self.active:
            self.dpu.counters["connections_closed"] += 1
        self.active = False


class _OffloadPair(CryptoPair):
    """The 1-RTT CryptoPair of an offloaded connection (an aioquic CryptoPair whose class is swapped
    once aioquic created it, so its contexts and callbacks stay aioquic's)."""
    _nb: _Conn

    def decrypt_packet(self, packet, encrypted_offset, expected_packet_number):
        st = self._nb
        if not st.device_opened:
            st.dpu.counters["rx_software"] += 1
            out = super().decrypt_packet(packet, encrypted_offset, expected_packet_number)
            if not packet[0] & 0x80:          # authentic: the peer uses this CID, give it an OPEN entry
                st.seen.add(bytes(packet[1:encrypted_offset]))
            return out
        first = packet[0]
        if first & 0x80 or not st.active:
            raise CryptoError("a frame opened by the device is not a 1-RTT packet of an offloaded connection")
        # The device removed header protection, verified the tag and left the plaintext.
        pn_len = (first & 0x03) + 1
        end = encrypted_offset + pn_len
        if end > len(packet):
            raise CryptoError("device-opened packet shorter than its header")
        pn = decode_packet_number(int.from_bytes(packet[encrypted_offset:end], "big"), pn_len * 8,
                                  expected_packet_number)
        phase = (first >> 2) & 1
        if phase != self.recv.key_phase:
            # the previous phase's late packet (opened with PREV keys), or the peer's key update
            if not (st.prev_kept or (st.phase_first_pn is not None and pn < st.phase_first_pn)):
                self._update_key("remote_update")      # aioquic follows; st.key_update moves the device
                st.phase_first_pn = pn
        else:
            st.current_phase_seen(pn)
        st.dpu.counters["rx_device"] += 1
        return packet[:end], packet[end:], pn

    def encrypt_packet(self, plain_header, plain_payload, packet_number):
        st = self._nb
        if self._update_key_requested and st.active:
            self._update_key("local_update")         # first: a device that cannot follow turns the offload off
        if not st.active or plain_header[0] & 0x80:
            st.dpu.counters["tx_software"] += 1
            return super().encrypt_packet(plain_header, plain_payload, packet_number)
        # Unprotected, with room for the tag (aioquic counts the bytes in flight): the device seals it.
        out = plain_header + plain_payload + _TAG_ROOM
        st.pending[(len(out), out[:PENDING_KEY])] = st.seal_cid_len
        return out

    def _update_key(self, trigger):
        prev_recv = self.recv.secret
        super()._update_key(trigger)
        st = getattr(self, "_nb", None)
        if st is not None and st.active:
            st.key_update(trigger, prev_recv)

    def teardown(self):
        st = getattr(self, "_nb", None)
        if st is not None:
            st.remove()
        super().teardown()


class _OffloadMixin:
    """Mixed into the application's QuicConnectionProtocol class by Dpu.protocol()."""
    _nb_dpu: "Dpu"

    def __init__(self, quic, *args, **kwargs):
        super().__init__(quic, *args, **kwargs)
        self._nb = _Conn(self._nb_dpu, self)
        initialize = quic._initialize
        conn = self._nb

        def _initialize(peer_cid):
            initialize(peer_cid)
            pair = quic._cryptos[tls.Epoch.ONE_RTT]
            pair.__class__ = _OffloadPair
            pair._nb = conn
            recv_setup, send_setup = pair.recv._setup_cb, pair.send._setup_cb

            def on_recv(trigger, first=[True]):
                if first[0] and pair.recv.secret is not None:    # the first 1-RTT secret: keep its hp key
                    conn.hp_recv, first[0] = _hp_key(pair.recv.secret), False
                recv_setup(trigger)

            def on_send(trigger, first=[True]):
                if first[0] and pair.send.secret is not None:
                    conn.hp_send, first[0] = _hp_key(pair.send.secret), False
                send_setup(trigger)
            pair.recv._setup_cb, pair.send._setup_cb = on_recv, on_send
        quic._initialize = _initialize

    def _nb_local_port(self):
        if self._nb.local_port is None:
            self._nb.local_port = self._transport.get_extra_info("sockname")[1]
        return self._nb.local_port

    def _nb_addr(self, ip, port):
        """A peer address as this socket's family reports it (what aioquic compares paths with)."""
        if len(self._transport.get_extra_info("sockname")) == 4:
            a = ipaddress.ip_address(ip)
            if a.version == 4:
                a = ipaddress.IPv6Address("::ffff:" + str(a))
            return (str(a), port, 0, 0)
        return (ip, port)

    def _nb_device_datagram(self, data, ip, port):
        """A datagram the device opened (DECRYPTED shim from the DPU link)."""
        st = self._nb
        st.device_opened = True
        try:
            self._quic.receive_datagram(data, self._nb_addr(ip, port), now=self._loop.time())
        finally:
            st.device_opened = False
        self._process_events()
        self.transmit()

    def transmit(self):
        st = self._nb
        if not st.active and not st.failed and self._quic._handshake_confirmed \
                and self._quic._cryptos[tls.Epoch.ONE_RTT].send.is_valid():
            st.activate()
        elif st.active:
            cids = st.cid_state()
            if cids != st.cids:          # a CID the peer started using, or one aioquic retired or switched to
                try:
                    st.sync_open()
                    st.sync_seal()
                    st.cids = cids
                except (ctrl.CtrlError, ctrl.CtrlTimeout) as e:
                    st.fail("cid_update_failed", e)
        self._transmit_task = None
        for data, addr in self._quic.datagrams_to_send(now=self._loop.time()):
            if st.pending:
                cid_len = st.pending.pop((len(data), data[:PENDING_KEY]), None)
                if cid_len is not None:
                    if st.active and cid_len and st.seal_id is not None and data[1:1 + cid_len] != st.seal_id.cid:
                        try:
                            st.seal_for(data[1:1 + cid_len])
                        except (ctrl.CtrlError, ctrl.CtrlTimeout) as e:
                            st.fail("cid_update_failed", e)
                    self._nb_dpu._seal(memoryview(data)[:-TAG_LEN], addr, st.local_port, cid_len)
                    continue
                inside = [(n, k) for n, k in st.pending if n <= len(data) and data[len(data) - n:len(data) - n + PENDING_KEY] == k]
                if inside:
                    for key in inside:
                        del st.pending[key]
                    self._nb_dpu.counters["unsealable"] += 1    # fail closed: never sent in plaintext
                    continue
            self._transport.sendto(data, addr)
        if st.pending:
            self._nb_dpu.counters["unsealable"] += len(st.pending)
            st.pending.clear()
        timer_at = self._quic.get_timer()
        if self._timer is not None and self._timer_at != timer_at:
            self._timer.cancel()
            self._timer = None
        if self._timer is None and timer_at is not None:
            self._timer = self._loop.call_at(timer_at, self._handle_timer)
        self._timer_at = timer_at


def _hp_key(secret):
    return PacketKeys.from_secret(secret).hp


class Dpu:
    """The DPU behind interface `ifname`, driven from user space (see the module's docstring).

    program: path of the .nbpf image to attach when the device has none (default: xdp_quic_hw, built
    by `make firmware`); ports set in quic_ports as the protocols bind. retry_ms/retry_max_ms: the
    control client's retransmission (slow for the Verilator DPU)."""

    def __init__(self, ifname, program=None, retry_ms=D.NANOBPF_CTRL_RETRY_MS, retry_max_ms=D.NANOBPF_CTRL_RETRY_MAX_MS,
                 log=None):
        self.ifname, self.log = ifname, log
        self.counters = Counter()
        self.client = ctrl.Client(ctrl.PacketPort(ifname, proto=D.ETHERTYPE, quiet=False), retry_ms=retry_ms,
                                  retry_max_ms=retry_max_ms)
        self.rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(D.SHIM_ETHERTYPE))
        self.rx.bind((ifname, D.SHIM_ETHERTYPE))
        self.rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        self.tx.bind((ifname, 0))
        self.mac = bytes.fromhex(Path(f"/sys/class/net/{ifname}/address").read_text().strip().replace(":", ""))
        self.entries = {}             # KeyId -> _Conn that owns it
        self.open_cids, self.open_lens = {}, []
        self.ports = set()
        self.routes = {}
        self.ip_id = 0
        self._loop = None
        self._resyncs = 0
        self.client.hello()
        try:
            self.client.prog_info()
        except ctrl.CtrlError as e:
            if e.status != D.NANOBPF_CTRL_ST_NO_PROG:
                raise
            image = Path(program) if program else _default_program()
            self.client.prog_load(image.read_bytes(), name=image.stem[:D.NANOBPF_CTRL_NAME_LEN])
            self.counters["program_loaded"] += 1
        self._configure()
        self.counters["device_keys_at_start"] = self.client.stats().get("keys", 0)   # entries of other users

    def _log(self, msg):
        if self.log:
            self.log(msg)

    # ------------------------------------------------------------ device settings
    def _configure(self):
        """quic_config (host and network ports) and quic_ports; again after a session replay (the replay
        restores keys and the program, not map contents)."""
        zero = struct.pack("<I", 0)
        cfg = self.client.map_lookup("quic_config", zero)
        if cfg is None:
            raise RuntimeError("the attached program has no quic_config map: not a QUIC program")
        host, net = struct.unpack_from("<II", cfg)
        if host != abi.NANOBPF_IFINDEX_HOST or net != abi.NANOBPF_IFINDEX_NET:
            cfg = struct.pack("<II", abi.NANOBPF_IFINDEX_HOST, abi.NANOBPF_IFINDEX_NET) + cfg[8:]
            self.client.map_update("quic_config", zero, cfg)
        for port in self.ports:
            self.client.map_update("quic_ports", struct.pack("<H", port), struct.pack("<I", 1))
        self._resyncs = self.client.counters["resyncs"]

    def _call(self, fn, *args):
        out = fn(*args)
        if self.client.counters["resyncs"] != self._resyncs:
            self._configure()
        return out

    def _key_add(self, kid, value, conn):
        self._call(self.client.key_add, kid, value)
        self.entries[kid] = conn
        self._index()
        self.counters["key_add"] += 1

    def _key_update(self, kid, value):
        self._call(self.client.key_update, kid, value)
        self.counters["key_update"] += 1

    def _key_del(self, kid, conn):
        if self.entries.get(kid) is not conn:
            return
        del self.entries[kid]
        self._index()
        try:
            self._call(self.client.key_del, kid)
            self.counters["key_del"] += 1
        except (ctrl.CtrlError, ctrl.CtrlTimeout) as e:
            self.counters["key_del_failed"] += 1
            self._log(f"KEY_DEL {kid}: {e}")

    # ------------------------------------------------------------ aioquic
    def protocol(self, base=None):
        """A protocol class for aioquic's serve()/connect(create_protocol=...): `base` (default
        QuicConnectionProtocol) with the offload mixed in."""
        if base is None:
            from aioquic.asyncio.protocol import QuicConnectionProtocol as base
        dpu = self

        class Offloaded(_OffloadMixin, base):
            _nb_dpu = dpu

            def connection_made(self, transport):
                super().connection_made(transport)
                dpu._attach(self)
        Offloaded.__name__ = f"Offloaded{base.__name__}"
        return Offloaded

    def _attach(self, proto):
        import asyncio
        port = proto._nb_local_port()
        if port not in self.ports:
            self.ports.add(port)
            self._call(self.client.map_update, "quic_ports", struct.pack("<H", port), struct.pack("<I", 1))
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._loop.add_reader(self.rx.fileno(), self._on_rx)

    # ------------------------------------------------------------ data path
    def _route(self, addr):
        r = self.routes.get(addr[0])
        if r is not None:
            return r
        ip = ipaddress.ip_address(addr[0])
        if ip.version == 6 and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        r = self.routes.get(ip)
        if r is None:
            got = _ip_json("route", "get", str(ip))
            if not got or got[0].get("dev") != self.ifname or "prefsrc" not in got[0]:
                raise RuntimeError(f"{ip} is not reached through {self.ifname}")
            hop = got[0].get("gateway", str(ip))
            neigh = [n for n in _ip_json("neigh", "show", hop, "dev", self.ifname) if n.get("lladdr")]
            if not neigh:
                raise RuntimeError(f"no neighbour entry for {hop} on {self.ifname}")
            r = _Route(self.mac, got[0]["prefsrc"], neigh[0]["lladdr"], ip)
            self.routes[ip] = r
        self.routes[addr[0]] = r
        return r

    def _seal(self, packet, addr, local_port, cid_len):
        """Send an unprotected 1-RTT packet to the device with the ENCRYPT shim."""
        r = self._route(addr)
        n = 8 + len(packet)
        udp = struct.pack("!HHHH", local_port, addr[1], n, 0)   # the device computes the UDP checksum
        if r.v4:
            self.ip_id = (self.ip_id + 1) & 0xFFFF
            self.tx.sendmsg([r.eth4[cid_len], r.ipv4_header(20 + n, self.ip_id), udp, packet])
        else:
            self.tx.sendmsg([r.eth6[cid_len], struct.pack("!IHBB16s16s", 6 << 28, n, 17, 64, r.src_packed, r.dst_packed),
                             udp, packet])
        self.counters["tx_device"] += 1

    def _on_rx(self):
        while True:
            try:
                frame, sa = self.rx.recvfrom(65600, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            if sa[2] == socket.PACKET_OUTGOING:
                continue                                    # our own ENCRYPT frames
            self._deliver(frame)

    def _deliver(self, frame):
        """A frame from the device's host port with a shim: only DECRYPTED IPv4/IPv6 UDP is delivered
        (the device verified the tag and computed the UDP checksum, as a NIC's checksum offload)."""
        if len(frame) < 18 or frame[14] != D.NANOBPF_SHIM_F_DECRYPTED or frame[15]:
            self.counters["rx_bad_frame"] += 1
            return
        et = frame[16] << 8 | frame[17]
        if et == 0x0800 and len(frame) >= 38 and frame[18] >> 4 == 4 and frame[27] == 17 \
                and not struct.unpack_from("!H", frame, 24)[0] & 0x3FFF:
            l4 = 18 + (frame[18] & 0xF) * 4
            src = socket.inet_ntop(socket.AF_INET, frame[30:34])
        elif et == 0x86DD and len(frame) >= 66 and frame[18] >> 4 == 6 and frame[24] == 17:
            l4 = 58
            src = socket.inet_ntop(socket.AF_INET6, frame[26:42])
        else:
            self.counters["rx_bad_frame"] += 1
            return
        if len(frame) < l4 + 8:
            self.counters["rx_bad_frame"] += 1
            return
        sport, dport, ulen = struct.unpack_from("!HHH", frame, l4)
        if ulen < 8 or l4 + ulen > len(frame):
            self.counters["rx_bad_frame"] += 1
            return
        payload = frame[l4 + 8:l4 + ulen]
        conn = self._owner(payload, src, sport, dport)
        if conn is None:
            self.counters["rx_unknown"] += 1                # keys already removed: dropped, as a lost packet
            return
        conn.proto._nb_device_datagram(payload, src, sport)

    def _owner(self, p, src, sport, dport):
        """The connection whose OPEN entry the device used (the device's own lookup: the CID at each
        installed length, longest first, then the address)."""
        for n in self.open_lens:
            if n and len(p) > n:
                c = self.open_cids.get(p[1:1 + n])
                if c is not None:
                    return c
        if 0 in self.open_lens:
            return self.entries.get(ctrl.key_id(b"", ctrl.OPEN, addr=ctrl.addr_id(src, sport, dport)))
        return None

    def _index(self):
        opens = [k for k in self.entries if k.dir == ctrl.OPEN]
        self.open_cids = {k.cid: self.entries[k] for k in opens if k.cid_len}
        self.open_lens = sorted({k.cid_len for k in opens}, reverse=True)

    # ------------------------------------------------------------ end
    def device_stats(self):
        """The device's counters (STATS) and the program's quic_stats (summed over cores)."""
        out = self._call(self.client.stats)
        for name, index in (("quic_sealed", abi.NANOBPF_QUIC_STAT_SEALED), ("quic_opened", abi.NANOBPF_QUIC_STAT_OPENED)):
            v = self._call(self.client.map_lookup, "quic_stats", struct.pack("<I", index))
            if v is not None:
                out[name] = sum(int.from_bytes(v[i:i + 8], "little") for i in range(0, len(v) - 7, 8))
        # the program's drops by reason (quic_drops), those that happened: why a frame was not sealed
        for name in dir(abi):
            if name.startswith("NANOBPF_QUIC_DROP_") and name != "NANOBPF_QUIC_DROP_COUNT":
                v = self._call(self.client.map_lookup, "quic_drops", struct.pack("<I", getattr(abi, name)))
                n = sum(int.from_bytes(v[i:i + 8], "little") for i in range(0, len(v) - 7, 8)) if v else 0
                if n:
                    out["quic_drop_" + name[len("NANOBPF_QUIC_DROP_"):].lower()] = n
        return out

    def close(self):
        """Remove every key this process installed; close the sockets."""
        for kid, conn in list(self.entries.items()):
            self._key_del(kid, conn)
        if self._loop is not None:
            self._loop.remove_reader(self.rx.fileno())
            self._loop = None
        self.rx.close()
        self.tx.close()
        self.client.port.close()


def _default_program():
    root = Path(__file__).resolve().parents[4]
    p = root / "build" / "firmware" / "bpf" / "xdp_quic_hw.nbpf"
    if not p.exists():
        raise FileNotFoundError(f"{p} not built (make firmware), and no program given")
    return p
