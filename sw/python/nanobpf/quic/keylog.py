"""SSLKEYLOGFILE parsing (the NSS key log format written by TLS stacks, aioquic's secrets_log_file).

Each line is `LABEL <client_random hex> <secret hex>`; `#` starts a comment line; blank lines are
skipped. parse_keylog() groups the secrets by client random (one TLS connection each):

    conns = parse_keylog(Path("keylog.txt").read_text())
    for client_secret, server_secret in traffic_secrets(conns): ...
"""
from __future__ import annotations

import re

CLIENT_RANDOM_LEN = 32
_LABEL = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})+\Z")


def parse_keylog(text: str) -> dict[bytes, dict[str, bytes]]:
    """{client_random: {label: secret}} in file order. Raises ValueError naming the line number for
    a malformed line, and for one label given two different secrets for the same connection."""
    out: dict[bytes, dict[str, bytes]] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 3:
            raise ValueError(f"keylog line {number}: expected 'LABEL CLIENT_RANDOM SECRET', "
                             f"got {len(fields)} field(s)")
        label, random_hex, secret_hex = fields
        if not _LABEL.match(label):
            raise ValueError(f"keylog line {number}: bad label {label!r}")
        if not _HEX.match(random_hex) or len(random_hex) != 2 * CLIENT_RANDOM_LEN:
            raise ValueError(f"keylog line {number}: client random must be {CLIENT_RANDOM_LEN} "
                             f"bytes of hex, got {random_hex!r}")
        if not _HEX.match(secret_hex):
            raise ValueError(f"keylog line {number}: secret is not an even number of hex digits")
        conn = out.setdefault(bytes.fromhex(random_hex), {})
        secret = bytes.fromhex(secret_hex)
        if conn.get(label, secret) != secret:
            raise ValueError(f"keylog line {number}: second, different {label} for client random "
                             f"{random_hex}")
        conn[label] = secret
    return out


def traffic_secrets(keylog: dict[bytes, dict[str, bytes]]) -> list[tuple[bytes, bytes]]:
    """(CLIENT_TRAFFIC_SECRET_0, SERVER_TRAFFIC_SECRET_0) of each connection that logged both, in
    order; the 1-RTT secrets of QUIC (RFC 9001 5.1)."""
    return [(conn["CLIENT_TRAFFIC_SECRET_0"], conn["SERVER_TRAFFIC_SECRET_0"])
            for conn in keylog.values()
            if "CLIENT_TRAFFIC_SECRET_0" in conn and "SERVER_TRAFFIC_SECRET_0" in conn]
