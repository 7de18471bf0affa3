"""The device model's throughput: QUIC 1-RTT packets sealed and opened per second by nanobpf.devmodel's
Python data path and by its native one (fast=True: nanobpf-run --serve with libcrypto's AES), with the
device's QUIC program (xdp_quic_hw) attached and its keys installed through the control protocol.

The model runs in a process of its own (its data path on one core: the Python model's thread, or the
native runtime process) on two socketpair links (MemoryLink: a blocking send, so the driver
cannot outrun the model and lose frames, as it would into a TAP's queue); this process pushes frames into one port as fast as the model takes them (a blocking send: nothing is lost
before the model) and counts what comes out of the other: sealed (no shim, a protected short header
that opens with the keys) or opened (the DECRYPTED shim, the plaintext back). The figures are frames
out per second from the first frame in to the last frame out. Every run checks that the counts add up
(the model's STATS over the control protocol: frames in = frames out + drops, and none dropped).

    nanobpf-bench-model [--frames 20000] [--python-frames 2000] [--size 1200]

Not a test: the figures depend on the machine (docs/control.md records some). Needs `make ebpf-tools
firmware`.
"""
import argparse
import multiprocessing
import struct
import sys
import threading
import time

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi

from nanobpf import BUILD, ctrl
from nanobpf.pcap import parse_udp, udp_frame
from nanobpf.quic import PacketKeys, protect, unprotect
from nanobpf.quic.protection import encode_pn

IMAGE = BUILD / "firmware/bpf/xdp_quic_hw.nbpf"
CID = bytes.fromhex("0011223344556677")         # our CID: packets from the network open with K_OPEN
PEER_CID = bytes.fromhex("a1a2a3a4a5a6a7a8")     # the peer's: packets from the host seal with K_SEAL
K_OPEN = PacketKeys.from_secret(bytes(range(32)))
K_SEAL = PacketKeys.from_secret(bytes(range(1, 33)))
PN_LEN = 4


def _keys(k, cid_len):
    return struct.pack(abi.STRUCTS["quic_keys"].fmt, 0, 0, cid_len, 0, k.key + bytes(16), k.iv + bytes(12), k.hp, b"")


def _short(dcid, pn, size):
    """A short-header packet of size bytes once protected (the tag's 16 bytes included)."""
    head = bytes([0x40 | (PN_LEN - 1)]) + dcid + pn.to_bytes(PN_LEN, "big")
    return head + bytes((pn + i) & 0xFF for i in range(size - len(head) - 16))


def _serve(host_end, net_end, fast, ready, stop):
    """The model's process: the device on the two ports until stop is set."""
    from nanobpf.devmodel import DeviceModel
    dev = DeviceModel(host_end, net_end, seed=1, fast=fast)
    if fast and not dev.fast:
        print(f"nanobpf-bench-model: no native data path: {dev.fast_why}", file=sys.stderr)
        ready.set()
        return
    dev.start()
    ready.set()
    stop.wait()
    dev.stop()


def run(fast, frames, size):
    """One model: (sealed/s, opened/s, stats) for `frames` frames each way."""
    hl, nl = ctrl.MemoryLink(), ctrl.MemoryLink()
    mp = multiprocessing.get_context("fork")
    ready, stop = mp.Event(), mp.Event()
    proc = mp.Process(target=_serve, args=(hl.b, nl.b, fast, ready, stop), daemon=True)
    proc.start()
    ready.wait(30)
    try:
        if not proc.is_alive():
            raise RuntimeError("the model did not start")
        host = ctrl.Client(hl.a, retry_ms=200, retry_max_ms=2000)
        host.prog_load(IMAGE.read_bytes(), "xdp_quic_hw")
        host.map_update("quic_config", bytes(4), struct.pack(abi.STRUCTS["quic_config"].fmt, abi.NANOBPF_IFINDEX_HOST,
                                                             abi.NANOBPF_IFINDEX_NET, 0, 0))
        host.map_update("quic_ports", struct.pack("<H", 443), struct.pack("<I", 1))
        host.key_add(CID, _keys(K_OPEN, len(CID)))
        host.key_add(PEER_CID, _keys(K_SEAL, len(PEER_CID)), dir=ctrl.SEAL)
        # to seal: plaintext from the host (10.0.0.2:443 -> 10.0.0.1:50000) with the ENCRYPT shim
        seal_in = [ctrl.add_shim(udp_frame(_short(PEER_CID, pn, size), "10.0.0.2", "10.0.0.1", 443, 50000),
                                 D.NANOBPF_SHIM_F_ENCRYPT, len(PEER_CID)) for pn in range(1, frames + 1)]
        # to open: protected packets from the network (10.0.0.1:50000 -> 10.0.0.2:443)
        open_in = [udp_frame(protect(_short(CID, pn, size), K_OPEN, short_cid_len=len(CID)), "10.0.0.1", "10.0.0.2",
                             50000, 443) for pn in range(1, frames + 1)]
        sealed = _push(hl.a, nl.a, seal_in)
        opened = _push(nl.a, hl.a, open_in)
        _check_sealed(seal_in[-1], sealed[2])
        _check_opened(open_in[-1], opened[2])
        s = host.stats()
    finally:
        stop.set()
        proc.join(30)
        hl.close()
        nl.close()
    drops = sum(s[k] for k in ("xdp_drop", "encrypt_no_prog", "encrypt_unsealed", "bad_shim", "shim_to_net"))
    if s["host_rx"] + s["net_rx"] != s["host_tx"] + s["net_tx"] + drops:
        raise RuntimeError(f"the counts do not add up: in {s['host_rx']} + {s['net_rx']}, out {s['host_tx']} + "
                           f"{s['net_tx']}, dropped {drops}")
    if (s["host_rx"], s["net_rx"], s["net_tx"], s["decrypted"], drops) != (frames, frames, sealed[0], opened[0], 0):
        raise RuntimeError(f"expected {frames} frames each way out and none dropped: {s}")
    return sealed[1], opened[1], s


def _push(src, dst, frames):
    """Send frames into src from a thread while counting what dst gives: (count, frames/s, last frame)."""
    t = threading.Thread(target=lambda: [src.send(f) for f in frames], daemon=True)
    got, last = 0, None
    start = time.perf_counter()
    t.start()
    while got < len(frames):
        f = dst.recv(5.0)
        if f is None:
            break
        if f[12:14] == struct.pack(">H", D.ETHERTYPE):   # a late control response
            continue
        got, last = got + 1, f
    elapsed = time.perf_counter() - start
    t.join(10)
    if got != len(frames):
        raise RuntimeError(f"{got} of {len(frames)} frames came out")
    return got, got / elapsed, last


def _check_sealed(sent, out):
    """The last frame out: the last one sent, sealed with the seal entry's keys."""
    plain = parse_udp(ctrl.strip_shim(sent)[2]).payload
    if ctrl.has_shim(out) or unprotect(parse_udp(out).payload, K_SEAL, -1, len(PEER_CID)).plain != plain:
        raise RuntimeError("the last sealed frame does not open to what was sent")


def _check_opened(sent, out):
    flags, _, inner = ctrl.strip_shim(out)
    if flags != D.NANOBPF_SHIM_F_DECRYPTED or parse_udp(inner).payload != unprotect(
            parse_udp(sent).payload, K_OPEN, -1, len(CID)).plain:
        raise RuntimeError("the last opened frame is not the plaintext with the DECRYPTED shim")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="nanobpf-bench-model", description="QUIC 1-RTT packets sealed and opened per "
                                 "second by the device model, Python and native data path (docs/control.md).")
    ap.add_argument("--frames", type=int, default=20000, help="frames each way through the native path (default 20000)")
    ap.add_argument("--python-frames", type=int, default=2000, help="frames each way through the Python path "
                    "(default 2000; 0: skip it)")
    ap.add_argument("--size", type=int, default=1200, help="bytes of each protected QUIC packet (UDP payload; "
                    "default 1200)")
    a = ap.parse_args(argv)
    if not 64 <= a.size <= 1400:
        ap.error("--size: 64..1400")
    if not IMAGE.exists():
        print(f"nanobpf-bench-model: {IMAGE} is not built (make firmware)", file=sys.stderr)
        return 2
    frame = len(udp_frame(bytes(a.size), "10.0.0.1", "10.0.0.2", 1, 2))
    print(f"QUIC 1-RTT packets of {a.size} bytes ({frame}-byte frames), xdp_quic_hw, "
          "socketpair ports")
    print(f"{'data path':<10} {'frames':>7} {'sealed/s':>10} {'opened/s':>10}")
    rows = [("native", True, a.frames)] + ([("Python", False, a.python_frames)] if a.python_frames else [])
    for name, fast, n in rows:
        try:
            sealed, opened, _ = run(fast, n, a.size)
        except RuntimeError as e:
            print(f"nanobpf-bench-model: {name}: {e}", file=sys.stderr)
            return 1
        print(f"{name:<10} {n:>7} {sealed:>10,.0f} {opened:>10,.0f}", flush=True)
    print("frames in = frames out, none dropped (the model's STATS), the last frame each way checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
