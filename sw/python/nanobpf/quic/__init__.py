"""Reference QUIC v1 packet protection (RFC 9001, AES-128-GCM) for checking the device's offload.

    keys       key derivation: HKDF, Initial secrets, PacketKeys, key updates
    protection header parsing, packet number coding, protect() / unprotect()
    keylog     SSLKEYLOGFILE parsing (1-RTT secrets of captured connections)
    capture    a real aioquic connection over loopback, captured to pcap (needs aioquic and root;
               import it explicitly: `from nanobpf.quic.capture import capture`)
"""
from .keylog import parse_keylog, traffic_secrets
from .keys import (INITIAL_SALT_V1, PacketKeys, hkdf_expand_label, hkdf_extract, hkdf_label,
                   initial_secrets, key_generations, next_secret)
from .protection import (HeaderInfo, MalformedPacket, TagMismatch, Unprotected, aead_nonce,
                         decode_pn, encode_pn, header_info, hp_mask, protect, unprotect)

__all__ = ["INITIAL_SALT_V1", "HeaderInfo", "MalformedPacket", "PacketKeys", "TagMismatch",
           "Unprotected", "aead_nonce", "decode_pn", "encode_pn", "header_info",
           "hkdf_expand_label", "hkdf_extract", "hkdf_label", "hp_mask", "initial_secrets",
           "key_generations", "next_secret", "parse_keylog", "protect", "traffic_secrets",
           "unprotect"]
