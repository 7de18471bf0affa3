"""The boot configuration of the data-plane firmware: map entries core 0 writes after it has loaded the
built-in program (until the control plane runs on the device, it stands for the host's KEY_ADD and
MAP_UPDATE messages). Written at build time, linked into the firmware (firmware/apps/dpu/boot.c).

Format (little-endian): b"NBCF", u32 entry count, then per entry: u8 map-name length, the name,
u16 key length, u16 value length, the key, the value. A name starting with "@" is a device setting,
not a map: "@sched" (no key, the u32 value of the core select's pkt.sched register: `sched()`);
"@table" (no key, a control protocol table_msg: a PISA table word as TABLE_SET writes it, `table()`).
Key table entries (map nanobpf_quic_keys) also enter PISA's CID table, as KEY_ADD puts them.

    blob = pack([("quic_ports", struct.pack("<H", 443), struct.pack("<I", 1))])
    assert parse(blob) == [("quic_ports", ..., ...)]
"""
import struct

MAGIC = b"NBCF"


def sched(policy, bound=None):
    """The "@sched" setting: core select policy (a name of the soc.toml enumeration pkt_policy: jbsq,
    sjbsq, rss, rr) and bound (default: the register's reset value's)."""
    import nanobpf_soc as soc
    reg = soc.REGS[("pkt", "sched")]
    policies = soc.ENUMS["pkt_policy"]
    if policy not in policies:
        raise ValueError(f"unknown core select policy {policy!r} (one of {', '.join(policies)})")
    (pshift, pwidth), (bshift, bwidth) = reg.fields["policy"], reg.fields["bound"]
    if bound is None:
        bound = (reg.reset >> bshift) & ((1 << bwidth) - 1)
    if not 0 < bound < 1 << bwidth:
        raise ValueError(f"core select bound {bound}: 1..{(1 << bwidth) - 1}")
    return ("@sched", b"", struct.pack("<I", policies[policy] << pshift | bound << bshift))


def table(table, index, **fields):
    """The "@table" setting: PISA table `table` (a name of ctrl.toml's table enumeration: port,
    profile, lport_cfg) word `index` with the given fields of its soc.toml register, as the host's
    TABLE_SET would write it (the firmware checks it the same way)."""
    import nanobpf_ctrl_defs as D
    import nanobpf_soc as soc
    regs = {"port": "port_entry", "profile": "profile_entry", "lport_cfg": "lport_cfg"}
    if table not in regs:
        raise ValueError(f"unknown PISA table {table!r} (one of {', '.join(regs)})")
    number = getattr(D, f"NANOBPF_CTRL_TABLE_{table.upper()}")
    word = soc.pack("pisa", regs[table], **fields)
    return ("@table", b"", D.pack("table_msg", table=number, index=index, value=word))


def pack(entries):
    out = [MAGIC, struct.pack("<I", len(entries))]
    for name, key, value in entries:
        n = name.encode()
        if not 0 < len(n) < 256 or len(key) > 0xFFFF or len(value) > 0xFFFF:
            raise ValueError(f"boot config entry for map {name!r}: name, key or value too long")
        out += [bytes([len(n)]), n, struct.pack("<HH", len(key), len(value)), bytes(key), bytes(value)]
    return b"".join(out)


def parse(blob):
    if blob[:4] != MAGIC or len(blob) < 8:
        raise ValueError("not a boot configuration (magic NBCF)")
    count, off, entries = struct.unpack_from("<I", blob, 4)[0], 8, []
    for i in range(count):
        try:
            n = blob[off]
            name = blob[off + 1:off + 1 + n].decode()
            off += 1 + n
            klen, vlen = struct.unpack_from("<HH", blob, off)
            off += 4
        except (IndexError, struct.error, UnicodeDecodeError) as e:
            raise ValueError(f"boot configuration entry {i}: {e}") from None
        if off + klen + vlen > len(blob):
            raise ValueError(f"boot configuration entry {i}: truncated")
        entries.append((name, blob[off:off + klen], blob[off + klen:off + klen + vlen]))
        off += klen + vlen
    if off != len(blob):
        raise ValueError(f"boot configuration: {len(blob) - off} bytes after the last entry")
    return entries
