"""The demo's QUIC traffic (`make demo`): what the DPU in front of a server sees, and what must come out.

Three parts, all with the keys the firmware `dpu-quic_demo` carries in its boot configuration:
- the synthetic workload (nanobpf.quic.workload, seed 1): six connections, CIDs of 0..20 bytes, IPv4
  and IPv6, 3-byte to MTU payloads, open and seal;
- a real aioquic exchange captured at build time (nanobpf.quic.capture, made once into the capture
  directory; needs root for the AF_PACKET socket, else it is left out and the demo says so): its
  1-RTT packets, across a key update. The client's packets come from the network and are opened
  for the host; the server's come from the host as plaintext marked for sealing (the reference
  removes their protection), and must leave for the network as the very bytes aioquic sent;
- RFC 9001 appendix A.2: the client's Initial packet, opened with the Initial keys (long-header
  offload, NANOBPF_QUIC_CFG_OFFLOAD_LONG).

    d = demo_traffic(capture_dir)         # a Workload, plus d.parts: what came from where
    python -m nanobpf.quic.demo --capture DIR --boot-config FILE
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi

from .. import ctrl
from ..pcap import parse_udp, read_pcap, udp_frame, with_payload
from .keylog import parse_keylog, traffic_secrets
from .keys import PacketKeys, next_secret
from .protection import unprotect
from .vectors import A2_PLAIN, A2_PROTECTED, CLIENT_KEYS, DCID
from .workload import OPEN, QUIC_PORT, SEAL, SHAPES, Workload, keys_value, profiles, workload

RFC_CLIENT, RFC_SERVER, RFC_PORT = "192.0.2.10", "10.0.0.1", 50443


def _capture_part(capture_dir: Path):
    """(host frames, net frames, expected host, expected net, key entries, server port) of the capture."""
    meta = json.loads((capture_dir / "meta.json").read_text())
    (c0, s0), = traffic_secrets(parse_keylog((capture_dir / "keylog.txt").read_text()))
    gens = {}
    for side, secret in (("client", c0), ("server", s0)):
        k0 = PacketKeys.from_secret(secret)
        gens[side] = (k0, PacketKeys.from_secret(next_secret(secret), hp=k0.hp))
    host, net, exp_host, exp_net, entries, largest = [], [], [], [], {}, {}
    for _, f in read_pcap(capture_dir / "quic.pcap"):
        u = parse_udp(f)
        if u is None or u.payload[0] & 0x80:          # the handshake's long-header packets: not offloaded here
            continue
        side = "client" if u.dport == meta["server_port"] else "server"
        cid = u.payload[1:1 + meta["cid_len"]]
        ref = None
        for k in gens[side]:                          # the key phase is under header protection
            try:
                ref = unprotect(u.payload, k, largest_pn=largest.get(cid, -1))
                break
            except ValueError:
                continue
        if ref is None:
            raise ValueError(f"capture: a {side} packet no key opens")
        largest[cid] = max(largest.get(cid, -1), ref.pn)
        plain = with_payload(f, ref.plain)
        if side == "client":                          # from the network: opened for the server (host)
            entries[ctrl.key_id(cid, OPEN)] = keys_value(*gens["client"][:1], len(cid), gens["client"][1])
            net.append(f)
            exp_host.append(ctrl.add_shim(plain, D.NANOBPF_SHIM_F_DECRYPTED))
        else:                                         # from the host: sealed for the client (network)
            entries[ctrl.key_id(cid, SEAL)] = keys_value(*gens["server"][:1], len(cid), gens["server"][1])
            host.append(ctrl.add_shim(plain, D.NANOBPF_SHIM_F_ENCRYPT, len(cid)))
            exp_net.append(f)
    return host, net, exp_host, exp_net, list(entries.items()), meta["server_port"]


def demo_traffic(capture_dir=None) -> Workload:
    """The demo's frames and boot configuration; capture_dir None or without a capture: no aioquic part."""
    w = workload(seed=1)
    w.parts = {"workload": (len(w.host), len(w.net))}
    ports = [QUIC_PORT]
    cap = Path(capture_dir) if capture_dir else None
    if cap and (cap / "meta.json").exists():
        host, net, exp_host, exp_net, entries, port = _capture_part(cap)
        w.host += host
        w.net += net
        w.expect_host += exp_host
        w.expect_net += exp_net
        w.keys += entries
        ports.append(port)
        w.parts["aioquic"] = (len(host), len(net))
    # RFC 9001 A.2: the client's Initial, opened with the Initial keys of its destination CID
    w.keys.append((ctrl.key_id(DCID, OPEN), keys_value(CLIENT_KEYS, len(DCID))))
    w.net.append(udp_frame(A2_PROTECTED, RFC_CLIENT, RFC_SERVER, RFC_PORT, QUIC_PORT))
    w.expect_host.append(ctrl.add_shim(udp_frame(A2_PLAIN, RFC_CLIENT, RFC_SERVER, RFC_PORT, QUIC_PORT),
                                       D.NANOBPF_SHIM_F_DECRYPTED))
    w.parts["rfc9001"] = (0, 1)
    open_lens = {kid.cid_len for kid, _ in w.keys if kid.dir == OPEN}
    cfg = struct.pack(abi.STRUCTS["quic_config"].fmt, abi.NANOBPF_IFINDEX_HOST, abi.NANOBPF_IFINDEX_NET,
                      sum(1 << n for n in open_lens), abi.NANOBPF_QUIC_CFG_OFFLOAD_LONG)
    w.boot = [("quic_config", struct.pack("<I", 0), cfg)]
    w.boot += [("quic_ports", struct.pack("<H", p), struct.pack("<I", 1)) for p in ports]
    w.boot += [(abi.KEYTABLE_MAP_NAME, kid.pack(), value) for kid, value in w.keys]
    w.boot += profiles(ports, SHAPES[0][0])  # PISA's parse result for both paths (the workload's CID length)
    return w


def ensure_capture(capture_dir) -> str | None:
    """Make the aioquic capture into capture_dir unless it is there; returns why not, or None."""
    cap = Path(capture_dir)
    if (cap / "meta.json").exists():
        return None
    from .capture import CaptureNotPermitted, capture
    try:
        capture(cap, streams=4, nbytes=5000, key_update=True)
    except CaptureNotPermitted as e:
        return str(e)
    return None


def main(argv=None):
    import argparse
    from .. import bootcfg
    ap = argparse.ArgumentParser(prog="python -m nanobpf.quic.demo",
                                 description="Make the demo's aioquic capture (unless CAPTURE has one) and write the "
                                             "boot configuration of the firmware dpu-quic_demo.")
    ap.add_argument("--capture", metavar="DIR", required=True, help="the capture's directory")
    ap.add_argument("--boot-config", metavar="FILE", required=True, help="write the nanobpf.bootcfg blob here")
    a = ap.parse_args(argv)
    why = ensure_capture(a.capture)
    if why:
        print(f"nanobpf.quic.demo: no aioquic capture ({why}): the demo runs without it")
    w = demo_traffic(a.capture)
    Path(a.boot_config).write_bytes(bootcfg.pack(w.boot))
    print(f"nanobpf.quic.demo: {len(w.keys)} key table entries, parts {w.parts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
