"""Reference model of the PISA transport pipeline (hw/src/main/scala/nanobpf/pisa, docs/pisa.md).

The cocotb tests use it as the scoreboard: every frame the RTL emits, with its metadata, and every
counter must equal what this model computes. Register layouts and enumerations come from
hw/defs/soc.toml (module `nanobpf_soc`), so the model and the RTL cannot disagree on encodings.

`Pisa.ingress(frame, port)` parses and classifies one frame (after `pop_tag`, which takes its outer
VLAN tag off as the hardware's VlanPop does: the frame the cores and the deparser get is `pop_tag(frame)[0]`);
`Pisa.egress(frame, action, fix_csum)` is the deparser. Table state changes only through `reg_write`, with the same semantics as the
hardware registers, so a test can drive the model and the RTL with the same writes.
"""
from dataclasses import dataclass, field

import nanobpf_ctrl_defs as CTRL_DEFS
import nanobpf_ebpf_defs as ABI

from nanobpf.soc import CID_HASH, DATAPATH, ENUMS, REGS, pack, unpack

ACTION = ENUMS["pisa_action"]
DROP = ENUMS["pisa_drop"]
QUIC = ENUMS["pisa_quic"]
CID_OP = ENUMS["pisa_cid_op"]
CID_STATUS = ENUMS["pisa_cid_status"]
COUNTER = ENUMS["pisa_counter"]
MAX_CID = 20
CTRL_ETHERTYPE = CTRL_DEFS.ETHERTYPE
SHIM_ETHERTYPE = CTRL_DEFS.SHIM_ETHERTYPE
VLAN_TPIDS = (0x8100, 0x88A8)


def be16(b, i):
    return (b[i] << 8) | b[i + 1]


def fold(s):
    """One's-complement fold of a sum of 16-bit words."""
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def word_sum(b):
    """Sum of the big-endian 16-bit words of b (odd length: padded with a zero byte)."""
    if len(b) % 2:
        b = bytes(b) + b"\0"
    return sum(be16(b, i) for i in range(0, len(b), 2))


@dataclass
class Parsed:
    """What the parser finds in a frame (the fields of the hardware's Parsed record)."""
    length: int
    drop: int = DROP["none"]
    bad: set = field(default_factory=set)  # every pisa_drop reason that applies (drop is the lowest)
    vlans: int = 0
    outer_tci: int = 0
    l3off: int = 14
    ipver: int = 0
    l4off: int = 0
    udp: bool = False
    sport: int = 0
    dport: int = 0
    ulen: int = 0
    ctrl: bool = False  # EtherType of the control protocol (hw/defs/ctrl.toml)
    shim: bool = False  # EtherType of the data-frame shim, or its shim stepped over (step_shim)
    stepped: bool = False  # the shim was stepped over
    seal: bool = False  # ingress: a stepped shim asking for sealing (ENCRYPT, CID length <= 20), headers parsed
    seal_cid_len: int = 0  # its CID length
    addr: bytes = bytes(20)  # ingress: the peer's address id (source; behind a shim the destination)

    @property
    def profile_port(self):
        """The UDP port the QUIC profile table matches: the destination port, or behind a shim the
        ingress stepped over the source port (the host's own)."""
        return self.sport if self.stepped else self.dport


def pop_tag(frame):
    """The ingress's first step (hw VlanPop): a frame whose bytes 12..15 are a whole VLAN tag (TPID
    0x8100 or 0x88A8) loses it. Returns (the frame as the pipeline carries it on, the tag's TCI or None)."""
    frame = bytes(frame)
    if len(frame) >= 16 and be16(frame, 12) in VLAN_TPIDS:
        return frame[:12] + frame[16:], be16(frame, 14)
    return frame, None


def parse(frame, max_frame, step_shim=False, ingress=False):
    """Parse Ethernet / 802.1Q x2 / IPv4 / IPv6 / UDP. Error predicates are evaluated independently
    and the lowest pisa_drop value wins, as in the hardware. step_shim: a host-link shim right after
    the MAC addresses is stepped over like a tag to find the headers behind it (then at most one VLAN
    tag follows it), and the frame counts no VLAN tag (vlans stays 0: the tag rewrite leaves such
    frames as they are); the deparser's parser (for the checksums of opened frames) and, with ingress,
    the ingress parser (the seal path's offsets) do. With ingress the parse behind the shim only
    informs: a frame whose headers there fail a check is passed on unparsed (not IP, no reason but
    too_long), and its profile port is the source port (hw Parser)."""
    b = bytes(frame) + bytes(max(0, 128 - len(frame)))  # the hardware sees zeros past the end
    n = len(frame)
    p = Parsed(length=n)
    et = be16(b, 12)
    off = 14
    trunc = n < 14
    if step_shim and et == SHIM_ETHERTYPE:
        p.stepped = True
        p.seal = ingress and b[14] == CTRL_DEFS.NANOBPF_SHIM_F_ENCRYPT and b[15] <= MAX_CID
        p.seal_cid_len = b[15] & 31
        trunc |= n < 18
        et = be16(b, 16)
        off = 18
        if et in VLAN_TPIDS:
            trunc |= n < 22
            et = be16(b, 20)
            off = 22
    for _ in range(2 if off == 14 else 0):
        if et not in VLAN_TPIDS:
            break
        trunc |= n < off + 4
        if p.vlans == 0:
            p.outer_tci = be16(b, off)
        p.vlans += 1
        et = be16(b, off + 2)
        off += 4
    p.l3off = off
    p.ctrl, p.shim = et == CTRL_ETHERTYPE and not p.stepped, et == SHIM_ETHERTYPE or p.stepped
    bad_hdr = bad_len = bad_csum = bad_udp = False
    l4len = 0
    l4at = 0   # where the UDP header is read: l4off, but for IHL < 5 the hardware's shifter reads at 20
    if et == 0x0800:
        p.ipver = 4
        ver, ihl = b[off] >> 4, b[off] & 15
        hl = ihl * 4
        trunc |= n < off + 20 or n < off + hl
        bad_hdr = ver != 4 or ihl < 5
        tot = be16(b, off + 2)
        bad_len = tot < hl or tot > n - off
        bad_csum = fold(word_sum(b[off:off + hl])) != 0xFFFF
        frag = be16(b, off + 6) & 0x3FFF
        p.udp = b[off + 9] == 17 and frag == 0
        p.l4off = off + hl
        l4at = off + max(hl, 20)
        l4len = tot - hl
    elif et == 0x86DD:
        p.ipver = 6
        trunc |= n < off + 40
        bad_hdr = b[off] >> 4 != 6
        plen = be16(b, off + 4)
        bad_len = plen > n - off - 40
        p.udp = b[off + 6] == 17
        p.l4off = l4at = off + 40
        l4len = plen
    if p.udp:
        u = l4at
        p.sport, p.dport, p.ulen = be16(b, u), be16(b, u + 2), be16(b, u + 4)
        bad_udp = l4len < 8 or p.ulen < 8 or p.ulen > l4len
    for reason, bad in (("too_long", n > max_frame), ("truncated", trunc), ("bad_ip_hdr", bad_hdr),
                        ("bad_ip_len", bad_len), ("bad_ip_csum", bad_csum), ("bad_udp_len", bad_udp)):
        if bad:
            p.bad.add(reason)
    if ingress and p.ipver:  # the peer's address id (struct nanobpf_quic_cid's id for zero-length CIDs)
        a = (b[off + 24:off + 40] if p.stepped else b[off + 8:off + 24]) if p.ipver == 6 else \
            bytes(10) + b"\xff\xff" + (b[off + 16:off + 20] if p.stepped else b[off + 12:off + 16])
        u = l4at
        src, dst = b[u:u + 2], b[u + 2:u + 4]
        p.addr = addr_id_bytes(a, dst if p.stepped else src, src if p.stepped else dst)
    if ingress and p.stepped and p.bad - {"too_long"}:  # behind the shim: unparsed, not dropped
        p.bad &= {"too_long"}
        p.ipver, p.udp, p.l4off, p.seal = 0, False, 0, False
    p.drop = min((DROP[r] for r in p.bad), default=DROP["none"])
    return p


def addr_id_bytes(address16, peer_port, local_port):
    """A peer's 20-byte address id from its 16-byte address and the two ports (2 bytes each, big-endian),
    placed as hw/defs/ebpf.toml's NANOBPF_QUIC_ADDR_* say (nanobpf.ctrl.addr_id from IP strings)."""
    out = bytearray(ABI.NANOBPF_KEYTABLE_CID_MAX)
    out[ABI.NANOBPF_QUIC_ADDR_IP_OFF:ABI.NANOBPF_QUIC_ADDR_IP_OFF + 16] = address16
    out[ABI.NANOBPF_QUIC_ADDR_PEER_PORT_OFF:ABI.NANOBPF_QUIC_ADDR_PEER_PORT_OFF + 2] = peer_port
    out[ABI.NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF:ABI.NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF + 2] = local_port
    return bytes(out)


@dataclass
class Meta:
    """Metadata the ingress pipeline attaches to a frame it forwards (hardware: PisaMeta)."""
    action: int
    port: int
    lport: int
    length: int
    vlans: int
    l3off: int
    ipver: int
    l4off: int
    udp: bool
    quic: int = QUIC["none"]
    cid_len: int = 0
    cid: bytes = bytes(MAX_CID)  # zero past cid_len; cid_len 0: the peer's address id (Parsed.addr)
    cid_hit: bool = False
    slot: int = 0
    ctrl: bool = False  # a control frame from the host (for the control core's queue)


@dataclass
class CidEntry:
    cid: bytes  # the key's bytes: the CID, or for length 0 a peer's 20-byte address id
    slot: int
    seal: bool = False  # a sealing entry's CID (matched behind the host link's shim)
    n: int = None  # the key's length (None: len(cid))

    def __post_init__(self):
        self.n = len(self.cid) if self.n is None else self.n
        if self.n == 0:
            self.cid = bytes(self.cid).ljust(MAX_CID, b"\0")


def cid_key(cid: bytes, seal: bool = False, n: int = None) -> int:
    """The CID table's hash key: CID byte i in bits 8i.. (zero past its length), the length n (default
    len(cid); 0 with cid a peer's 20-byte address id) in bits 160..164, the direction (1: a sealing
    entry's CID) in bit 165 (the hardware's CidKey, `seal ## len ## cid`)."""
    n = len(cid) if n is None else n
    return int.from_bytes(bytes(cid).ljust(MAX_CID, b"\0"), "little") | n << 8 * MAX_CID | int(seal) << 8 * MAX_CID + 5


def cid_bucket(cid: bytes, way: int, buckets: int, seal: bool = False, n: int = None) -> int:
    """Bucket of `cid` in `way`: H3 hash, bit b = parity(key & CID_HASH[way][b]) (hw/defs/soc.toml cid_hash_seed)."""
    return cid_bucket_of_key(cid_key(cid, seal, n), way, buckets)


def cid_bucket_of_key(key: int, way: int, buckets: int) -> int:
    return sum((bin(key & CID_HASH[way][b]).count("1") & 1) << b for b in range(buckets.bit_length() - 1))


def cid_collisions(cid: bytes, count: int, ways: int = DATAPATH["cid_ways"], buckets: int = DATAPATH["cid_buckets"]):
    """`count` CIDs of cid's length, other than cid, with cid's bucket in every way: what fills all of a CID's
    places in the table (for tests of a full table). The hash is linear over GF(2), so cid XOR d collides
    for every d the hash maps to 0: found by elimination over the CID's bits."""
    def image(key):
        return sum(cid_bucket_of_key(key, w, buckets) << (16 * w) for w in range(ways))
    basis, found = {}, []  # pivot bit -> (image, combination of CID bit positions)
    for j in range(8 * len(cid)):
        v, combo = image(1 << j), 1 << j
        while v:
            top = v.bit_length() - 1
            if top not in basis:
                basis[top] = (v, combo)
                break
            bv, bc = basis[top]
            v, combo = v ^ bv, combo ^ bc
        if not v:
            found.append(combo)
    # distinct non-zero XOR combinations of the null-space vectors
    out, k = [], 1
    while len(out) < count and k < 1 << len(found):
        d = 0
        for i, vec in enumerate(found):
            if k >> i & 1:
                d ^= vec
        out.append((int.from_bytes(cid, "little") ^ d).to_bytes(len(cid), "little"))
        k += 1
    if len(out) < count:
        raise ValueError(f"a {len(cid)}-byte CID has fewer than {count} colliding CIDs: use a longer one")
    return out


@dataclass
class Pisa:
    """Table state, counters and the ingress/egress behaviour of one pipeline."""
    beat_bytes: int = 8
    max_frame: int = 1522
    port_entries: int = 8
    profile_entries: int = 8
    cid_ways: int = DATAPATH["cid_ways"]
    cid_buckets: int = DATAPATH["cid_buckets"]
    regs: dict = field(default_factory=dict)
    cid_table: list = field(default_factory=list)
    counters: list = field(default_factory=lambda: [0] * REGS[("pisa", "counter")].count)
    cid_result: int = 0

    def __post_init__(self):
        assert 1 <= self.cid_ways <= len(CID_HASH) and self.cid_buckets & (self.cid_buckets - 1) == 0
        self.cid_table = [None] * self.cid_entries

    @property
    def cid_entries(self):
        return self.cid_ways * self.cid_buckets

    def cid_candidates(self, cid, seal=False, n=None):
        """The entries `cid` may occupy, in the order an insert tries them: its bucket in way 0, 1, ...
        (n: the key's length when it is not len(cid): 0 for a peer's address id)"""
        return [w * self.cid_buckets + cid_bucket(cid, w, self.cid_buckets, seal, n) for w in range(self.cid_ways)]

    def cid_find(self, cid, seal=False, n=None):
        """Index of the entry holding `cid` (of a sealing entry with seal), or None."""
        e = CidEntry(cid, 0, bool(seal), n)
        return next((i for i in self.cid_candidates(cid, seal, n)
                     if self.cid_table[i] and (self.cid_table[i].cid, self.cid_table[i].seal, self.cid_table[i].n) == (e.cid, e.seal, e.n)),
                    None)

    def cid_insert(self, cid, slot, seal=False, n=None):
        """Insert a CID that is not in the table, as the hardware does; its index, or None when refused (full).
        It takes the first free bucket in way order; when all are taken, one cuckoo move: the first occupant
        (in way order) with a free bucket in another way goes to the first such bucket, and the CID takes
        its place."""
        cands = self.cid_candidates(cid, seal, n)
        at = next((i for i in cands if self.cid_table[i] is None), None)
        if at is None:
            for w, i in enumerate(cands):
                y = self.cid_table[i]
                to = next((j for u, j in enumerate(self.cid_candidates(y.cid, y.seal, y.n)) if u != w and self.cid_table[j] is None), None)
                if to is not None:
                    self.cid_table[to], at = y, i
                    break
        if at is not None:
            self.cid_table[at] = CidEntry(cid, slot, bool(seal), n)
        return at

    # ------------------------------------------------------------------ registers
    def reg(self, name, index=0):
        return self.regs.get((name, index), 0)

    def field(self, name, index=0):
        return unpack("pisa", name, self.reg(name, index))

    def reg_write(self, name, value, index=0):
        """Apply a register write exactly as the hardware does."""
        g = REGS[("pisa", name)]
        if g.access == "ro":
            raise ValueError(f"pisa.{name} is read-only")
        value &= (1 << g.width) - 1
        if name == "counter_clear":
            if value & 1:
                self.counters = [0] * len(self.counters)
        elif name == "cid_cmd":
            self._cid_command(value & 3)
        else:
            self.regs[(name, index)] = value

    def _cid_command(self, op):
        arg = self.field("cid_arg")
        n = arg["len"]
        key = b"".join(self.reg("cid_key", i).to_bytes(8, "little") for i in range(3))[:MAX_CID]
        cid, seal = key[:n] if n else key, bool(arg["seal"])  # length 0: the 20 bytes are a peer's address id
        if op == CID_OP["nop"]:
            return
        if n > MAX_CID:
            self.cid_result = pack("pisa", "cid_result", status=CID_STATUS["bad_len"])
            return
        found = self.cid_find(cid, seal, n)
        status, index, slot = CID_STATUS["ok"], found or 0, 0
        if op == CID_OP["insert"]:
            slot = arg["slot"]
            if found is not None:
                self.cid_table[found] = CidEntry(cid, slot, seal, n)
            else:
                index = self.cid_insert(cid, slot, seal, n)
                if index is None:
                    status, index, slot = CID_STATUS["full"], 0, 0
                    self.counters[COUNTER["cid_full"]] += 1
        elif found is None:
            status = CID_STATUS["not_found"]
        elif op == CID_OP["delete"]:
            slot = self.cid_table[found].slot
            self.cid_table[found] = None
        else:
            slot = self.cid_table[found].slot
        self.cid_result = pack("pisa", "cid_result", status=status, index=index, slot=slot)

    def reg_read(self, name, index=0):
        if name == "id":
            return REGS[("pisa", "id")].reset
        if name == "params":
            return pack("pisa", "params", beat_bytes=self.beat_bytes, port_entries=self.port_entries,
                        profile_entries=self.profile_entries, cid_entries=self.cid_entries,
                        max_frame=self.max_frame)
        if name == "counter":
            return self.counters[index] & (1 << 64) - 1
        if name == "cid_result":
            return self.cid_result
        if name == "cid_used":
            return sum(e is not None for e in self.cid_table)
        if REGS[("pisa", name)].access == "wo":
            return 0
        return self.reg(name, index)

    def count(self, name, n=1):
        self.counters[COUNTER[name]] += n

    # ------------------------------------------------------------------ ingress
    def _lookup_port(self, port, tci):
        for i in range(self.port_entries):
            e = self.field("port_entry", i)
            tagged = tci is not None
            if e["valid"] and e["port"] == port and e["tagged"] == tagged and \
                    (not tagged or e["vid"] == tci & 0xFFF):
                return e["lport"]
        return None

    def _lookup_profile(self, lport, udp_port):
        for i in range(self.profile_entries):
            e = self.field("profile_entry", i)
            if e["valid"] and e["lport"] == lport and e["udp_port"] == udp_port:
                return e
        return None

    def ingress(self, frame, port):
        """One frame in: returns (action, Meta or None, drop reason); counters updated. The frame
        loses its outer VLAN tag first (pop_tag), which the port table matches; what follows sees the
        frame without it."""
        frame, tci = pop_tag(frame)
        self.count("rx_frames")
        self.count("rx_bytes", len(frame))
        p = parse(frame, self.max_frame, step_shim=True, ingress=True)
        if p.drop:
            return self._drop(p.drop)
        lport = self._lookup_port(port, tci)
        if lport is None:
            self.count("port_miss")
            return self._drop(DROP["no_lport"])
        self.count("port_hit")
        meta = Meta(action=self.field("lport_cfg", lport)["default_action"], port=port, lport=lport,
                    length=len(frame), vlans=p.vlans, l3off=p.l3off, ipver=p.ipver, l4off=p.l4off, udp=p.udp)
        if p.udp:
            prof = self._lookup_profile(lport, p.profile_port)
            self.count("profile_hit" if prof else "profile_miss")
            if prof:
                self._quic(frame, p, prof, meta)
        if meta.quic == QUIC["short"] and meta.cid_hit:
            meta.action = ACTION["to_cores"]
        if (p.ctrl or p.shim) and lport != self.field("roles")["host_lport"]:
            return self._drop(DROP["ctrl_foreign" if p.ctrl else "shim_foreign"])   # only the host link carries them
        if p.ctrl:
            meta.action, meta.ctrl = ACTION["to_cores"], True
        if meta.action == ACTION["drop"]:
            return self._drop(DROP["policy"])
        self.count({ACTION["to_host"]: "to_host", ACTION["to_network"]: "to_network",
                    ACTION["to_cores"]: "to_cores"}[meta.action])
        return meta.action, meta, DROP["none"]

    def _quic(self, frame, p, prof, meta):
        q = p.l4off + 8
        avail = p.ulen - 8
        if avail < 1:
            return
        if frame[q] & 0x80:
            if avail < 6 or frame[q + 5] > MAX_CID or avail < 6 + frame[q + 5]:
                return
            meta.quic, n, start = QUIC["long"], frame[q + 5], q + 6
        else:
            n = p.seal_cid_len if p.seal else prof["short_cid_len"]  # a frame to seal: its shim's length
            if n > MAX_CID or avail < 1 + n:
                return
            meta.quic, start = QUIC["short"], q + 1
        meta.cid_len = n
        # a zero-length CID: the peer's address id (the key table's name for such a peer) is the key
        meta.cid = frame[start:start + n] + bytes(MAX_CID - n) if n else p.addr
        # behind the shim: the sealing entries
        at = self.cid_find(frame[start:start + n] if n else p.addr, p.seal, n)
        hit = None if at is None else self.cid_table[at]
        self.count("cid_hit" if hit else "cid_miss")
        if hit:
            meta.cid_hit, meta.slot = True, hit.slot

    def _drop(self, reason):
        self.count("dropped")
        self.count("drop_" + next(k for k, v in DROP.items() if v == reason))
        return ACTION["drop"], None, reason

    # ------------------------------------------------------------------ egress (deparser)
    def egress(self, frame, action, fix_csum, fix_len=False):
        """One frame to the deparser: returns (bytes, egress port), or None when it is dropped. fix_len
        (pkt_comp.fix_len): its IP and UDP lengths set from its end first, then its checksums fixed."""
        frame = bytearray(frame)
        p = parse(frame, self.max_frame, step_shim=True)
        roles = self.field("roles")
        malformed = action not in (ACTION["to_host"], ACTION["to_network"]) or p.drop == DROP["too_long"] or len(frame) < 14
        if malformed or (action == ACTION["to_network"] and p.shim):   # the host link's shim never goes on the wire
            self.count("tx_dropped")
            if not malformed:
                self.count("tx_shim")
            return None
        lport = roles["host_lport"] if action == ACTION["to_host"] else roles["network_lport"]
        cfg = self.field("lport_cfg", lport)
        if fix_len:
            p = set_lengths(frame, p, self.max_frame)
        if fix_csum or fix_len:
            fix_checksums(frame, p)
        if cfg["egress_tagged"]:   # the port's tag; one the frame carries (inner, or a program's) stays behind it
            frame[12:12] = b"\x81\x00" + cfg["egress_vid"].to_bytes(2, "big")
        self.count("tx_frames")
        self.count("tx_bytes", len(frame))
        return bytes(frame), cfg["egress_port"]


def fix_frame_checksums(frame, fix_len=False):
    """What the deparser does to a frame whose completion has fix_csum (or fix_len: set_lengths first),
    in place: its headers found as the deparser's parser finds them (behind the host link's shim too),
    then fix_checksums."""
    p = parse(frame, len(frame), step_shim=True)
    if fix_len:
        p = set_lengths(frame, p, len(frame))
    fix_checksums(frame, p)


def set_lengths(frame, p, max_frame):
    """pkt_comp.fix_len, in place: the IP length (IPv4 total length, IPv6 payload length) and the UDP
    length set so that the datagram ends where the frame ends, each where the headers parse with it
    set (as the deparser's parser sees the frame); returns the parse of the frame after."""
    o, n = p.l3off, len(frame)
    if p.ipver not in (4, 6) or p.bad & {"truncated", "bad_ip_hdr"}:
        return p
    at = o + 2 if p.ipver == 4 else o + 4
    frame[at:at + 2] = ((n - o - (0 if p.ipver == 4 else 40)) & 0xFFFF).to_bytes(2, "big")
    p = parse(frame, max_frame, step_shim=True)
    if not p.udp:
        return p
    u, old = p.l4off, bytes(frame[p.l4off + 4:p.l4off + 6])
    frame[u + 4:u + 6] = ((n - u) & 0xFFFF).to_bytes(2, "big")
    q = parse(frame, max_frame, step_shim=True)
    if q.bad & {"truncated", "bad_ip_hdr", "bad_ip_len", "bad_udp_len"}:
        frame[u + 4:u + 6] = old   # the UDP header does not parse even so: left as it was
        return p
    return q


def fix_checksums(frame, p):
    """Recompute the IPv4 header checksum and the UDP checksum in place, where the headers parse."""
    o = p.l3off
    if p.ipver == 4 and not p.bad & {"truncated", "bad_ip_hdr"}:
        hl = (frame[o] & 15) * 4
        frame[o + 10:o + 12] = b"\0\0"
        frame[o + 10:o + 12] = (~fold(word_sum(frame[o:o + hl])) & 0xFFFF).to_bytes(2, "big")
    if p.udp and not p.bad & {"truncated", "bad_ip_hdr", "bad_ip_len", "bad_udp_len"}:
        u = p.l4off
        if p.ipver == 4:
            pseudo = word_sum(frame[o + 12:o + 20]) + 17 + p.ulen
        else:
            pseudo = word_sum(frame[o + 8:o + 40]) + 17 + p.ulen
        frame[u + 6:u + 8] = b"\0\0"
        c = ~fold(pseudo + word_sum(frame[u:u + p.ulen])) & 0xFFFF
        frame[u + 6:u + 8] = (c or 0xFFFF).to_bytes(2, "big")


def xdp_parse(meta):
    """What a program at the device gets of PISA's parse of a frame: the context fields past xdp_md
    (ebpf abi struct nanobpf_xdp_ctx) as (l3_off, l4_off, quic_off, pn_off, cid_len, conn), 0 where
    PISA found nothing. The firmware derives the same from the descriptor and pkt.slot_meta
    (firmware/apps/dpu/dpu.c parse_result); the wire tests compare the two."""
    if meta is None or meta.ipver not in (4, 6):
        return (0, 0, 0, 0, 0, 0)
    if not meta.udp:
        return (meta.l3off, 0, 0, 0, 0, 0)
    if meta.quic == QUIC["none"]:
        return (meta.l3off, meta.l4off, 0, 0, 0, 0)
    q = meta.l4off + 8
    pn = q + 1 + meta.cid_len if meta.quic == QUIC["short"] else 0
    return (meta.l3off, meta.l4off, q, pn, meta.cid_len, 1 + meta.slot if meta.cid_hit else 0)


def default_tables(pisa):
    """The tables the data-plane firmware (firmware/apps/dpu) writes at boot: untagged frames of the host
    and network physical ports are the host and network logical ports, and every frame that parses goes
    to the cores, where the program decides (as in the device model)."""
    from nanobpf.soc import DATAPATH as D
    for i, (port, lport) in enumerate(((D["host_port"], D["host_lport"]), (D["net_port"], D["net_lport"]))):
        pisa.reg_write("port_entry", pack("pisa", "port_entry", valid=1, port=port, lport=lport), i)
        pisa.reg_write("lport_cfg", pack("pisa", "lport_cfg", default_action=ACTION["to_cores"], egress_port=port), lport)
    pisa.reg_write("roles", pack("pisa", "roles", host_lport=D["host_lport"], network_lport=D["net_lport"]))
    return pisa
