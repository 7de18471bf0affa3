"""File transfers over QUIC (aioquic, with or without the DPU offload), TCP and TCP+TLS: the example
server and client of the offload, and the workload of `make bench-paper` (docs/offload.md).

    python -m nanobpf.quic.transfer serve --cert-dir D [--dpu eth1] [--key-update]
    python -m nanobpf.quic.transfer get --proto quic-offload --host 10.77.0.1 --size 1000000 --cert-dir D

The server listens on every protocol at once (ports below): QUIC through the offload (when --dpu names
the interface towards the DPU's host port), QUIC without it, TCP+TLS 1.3 (AES-128-GCM, as QUIC) and
plain TCP. A client asks for N bytes ("GET N\\n"); the server sends N bytes of a fixed pseudo-random
pattern and closes; the client checks their SHA-256. Per connection the server prints one JSON line:
protocol, bytes sent and the CPU time its process spent on the connection (from the first packet to
the close: handshake, protection, transport), which is what the offload is meant to reduce.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import signal
import ssl
import sys
import time
from pathlib import Path

from aioquic.asyncio import connect, serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, HandshakeCompleted
from aioquic.tls import CipherSuite

PORTS = {"quic-offload": 4433, "quic": 4434, "tls": 5443, "tcp": 5080}
PROTOS = tuple(PORTS)
ALPN = "nanobpf-xfer"
PATTERN_LABEL = b"nanobpf-xfer pattern"
# The payload pattern: SHA-256 in counter mode over a fixed label, 65,536 bytes, so that other stacks
# compute the same bytes (sw/quic-offload, nanobpf-quinn: src/transfer.rs, tests/pattern.rs)
BLOCK = b"".join(hashlib.sha256(PATTERN_LABEL + i.to_bytes(4, "big")).digest() for i in range(65536 // 32))
MAX_SIZE = 1 << 34


def payload_chunks(size: int, chunk: int = 65536):
    """The bytes a transfer of `size` carries, in chunks: BLOCK repeated."""
    for off in range(0, size, chunk):
        n = min(chunk, size - off)
        start = off % len(BLOCK)
        out = (BLOCK[start:] + BLOCK)[:n] if start + n > len(BLOCK) else BLOCK[start:start + n]
        yield out


def payload_digest(size: int) -> str:
    h = hashlib.sha256()
    for c in payload_chunks(size):
        h.update(c)
    return h.hexdigest()


def _parse_request(line: bytes) -> int:
    parts = line.decode(errors="replace").split()
    if len(parts) != 2 or parts[0] != "GET" or not parts[1].isdigit() or int(parts[1]) > MAX_SIZE:
        raise ValueError(f"bad request {line[:40]!r}")
    return int(parts[1])


def quic_config(is_client, cid_len=8, buffer=None, cert_dir=None, cc="reno"):
    cfg = QuicConfiguration(is_client=is_client, alpn_protocols=[ALPN], connection_id_length=cid_len,
                            cipher_suites=[CipherSuite.AES_128_GCM_SHA256], idle_timeout=30.0,
                            congestion_control_algorithm=cc)
    if buffer:
        cfg.max_data = cfg.max_stream_data = buffer
    if is_client:
        cfg.server_name = "localhost"
        cfg.load_verify_locations(cafile=str(Path(cert_dir) / "cert.pem"))
    else:
        cfg.load_cert_chain(Path(cert_dir) / "cert.pem", Path(cert_dir) / "key.pem")
    return cfg


class _Meter:
    """CPU time of this process over one connection."""

    def __init__(self, proto, report):
        self.proto, self.report = proto, report
        self.cpu0, self.t0 = time.process_time(), time.monotonic()
        self.sent = 0
        self.done = False

    def end(self, **extra):
        if self.done:
            return
        self.done = True
        self.report(dict(proto=self.proto, bytes=self.sent, cpu_s=round(time.process_time() - self.cpu0, 6),
                         wall_s=round(time.monotonic() - self.t0, 6), **extra))


async def _serve_stream(reader, writer, meter, key_update=None):
    try:
        size = _parse_request(await reader.readline())
    except ValueError:
        writer.close()
        return
    half = size // 2
    for c in payload_chunks(size):
        writer.write(c)
        meter.sent += len(c)
        if key_update and meter.sent >= half and not key_update.done:
            key_update()
        await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()
    else:                       # TLS: close_notify ends the transfer
        writer.close()
        await writer.wait_closed()


class _ServerQuic(QuicConnectionProtocol):
    """Serves one transfer per bidirectional stream; reports when the connection ends."""
    report = None
    key_update = False
    proto_name = "quic"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, stream_handler=self._on_stream)
        self._meter = _Meter(self.proto_name, self.report)

    def _on_stream(self, reader, writer):
        ku = None
        if self.key_update:
            def ku():
                ku.done = True
                self.request_key_update()
            ku.done = False
        asyncio.ensure_future(_serve_stream(reader, writer, self._meter, ku))

    def quic_event_received(self, event):
        super().quic_event_received(event)
        if isinstance(event, ConnectionTerminated):
            extra = {}
            nb = getattr(self, "_nb", None)
            if nb is not None:
                extra["offloaded"] = nb.offloaded
            self._meter.end(**extra)
            if nb is not None:    # after the CPU figure: what the device and the offload counted
                self.report(dict(proto=self.proto_name, dpu=dict(nb.dpu.counters), device=nb.dpu.device_stats()))


async def run_server(cert_dir, host="::", dpu_if=None, key_update=False, cid_len=8, report=None, ready=None,
                     dpu_retry_ms=None, protos=PROTOS, cc="reno"):
    """Serve until cancelled. report(dict) per connection (default: a JSON line on stdout)."""
    report = report or (lambda d: print(json.dumps(d), flush=True))
    servers, dpu = [], None
    cfg = quic_config(False, cid_len=cid_len, cert_dir=cert_dir, cc=cc)
    try:
        for name in protos:
            port = PORTS[name]
            if name.startswith("quic"):
                base = type(f"Server_{name}", (_ServerQuic,), dict(report=staticmethod(report), key_update=key_update,
                                                                   proto_name=name))
                if name == "quic-offload":
                    if dpu_if is None:
                        continue
                    from .offload import Dpu
                    kw = dict(retry_ms=dpu_retry_ms, retry_max_ms=dpu_retry_ms * 16) if dpu_retry_ms else {}
                    dpu = Dpu(dpu_if, **kw)
                    base = dpu.protocol(base)
                servers.append(await serve(host, port, configuration=cfg, create_protocol=base))
            else:
                servers.append(await _tcp_server(host, port, name, cert_dir, report))
        if ready:
            ready(dpu)
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        await stop.wait()             # then close: the keys this server installed leave the device
    finally:
        for s in servers:
            s.close()
        if dpu is not None:
            dpu.close()


async def _tcp_server(host, port, name, cert_dir, report):
    sslctx = None
    if name == "tls":
        sslctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        sslctx.minimum_version = ssl.TLSVersion.TLSv1_3
        sslctx.load_cert_chain(Path(cert_dir) / "cert.pem", Path(cert_dir) / "key.pem")

    async def handle(reader, writer):
        meter = _Meter(name, report)
        try:
            await _serve_stream(reader, writer, meter)
            if not writer.is_closing():
                await reader.read()        # until the client closes
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()
            meter.end()
    # asyncio makes "::" IPv6-only for TCP: None listens on IPv4 and IPv6
    return await asyncio.start_server(handle, None if host == "::" else host, port, ssl=sslctx)


# ---------------------------------------------------------------- client
async def get(proto, host, size, cert_dir, buffer=None, cid_len=8, key_update=False, timeout=600.0, keylog=None):
    """Fetch `size` bytes: {"proto", "bytes", "seconds", "ok"} (ok: the SHA-256 matched)."""
    t0 = time.monotonic()
    h, got = hashlib.sha256(), 0

    async def consume(reader, on_half=None):
        nonlocal got
        while chunk := await reader.read(65536):
            h.update(chunk)
            got += len(chunk)
            if on_half and got >= size // 2:
                on_half()
                on_half = None

    if proto.startswith("quic"):
        cfg = quic_config(True, cid_len=cid_len, buffer=buffer, cert_dir=cert_dir)
        cfg.secrets_log_file = keylog
        async with connect(host, PORTS[proto], configuration=cfg, wait_connected=True) as client:
            reader, writer = await client.create_stream()
            writer.write(f"GET {size}\n".encode())
            await asyncio.wait_for(consume(reader, client.request_key_update if key_update else None), timeout)
            client.close()
            await client.wait_closed()
    else:
        sslctx = None
        if proto == "tls":
            sslctx = ssl.create_default_context(cafile=str(Path(cert_dir) / "cert.pem"))
            sslctx.check_hostname = False
        reader, writer = await asyncio.open_connection(host, PORTS[proto], ssl=sslctx,
                                                       server_hostname="localhost" if sslctx else None)
        writer.write(f"GET {size}\n".encode())
        await asyncio.wait_for(consume(reader), timeout)
        writer.close()
    seconds = time.monotonic() - t0
    return dict(proto=proto, bytes=got, seconds=round(seconds, 6), ok=got == size and h.hexdigest() == payload_digest(size))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="nanobpf-quic-transfer", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve transfers on every protocol until interrupted")
    s.add_argument("--cert-dir", required=True, help="directory with cert.pem/key.pem (written when missing)")
    s.add_argument("--host", default="::", help="address to listen on (default ::, IPv4 and IPv6)")
    s.add_argument("--dpu", metavar="IF", help="interface towards the DPU's host port: serve quic-offload through it")
    s.add_argument("--key-update", action="store_true", help="request a key update halfway through each QUIC transfer")
    s.add_argument("--cid-len", type=int, default=8, help="length of the server's connection IDs (0..20, default 8)")
    s.add_argument("--cc", default="reno", choices=["reno", "cubic"], help="QUIC congestion control of the "
                   "sender (aioquic's; default reno, aioquic's default)")
    s.add_argument("--dpu-retry-ms", type=int, help="first control retransmission after this many ms (slow DPUs: the "
                   "Verilator one answers in tens to hundreds of ms)")
    g = sub.add_parser("get", help="fetch one transfer and print its result as JSON")
    g.add_argument("--proto", choices=PROTOS, required=True)
    g.add_argument("--host", required=True)
    g.add_argument("--size", type=int, required=True, help="bytes to fetch")
    g.add_argument("--cert-dir", required=True, help="directory with the server's cert.pem")
    g.add_argument("--buffer", type=int, help="QUIC receive window (max_data, max_stream_data), bytes")
    g.add_argument("--cid-len", type=int, default=8, help="length of the client's connection IDs (0..20)")
    g.add_argument("--key-update", action="store_true", help="QUIC: request a key update halfway")
    g.add_argument("--keylog", help="QUIC: append the TLS secrets to this file (SSLKEYLOGFILE format)")
    a = ap.parse_args(argv)
    if a.cmd == "serve":
        d = Path(a.cert_dir)
        if not (d / "cert.pem").exists():
            from .capture import self_signed
            d.mkdir(parents=True, exist_ok=True)
            self_signed(d)
        try:
            asyncio.run(run_server(d, a.host, a.dpu, a.key_update, a.cid_len, dpu_retry_ms=a.dpu_retry_ms, cc=a.cc))
        except KeyboardInterrupt:
            pass
        return 0
    if not 0 < a.size <= MAX_SIZE:
        ap.error(f"--size: 1..{MAX_SIZE}")
    keylog = open(a.keylog, "a") if a.keylog else None
    try:
        r = asyncio.run(get(a.proto, a.host, a.size, a.cert_dir, a.buffer, a.cid_len, a.key_update, keylog=keylog))
    finally:
        if keylog:
            keylog.close()
    print(json.dumps(r), flush=True)
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
