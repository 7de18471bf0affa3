"""Shared pieces of the PISA cocotb tests (sim/cocotb/pisa*/): AXI4-Stream drivers for the
pipeline's Chisel ports, a scapy traffic generator and the register programming used by the model
(nanobpf.models.pisa) and the RTL alike."""
import random
import struct

import nanobpf_ctrl_defs as CTRL_DEFS

from cocotb.triggers import ReadOnly, RisingEdge
from cocotb.utils import get_sim_time
from scapy.all import ARP, IP, TCP, UDP, Dot1Q, Ether, IPv6, IPv6ExtHdrRouting, Raw

from nanobpf.models.pisa import ACTION, CID_OP
from nanobpf.soc import REGIONS, pack, reg_offset

PISA_BASE = REGIONS["pisa"].base


def sig(dut, name):
    return getattr(dut, name)


class StreamSource:
    """Drives `<prefix>_valid/_bits_beat_{data,keep,last}` and side-band fields `<prefix>_bits_user*`."""

    def __init__(self, dut, prefix, beat_bytes, rng=None, idle=0.0, beat="_bits_beat"):
        self.dut, self.p, self.w, self.rng, self.idle = dut, prefix, beat_bytes, rng or random.Random(1), idle
        self.b = beat  # the beat's fields are <prefix><beat>_data/_keep/_last
        sig(dut, f"{prefix}_valid").value = 0
        self.beats = 0
        self.times = []  # per frame: sim time (ns) of the edges taking its first and last beat

    async def send(self, frame, side=None, last_side=None, **user):
        """`user`: <prefix>_bits_user_<k> on every beat; `side`: {signal suffix: value} on every beat,
        `last_side` on the last beat only (0 on the others)."""
        d, p, w, b = self.dut, self.p, self.w, self.b
        chunks = [frame[i:i + w] for i in range(0, len(frame), w)] or [b""]
        for i, c in enumerate(chunks):
            while self.idle and self.rng.random() < self.idle:
                sig(d, f"{p}_valid").value = 0
                await RisingEdge(d.clock)
            sig(d, f"{p}_valid").value = 1
            sig(d, f"{p}{b}_data").value = int.from_bytes(c.ljust(w, b"\0"), "little")
            sig(d, f"{p}{b}_keep").value = (1 << len(c)) - 1
            sig(d, f"{p}{b}_last").value = int(i == len(chunks) - 1)
            for k, v in (side or {}).items():
                sig(d, f"{p}{k}").value = int(v)
            for k, v in (last_side or {}).items():
                sig(d, f"{p}{k}").value = int(v) if i == len(chunks) - 1 else 0
            for k, v in user.items():
                sig(d, f"{p}_bits_user{'_' + k if k else ''}").value = int(v)
            while True:
                await ReadOnly()
                ready = sig(d, f"{p}_ready").value == 1
                await RisingEdge(d.clock)
                if ready:
                    break
            if i == 0:
                t0 = get_sim_time("ns")
            self.beats += 1
        self.times.append((t0, get_sim_time("ns")))
        sig(d, f"{p}_valid").value = 0


class StreamSink:
    """Collects frames from `<prefix>_valid/_ready/_bits_beat_*`, with random back-pressure; `fields`
    are side-band signals sampled on each frame's first beat, checked constant over the frame."""

    def __init__(self, dut, prefix, beat_bytes, fields=(), rng=None, ready_prob=1.0, beat="_bits_beat"):
        self.dut, self.p, self.w, self.fields, self.b = dut, prefix, beat_bytes, fields, beat
        self.rng, self.ready_prob = rng or random.Random(2), ready_prob
        self.frames = []  # (bytes, {field: value}, sim time (ns) of the edges taking first and last beat)
        self.stalls_inside = 0  # cycles with valid low inside a frame (bubbles)

    async def run(self):
        d, p = self.dut, self.p
        cur, side, t0 = bytearray(), None, 0
        while True:
            sig(d, f"{p}_ready").value = int(self.rng.random() < self.ready_prob)
            await ReadOnly()
            if sig(d, f"{p}_valid").value == 1 and sig(d, f"{p}_ready").value == 1:
                keep = int(sig(d, f"{p}{self.b}_keep").value)
                n = bin(keep).count("1")
                assert keep == (1 << n) - 1, f"{p}: keep 0x{keep:x} is not contiguous"
                data = int(sig(d, f"{p}{self.b}_data").value).to_bytes(self.w, "little")
                now = {f: int(sig(d, f"{p}_bits_{f}").value) for f in self.fields}
                if not cur:
                    side, t0 = now, get_sim_time("ns") + 10  # the edge that takes the beat
                else:
                    assert now == side, f"{p}: side-band changed inside a frame: {side} -> {now}"
                last = sig(d, f"{p}{self.b}_last").value == 1
                assert last or n == self.w, f"{p}: partial beat before the last"
                cur += data[:n]
                if last:
                    self.frames.append((bytes(cur), side, t0, get_sim_time("ns") + 10))
                    cur = bytearray()
            elif cur and sig(d, f"{p}_ready").value == 1:
                self.stalls_inside += 1
            await RisingEdge(d.clock)


class Regs:
    """Register writes applied to the RTL (over its bus port) and to the model together."""

    def __init__(self, bus, model):
        self.bus, self.model = bus, model

    async def write(self, name, value, index=0):
        rdata, err, _, _ = await self.bus.access(reg_offset("pisa", name, index), write=True, wdata=value)
        assert not err, f"write pisa.{name}[{index}] refused"
        self.model.reg_write(name, value, index)

    async def read(self, name, index=0):
        rdata, err, _, _ = await self.bus.access(reg_offset("pisa", name, index))
        assert not err, f"read pisa.{name}[{index}] refused"
        return rdata

    async def put(self, name, index=0, **fields):
        await self.write(name, pack("pisa", name, **fields), index)

    async def cid(self, op, cid=b"", slot=0, seal=False, n=None):
        """Run one CID table command (seal: on a sealing entry's CID; n=0 with a peer's 20-byte address id
        as cid); returns cid_result as read from the RTL (checked against the model)."""
        key = bytes(cid).ljust(24, b"\0")
        for i in range(3):
            await self.write("cid_key", int.from_bytes(key[8 * i:8 * i + 8], "little"), i)
        await self.put("cid_arg", len=len(cid) if n is None else n, seal=int(seal), slot=slot)
        await self.write("cid_cmd", pack("pisa", "cid_cmd", op=CID_OP[op]))
        while (r := await self.read("cid_result")) & 1:
            pass
        assert r == self.model.reg_read("cid_result"), \
            f"cid {op} {cid.hex()}: cid_result 0x{r:x}, model 0x{self.model.reg_read('cid_result'):x}"
        return r

    async def check_counters(self):
        for i in range(len(self.model.counters)):
            got = await self.read("counter", i)
            assert got == self.model.reg_read("counter", i), \
                f"counter[{i}]: RTL {got}, model {self.model.reg_read('counter', i)}"


async def model_for(bus, beat_bytes):
    """The model of the pipeline behind `bus`, with the CID table's geometry read from its params register
    (the builds differ: the wide test build has a small table)."""
    from nanobpf.models.pisa import Pisa
    from nanobpf.soc import DATAPATH, reg_offset, unpack
    rdata, err, _, _ = await bus.access(reg_offset("pisa", "params"))
    assert not err, "read pisa.params refused"
    entries = unpack("pisa", "params", rdata)["cid_entries"]
    assert entries % DATAPATH["cid_ways"] == 0, f"CID table of {entries} entries: not {DATAPATH['cid_ways']} ways"
    return Pisa(beat_bytes=beat_bytes, cid_buckets=entries // DATAPATH["cid_ways"])


# ---------------------------------------------------------------------------- configuration
HOST, NET = 0, 1          # logical ports
HOST_VID, NET_VID = 10, 20
QUIC_PORT = 443
SHORT_CID = 8


async def program_default(regs):
    """One-arm set-up: physical port 0 carries VLAN 10 (host) and VLAN 20 (network); port 1 untagged
    is the network too, port 3 untagged the host too (a two-port host link, where frames to seal
    arrive with the shim right after the MAC addresses). UDP 443 is QUIC with 8-byte short-header CIDs
    on both logical ports (on the host's, the source port of a frame behind the shim)."""
    await regs.put("roles", host_lport=HOST, network_lport=NET)
    await regs.put("lport_cfg", HOST, default_action=ACTION["to_network"], egress_port=0, egress_tagged=1,
                   egress_vid=NET_VID)
    await regs.put("lport_cfg", NET, default_action=ACTION["to_host"], egress_port=0, egress_tagged=1,
                   egress_vid=HOST_VID)
    await regs.put("lport_cfg", 2, default_action=ACTION["drop"], egress_port=2, egress_tagged=0)
    await regs.put("port_entry", 0, valid=1, port=0, tagged=1, vid=HOST_VID, lport=HOST)
    await regs.put("port_entry", 1, valid=1, port=0, tagged=1, vid=NET_VID, lport=NET)
    await regs.put("port_entry", 2, valid=1, port=1, tagged=0, lport=NET)
    await regs.put("port_entry", 3, valid=1, port=2, tagged=0, lport=2)
    await regs.put("port_entry", 4, valid=1, port=3, tagged=0, lport=HOST)
    await regs.put("profile_entry", 0, valid=1, lport=NET, udp_port=QUIC_PORT, short_cid_len=SHORT_CID)
    await regs.put("profile_entry", 1, valid=1, lport=HOST, udp_port=QUIC_PORT, short_cid_len=SHORT_CID)


# ---------------------------------------------------------------------------- traffic
def quic_payload(rng, cid, long=False):
    if long:
        return bytes([0xC0 | rng.randrange(16)]) + b"\0\0\0\1" + bytes([len(cid)]) + cid + b"\x08" + bytes(8)
    return bytes([0x40 | rng.randrange(64)]) + cid


class Traffic:
    """Random frames of the kinds the issue lists; `cids` are CIDs the test knows about."""

    def __init__(self, rng, cids, max_frame=1522, seal_cids=()):
        self.rng, self.cids, self.max_frame, self.seal_cids = rng, cids, max_frame, list(seal_cids)

    def frame(self, size=None):
        r = self.rng
        kind = r.choice(["quic_short", "quic_short", "quic_long", "udp", "tcp", "arp", "quic_short", "ctrl", "shim",
                         "seal", "seal"])
        tags = r.choice([[HOST_VID], [NET_VID], [NET_VID], [], [NET_VID, 7], [99]])
        if kind == "seal":  # mostly the two-port host link's (below) or the one-arm host VLAN's
            x = r.random()
            tags = [] if x < 0.5 else [HOST_VID] if x < 0.8 else tags
        port = 1 if not tags else 0
        if r.random() < 0.05:
            port = r.randrange(4)
        eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        for v in tags:
            eth = eth / Dot1Q(vlan=v, prio=r.randrange(8))
        v6 = r.random() < 0.3
        known = self.seal_cids if kind == "seal" and self.seal_cids else self.cids  # frames to seal: sealing entries'
        cid = r.choice(known) if known and r.random() < 0.8 else r.randbytes(SHORT_CID)
        ip = IPv6(src="2001:db8::1", dst="2001:db8::2") if v6 else \
            IP(src="192.0.2.1", dst="198.51.100.2", id=r.randrange(65536),
               options=[] if r.random() < 0.8 else b"\x01" * (4 * r.randrange(1, 11)))
        if kind == "arp":
            pkt = eth / ARP(psrc="192.0.2.1", pdst="192.0.2.2")
        elif kind in ("ctrl", "shim"):   # host-link only: to the cores from the host, dropped elsewhere
            eth.lastlayer().type = CTRL_DEFS.ETHERTYPE if kind == "ctrl" else CTRL_DEFS.SHIM_ETHERTYPE
            pkt = eth / Raw(r.randbytes(r.randrange(2, 100)))
        elif kind == "tcp":
            pkt = eth / ip / TCP(sport=r.randrange(1024, 65536), dport=QUIC_PORT)
        else:
            dport = QUIC_PORT if kind.startswith("quic") or r.random() < 0.2 else r.randrange(1024, 65536)
            sport = r.randrange(1024, 65536)
            if kind == "seal":  # from the host's QUIC port, mostly; the shim goes in below
                sport, dport = QUIC_PORT if r.random() < 0.8 else sport, dport if r.random() < 0.2 else sport
            if kind in ("quic_short", "seal"):
                body = quic_payload(r, cid)
            elif kind == "quic_long":
                body = quic_payload(r, r.randbytes(r.randrange(0, 21)), long=True)
            else:
                body = r.randbytes(r.randrange(0, 20))
            pkt = eth / ip / UDP(sport=sport, dport=dport) / Raw(body)
            if v6 and r.random() < 0.1:  # an extension header: the parser passes it by
                pkt = eth / IPv6(src="2001:db8::1", dst="2001:db8::2") / IPv6ExtHdrRouting() / UDP(dport=dport) / Raw(body)
        raw = bytes(pkt)
        target = size or r.choice([64, 65, 70, 128, 200, 511, 512, 1000, 1400, 1518, r.randrange(64, 1519)])
        if len(raw) < target:
            pkt = pkt / Raw(r.randbytes(target - len(raw))) if kind not in ("arp", "ctrl", "shim") else pkt
            raw = bytes(pkt)
            if len(raw) < target:
                raw += bytes(target - len(raw))  # Ethernet padding
        if kind == "seal":  # a frame to seal: the shim after the MAC addresses, or after the outer tag
            # (a one-arm host VLAN's order: the ingress takes that tag off first); its CID length, mostly
            # the CID's own (a sealing entry's CID is then looked up); now and then other flags
            n = len(cid) if r.random() < 0.7 else r.randrange(24)
            flags = CTRL_DEFS.NANOBPF_SHIM_F_ENCRYPT if r.random() < 0.9 else r.randrange(4)
            at = 16 if tags == [HOST_VID] or (tags and r.random() < 0.5) else 12
            raw = raw[:at] + struct.pack(">HBB", CTRL_DEFS.SHIM_ETHERTYPE, flags, n) + raw[at:]
            if not tags and r.random() < 0.8:
                port = 3  # the two-port host link; else the network's port, where a shim is dropped
        return raw, port

    def malformed(self, frame):
        """A damaged copy of a frame: truncated, a wrong length or checksum, bad IHL/version, or jumbo."""
        r = self.rng
        f = bytearray(frame)
        how = r.choice(["cut", "cut", "byte", "len", "jumbo"])
        if how == "cut":
            return bytes(f[:r.randrange(1, len(f))])
        if how == "jumbo":
            return bytes(f) + r.randbytes(self.max_frame + 1 - len(f) + r.randrange(0, 3000))
        i = r.randrange(12, min(len(f), 70))
        if how == "len":
            i = r.choice([16, 17, 18, 21, 22, 38, 39, 42, 43])
            i = min(i, len(f) - 1)
        f[i] ^= 1 << r.randrange(8)
        return bytes(f)
