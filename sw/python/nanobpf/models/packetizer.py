"""Reference model of the packetization buffer (hw/src/main/scala/nanobpf/reasm/Packetizer.scala).

A host GSO batch is one frame: 16 bytes of layout `gso_hdr` (a 128-bit little-endian word), the header
template (`hdr_len` bytes: Ethernet [+ VLAN] + IPv4 or IPv6 + UDP + QUIC short header), then the
payload. `packetize(batch)` returns the frames the hardware sends for it, each with its `bad` flag, and
the counter events (keys: the pkt_counter names gso_batches, gso_segments, gso_bad). `gso_batch(...)`
builds a batch. The cocotb test (sim/cocotb/packetizer) compares the RTL with this model.
"""
from nanobpf.soc import ENUMS, pack_layout, unpack_layout

HDR_BYTES = 16
MAX_TEMPLATE = 192
MAX_SEGS = 64
MAX_FRAME = 1522
COUNTERS = ("gso_batches", "gso_segments", "gso_bad")
assert all(c in ENUMS["pkt_counter"] for c in COUNTERS)


def header_ok(h, max_frame=MAX_FRAME):
    """The checks made on the gso_hdr fields before the template is read."""
    return (1 <= h["segs"] <= MAX_SEGS and h["seg_size"] != 0 and h["hdr_len"] <= MAX_TEMPLATE
            and h["hdr_len"] >= h["l4_off"] + 8 and h["l4_off"] > h["l3_off"]
            and h["pn_off"] + h["pn_len"] + 1 <= h["hdr_len"] and h["hdr_len"] + h["seg_size"] <= max_frame)


def patch(template, h, i, seg_len):
    """Template of segment i with seg_len payload bytes: IPv4 total length and identification or IPv6
    payload length, UDP length, QUIC packet number (applied in this order: a later one wins where
    they overlap). Checksums are left as in the template (the deparser fixes them on egress)."""
    t = bytearray(template)
    hl, l3, l4 = h["hdr_len"], h["l3_off"], h["l4_off"]
    udp_len = (hl - l4 + seg_len) & 0xFFFF
    if t[l3] >> 4 == 4:
        t[l3 + 2:l3 + 4] = ((hl - l3 + seg_len) & 0xFFFF).to_bytes(2, "big")
        t[l3 + 4:l3 + 6] = ((h["ip_id"] + i) & 0xFFFF).to_bytes(2, "big")
    else:
        t[l3 + 4:l3 + 6] = udp_len.to_bytes(2, "big")
    t[l4 + 4:l4 + 6] = udp_len.to_bytes(2, "big")
    n = h["pn_len"] + 1
    t[h["pn_off"]:h["pn_off"] + n] = ((h["pn"] + i) % (1 << 8 * n)).to_bytes(n, "big")
    return bytes(t)


def packetize(batch, max_frame=MAX_FRAME):
    """Frames [(bytes, bad)] made from one batch, and the counter events {gso_*: count}."""
    count = dict.fromkeys(COUNTERS, 0)
    frames = []
    if len(batch) < HDR_BYTES:
        count["gso_bad"] = 1
        return frames, count
    h = unpack_layout("gso_hdr", int.from_bytes(batch[:HDR_BYTES], "little"))
    hl = h["hdr_len"]
    template = batch[HDR_BYTES:HDR_BYTES + hl]
    if not header_ok(h, max_frame) or len(template) < hl or template[h["l3_off"]] >> 4 not in (4, 6):
        count["gso_bad"] = 1
        return frames, count
    count["gso_batches"] = 1
    payload = batch[HDR_BYTES + hl:]
    size, segs = h["seg_size"], h["segs"]
    for i in range(segs):
        seg = payload[i * size:(i + 1) * size]
        if not seg:
            break
        bad = len(seg) < size and i < segs - 1  # the batch ended inside this segment
        frames.append((patch(template, h, i, len(seg)) + seg, bad))
        count["gso_segments"] += not bad
    if not (segs - 1) * size < len(payload) <= segs * size:
        count["gso_bad"] = 1
    return frames, count


def template_offsets(template, dcid_len=8):
    """(l3_off, l4_off, pn_off) of an Ethernet [+ 802.1Q tags] / IPv4 or IPv6 / UDP / QUIC short
    header template (no IPv6 extension headers)."""
    l3 = 14
    while int.from_bytes(template[l3 - 2:l3], "big") in (0x8100, 0x88A8):
        l3 += 4
    l4 = l3 + (4 * (template[l3] & 15) if template[l3] >> 4 == 4 else 40)
    return l3, l4, l4 + 8 + 1 + dcid_len


def gso_batch(template, payload, seg_size, pn, pn_len, ip_id, lport=0, conn_slot=0, conn_valid=1,
              l3_off=None, l4_off=None, pn_off=None, segs=None, dcid_len=8, **fields):
    """A batch: gso_hdr + template + payload. pn_len is the packet number length in bytes (1..4; the
    header field holds pn_len - 1); segs defaults to the number of segments the payload makes; the
    offsets default to those found in the template (template_offsets); `fields` override any other
    gso_hdr field (e.g. hdr_len) to build malformed batches."""
    o3, o4, opn = template_offsets(template, dcid_len)
    if segs is None:
        segs = max(1, -(-len(payload) // max(seg_size, 1)))
    values = dict(seg_size=seg_size, segs=segs, hdr_len=len(template),
                  l3_off=o3 if l3_off is None else l3_off, l4_off=o4 if l4_off is None else l4_off,
                  pn_off=opn if pn_off is None else pn_off, pn_len=pn_len - 1, lport=lport,
                  conn_valid=conn_valid, pn=pn, ip_id=ip_id, conn_slot=conn_slot)
    values.update(fields)
    return pack_layout("gso_hdr", **values).to_bytes(HDR_BYTES, "little") + bytes(template) + bytes(payload)
