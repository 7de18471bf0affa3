"""A QUIC workload for the DPU wire to wire: 1-RTT traffic of several connections through a DPU placed
in front of the server, built with the reference packet protection (nanobpf.quic), deterministic for a
seed.

The DPU's host port is the server, its network port leads to the clients. Per connection:
- from the network: the client's 1-RTT packets to the server's CID, protected with the client's keys;
  the device opens them and hands the host the plaintext with the DECRYPTED shim;
- from the host: the server's plaintext 1-RTT packets to the client's CID (zero-length CIDs included:
  that entry is keyed by the client's address and ports), with the ENCRYPT shim; the device seals them
  with the server's keys and sends them to the network.
Connections mix CID lengths (0, 5, 6, 8, 12, 20), IPv4 and IPv6, packet-number lengths 1..4 and
payloads from 3 bytes to a full 1500-byte IP packet.

    w = workload(seed=1)
    w.host, w.net            # input frames per port
    w.boot                   # boot configuration (nanobpf.bootcfg): keys, quic_config, quic_ports, PISA's QUIC profile
    w.expect_host, w.expect_net   # what must come out of each port, in order per port
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi

from .. import bootcfg, ctrl
from ..pcap import udp_frame
from .keys import PacketKeys
from .protection import encode_pn, protect

QUIC_PORT = 443
OPEN, SEAL = abi.NANOBPF_QUIC_DIR_OPEN, abi.NANOBPF_QUIC_DIR_SEAL
# (server CID length, client CID length, IPv6) per connection, cycled
SHAPES = [(8, 0, False), (5, 8, True), (20, 6, False), (12, 20, True), (8, 12, False), (6, 5, False)]
MAX_PAYLOAD = 1500 - 40 - 8 - 1 - 20 - 4 - 16   # what fits an IPv6 packet with the longest header, sealed


def keys_value(cur: PacketKeys, cid_len: int, nxt: PacketKeys | None = None, flag: int = abi.NANOBPF_QUIC_KEY_NEXT,
               phase: int = 0) -> bytes:
    """struct nanobpf_quic_keys: key phase `phase`, the current keys and in the second slot `nxt`, the
    next phase's (flag NEXT, the default) or the previous phase's (flag PREV)."""
    return struct.pack(abi.STRUCTS["quic_keys"].fmt, phase & 1, flag if nxt else 0, cid_len, 0,
                       cur.key + (nxt.key if nxt else bytes(16)), cur.iv + (nxt.iv if nxt else bytes(12)), cur.hp, b"")


@dataclass
class Workload:
    host: list = field(default_factory=list)
    net: list = field(default_factory=list)
    expect_host: list = field(default_factory=list)
    expect_net: list = field(default_factory=list)
    boot: list = field(default_factory=list)      # (map name, key, value)
    keys: list = field(default_factory=list)      # (ctrl.KeyId, keys value): the key table entries


def _payload_len(frame_size, v6, cid_len, pn_len):
    """Payload bytes of a 1-RTT packet whose protected Ethernet frame is frame_size bytes."""
    n = frame_size - (14 + (40 if v6 else 20) + 8) - (1 + cid_len + pn_len) - 16
    if n < 4 - pn_len:   # the header-protection sample needs 4 bytes after the packet number starts
        raise ValueError(f"a {frame_size}-byte frame is too short for a 1-RTT packet with a {cid_len}-byte CID")
    return n


def workload(seed=1, connections=6, packets=4, frame_size=None):
    """`connections` connections (the first ones of the same seed always get the same CIDs and keys,
    so a boot configuration made with more connections serves fewer), `packets` each way per
    connection; frame_size: every protected frame exactly this many bytes (Ethernet, no FCS), else
    payloads from 3 bytes to the MTU."""
    rng = random.Random(seed)
    w = Workload()
    open_lens = set()
    for c in range(connections):
        scid_len, ccid_len, v6 = SHAPES[c % len(SHAPES)]
        server_cid, client_cid = rng.randbytes(scid_len), rng.randbytes(ccid_len)
        client, server = (f"2001:db8:1::{c + 2:x}", "2001:db8::1") if v6 else (f"10.1.0.{c + 2}", "10.0.0.1")
        cport = 50000 + c
        client_keys = PacketKeys.from_secret(rng.randbytes(32))
        server_keys = PacketKeys.from_secret(rng.randbytes(32))
        open_id = ctrl.key_id(server_cid, OPEN)
        seal_id = ctrl.key_id(client_cid, SEAL, ctrl.addr_id(client, cport, QUIC_PORT) if not client_cid else None)
        w.keys += [(open_id, keys_value(client_keys, scid_len)), (seal_id, keys_value(server_keys, ccid_len))]
        open_lens.add(scid_len)
        for pn in range(packets):
            size = rng.choice([3, 20, 100, 600, 1200, MAX_PAYLOAD])   # pn + payload >= 4: the sample
            tpn = (pn & ((1 << (8 * (pn % 4 + 1))) - 1)).to_bytes(pn % 4 + 1, "big")
            if frame_size:
                size = _payload_len(frame_size, v6, scid_len, len(tpn))
            # client -> server: protected on the wire, plaintext to the host
            plain = bytes([0x40 | (len(tpn) - 1)]) + server_cid + tpn + rng.randbytes(size)
            w.net.append(udp_frame(protect(plain, client_keys, short_cid_len=scid_len), client, server, cport, QUIC_PORT))
            w.expect_host.append(ctrl.add_shim(udp_frame(plain, client, server, cport, QUIC_PORT), D.NANOBPF_SHIM_F_DECRYPTED))
            # server -> client: plaintext from the host, marked for sealing; protected on the wire
            tpn = encode_pn(pn, pn - 1 if pn else None)
            size = rng.choice([3, 50, 900, MAX_PAYLOAD])
            if frame_size:
                size = _payload_len(frame_size, v6, ccid_len, len(tpn))
            plain = bytes([0x40 | (len(tpn) - 1)]) + client_cid + tpn + rng.randbytes(size)
            w.host.append(ctrl.add_shim(udp_frame(plain, server, client, QUIC_PORT, cport), D.NANOBPF_SHIM_F_ENCRYPT, ccid_len))
            w.expect_net.append(udp_frame(protect(plain, server_keys, short_cid_len=ccid_len), server, client, QUIC_PORT, cport))
    cfg = struct.pack(abi.STRUCTS["quic_config"].fmt, abi.NANOBPF_IFINDEX_HOST, abi.NANOBPF_IFINDEX_NET,
                      sum(1 << n for n in open_lens), 0)
    w.boot = [("quic_config", struct.pack("<I", 0), cfg),
              ("quic_ports", struct.pack("<H", QUIC_PORT), struct.pack("<I", 1))]
    w.boot += [(abi.KEYTABLE_MAP_NAME,
                kid.pack(), value) for kid, value in w.keys]
    w.boot += profiles([QUIC_PORT], SHAPES[0][0])
    return w


def profiles(ports, short_cid_len):
    """What the host writes with TABLE_SET for a server on these UDP ports (boot configuration entries):
    PISA's QUIC profile of each port on the network's logical port, short headers with the CID length
    the server gives its connections (a real server gives all its CIDs one length; here the other
    lengths miss PISA's CID table and the program finds them itself), and on the host's logical port,
    where PISA matches the source port of a frame to seal and the shim names the CID length (the
    profile's 0: nothing to look up in the CID table)."""
    import nanobpf_soc as soc
    entries = soc.REGS[("pisa", "profile_entry")].count
    if 2 * len(ports) > entries:
        raise ValueError(f"{len(ports)} QUIC ports need {2 * len(ports)} PISA profile entries; there are {entries}")
    out = []
    for i, port in enumerate(ports):
        out.append(bootcfg.table("profile", 2 * i, valid=1, lport=soc.DATAPATH["net_lport"], udp_port=port,
                                 short_cid_len=short_cid_len))
        out.append(bootcfg.table("profile", 2 * i + 1, valid=1, lport=soc.DATAPATH["host_lport"], udp_port=port,
                                 short_cid_len=0))
    return out


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python -m nanobpf.quic.workload",
                                 description="Write the boot configuration (keys, quic_config, quic_ports) of the QUIC "
                                             "workload, for the data-plane firmware dpu-quic_hw (dpu-quic_hw_sjbsq: "
                                             "with --sched sjbsq).")
    ap.add_argument("--boot-config", metavar="FILE", required=True, help="write the nanobpf.bootcfg blob here")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sched", metavar="POLICY", help="also set the core select policy (jbsq, sjbsq, rss, rr; "
                                                      "default: the register's reset value, jbsq)")
    from ..board import dpu_boot, facts
    ap.add_argument("--one-arm", metavar="BOARD", nargs="?", const=facts.DEFAULT_BOARD,
                    help=f"also set up BOARD's one-arm VLANs (default {facts.DEFAULT_BOARD}; its board.toml [dpu] host_vid and net_vid on "
                         "the host port: nanobpf.board.dpu_boot)")
    a = ap.parse_args(argv)
    entries = workload(seed=a.seed).boot
    try:
        if a.sched:
            entries.append(bootcfg.sched(a.sched))
    except ValueError as e:
        ap.error(str(e))
    if a.one_arm:
        try:
            dpu = facts.load(a.one_arm).dpu
        except facts.BoardFactsError as e:
            ap.error(str(e))
        entries += dpu_boot.one_arm_tables(dpu.host_vid, dpu.net_vid)
    with open(a.boot_config, "wb") as f:
        f.write(bootcfg.pack(entries))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
