"""The device model in one-arm mode (nanobpf-devmodel --one-arm), as the board's image runs: both links
on one interface as VLANs (board.toml [dpu] host_vid and net_vid), here the two ends of a veth pair,
the host on the other end seeing each VLAN as a sub-interface would (nanobpf.ctrl.VlanPort). The
control protocol works on the host's VLAN and is ignored on the network's; data frames cross from one
VLAN to the other, tagged with the link they leave on; untagged frames reach neither link."""
import os
import subprocess

import nanobpf_ctrl_defs as D
import pytest

from nanobpf import ctrl
from nanobpf.board import facts
from nanobpf.devmodel import DeviceModel
from nanobpf.pcap import udp_frame

DPU = facts.load(facts.DEFAULT_BOARD).dpu


@pytest.fixture
def veth():
    if os.geteuid() != 0:
        pytest.skip("needs root (a veth pair)")
    a, b = f"nboa{os.getpid() % 10000}", f"nbob{os.getpid() % 10000}"
    subprocess.run(["ip", "link", "del", a], capture_output=True)
    subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True, capture_output=True)
    for name in (a, b):       # quiet (no IPv6 of the kernel's own) and up before anyone reads: a veth end
        with open(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6", "w") as f:   # is down until its peer is up
            f.write("1")
        subprocess.run(["ip", "link", "set", name, "up"], check=True, capture_output=True)
    yield a, b
    subprocess.run(["ip", "link", "del", a], capture_output=True)


def test_control_on_the_host_vlan_data_across_the_vlans(veth):
    dev_if, host_side = veth
    dev = DeviceModel(ctrl.VlanPort(dev_if, DPU.host_vid), ctrl.VlanPort(dev_if, DPU.net_vid)).start()
    host, net, bare = (ctrl.VlanPort(host_side, v) for v in (DPU.host_vid, DPU.net_vid, None))
    try:
        client = ctrl.Client(host, retry_ms=200, retry_max_ms=2000)
        client.hello()
        s0 = client.stats()
        net.send(ctrl.build(ctrl.BROADCAST, ctrl.HOST_MAC, D.NANOBPF_CTRL_MSG_HELLO, 1, 0, b""))   # ignored there
        f = udp_frame(b"one-arm" * 8, "192.0.2.1", "198.51.100.2", 443, 5000)
        bare.send(f)                   # on neither VLAN: no link of the device's
        host.send(f)                   # no program: onwards to the network, unchanged, on its VLAN
        assert net.recv(5) == f
        back = udp_frame(b"back" * 12, "198.51.100.2", "192.0.2.1", 5000, 443)
        net.send(back)
        assert host.recv(5) == back
        assert host.recv(0.3) is None and net.recv(0.3) is None and bare.recv(0.3) is None   # nothing else, nothing untagged
        s = client.stats()
        assert s["ctrl_foreign"] == s0["ctrl_foreign"] + 1
        assert (s["host_rx"], s["net_tx"], s["net_rx"], s["host_tx"]) == (1, 1, 1, 1)
    finally:
        dev.stop()
        for p in (host, net, bare):
            p.close()
