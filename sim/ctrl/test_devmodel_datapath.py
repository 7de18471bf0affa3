"""The reference device model's packet behaviour with the QUIC program attached through the control
protocol: a protected 1-RTT packet from the network reaches the host decrypted with the DECRYPTED shim,
a plaintext packet the host sends with the ENCRYPT shim reaches the network protected, other frames
pass untouched, and a TAP-attached model works the same. Needs `make ebpf-tools firmware`."""
import os
import struct

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
import pytest

from nanobpf import BUILD, ROOT
from nanobpf import ctrl
from nanobpf.ctrl import Client, MemoryLink
from nanobpf.devmodel import HOST_PORT, NET_PORT, DeviceModel
from nanobpf.ebpf import device
from nanobpf.pcap import udp_frame
from nanobpf.quic import PacketKeys, protect
from nanobpf.quic.protection import encode_pn

IMAGE = BUILD / "firmware/bpf/xdp_quic.nbpf"
CID = bytes.fromhex("0011223344556677")
K0 = PacketKeys.from_secret(bytes(range(32)))
pytestmark = pytest.mark.skipif(not device.available()[0], reason=device.available()[1])


def pack(name, *values):
    return struct.pack(abi.STRUCTS[name].fmt, *values)


def quic_frames(pn, payload):
    tpn = encode_pn(pn, -1)
    plain = bytes([0x40 | (len(tpn) - 1)]) + CID + tpn + payload
    prot = protect(plain, K0, largest_pn=-1, short_cid_len=len(CID))
    f = lambda q: udp_frame(q, "10.0.0.1", "10.0.0.2", 50000, 443)
    return f(plain), f(prot)


def setup_device(host):
    host.prog_load(IMAGE.read_bytes(), "xdp_quic")
    host.map_update("quic_config", bytes(4), pack("quic_config", HOST_PORT, NET_PORT, len(CID), 0))
    host.map_update("quic_ports", struct.pack("<H", 443), struct.pack("<I", 1))
    host.key_add(CID, pack("quic_keys", 0, 0, len(CID), 0, K0.key + bytes(16), K0.iv + bytes(12), K0.hp, b""))


@pytest.fixture
def model():
    hl, nl = MemoryLink(), MemoryLink()
    dev = DeviceModel(hl.b, nl.b, seed=11).start()
    host = Client(hl.a, retry_ms=50)
    yield host, dev, hl.a, nl.a
    dev.stop()
    hl.close()
    nl.close()


def test_open_to_host_and_seal_to_network(model):
    host, dev, host_end, net_end = model
    setup_device(host)
    plain, prot = quic_frames(7, b"hello, device" * 5)
    net_end.send(prot)
    flags, got = ctrl.strip_shim(host_end.recv(5))
    assert flags == D.NANOBPF_SHIM_F_DECRYPTED and got == plain
    host_end.send(ctrl.add_shim(plain, D.NANOBPF_SHIM_F_ENCRYPT))
    sealed = net_end.recv(5)
    assert sealed is not None and ctrl.strip_shim(sealed) == (None, sealed)
    # the sealed packet opens back to the plaintext
    net_end.send(sealed)
    assert ctrl.strip_shim(host_end.recv(5)) == (D.NANOBPF_SHIM_F_DECRYPTED, plain)
    s = dev.stats()
    assert (s["decrypted"], s["encrypt_req"], s["net_rx"], s["net_tx"]) == (2, 1, 2, 1)


def test_tampered_unknown_and_plain_frames(model):
    host, dev, host_end, net_end = model
    setup_device(host)
    plain, prot = quic_frames(9, bytes(40))
    bad = bytearray(prot)
    bad[-1] ^= 1
    net_end.send(bytes(bad))                                     # tag fails: never delivered
    assert host_end.recv(0.5) is None and dev.stats()["xdp_drop"] == 1
    other = udp_frame(b"not quic", "10.0.0.1", "10.0.0.2", 1234, 53)
    net_end.send(other)                                          # passes, unmarked
    assert host_end.recv(5) == other
    host_end.send(other)                                         # host frames without the shim: as they are
    assert net_end.recv(5) == other
    net_end.send(ctrl.add_shim(other, D.NANOBPF_SHIM_F_DECRYPTED))   # a forged shim from the network
    assert host_end.recv(0.5) is None


def test_without_a_program_frames_pass_both_ways():
    hl, nl = MemoryLink(), MemoryLink()
    dev = DeviceModel(hl.b, nl.b, seed=1).start()
    try:
        f = udp_frame(b"x" * 30, "10.0.0.1", "10.0.0.2", 1, 2)
        nl.a.send(f)
        assert hl.a.recv(5) == f
        hl.a.send(ctrl.add_shim(f, D.NANOBPF_SHIM_F_ENCRYPT))
        assert nl.a.recv(5) == f
    finally:
        dev.stop()
        hl.close()
        nl.close()


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"), reason="TAP devices need root")
def test_model_on_tap_devices():
    """The model owns a TAP as its host port; the host client talks to it through the kernel side."""
    tap = ctrl.TapPort("nbtest0")
    kernel_side = ctrl.PacketPort("nbtest0")
    dev = DeviceModel(tap, seed=2).start()
    try:
        host = Client(kernel_side, retry_ms=50)
        assert host.hello()["version"] == D.VERSION
        host.key_add(b"\x42", pack("quic_keys", 0, 0, 1, 0, bytes(32), bytes(24), bytes(16), b""))
        assert list(dev.keys()) == [b"\x42"] and host.peer == ctrl.DEVICE_MAC
    finally:
        dev.stop()
        kernel_side.close()
        tap.close()


def test_command_line_help():
    import subprocess
    import sys
    p = subprocess.run([sys.executable, str(ROOT / "sw/tools/nanobpf-devmodel"), "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "--host-tap" in p.stdout and "--loss" in p.stdout
    p = subprocess.run([sys.executable, str(ROOT / "sw/tools/nanobpf-devmodel"), "--host-tap", "x", "--loss", "2"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "probability" in p.stderr
