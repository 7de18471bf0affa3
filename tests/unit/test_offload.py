"""The aioquic offload's host-side rules (nanobpf.quic.offload), without a device or a network: what is
sent for sealing, what is trusted as opened, and how key phases are followed. The whole path through
the device model and the RTL DPU is in tests/quic/test_aioquic_offload.py."""
import struct
from collections import Counter

import nanobpf_ctrl_defs as D
import pytest
from aioquic import tls
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.crypto import CryptoError
from aioquic.tls import CipherSuite

from nanobpf import ctrl
from nanobpf.pcap import udp_frame
from nanobpf.quic import offload
from nanobpf.quic import PacketKeys, protect
from nanobpf.quic.keys import next_secret


class FakeDpu(offload.Dpu):
    """A Dpu without a device: key operations and seals recorded."""

    def __init__(self):
        self.counters, self.entries, self.ops, self.sealed, self.values = Counter(), {}, [], [], {}
        self.log = None
        self.open_cids, self.open_lens = {}, []

    def _key_add(self, kid, value, conn):
        self.entries[kid] = conn
        self.values[kid] = value
        self._index()
        self.ops.append(("add", kid, value))

    def _key_update(self, kid, value):
        self.ops.append(("update", kid, value))
        self.values[kid] = value

    def _key_del(self, kid, conn):
        if self.entries.get(kid) is conn:
            del self.entries[kid]
            self._index()
            self.ops.append(("del", kid, None))

    def _route(self, addr):
        return None

    def _seal(self, packet, addr, local_port, cid_len):
        self.sealed.append((bytes(packet), addr, cid_len))

    def protect(self, packet, cid_len):
        """What the device sends for a sealed packet (the reference protection, the SEAL entry's keys)."""
        value = self.values[ctrl.key_id(packet[1:1 + cid_len], ctrl.SEAL)]
        phase, flags, _, _, key, iv, hp = struct.unpack(offload.abi.STRUCTS["quic_keys"].fmt, value)[:7]
        slot = 1 if (packet[0] >> 2 & 1) != phase else 0
        return protect(packet, PacketKeys(key[16 * slot:16 * slot + 16], iv[12 * slot:12 * slot + 12], hp),
                       short_cid_len=cid_len)


class FakeTransport:
    def __init__(self):
        self.sent = []

    def sendto(self, data, addr):
        self.sent.append((data, addr))

    def get_extra_info(self, name):
        return ("0.0.0.0", 4433) if name == "sockname" else None


ADDR = ("10.77.0.2", 50000)


def connected_pair(cid_len=8):
    """An offloaded server protocol and an aioquic client, handshake done in memory, 1-RTT active."""
    from nanobpf.quic.capture import self_signed
    import tempfile
    from pathlib import Path
    d = Path(tempfile.mkdtemp())
    cert, key = self_signed(d)
    scfg = QuicConfiguration(is_client=False, connection_id_length=cid_len, cipher_suites=[CipherSuite.AES_128_GCM_SHA256])
    scfg.load_cert_chain(cert, key)
    ccfg = QuicConfiguration(is_client=True, server_name="localhost", cipher_suites=[CipherSuite.AES_128_GCM_SHA256])
    ccfg.load_verify_locations(cafile=str(cert))
    client = QuicConnection(configuration=ccfg)
    server_quic = QuicConnection(configuration=scfg, original_destination_connection_id=client.original_destination_connection_id)
    dpu = FakeDpu()
    import asyncio
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    async def make():                 # aioquic's protocol wants a running loop
        return dpu.protocol()(server_quic)
    proto = loop.run_until_complete(make())
    proto._transport = FakeTransport()
    now = 0.0
    client.connect(("10.77.0.1", 4433), now=now)
    for _ in range(20):
        for data, _ in client.datagrams_to_send(now=now):
            server_quic.receive_datagram(data, ADDR, now=now)
        proto._transport.sent.clear()
        proto.transmit()
        for data, _ in proto._transport.sent:
            client.receive_datagram(data, ("10.77.0.1", 4433), now=now)
        for packet, _, cid_len in dpu.sealed:
            client.receive_datagram(dpu.protect(packet, cid_len), ("10.77.0.1", 4433), now=now)
        dpu.sealed.clear()
        if server_quic._handshake_confirmed and client._handshake_confirmed and proto._nb.active:
            break
        now += 0.01
    assert proto._nb.active, "the offload did not activate"
    return proto, client, dpu, loop


def test_activation_installs_open_and_seal_entries():
    proto, client, dpu, loop = connected_pair()
    kinds = Counter((op, kid.dir) for op, kid, _ in dpu.ops)
    assert kinds[("add", ctrl.SEAL)] == 1
    seal = [kid for op, kid, _ in dpu.ops if op == "add" and kid.dir == ctrl.SEAL][0]
    assert seal.cid == proto._quic._peer_cid.cid
    # OPEN: the CID the peer uses, not every one aioquic issued
    opens = {kid.cid for op, kid, _ in dpu.ops if op == "add" and kid.dir == ctrl.OPEN}
    assert opens == {proto._quic.host_cid} and len(proto._quic._host_cids) > 1
    loop.close()


def test_a_cid_the_peer_moves_to_gets_an_open_entry():
    proto, client, dpu, loop = connected_pair()
    before = set(proto._nb.open_ids.values())
    client.change_connection_id()
    client.send_ping(1)
    for data, _ in client.datagrams_to_send(now=1.0):     # through the UDP socket: aioquic opens it
        proto._quic.receive_datagram(data, ADDR, now=1.0)
    proto.transmit()
    now_open = set(proto._nb.open_ids.values())
    assert len(now_open - before) == 1 and (now_open - before) <= {c.cid for c in proto._quic._host_cids}
    loop.close()


def test_sealed_packets_are_the_ones_aioquic_left_unprotected():
    proto, client, dpu, loop = connected_pair()
    sid = proto._quic.get_next_available_stream_id()
    proto._quic.send_stream_data(sid, b"x" * 3000, end_stream=True)
    proto._transport.sent.clear()
    proto.transmit()
    assert dpu.sealed and not proto._transport.sent, "1-RTT datagrams go to the device only"
    for packet, addr, cid_len in dpu.sealed:
        assert addr == ADDR and cid_len == len(proto._quic._peer_cid.cid)
        assert packet[1:1 + cid_len] == proto._quic._peer_cid.cid and not packet[0] & 0x80
    assert dpu.counters["unsealable"] == 0
    loop.close()


def test_an_unprotected_packet_in_any_other_datagram_is_dropped():
    """Fail closed on the host: a datagram carrying an unprotected packet after another (coalesced), and
    one aioquic never hands out, are counted and never sent - neither to the device nor as they are."""
    proto, client, dpu, loop = connected_pair()
    pair = proto._quic._cryptos[tls.Epoch.ONE_RTT]
    plain = pair.encrypt_packet(bytes([0x41]) + proto._quic._peer_cid.cid + b"\x00\x07", b"p" * 64, 7)
    orphan = pair.encrypt_packet(bytes([0x41]) + proto._quic._peer_cid.cid + b"\x00\x08", b"q" * 64, 8)
    coalesced = b"\xe0" + bytes(40) + plain
    proto._quic.datagrams_to_send = lambda now: [(coalesced, ADDR)]
    dpu.sealed.clear()
    proto._transport.sent.clear()
    proto.transmit()
    assert not proto._transport.sent and not dpu.sealed
    assert dpu.counters["unsealable"] == 2      # the coalesced datagram, and the packet never sent
    assert not proto._nb.pending
    loop.close()


def test_inactive_connections_are_protected_by_aioquic():
    proto, client, dpu, loop = connected_pair()
    pair = proto._quic._cryptos[tls.Epoch.ONE_RTT]
    proto._nb.active = False
    header = bytes([0x41]) + proto._quic._peer_cid.cid + b"\x00\x09"
    out = pair.encrypt_packet(header, b"z" * 64, 9)
    assert out[len(header):len(header) + 64] != b"z" * 64 and len(out) == len(header) + 64 + 16
    assert not proto._nb.pending
    loop.close()


def test_only_device_opened_frames_skip_the_tag_check():
    proto, client, dpu, loop = connected_pair()
    pair = proto._quic._cryptos[tls.Epoch.ONE_RTT]
    host_cid = proto._quic._host_cids[0].cid
    plain = bytes([0x41]) + host_cid + b"\x00\x05" + b"forged" * 10
    with pytest.raises(CryptoError):          # through the UDP socket: aioquic checks the tag
        pair.decrypt_packet(plain, 1 + len(host_cid), 0)
    proto._nb.device_opened = True
    header, payload, pn = pair.decrypt_packet(plain, 1 + len(host_cid), 0)
    assert pn == 5 and payload == b"forged" * 10
    proto._nb.active = False                  # keys removed: nothing is taken as opened any more
    with pytest.raises(CryptoError):
        pair.decrypt_packet(plain, 1 + len(host_cid), 0)
    loop.close()


def frame_from_device(payload, flags=D.NANOBPF_SHIM_F_DECRYPTED, cid_len=0, dport=4433):
    return ctrl.add_shim(udp_frame(payload, ADDR[0], "10.77.0.1", ADDR[1], dport), flags, cid_len)


def test_link_frames_delivered_only_when_the_device_says_opened():
    proto, client, dpu, loop = connected_pair()
    got = []
    proto._nb_device_datagram = lambda data, ip, port: got.append((data, ip, port))
    payload = bytes([0x41]) + proto._quic._host_cids[0].cid + b"\x00\x01" + bytes(30)
    dpu._deliver(frame_from_device(payload))
    assert got == [(payload, ADDR[0], ADDR[1])]
    bad = [frame_from_device(payload, flags=D.NANOBPF_SHIM_F_ENCRYPT),              # a seal request
           frame_from_device(payload, cid_len=8),                                     # malformed shim
           frame_from_device(payload)[:40],                                           # cut short
           ctrl.add_shim(b"\x00" * 12 + b"\x08\x06" + bytes(28), D.NANOBPF_SHIM_F_DECRYPTED)]   # not IP
    for f in bad:
        dpu._deliver(f)
    assert len(got) == 1 and dpu.counters["rx_bad_frame"] == len(bad)
    dpu._deliver(frame_from_device(bytes([0x41]) + b"\x99" * 8 + bytes(30)))      # no such connection
    assert len(got) == 1 and dpu.counters["rx_unknown"] == 1
    loop.close()


def _phase_packet(proto, phase, pn):
    cid = proto._quic._host_cids[0].cid
    return bytes([0x40 | phase << 2 | 1]) + cid + pn.to_bytes(2, "big") + bytes(30), 1 + len(cid)


def test_key_phases_follow_the_device():
    """A device-opened packet of the other phase: the peer's key update (aioquic follows, the entries
    take the new keys with NEXT); after our own update the previous phase's late packets (PREV) are
    not taken for another update, until the peer's first packet in the new phase."""
    proto, client, dpu, loop = connected_pair()
    st, pair = proto._nb, proto._quic._cryptos[tls.Epoch.ONE_RTT]
    st.device_opened = True
    recv0 = pair.recv.secret
    pkt, off = _phase_packet(proto, 1, 20)
    dpu.ops.clear()
    pair.decrypt_packet(pkt, off, 19)                 # the peer updated
    assert pair.recv.key_phase == 1 and pair.recv.secret == next_secret(recv0)
    updates = [v for op, kid, v in dpu.ops if op == "update"]
    assert len(updates) == len(st.open_ids) + 1 and not st.prev_kept
    for op, kid, v in dpu.ops:
        phase, flags = struct.unpack_from("<BB", v)
        assert phase == 1 and flags == offload.abi.NANOBPF_QUIC_KEY_NEXT
    # our own update: PREV for the peer's late old-phase packets
    dpu.ops.clear()
    pair.update_key()
    pair.encrypt_packet(bytes([0x41]) + proto._quic._peer_cid.cid + b"\x00\x30", bytes(40), 0x30)
    assert pair.recv.key_phase == 0 and st.prev_kept
    assert {struct.unpack_from("<B", v, 1)[0] for op, kid, v in dpu.ops if kid.dir == ctrl.OPEN} == {offload.abi.NANOBPF_QUIC_KEY_PREV}
    pkt, off = _phase_packet(proto, 1, 25)            # late, old phase: no update
    pair.decrypt_packet(pkt, off, 24)
    assert pair.recv.key_phase == 0
    dpu.ops.clear()
    pkt, off = _phase_packet(proto, 0, 40)            # the peer's first new-phase packet: NEXT again
    pair.decrypt_packet(pkt, off, 39)
    assert not st.prev_kept and st.phase_first_pn == 40
    assert {struct.unpack_from("<B", v, 1)[0] for op, kid, v in dpu.ops} == {offload.abi.NANOBPF_QUIC_KEY_NEXT}
    pkt, off = _phase_packet(proto, 1, 38)            # older than the phase's first: late, not an update
    pair.decrypt_packet(pkt, off, 40)
    assert pair.recv.key_phase == 0
    loop.close()


def test_closing_removes_every_entry():
    proto, client, dpu, loop = connected_pair()
    assert dpu.entries
    proto._quic._cryptos[tls.Epoch.ONE_RTT].teardown()
    assert not dpu.entries and not proto._nb.active and proto._nb.offloaded
    loop.close()


def test_a_device_that_cannot_follow_hands_the_connection_back_to_aioquic():
    """A KEY_UPDATE the device refuses: the entries go, the connection is protected by aioquic again
    (nothing is sent unprotected for keys the device does not have)."""
    proto, client, dpu, loop = connected_pair()

    def refuse(kid, value):
        raise ctrl.CtrlError(D.NANOBPF_CTRL_ST_FULL, "no")
    dpu._key_update = refuse
    pair = proto._quic._cryptos[tls.Epoch.ONE_RTT]
    pair.update_key()
    header = bytes([0x41 | 4]) + proto._quic._peer_cid.cid + b"\x00\x31"
    out = pair.encrypt_packet(header, b"k" * 64, 0x31)
    assert proto._nb.failed and not proto._nb.active and not dpu.entries and proto._nb.offloaded
    assert dpu.counters["key_update_failed"] == 1
    assert b"k" * 64 not in out and not proto._nb.pending          # aioquic protected it
    loop.close()
