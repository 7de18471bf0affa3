"""The Rust user-space backend (sw/quic-offload, `nanobpf_quinn::packet::PacketDevice`: issue 45, hosts
without nanobpf.ko) against the reference device model.

A veth pair: the model (nanobpf.devmodel) on one end as the device's host port, its network port an
in-memory link this test plays the network on; on the other end the crate's test driver
(examples/packet_driver.rs: one command per line) drives a PacketDevice bound to [::]:PORT. Checked:
prepare (the QUIC program loaded, quic_config and quic_ports written), key add/update/del of both
directions by CID and by address against the model's table, a device reset after which the client
replays (keys, program, maps back), the device's and the host's counters, IPv4 and IPv6 packets sent
through send_seal leaving the network port sealed with the seal entry's keys (by CID and by address),
a protected packet from the network delivered opened, plain UDP through the socket, and a forged
shim frame counted and dropped. Needs root (veth, AF_PACKET), `make quinn` and `make firmware`."""
import os
import select
import struct
import subprocess
import time
from pathlib import Path

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
import pytest

from nanobpf import BUILD, ctrl, ctrlkey
from nanobpf.devmodel import DeviceModel
from nanobpf.ebpf import device
from nanobpf.pcap import parse_udp, udp_frame
from nanobpf.quic import PacketKeys, protect, unprotect
from nanobpf.quic.protection import encode_pn

IMAGE = BUILD / "firmware/bpf/xdp_quic_hw.nbpf"
HOST_IP, PEER_IP = "10.77.0.2", "10.77.0.1"
HOST_IP6, PEER_IP6 = "fd77::2", "fd77::1"
PEER_MAC = "02:77:00:00:00:01"
PEER_PORT = 5555
CID = bytes.fromhex("0011223344556677")      # ours: open entries
PEER_CID = bytes.fromhex("a1a2a3a4")          # the peer's: seal entries
K_PEER = PacketKeys.from_secret(bytes(range(32)))        # we open with them
K_OURS = PacketKeys.from_secret(bytes(range(1, 33)))     # we seal with them
K_NEXT = PacketKeys.from_secret(bytes(range(2, 34)))

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (veth pair, AF_PACKET)"),
    pytest.mark.skipif(not IMAGE.exists(), reason=f"{IMAGE} not built (make firmware)"),
    pytest.mark.skipif(not device.available()[0], reason=device.available()[1]),
]


def keys_value(k, cid_len, phase=0):
    return struct.pack(abi.STRUCTS["quic_keys"].fmt, phase, 0, cid_len, 0, k.key + bytes(16), k.iv + bytes(12), k.hp, b"")


def short_packet(dcid, pn, payload, phase=0):
    tpn = encode_pn(pn, -1)
    return bytes([0x40 | phase << 2 | (len(tpn) - 1)]) + dcid + tpn + payload


@pytest.fixture(scope="module")
def driver_bin():
    """examples/packet_driver.rs, built by `make quinn` (with the release binary, into build/rust)."""
    path = BUILD / "rust/x86_64-unknown-linux-gnu/release/examples/packet_driver"
    if not path.exists():
        pytest.fail(f"{path} is missing (make quinn)")
    return path


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def veth():
    dev_if, host_if = f"nbqd{os.getpid() % 10000}", f"nbqh{os.getpid() % 10000}"
    subprocess.run(["ip", "link", "del", dev_if], capture_output=True)
    ip("link", "add", dev_if, "type", "veth", "peer", "name", host_if)
    try:
        with open(f"/proc/sys/net/ipv6/conf/{dev_if}/disable_ipv6", "w") as f:   # the device's end stays quiet
            f.write("1")
        with open(f"/proc/sys/net/ipv6/conf/{host_if}/disable_ipv6", "w") as f:  # the host's speaks IPv6 too
            f.write("0")
        for name in (dev_if, host_if):
            ip("link", "set", name, "up")
        ip("addr", "add", f"{HOST_IP}/24", "dev", host_if)
        ip("-6", "addr", "add", f"{HOST_IP6}/64", "dev", host_if, "nodad")
        # the peer is behind the device: its MAC as the kernel would have resolved it
        ip("neigh", "replace", PEER_IP, "lladdr", PEER_MAC, "dev", host_if, "nud", "permanent")
        ip("-6", "neigh", "replace", PEER_IP6, "lladdr", PEER_MAC, "dev", host_if, "nud", "permanent")
        yield dev_if, host_if
    finally:
        subprocess.run(["ip", "link", "del", dev_if], capture_output=True)


class Driver:
    """examples/packet_driver.rs: one command, one answer line."""

    def __init__(self, path, ifname, key_file, bind, retry_ms=50):
        self.p = subprocess.Popen([str(path), ifname, str(key_file), bind, str(retry_ms)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.first = self._line(10)

    def _line(self, timeout):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        assert r, "the driver did not answer"
        return self.p.stdout.readline().strip()

    def __call__(self, cmd, timeout=20):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self._line(timeout)

    def ok(self, cmd, timeout=20):
        out = self(cmd, timeout)
        assert out.startswith("ok"), f"{cmd}: {out}"
        return out

    def pairs(self, cmd):
        return {k: int(v) for k, v in (w.split("=") for w in self.ok(cmd).split()[1:])}

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def sealed_out(net, dport, timeout=5):
    """The next UDP frame to the peer's port on the network side (the host's kernel may send others)."""
    end = time.monotonic() + timeout
    while (left := end - time.monotonic()) > 0:
        f = net.recv(left)
        if f is None:
            break
        u = parse_udp(f)
        if u is not None and u.dport == dport:
            return f, u
    return None, None


def test_packet_device_against_the_model(veth, driver_bin, tmp_path):
    dev_if, host_if = veth
    raw_key = os.urandom(16)
    key_file = tmp_path / "ctrl.key"
    key_file.write_text("# test key\n" + raw_key.hex() + "\n")
    netlink = ctrl.MemoryLink()
    host_port = ctrl.PacketPort(dev_if)
    model = DeviceModel(host_port, netlink.b, seed=45, key=ctrlkey.DeviceKey(raw_key)).start()
    net = netlink.a
    port = 40000 + os.getpid() % 20000
    drv = Driver(driver_bin, host_if, key_file, f"[::]:{port}")
    try:
        assert drv.first == f"ready [::]:{port}", drv.first
        host_mac = bytes.fromhex(Path(f"/sys/class/net/{host_if}/address").read_text().strip().replace(":", ""))

        # prepare: the program loaded (the model had none), quic_config and quic_ports written
        drv.ok(f"prepare {IMAGE}", timeout=60)
        assert model.program()["name"] == "xdp_quic_hw"

        def maps_ok():
            cfg = model.map_lookup("quic_config", bytes(4))
            assert struct.unpack_from("<II", cfg) == (abi.NANOBPF_IFINDEX_HOST, abi.NANOBPF_IFINDEX_NET)
            assert model.map_lookup("quic_ports", struct.pack("<H", port)) == struct.pack("<I", 1)
        maps_ok()

        # keys of both directions, by CID and by address
        open_cid = ctrl.key_id(CID, ctrl.OPEN)
        seal_cid = ctrl.key_id(PEER_CID, ctrl.SEAL)
        open_addr = ctrl.key_id(b"", ctrl.OPEN, addr=ctrl.addr_id(PEER_IP, PEER_PORT, port))
        seal_addr = ctrl.key_id(b"", ctrl.SEAL, addr=ctrl.addr_id(PEER_IP, PEER_PORT, port))
        names = {open_cid: f"cid {CID.hex()}", seal_cid: f"cid {PEER_CID.hex()}",
                 open_addr: f"addr {PEER_IP} {PEER_PORT}", seal_addr: f"addr {PEER_IP} {PEER_PORT}"}
        want = {open_cid: keys_value(K_PEER, len(CID)), seal_cid: keys_value(K_OURS, len(PEER_CID)),
                open_addr: keys_value(K_PEER, 0), seal_addr: keys_value(K_OURS, 0)}

        def cmd(op, kid, keys=None):
            d = "open" if kid.dir == ctrl.OPEN else "seal"
            return f"key {op} {d} {names[kid]}" + (f" {keys.hex()}" if keys is not None else "")

        def table():
            return {k: v for k, (_, v) in model.keys().items()}

        for kid, v in want.items():
            drv.ok(cmd("add", kid, v))
        assert table() == want
        assert drv(cmd("add", open_cid, want[open_cid])).startswith("err refused"), "already in the host table"
        want[open_cid] = keys_value(K_NEXT, len(CID), phase=1)
        drv.ok(cmd("update", open_cid, want[open_cid]))
        assert table() == want
        out = drv(cmd("update", open_cid, keys_value(K_NEXT, 5)))      # cid_len differs from the entry's
        assert out.startswith("err refused by the device (status 9)") and "cid_len" in out, out
        assert table() == want
        drv.ok(cmd("del", open_addr))
        del want[open_addr]
        assert table() == want
        assert drv(cmd("del", open_addr)).startswith("err refused")
        assert model.open_cid_lens() == 1 << len(CID)

        # a device reset: the next request finds a new epoch, the client replays its state
        model.reset()
        assert model.keys() == {} and model.program() is None
        s = drv.pairs("stats")
        assert table() == want and model.program()["name"] == "xdp_quic_hw"
        maps_ok()
        assert s["resets"] == 1 and s["keys"] == len(want)
        c = drv.pairs("counters")
        assert c["resyncs"] == 2 and c["program_loaded"] == 1 and c["ctrl_auth_fail"] == 0

        # sealed by the device: IPv4 by CID, IPv6 by CID, IPv4 by address (zero-length CID)
        for n, (peer, dcid, pn) in enumerate([(PEER_IP, PEER_CID, 3), (PEER_IP6, PEER_CID, 4), (PEER_IP, b"", 5)]):
            plain = short_packet(dcid, pn, b"sealed by the device %d " % n * 4)
            drv.ok(f"seal {peer} {PEER_PORT} {len(dcid)} {plain.hex()}")
            f, u = sealed_out(net, PEER_PORT)
            assert f is not None, f"nothing sealed reached the network ({peer}, CID {dcid.hex()}): {model.stats()}"
            assert not ctrl.has_shim(f) and f[:6] == bytes.fromhex(PEER_MAC.replace(":", "")) and f[6:12] == host_mac
            assert (u.src, u.dst, u.sport) == ((HOST_IP, PEER_IP) if "." in peer else (HOST_IP6, PEER_IP6)) + (port,)
            assert u.ip_version == (4 if "." in peer else 6) and (u.ipv4_checksum_ok in (None, True)) and u.udp_checksum_ok
            assert unprotect(u.payload, K_OURS, -1, len(dcid)).plain == plain
        # a seal request the device cannot serve (no seal entry for that CID) never leaves
        drv.ok(f"seal {PEER_IP} {PEER_PORT} 4 {short_packet(b'zzzz', 9, b'x' * 40).hex()}")
        assert sealed_out(net, PEER_PORT, 0.5) == (None, None)

        # opened by the device: delivered as opened, from the peer as a dual-stack socket sees it
        plain = short_packet(CID, 11, b"opened by the device " * 3, phase=1)      # the updated entry's phase
        prot = protect(plain, K_NEXT, short_cid_len=len(CID))
        mac = ":".join(f"{b:02x}" for b in host_mac)
        net.send(udp_frame(prot, PEER_IP, HOST_IP, PEER_PORT, port, src_mac=PEER_MAC, dst_mac=mac))
        assert drv("recv 3000") == f"ok opened=1 peer=[::ffff:{PEER_IP}]:{PEER_PORT} data={plain.hex()}"
        # plain UDP (not QUIC): passed through the device, arrives through the socket, not opened
        net.send(udp_frame(b"plain datagram", PEER_IP, HOST_IP, PEER_PORT, port, src_mac=PEER_MAC, dst_mac=mac))
        assert drv("recv 3000") == f"ok opened=0 peer=[::ffff:{PEER_IP}]:{PEER_PORT} data={b'plain datagram'.hex()}"
        # a forged shim frame on the host link (DECRYPTED with a CID length): counted, never delivered
        forged = ctrl.add_shim(udp_frame(plain, PEER_IP, HOST_IP, PEER_PORT, port, dst_mac=mac), D.NANOBPF_SHIM_F_DECRYPTED, 4)
        host_port.send(forged)
        # the same but for another port: not ours
        host_port.send(ctrl.add_shim(udp_frame(plain, PEER_IP, HOST_IP, PEER_PORT, port + 1, dst_mac=mac),
                                     D.NANOBPF_SHIM_F_DECRYPTED, 0))
        assert drv("recv 500") == "none"
        c = drv.pairs("counters")
        assert (c["rx_opened"], c["rx_udp"], c["rx_bad_frame"], c["rx_not_ours"], c["tx_seal"]) == (1, 1, 1, 1, 4)

        s = drv.pairs("stats")
        assert s["quic_sealed"] == 3 and s["quic_opened"] == 1, s
        assert s.get("quic_drop_no_seal_keys") == 1, s
        assert s["decrypted"] == 1 and s["encrypt_req"] == 4
    finally:
        drv.close()
        model.stop()
        host_port.close()
        netlink.close()


def test_another_key_times_out_naming_the_key(veth, driver_bin, tmp_path):
    """A device built with another key drops every request unanswered: open fails with a timeout that
    says to check the key, and the device counted each transmission as failing authentication. A key
    file that is not a key is refused before anything is sent."""
    dev_if, host_if = veth
    netlink = ctrl.MemoryLink()
    host_port = ctrl.PacketPort(dev_if)
    model = DeviceModel(host_port, netlink.b, seed=46, key=ctrlkey.DeviceKey(os.urandom(16))).start()
    try:
        wrong = tmp_path / "wrong.key"
        wrong.write_text(os.urandom(16).hex())
        drv = Driver(driver_bin, host_if, wrong, "127.0.0.1:0", retry_ms=5)
        assert drv.first.startswith("err no answer from the device: HELLO") and "check the device key" in drv.first, drv.first
        assert drv.p.wait(5) == 1
        assert model.stats()["ctrl_auth_fail"] == 1 + D.NANOBPF_CTRL_RETRIES
        bad = tmp_path / "bad.key"
        bad.write_text("# too short\n0011223344\n")
        drv = Driver(driver_bin, host_if, bad, "127.0.0.1:0", retry_ms=5)
        assert drv.first == f"err device key {bad}: 5 bytes, a device key is 16 (32 hex digits)", drv.first
        assert model.stats()["ctrl_auth_fail"] == 1 + D.NANOBPF_CTRL_RETRIES
    finally:
        model.stop()
        host_port.close()
        netlink.close()
