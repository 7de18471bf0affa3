"""Capture a real QUIC connection (aioquic server and client over 127.0.0.1) as Ethernet frames.

    meta = capture("out/", streams=4, nbytes=3000, key_update=True)
    # out/quic.pcap, out/keylog.txt (client SSLKEYLOGFILE), out/meta.json

Both ends use TLS_AES_128_GCM_SHA256 and 8-byte connection IDs. The client opens `streams`
bidirectional streams, sends `nbytes` on each (stream_data()), the server echoes them. After the
first half has come back, the client requests a key update, so both directions show key phase 0
and 1. Frames are read on `lo` with an AF_PACKET socket (needs root / CAP_NET_RAW); the copies
the kernel reports as outgoing are skipped, and UDP checksums left partial by loopback checksum
offload are recomputed (counted in meta["checksums_fixed"]).
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import ipaddress
import json
import select
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

from aioquic.asyncio import connect, serve
from aioquic.quic.configuration import QuicConfiguration
from aioquic.tls import CipherSuite
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ..pcap import fix_udp_checksum, parse_udp, write_pcap

CID_LEN = 8
HOST = "127.0.0.1"
ETH_P_ALL = 0x0003
TIMEOUT = 20.0


class CaptureNotPermitted(RuntimeError):
    """An AF_PACKET raw socket could not be opened (not root / no CAP_NET_RAW)."""


def stream_data(index: int, nbytes: int) -> bytes:
    """The bytes the client sends on its index-th stream: a pattern that differs per stream."""
    return bytes((i * 7 + index * 31 + (i >> 8)) & 0xFF for i in range(nbytes))


def self_signed(directory: Path, host: str = HOST) -> tuple[Path, Path]:
    """A self-signed EC certificate for "localhost" and `host` (cert.pem, key.pem in directory)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address(host))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class _Sniffer(threading.Thread):
    """Reads every frame arriving on `lo` (incoming copies only) until stopped."""

    def __init__(self):
        super().__init__(name="nanobpf-quic-capture", daemon=True)
        try:
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError as e:
            raise CaptureNotPermitted(f"cannot open an AF_PACKET raw socket ({e}); capturing on "
                                      f"lo needs root or CAP_NET_RAW") from None
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            self.sock.bind(("lo", 0))
        except OSError:
            self.sock.close()
            raise
        self.frames: list[tuple[float, bytes]] = []
        self._stop_event = threading.Event()

    def _drain(self) -> None:
        while True:
            try:
                frame, addr = self.sock.recvfrom(65600, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            if addr[2] != socket.PACKET_OUTGOING:
                self.frames.append((time.time(), frame))

    def run(self) -> None:
        while not self._stop_event.is_set():
            ready, _, _ = select.select([self.sock], [], [], 0.05)
            if ready:
                self._drain()

    def stop(self) -> list[tuple[float, bytes]]:
        self._stop_event.set()
        self.join()
        self._drain()
        self.sock.close()
        return self.frames


async def _exchange(cert: Path, key: Path, keylog, streams: int, nbytes: int,
                    key_update: bool) -> tuple[int, int]:
    async def echo(reader, writer):
        while chunk := await reader.read(65536):
            writer.write(chunk)
        writer.write_eof()

    echoes = set()                  # keep the tasks referenced until they finish

    def on_stream(reader, writer):
        task = asyncio.ensure_future(echo(reader, writer))
        echoes.add(task)
        task.add_done_callback(echoes.discard)

    server_cfg = QuicConfiguration(is_client=False, alpn_protocols=["nanobpf"],
                                   cipher_suites=[CipherSuite.AES_128_GCM_SHA256],
                                   connection_id_length=CID_LEN)
    server_cfg.load_cert_chain(cert, key)
    server = await serve(HOST, 0, configuration=server_cfg, stream_handler=on_stream)
    try:
        server_port = server._transport.get_extra_info("sockname")[1]
        client_cfg = QuicConfiguration(is_client=True, alpn_protocols=["nanobpf"],
                                       cipher_suites=[CipherSuite.AES_128_GCM_SHA256],
                                       connection_id_length=CID_LEN, server_name="localhost",
                                       secrets_log_file=keylog)
        client_cfg.load_verify_locations(cafile=str(cert))
        async with connect(HOST, server_port, configuration=client_cfg) as client:
            client_port = client._transport.get_extra_info("sockname")[1]
            data = [stream_data(i, nbytes) for i in range(streams)]
            half = nbytes // 2
            pipes = []
            for d in data:              # aioquic assigns a stream ID when data is first sent
                reader, writer = await client.create_stream()
                writer.write(d[:half])
                pipes.append((reader, writer))
            for (reader, _), d in zip(pipes, data):
                if await reader.readexactly(half) != d[:half]:
                    raise RuntimeError("echo of the first half differs from what was sent")
            if key_update:
                client.request_key_update()
            for (_, writer), d in zip(pipes, data):
                writer.write(d[half:])
                writer.write_eof()
            for (reader, _), d in zip(pipes, data):
                if await reader.read() != d[half:]:
                    raise RuntimeError("echo of the second half differs from what was sent")
    finally:
        server.close()
    return server_port, client_port


def capture(out_dir, streams: int = 4, nbytes: int = 3000, key_update: bool = True) -> dict:
    """Run the connection, write OUT/quic.pcap, OUT/keylog.txt and OUT/meta.json; return the meta
    dict. Raises CaptureNotPermitted without AF_PACKET rights."""
    if streams < 1 or nbytes < 2:
        raise ValueError("need at least 1 stream and 2 bytes per stream")
    out = Path(out_dir)
    sniffer = _Sniffer()                          # first: fail before writing anything
    out.mkdir(parents=True, exist_ok=True)
    sniffer.start()
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="nanobpf-quic-") as tmp, \
                open(out / "keylog.txt", "w") as keylog:
            cert, key = self_signed(Path(tmp))
            server_port, client_port = asyncio.run(asyncio.wait_for(
                _exchange(cert, key, keylog, streams, nbytes, key_update), TIMEOUT))
        time.sleep(0.05)                          # let the last frames reach the socket
    finally:
        raw = sniffer.stop()
    frames, stamps, fixed = [], [], 0
    for ts, frame in raw:
        info = parse_udp(frame)
        if info is None or server_port not in (info.sport, info.dport):
            continue
        if not info.udp_checksum_ok:
            frame, fixed = fix_udp_checksum(frame), fixed + 1
        frames.append(frame)
        stamps.append(ts)
    write_pcap(out / "quic.pcap", frames, stamps)
    meta = {"server_port": server_port, "client_port": client_port, "cid_len": CID_LEN,
            "frames": len(frames), "streams": streams, "bytes": nbytes, "key_update": key_update,
            "checksums_fixed": fixed, "seconds": round(time.monotonic() - started, 3)}
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


# ---------------------------------------------------------------- the command nanobpf-quic-capture
USAGE = """Capture a real QUIC connection (aioquic server + client on 127.0.0.1) for the packet
protection tests.

    nanobpf-quic-capture -o OUT [--streams N] [--bytes B] [--no-key-update]

Writes OUT/quic.pcap (Ethernet frames seen on lo), OUT/keylog.txt (the client's SSLKEYLOGFILE)
and OUT/meta.json (server_port, client_port, cid_len, frames, ...). Both ends use
TLS_AES_128_GCM_SHA256; the client sends B bytes on each of N bidirectional streams, the server
echoes them and halfway through the client requests a key update.
Exit status: 0 done, 1 the connection failed, 2 usage or no permission for an AF_PACKET socket
(run as root). Runs with the project venv (aioquic, cryptography).
"""
PROG = "nanobpf-quic-capture"


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=USAGE.split("\n\n")[0], epilog=USAGE.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True, type=Path, help="output directory")
    ap.add_argument("--streams", type=int, default=4, help="bidirectional streams (default 4)")
    ap.add_argument("--bytes", type=int, default=3000, dest="nbytes",
                    help="bytes sent (and echoed) per stream (default 3000)")
    ap.add_argument("--key-update", action=argparse.BooleanOptionalAction, default=True,
                    help="request a key update halfway through (default on)")
    args = ap.parse_args(argv)
    if args.streams < 1 or args.nbytes < 2:
        ap.error("--streams must be at least 1 and --bytes at least 2")
    try:
        meta = capture(args.out, streams=args.streams, nbytes=args.nbytes,
                       key_update=args.key_update)
    except CaptureNotPermitted as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:          # connection failures, timeouts: one line, not a traceback
        print(f"{PROG}: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
