"""XDP programs written the way people write them for Linux (tests/ebpf/compat/: xdp-tutorial,
xdp-tools, kernel samples/bpf, Katran-style load balancing; one feature each, named in each file's
header) run three ways over the same frames: the device runtime's interpreter ("interp"), its RV64 JIT
under qemu-riscv64 ("jit"), both through nanobpf.ebpf.device, and the host kernel with
BPF_PROG_TEST_RUN ("linux", nanobpf.ebpf.linux). Every backend must give the same action and the same
output bytes for every frame and the same map contents afterwards (per-CPU values summed; ifindexes,
which differ, compared as the ports they stand for: DEVMAP values and maps keyed by ifindex).

One file on purpose (about 1,000 lines): the cases are a table (program, frames, maps, what it must
do) that the three backends share; linux_compat.py holds the machinery.

The oracle is Linux, and each case also checks what its program must do, computed here from the
frames (actions, rewritten headers and checksums, counters), so a fault shared by every backend fails
too. test_backend[CASE-BACKEND] runs those checks on one backend, test_backends_agree[CASE] compares
the backends. Frames: IPv4 (options, TTL 1, fragments, ICMP), IPv6, 802.1Q and QinQ, TCP, UDP (with
and without checksum), ARP, another EtherType, and frames cut inside every header.

Ports: on the device ifindex 1 is the host link and 2 the network (NANOBPF_IFINDEX_*). In Linux a
test run's ingress device and a DEVMAP's values must exist in the network namespace: port 1 is lo and
port 2 the first other device (each side's maps get the ifindexes it accepts). Linux is skipped with
the reason where this process cannot load BPF programs; the JIT where qemu-riscv64 is missing.
Needs `make ebpf-tools`. Refused programs: test_linux_compat_refused.py."""
import os
import struct
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable

import pytest
from scapy.all import TCP, UDP, Ether

import nanobpf_ebpf_defs as abi
from nanobpf import ROOT
from nanobpf.ebpf import linux
from nanobpf.ebpf.loader import load, parse_image
from nanobpf.pcap import inet_checksum

from linux_compat import (BACKENDS, COMPAT, HOST, M32, NET, V4_DST, XDP_ABORTED, XDP_DROP, XDP_PASS,  # noqa: F401
                          XDP_REDIRECT, XDP_TX, Check, Pkt, Session, array, available, build, describe,
                          linux_ports, mac, payload, pin_base, standard_frames, sum_percpu, u32, u64s, v4, v6)


# ---------------------------------------------------------------- the cases
@dataclass
class Case:
    name: str
    src: str
    steps: Callable
    check: Callable
    program: str = None
    section: str = None
    map_sizes: dict = None
    pinned: bool = False          # declares LIBBPF_PIN_BY_NAME maps (Linux needs a bpffs)
    two_ports: bool = False       # Linux needs a device besides lo
    ifindex_keyed: tuple = ()     # maps keyed by ifindex: compared by port (DEVMAP values always are)
    device_only_maps: tuple = ()  # compared between interpreter and JIT only (LRU eviction differs)
    parse_in_meta: bool = False   # reads data_meta: the device puts its (here empty) parse result there


# ---- xdp_stats1.c / xdp_sections.c: old-style sections, pinned per-CPU statistics
def stats_steps(s):
    s.run_all(standard_frames())


def stats_check(action_of):
    def check(s):
        c = Check(s)
        recs = [[0, 0] for _ in range(5)]
        for r in s.runs:
            want = action_of(Pkt(r.frame))
            c.action(r, want)
            c.unchanged(r)
            recs[want][0] += 1
            recs[want][1] += len(r.frame)
        c.map("xdp_stats_map", array([u64s(*rec) for rec in recs]))
        return c
    return check


# ---- xdp_port_filter.c: BPF_F_NO_PREALLOC hash, BPF_F_MMAPABLE array
RULES = {(17, 53): 1, (6, 80): 0, (17, 5353): 0, (6, 443): 1}  # (proto, port): RULE_DROP or pass


def port_key(proto, port):
    return struct.pack("<BBH", proto, 0, port)


def port_filter_steps(s):
    for (proto, port), flags in RULES.items():
        s.update("port_rules", port_key(proto, port), struct.pack("<IIQ", flags, 0, 0))
    s.run_all(standard_frames())


def port_filter_check(s):
    c = Check(s)
    stats, hits = [0] * 5, {k: 0 for k in RULES}
    PASSED, DROPPED, NO_RULE, NOT_IP, MALFORMED = range(5)
    for r in s.runs:
        p = Pkt(r.frame)
        if p.trunc or (p.ip == 4 and (p.ihl < 5 or p.l4 > p.len)):
            want, stat = XDP_DROP, MALFORMED
        elif p.ip is None:
            want, stat = XDP_PASS, NOT_IP
        elif p.proto not in (6, 17):
            want, stat = XDP_PASS, NO_RULE
        elif not p.has(20 if p.proto == 6 else 8):
            want, stat = XDP_DROP, MALFORMED
        elif (p.proto, p.dport) not in RULES:
            want, stat = XDP_PASS, NO_RULE
        else:
            hits[(p.proto, p.dport)] += 1
            drop = RULES[(p.proto, p.dport)] & 1
            want, stat = (XDP_DROP, DROPPED) if drop else (XDP_PASS, PASSED)
        stats[stat] += 1
        c.action(r, want)
        c.unchanged(r)
    c.map("filter_stats", array(stats))
    c.map("port_rules", {port_key(*k): struct.pack("<IIQ", f, 0, hits[k]) for k, f in RULES.items()})
    return c


# ---- xdp_lru_flows.c: LRU hash with eviction
LRU_SIZE = 8


def lru_frames():
    out = []
    for i in range(24):  # three times the table: evictions
        l4 = UDP(sport=1000 + i, dport=53) / payload(i, i) if i % 3 else TCP(sport=1000 + i, dport=80, flags="S")
        out.append((f"flow{i}", v4(l4, src=f"10.0.{i % 4}.{i + 1}") if i % 2 else v6(l4, src=f"2001:db8::{i + 1:x}")))
    last = out[-1]
    out += [(f"{last[0]}-again{k}", last[1]) for k in range(3)]
    return out


def flow_key(f):
    p = Pkt(f, max_vlans=0)
    def addr(a):
        return a if p.ip == 6 else bytes(10) + b"\xff\xff" + a
    ports = (p.sport, p.dport) if p.proto in (6, 17) else (0, 0)
    return addr(p.src) + addr(p.dst) + struct.pack("<HHB3x", *ports, p.proto)


def lru_steps(s):
    s.run_all(standard_frames())
    s.run_all(lru_frames())


def lru_check(s):
    """What is deterministic with any LRU policy: at most max_entries entries; the flow inserted last,
    and hit three times after, is there with all four packets; every entry counts the packets of its
    flow since some insert (a suffix of the flow's frames)."""
    c = Check(s)
    for r in s.runs:
        c.action(r, XDP_PASS)
        c.unchanged(r)
    flows = s.maps["flows"]
    c.expect(len(flows) <= LRU_SIZE, f"flows holds {len(flows)} entries, max_entries is {LRU_SIZE}")
    c.expect(s.sizes["flows"] == LRU_SIZE, f"flows: max_entries {s.sizes['flows']}")
    last = lru_frames()[-1][1]
    want_last = u64s(4, 4 * len(last))
    c.expect(flows.get(flow_key(last)) == want_last,
             f"the most recent flow: {flows.get(flow_key(last), b'').hex() or 'missing'}, expected {want_last.hex()}")
    seen = {}
    for r in s.runs:
        p = Pkt(r.frame, max_vlans=0)
        if p.ip is None or (p.ip == 4 and p.ihl < 5) or (p.proto in (6, 17) and not p.has(4)):
            continue
        seen.setdefault(flow_key(r.frame), []).append(len(r.frame))
    for k, v in flows.items():
        lens = seen.get(k)
        suffixes = {u64s(n, sum(lens[-n:])) for n in range(1, len(lens) + 1)} if lens else set()
        c.expect(v in suffixes, f"flows entry {k.hex()}: {v.hex()} is not a count of its flow's last frames")
    return c


# ---- xdp_proto_bytes.c: PERCPU_HASH
def proto_steps(s):
    s.run_all(standard_frames())


def proto_check(s):
    c = Check(s)
    want = {}
    for r in s.runs:
        p = Pkt(r.frame)
        if p.trunc == "vlan":
            c.action(r, XDP_DROP)
            continue
        c.action(r, XDP_PASS)
        c.unchanged(r)
        key = struct.pack("<HBB", p.eth_type, p.proto or 0, len(p.vlans))
        n, b = struct.unpack("<QQ", want.get(key, bytes(16)))
        want[key] = u64s(n + 1, b + len(r.frame))
    c.map("proto_bytes", want)
    return c


# ---- xdp_locked_counters.c: bpf_spin_lock in a HASH value
def locked_steps(s):
    s.run_all(standard_frames())


def locked_check(s):
    c = Check(s)
    want = {}
    for r in s.runs:
        if len(r.frame) < 14:
            c.action(r, XDP_DROP)
            continue
        c.action(r, XDP_PASS)
        c.unchanged(r)
        key = struct.pack("<I", Pkt(r.frame, max_vlans=0).eth_type)
        n, _lock, _last, b = struct.unpack("<QIIQ", want.get(key, bytes(24)))
        want[key] = struct.pack("<QIIQ", n + 1, 0, len(r.frame), b + len(r.frame))  # the lock reads free
    c.map("flow_stats", want)
    return c


# ---- xdp_src_lru_percpu.c: LRU_PERCPU_HASH (no eviction) and a block list
BLOCKED_V4, BLOCKED_V6 = "10.9.9.9", "2001:db8::666"


def src_key(p):
    return p.src if p.ip == 6 else bytes(10) + b"\xff\xff" + p.src


def src_steps(s):
    for f in (v4(UDP(), src=BLOCKED_V4), v6(UDP(), src=BLOCKED_V6)):
        s.update("blocked_srcs", src_key(Pkt(f)), b"\x01")
    frames = standard_frames()
    for i in range(3):
        frames.append((f"blocked-v4-{i}", v4(UDP(sport=i, dport=53) / payload(i), src=BLOCKED_V4)))
        frames.append((f"blocked-v6-{i}", v6(TCP(sport=i, dport=80), src=BLOCKED_V6)))
        frames.append((f"other-v4-{i}", v4(UDP(sport=i, dport=53), src=f"192.0.2.{i + 1}")))
    s.run_all(frames)


def src_check(s):
    c = Check(s)
    blocked = {Pkt(v4(UDP(), src=BLOCKED_V4)).src, Pkt(v6(UDP(), src=BLOCKED_V6)).src}
    want = {}
    for r in s.runs:
        p = Pkt(r.frame, max_vlans=0)
        drop = p.ip is not None and p.src in blocked
        c.action(r, XDP_DROP if drop else XDP_PASS)
        c.unchanged(r)
        if p.ip is None:
            continue
        k = src_key(p)
        n, b, d = struct.unpack("<QQQ", want.get(k, bytes(24)))
        want[k] = u64s(n + 1, b + len(r.frame), d + drop)
    c.map("top_talkers", want)
    return c


# ---- xdp_redirect_devmap.c: DEVMAP of struct bpf_devmap_val, XDP_PASS on a miss
DEVMAP_SLOTS = {0: HOST, 5: NET}  # VLAN id % 8 -> port; slot 3 has none


def swap_macs(f):
    return f[6:12] + f[0:6] + f[12:]


def devmap_frames():
    return standard_frames() + [
        ("vlan13-v4-udp", v4(UDP(dport=53), vlans=(13,))),  # slot 5
        ("vlan4091-v4", v4(UDP(dport=9), vlans=(4091,))),    # slot 3: empty
    ]


def devmap_steps(s):
    for slot, port in DEVMAP_SLOTS.items():
        s.update("tx_port", u32(slot), struct.pack("<Ii", s.ifindex(port), 0))
    s.run_all(devmap_frames())


def devmap_check(s):
    c = Check(s)
    cnt = [0] * 16
    for r in s.runs:
        tpid = int.from_bytes(r.frame[12:14], "big")
        if tpid == 0x8100 and len(r.frame) < 18:
            c.action(r, XDP_DROP)
            continue
        slot = (int.from_bytes(r.frame[14:16], "big") & 0xfff) % 8 if tpid == 0x8100 else 0
        if slot in DEVMAP_SLOTS:
            c.action(r, XDP_REDIRECT)
            c.redirect(r, DEVMAP_SLOTS[slot])
            c.out(r, swap_macs(r.frame))
            cnt[slot] += 1
        else:
            c.action(r, XDP_PASS)
            c.unchanged(r)
            cnt[8 + slot] += 1
    c.map("rxcnt", array(cnt))
    c.map("tx_port", {u32(slot): struct.pack("<ii", port, 0) for slot, port in DEVMAP_SLOTS.items()})
    c.expect(cnt[5] and cnt[0] and cnt[8 + 3], f"the frames do not cover hit, other port and miss: {cnt}")
    return c


# ---- xdp_l2fwd_devmap_hash.c: DEVMAP_HASH keyed by ingress ifindex, XDP_DROP on a miss
def l2fwd_steps(s):
    for a, b in ((HOST, NET), (NET, HOST)):
        s.update("fwd_ports", u32(s.ifindex(a)), u32(s.ifindex(b)))
        s.update("fwd_stats", u32(s.ifindex(a)), bytes(16))
    frames = standard_frames()
    s.run_all(frames[:6], HOST)
    s.run_all(frames, NET)
    assert s.delete("fwd_ports", u32(s.ifindex(NET)))
    s.run_all([(label + "-unpaired", f) for label, f in frames[:4]], NET)


def l2fwd_check(s):
    c = Check(s)
    stats = {HOST: [0, 0], NET: [0, 0]}
    for r in s.runs:
        c.unchanged(r)
        if r.label.endswith("-unpaired"):
            c.action(r, XDP_DROP)
            continue
        c.action(r, XDP_REDIRECT)
        c.redirect(r, NET if r.port == HOST else HOST)
        stats[r.port][0] += 1
        stats[r.port][1] += len(r.frame)
    c.map("fwd_stats", {struct.pack("<i", p): u64s(*v) for p, v in stats.items()})
    c.map("fwd_ports", {struct.pack("<i", HOST): struct.pack("<i", NET)})  # NET's pair deleted
    return c


# ---- xdp_router_csum_diff.c / xdp_router_incremental.c
NH_MAC_DST, NH_MAC_SRC = "02:00:00:00:01:fe", "02:00:00:00:01:01"


def router_frames():
    out = standard_frames()
    for i, (ttl, tos, ident) in enumerate(((2, 0, 0), (255, 0xb8, 0xffff), (64, 0x04, 0x1234), (128, 0xfc, 0xfffe),
                                           (3, 0, 0xbeef))):
        out.append((f"v4-routed-{i}", v4(UDP(sport=i, dport=1) / payload(i * 7, i), ttl=ttl, tos=tos, id=ident)))
    out += [
        ("v4-unrouted", v4(UDP(dport=53), dst="10.0.9.9")),
        ("v4-other-prefix", v4(TCP(dport=80), dst="10.0.2.77")),
        ("v4-options-ttl9", v4(UDP(dport=53), ttl=9, options=b"\x94\x04\x00\x00")),
        ("v6-routed-hlim2", v6(UDP(dport=53), hlim=2)),
        ("v6-unrouted", v6(UDP(dport=53), dst="2001:db8:9::9")),
    ]
    return out


def route_value(port):
    return mac(NH_MAC_DST) + mac(NH_MAC_SRC) + u32(port)


def routed(f, p):
    """f after a router: next hop's MACs, TTL/hop limit - 1, IPv4 checksum of the new header."""
    b = bytearray(mac(NH_MAC_DST) + mac(NH_MAC_SRC) + f[12:])
    if p.ip == 4:
        b[p.l3 + 8] -= 1
        b[p.l3 + 10:p.l3 + 12] = b"\0\0"
        b[p.l3 + 10:p.l3 + 12] = inet_checksum(bytes(b[p.l3:p.l3 + p.ihl * 4])).to_bytes(2, "big")
    else:
        b[p.l3 + 7] -= 1
    return bytes(b)


def csum_diff_steps(s):
    s.update("routes4", ip4(V4_DST), route_value(NET))
    s.update("routes6", Pkt(v6(UDP())).dst, route_value(HOST))
    s.run_all(router_frames())


def csum_diff_check(s):
    c = Check(s)
    r4, r6 = ip4(V4_DST), Pkt(v6(UDP())).dst
    n = 0
    for r in s.runs:
        p = Pkt(r.frame, max_vlans=0)
        if p.trunc == "ip":
            c.action(r, XDP_DROP)
            continue
        port = {(4, r4): NET, (6, r6): HOST}.get((p.ip, p.dst))
        if p.ip is None or p.ttl <= 1 or (p.ip == 4 and p.ihl != 5) or port is None:
            c.action(r, XDP_PASS)
            c.unchanged(r)
            continue
        c.action(r, XDP_REDIRECT)
        c.redirect(r, port)
        c.out(r, routed(r.frame, p))
        n += 1
    c.expect(n >= 8, f"only {n} frames routed")
    return c


PREFIXES = {"10.0.1.0": NET, "10.0.2.0": 7}  # 7: a port tx_ports does not have


def incremental_steps(s):
    for net, port in PREFIXES.items():
        s.update("prefix24", ip4(net), route_value(port))
    s.update("tx_ports", u32(NET), u32(s.ifindex(NET)))
    s.update("tx_ports", u32(HOST), u32(s.ifindex(HOST)))
    s.run_all(router_frames())


def incremental_check(s):
    c = Check(s)
    exceeded = n = 0
    for r in s.runs:
        p = Pkt(r.frame, max_vlans=0)
        if len(r.frame) < 34 or p.eth_type != 0x0800:
            c.action(r, XDP_PASS)
            c.unchanged(r)
            continue
        if p.ttl <= 1:
            exceeded += 1
        port = PREFIXES.get(".".join(map(str, p.dst[:3])) + ".0") if p.ttl > 1 else None
        if port != NET:
            c.action(r, XDP_PASS)
            c.unchanged(r)
            continue
        c.action(r, XDP_REDIRECT)
        c.redirect(r, port)
        c.out(r, routed(r.frame, p))
        n += 1
    c.map("ttl_exceeded", array([exceeded]))
    c.map("tx_ports", {u32(p): struct.pack("<i", p) for p in (HOST, NET)})
    c.expect(n >= 8 and exceeded >= 1, f"{n} frames routed, {exceeded} TTL exceeded")
    return c


# ---- xdp_udp_port_nat.c: bpf_xdp_load_bytes / bpf_xdp_store_bytes
NAT = {53: 5353, 443: 8443}


def nat_frames():
    return standard_frames() + [
        ("v6-udp-443", v6(UDP(sport=5000, dport=443) / payload(100, 20))),
        ("v4-udp-443-nocsum", v4(UDP(sport=5001, dport=443, chksum=0) / payload(10, 21))),
        ("v4-udp-443-ffff", v4(UDP(sport=5002, dport=443) / payload(2, 22))),
        ("vlan9-v6-udp-53", v6(UDP(sport=5003, dport=53) / payload(9, 23), vlans=(9,))),
        ("v4-udp-1234", v4(UDP(sport=5004, dport=1234))),
    ]


def csum_replace2(check, old, new):
    s = (~check & 0xffff) + (~old & 0xffff) + new
    s = (s & 0xffff) + (s >> 16)
    s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def nat_steps(s):
    for a, b in NAT.items():
        s.update("port_nat", struct.pack("<H", a), struct.pack("<H", b))
    s.run_all(nat_frames())


def nat_check(s):
    c = Check(s)
    stats = [0, 0, 0]
    REWRITTEN, NO_RULE, SHORT = range(3)
    for r in s.runs:
        p = Pkt(r.frame, max_vlans=1, vlan_types=(0x8100,))  # one 802.1Q tag, no 802.1ad
        if p.trunc:
            stats[SHORT] += 1
            c.action(r, XDP_PASS)
            c.unchanged(r)
            continue
        if p.ip is None or p.proto != 17 or (p.ip == 4 and p.ihl < 5):
            c.action(r, XDP_PASS)
            c.unchanged(r)
            continue
        if not p.has(8):
            stats[SHORT] += 1
            c.action(r, XDP_PASS)
            c.unchanged(r)
            continue
        if p.dport not in NAT:
            stats[NO_RULE] += 1
            c.action(r, XDP_PASS)
            c.unchanged(r)
            continue
        stats[REWRITTEN] += 1
        b = bytearray(r.frame)
        check = int.from_bytes(b[p.l4 + 6:p.l4 + 8], "big")
        b[p.l4 + 2:p.l4 + 4] = NAT[p.dport].to_bytes(2, "big")
        if check or p.ip == 6:
            check = csum_replace2(check, p.dport, NAT[p.dport]) or 0xffff
            b[p.l4 + 6:p.l4 + 8] = check.to_bytes(2, "big")
        c.action(r, XDP_PASS)
        c.out(r, bytes(b))
        if check:  # the incremental update agrees with the checksum of the whole datagram
            pkt = Ether(bytes(b))
            u = pkt[UDP]
            got = u.chksum
            del u.chksum
            c.expect(Ether(bytes(pkt))[UDP].chksum == got, f"{r.label}: UDP checksum {got:#06x} is wrong")
    c.map("nat_stats", array(stats))
    c.expect(stats[REWRITTEN] >= 5 and stats[SHORT] >= 3, f"nat_stats {stats}: the frames miss a path")
    return c


# ---- xdp_blocklist_sized.c: max_entries 0, sized by the loader
SIZES = {"blocklist": 16, "queue_pkts": 4}
BLOCKED_SRC = "10.6.6.6"


def sized_steps(s):
    s.update("blocklist", ip4(BLOCKED_SRC), u64s(0))
    frames = standard_frames() + [(f"blocked-{i}", v4(UDP(dport=i), src=BLOCKED_SRC)) for i in range(3)]
    frames.append(("blocked-vlan", v4(UDP(dport=9), src=BLOCKED_SRC, vlans=(2,))))
    s.run_all(frames)


def sized_check(s):
    c = Check(s)
    hits = 0
    for r in s.runs:
        p = Pkt(r.frame, max_vlans=0)
        drop = p.ip == 4 and p.src == ip4(BLOCKED_SRC)
        hits += drop
        c.action(r, XDP_DROP if drop else XDP_PASS)
        c.unchanged(r)
    c.expect(s.sizes == {"blocklist": 16, "queue_pkts": 4}, f"map sizes {s.sizes}")
    c.map("queue_pkts", array([len(s.runs), 0, 0, 0]))
    c.map("blocklist", {ip4(BLOCKED_SRC): u64s(hits)})
    return c


# ---- xdp_long_name.c: a 40-byte function name
LONG_NAME = "xdp_count_ipv4_and_ipv6_packets_by_proto"


def long_name_steps(s):
    s.run_all(standard_frames())


def long_name_check(s):
    c = Check(s)
    counts = [0] * 512
    for r in s.runs:
        c.action(r, XDP_PASS)
        c.unchanged(r)
        p = Pkt(r.frame, max_vlans=0)
        if p.ip:
            counts[p.proto + (256 if p.ip == 6 else 0)] += 1
    c.map("ip_protocols", array(counts))
    want_name = LONG_NAME[:abi.NANOBPF_PROG_NAME_LEN - 1] if s.kind != "linux" else LONG_NAME
    c.expect(s.program == want_name, f"program name {s.program!r}, expected {want_name!r}")
    return c


# ---- xdp_global_config.c: .rodata, .data, .bss and a custom data section
BLOCKED_UDP = 53


def global_steps(s):
    s.update(s.data_map(".data"), u32(0), struct.pack("<HH", BLOCKED_UDP, BLOCKED_UDP))
    s.run_all(standard_frames())


def data_layout(obj, section):
    """{variable: offset} of the globals in a data section of the object (its symbol table)."""
    from elftools.elf.elffile import ELFFile
    with open(obj, "rb") as f:
        elf = ELFFile(f)
        idx = next(i for i, s in enumerate(elf.iter_sections()) if s.name == section)
        return {sym.name: sym["st_value"] for sym in elf.get_section_by_name(".symtab").iter_symbols()
                if sym["st_shndx"] == idx and sym["st_info"]["type"] == "STT_OBJECT"}


def global_at(s, section, name, fmt):
    """A global variable's value read from the session's map of its section (None if absent)."""
    off = data_layout(s.obj, section)[name]
    blob = s.maps.get(section, {}).get(u32(0), b"")
    return struct.unpack_from(fmt, blob, off)[0] if len(blob) >= off + struct.calcsize(fmt) else None


def global_check(s):
    c = Check(s)
    seen = nbytes = dropped = mgmt = 0
    verdicts = [0] * 5
    for r in s.runs:
        seen += 1
        nbytes += len(r.frame)
        p = Pkt(r.frame, max_vlans=0)
        if p.trunc or (p.ip == 4 and (p.ihl < 5 or p.frag)):
            want = XDP_DROP
        elif p.ip and p.proto == 6 and p.has(20) and p.dport == 22:
            want = XDP_PASS
            mgmt += 1
        elif p.ip and p.proto == 17 and p.has(8) and p.dport == BLOCKED_UDP:
            want = XDP_DROP
        else:
            want = XDP_PASS
        dropped += want == XDP_DROP
        verdicts[want] += 1
        c.action(r, want)
        c.unchanged(r)
    for name, want in (("pkts_seen", seen), ("bytes_seen", nbytes), ("pkts_dropped", dropped), ("pkts_mgmt", mgmt)):
        got = global_at(s, ".bss", name, "<Q")
        c.expect(got == want, f".bss {name} = {got}, expected {want}")
    for name, fmt, want in (("mgmt_port", "<H", 22), ("drop_fragments", "<B", 1)):
        got = global_at(s, ".rodata", name, fmt)
        c.expect(got == want, f".rodata {name} = {got}, expected {want}")
    c.map(".data.verdicts", {u32(0): u64s(*verdicts)})
    c.map(".data", {u32(0): struct.pack("<HH", BLOCKED_UDP, BLOCKED_UDP)})
    return c


# ---- xdp_meta_mark.c: bpf_xdp_adjust_meta, metadata moving with bpf_xdp_adjust_head
def meta_steps(s):
    s.run_all(standard_frames())


def meta_check(s):
    """Each output starts at data_meta: 8 bytes of struct meta_info (mark, the EtherType the frame came
    with, vlans_popped, refused = 7: the three refusals), then the 24 bytes of struct nanobpf_xdp_meta the
    frame came with (PISA's parse result, all 0 in these runs), then the frame; ARP leaves without the
    program's metadata; an 802.1Q tag is popped and the metadata still says 0x8100."""
    c = Check(s)
    pisa = bytes(24)

    def mark(f):
        p = Pkt(f, max_vlans=0)
        if p.ip is None:
            return bytes(4)
        return bytes(a ^ b for a, b in zip(p.src[-4:], p.dst[-4:]))

    for r in s.runs:
        f = r.frame
        if f[12:14] == b"\x08\x06":
            c.action(r, XDP_PASS)
            c.out(r, pisa + f)
        elif f[12:14] != b"\x81\x00":
            c.action(r, XDP_PASS)
            c.out(r, mark(f) + f[12:14] + b"\x00\x07" + pisa + f)
        elif len(f) < 18:
            c.action(r, XDP_DROP)
        else:
            popped = f[:12] + f[16:]
            c.action(r, XDP_PASS)
            c.out(r, mark(popped) + b"\x81\x00\x01\x07" + pisa + popped)
    return c


# ---- xdp_loop_bytes.c: bpf_loop callbacks
def loop_steps(s):
    s.run_all(standard_frames())


def loop_check(s):
    """The byte sum (drop when odd), the first zero byte and the calls bpf_loop made for it, under the
    EtherType's low byte mod 8; bpf_loop's errors: -EINVAL for flags 1, -E2BIG for 2^23 + 1 loops."""
    c = Check(s)
    want = {}
    for r in s.runs:
        f = r.frame
        total = sum(f)
        zero = f.index(0) if 0 in f else len(f)
        calls = zero + 1 if zero < len(f) else len(f) + 1
        c.action(r, XDP_DROP if total & 1 else XDP_PASS)
        c.unchanged(r)
        key = f[13] & 7
        prev = struct.unpack("<QIIii", want.get(key, bytes(24)))[0]
        want[key] = struct.pack("<QIIii", prev + total, zero, calls, -22, -7)
    c.map("frame_stats", {u32(k): want.get(k, bytes(24)) for k in range(8)})
    return c


# ---- xdp_tail_calls.c: PROG_ARRAY and bpf_tail_call
def tail_steps(s):
    frames = standard_frames()
    s.run_all([("empty-" + label, f) for label, f in frames])
    s.set_prog("jmp_table", 0, "xdp_ipv4")
    s.set_prog("jmp_table", 1, "xdp_ipv6")
    s.set_prog("jmp_table", 2, "xdp_chain")
    s.run_all(frames)
    s.delete("jmp_table", u32(1))
    s.run_all([("no-v6-" + label, f) for label, f in frames if f[12:14] == b"\x86\xdd"])


def tail_check(s):
    """Empty slots pass the frame on (counted in reached[5]); IPv4 drops TTL 1, IPv6 sends hop limit >
    1 back; ARP runs the self-calling chain 33 times (MAX_TAIL_CALL_CNT), then the 34th call fails."""
    c = Check(s)
    reached = [0] * 6
    for r in s.runs:
        f, t = r.frame, r.frame[12:14]
        p = Pkt(f, max_vlans=0)
        table = not r.label.startswith("empty-")
        if table and t == b"\x08\x00":
            reached[0] += 1
            c.action(r, XDP_DROP if p.ip is None or p.ttl <= 1 else XDP_PASS)
        elif table and t == b"\x86\xdd" and not r.label.startswith("no-v6-"):
            reached[1] += 1
            c.action(r, XDP_DROP if p.ip is None or p.ttl <= 1 else XDP_TX)
        elif table and t == b"\x08\x06":
            reached[2] += 33
            reached[4] = 33
            c.action(r, XDP_DROP)
        else:
            if t == b"\x08\x06":
                reached[4] = 0
            reached[5] += 1
            c.action(r, XDP_PASS)
        c.unchanged(r)
    c.map("reached", array(reached))
    return c


# ---- xdp_lb_ipip.c: Katran-style balancer, IPIP encapsulation
LB_GW_MAC, LB_TUNNEL_SRC = "02:00:00:00:00:99", "172.16.0.1"
VIPS = {(V4_DST, 80, 6): 0, (V4_DST, 53, 17): 1}
REALS = {i: f"192.168.0.{i}" for i in range(1, 6)}
RING = 16


def rol32(w, s):
    return ((w << s) | (w >> (32 - s))) & M32


def jhash_3words(a, b, c, initval):
    iv = (initval + 0xdeadbeef + (3 << 2)) & M32
    a, b, c = (a + iv) & M32, (b + iv) & M32, (c + iv) & M32
    c ^= b; c = (c - rol32(b, 14)) & M32  # noqa: E702 (the kernel's jhash.h, line for line)
    a ^= c; a = (a - rol32(c, 11)) & M32  # noqa: E702
    b ^= a; b = (b - rol32(a, 25)) & M32  # noqa: E702
    c ^= b; c = (c - rol32(b, 16)) & M32  # noqa: E702
    a ^= c; a = (a - rol32(c, 4)) & M32  # noqa: E702
    b ^= a; b = (b - rol32(a, 14)) & M32  # noqa: E702
    c ^= b; c = (c - rol32(b, 24)) & M32  # noqa: E702
    return c


def ip4(a):
    return bytes(map(int, a.split(".")))


def rings_phase1():
    return {0: [1 + i % 3 for i in range(RING)], 1: [4 + i % 2 for i in range(RING)]}


def rings_phase2():
    return {0: [3] * RING, 1: [5] * RING}


def lb_phases():
    tcp = [v4(TCP(sport=20000 + 17 * i, dport=80, flags="S") / payload(i, i), src=f"198.51.100.{i + 1}")
           for i in range(12)]
    udp = [v4(UDP(sport=30000 + i, dport=53) / payload(10 + i, i), src=f"203.0.113.{i + 1}", tos=4 * i)
           for i in range(6)]
    other = [f for _, f in standard_frames()]
    other += [v4(TCP(dport=80), dst="10.0.1.3"), v4(UDP(dport=80)),  # not a VIP: other address, other protocol
              tcp[0][:14 + 20 + 4], tcp[1][:14 + 20 + 2]]            # ports present / cut
    new = [v4(TCP(sport=21000 + i, dport=80, flags="S"), src=f"198.51.100.{100 + i}") for i in range(4)]
    return [("phase1", tcp + udp + other), ("phase2", tcp + new + udp[:2])]


def lb_setup_rings(s, rings):
    for vip_num, ring in rings.items():
        for i, real in enumerate(ring):
            s.update("ch_rings", u32(vip_num * RING + i), u32(real))


def lb_steps(s):
    for (addr, port, proto), num in VIPS.items():
        s.update("vip_map", ip4(addr) + struct.pack(">HBB", port, proto, 0), struct.pack("<II", 0, num))
    for i, a in REALS.items():
        s.update("reals", u32(i), ip4(a) + u32(0))
    s.update("ctl_array", u32(0), mac(LB_GW_MAC) + b"\0\0" + ip4(LB_TUNNEL_SRC))
    lb_setup_rings(s, rings_phase1())
    for phase, frames in lb_phases():
        if phase == "phase2":
            lb_setup_rings(s, rings_phase2())
        s.run_all([(f"{phase}-{i}", f) for i, f in enumerate(frames)])


def lb_check(s):
    c = Check(s)
    conn, stats = {}, [[0, 0] for _ in range(8)]
    runs = iter(s.runs)
    for phase, frames in lb_phases():
        rings = rings_phase1() if phase == "phase1" else rings_phase2()
        for f in frames:
            r = next(runs)
            p = Pkt(f, max_vlans=0)
            if p.ip != 4 or p.ihl != 5 or p.frag or p.proto not in (6, 17):
                c.action(r, XDP_PASS)
                c.unchanged(r)
                continue
            if not p.has(4):
                c.action(r, XDP_DROP)
                continue
            vip = VIPS.get((".".join(map(str, p.dst)), p.dport, p.proto))
            if vip is None:
                c.action(r, XDP_PASS)
                c.unchanged(r)
                continue
            ports = int.from_bytes(f[p.l4:p.l4 + 4], "little")
            key = p.src + p.dst + struct.pack("<IB3x", ports, p.proto)
            if key not in conn:
                h = jhash_3words(int.from_bytes(p.src, "little"), ports, p.proto, 0x5eed)
                conn[key] = rings[vip][h % RING]
            stats[vip][0] += 1
            stats[vip][1] += len(f)
            inner = f[14:]
            outer = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, f[15], (int.from_bytes(f[16:18], "big") + 20) & 0xffff,
                                          0, 0, 64, 4, 0, ip4(LB_TUNNEL_SRC), ip4(REALS[conn[key]])))
            outer[10:12] = inet_checksum(bytes(outer)).to_bytes(2, "big")
            c.action(r, XDP_TX)
            c.out(r, mac(LB_GW_MAC) + f[0:6] + b"\x08\x00" + bytes(outer) + inner)
    c.map("lru_conn", {k: struct.pack("<II", v, 0) for k, v in conn.items()})
    c.map("vip_stats", array([u64s(*v) for v in stats]))
    reals_used = set(conn.values())
    c.expect(reals_used == set(REALS), f"flows went to reals {sorted(reals_used)}, expected all of {sorted(REALS)}")
    return c


CASES = [
    Case("xdp_stats1", "xdp_stats1.c", stats_steps, stats_check(lambda p: XDP_PASS), pinned=True),
    Case("xdp_sections-pass", "xdp_sections.c", stats_steps, stats_check(lambda p: XDP_PASS),
         program="xdp_pass_func", pinned=True),
    Case("xdp_sections-drop", "xdp_sections.c", stats_steps,
         stats_check(lambda p: XDP_PASS if p.eth_type == 0x0806 and not p.vlans else XDP_DROP),
         section="xdp_drop", pinned=True),
    Case("xdp_sections-abort", "xdp_sections.c", stats_steps, stats_check(lambda p: XDP_ABORTED),
         program="xdp_abort_func", pinned=True),
    Case("xdp_port_filter", "xdp_port_filter.c", port_filter_steps, port_filter_check),
    Case("xdp_lru_flows", "xdp_lru_flows.c", lru_steps, lru_check, device_only_maps=("flows",)),
    Case("xdp_proto_bytes", "xdp_proto_bytes.c", proto_steps, proto_check),
    Case("xdp_locked_counters", "xdp_locked_counters.c", locked_steps, locked_check),
    Case("xdp_src_lru_percpu", "xdp_src_lru_percpu.c", src_steps, src_check),
    Case("xdp_redirect_devmap", "xdp_redirect_devmap.c", devmap_steps, devmap_check),
    Case("xdp_l2fwd_devmap_hash", "xdp_l2fwd_devmap_hash.c", l2fwd_steps, l2fwd_check, two_ports=True,
         ifindex_keyed=("fwd_stats", "fwd_ports")),
    Case("xdp_router_csum_diff", "xdp_router_csum_diff.c", csum_diff_steps, csum_diff_check),
    Case("xdp_router_incremental", "xdp_router_incremental.c", incremental_steps, incremental_check),
    Case("xdp_udp_port_nat", "xdp_udp_port_nat.c", nat_steps, nat_check),
    Case("xdp_blocklist_sized", "xdp_blocklist_sized.c", sized_steps, sized_check, map_sizes=SIZES),
    Case("xdp_long_name", "xdp_long_name.c", long_name_steps, long_name_check, program=LONG_NAME),
    Case("xdp_global_config", "xdp_global_config.c", global_steps, global_check),
    Case("xdp_lb_ipip", "xdp_lb_ipip.c", lb_steps, lb_check),
    Case("xdp_meta_mark", "xdp_meta_mark.c", meta_steps, meta_check, parse_in_meta=True),
    Case("xdp_loop_bytes", "xdp_loop_bytes.c", loop_steps, loop_check),
    Case("xdp_tail_calls", "xdp_tail_calls.c", tail_steps, tail_check, program="xdp_dispatch"),
]
CASE_BY_NAME = {c.name: c for c in CASES}


# ---------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    d = tmp_path_factory.mktemp("compat")
    return {src.name: build(src, d) for src in sorted(COMPAT.glob("*.c"))}


@pytest.fixture(scope="module")
def sessions(objects, pin_base):
    """Each (case, backend) runs once; its Session, or the exception that stopped it."""
    cache = {}

    def get(case, kind):
        if (case.name, kind) not in cache:
            pin_root = None
            if kind == "linux" and case.pinned:
                pin_root = os.path.join(pin_base, f"{case.name}-{kind}")
                os.mkdir(pin_root)
            try:
                cache[case.name, kind] = Session(case, kind, objects[case.src], pin_root)
            except Exception as e:  # noqa: BLE001 (reported by every test that needs the session)
                cache[case.name, kind] = e
        got = cache[case.name, kind]
        if isinstance(got, Exception):
            raise got
        return got
    return get


def skip_reason(case, kind, pin_base):
    ok, why = available(kind)
    if not ok:
        return f"{kind}: {why}"
    if kind == "linux":
        if case.pinned and pin_base is None:
            return "linux: no bpffs for the pinned maps (mount -t bpf failed)"
        if case.two_ports and linux_ports()[NET] == HOST:
            return "linux: the network namespace has no device besides lo for port 2"
    return None


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_backend(sessions, pin_base, name, kind):
    """The program does on this backend what the frames and its source say it must."""
    case = CASE_BY_NAME[name]
    why = skip_reason(case, kind, pin_base)
    if why:
        pytest.skip(why)
    s = sessions(case, kind)
    case.check(s).assert_ok()


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_backends_agree(sessions, pin_base, name):
    """Same action, same bytes out, same map contents on every backend that can run the case."""
    case = CASE_BY_NAME[name]
    kinds = [k for k in BACKENDS if not skip_reason(case, k, pin_base)]
    if len(kinds) < 2:
        pytest.skip(f"only {kinds} can run here")
    got = {k: sessions(case, k) for k in kinds}
    ref_kind = "linux" if "linux" in got else kinds[0]
    ref = got[ref_kind]
    problems = []
    for kind, s in got.items():
        if s is ref:
            continue
        assert len(s.runs) == len(ref.runs)
        for a, b in zip(ref.runs, s.runs):
            if (a.action, a.out) != (b.action, b.out):
                problems.append(f"{b.label} (port {b.port}): {ref_kind} {a.action} {a.out.hex()}\n"
                                f"{' ' * (len(b.label) + 11)}{kind} {b.action} {b.out.hex()}")
        for m in sorted(set(ref.maps) | set(s.maps)):
            if m in case.device_only_maps and "linux" in (ref_kind, kind):
                continue
            if ref.maps.get(m) != s.maps.get(m):
                problems.append(f"map {m}:\n  {ref_kind} {describe(ref.maps.get(m))}\n  {kind} {describe(s.maps.get(m))}")
        if ref.sizes != s.sizes:
            problems.append(f"map sizes: {ref_kind} {ref.sizes}, {kind} {s.sizes}")
    if "interp" in got and "jit" in got:  # the device's own choices (LRU eviction, redirect ports)
        a, b = got["interp"], got["jit"]
        for m in case.device_only_maps:
            if a.maps.get(m) != b.maps.get(m):
                problems.append(f"map {m}: interp {describe(a.maps.get(m))}, jit {describe(b.maps.get(m))}")
        for x, y in zip(a.runs, b.runs):
            if x.action == XDP_REDIRECT and x.redirect != y.redirect:
                problems.append(f"{x.label}: interp redirected to {x.redirect}, jit to {y.redirect}")
    assert not problems, f"{name}: " + "\n".join(problems)


# ---------------------------------------------------------------- packaging
def nanobpf_load(*args):
    return subprocess.run([sys.executable, "-m", "nanobpf.ebpf.cli", *map(str, args)],
                          capture_output=True, text=True)


@pytest.mark.parametrize("section,name", [("xdp_pass", "xdp_pass_func"), ("xdp_drop", "xdp_drop_func"),
                                          ("xdp_abort", "xdp_abort_func")])
def test_nanobpf_load_picks_old_style_sections(objects, tmp_path, section, name):
    """-s SECTION and -p NAME choose the same program of an object with several old-style sections;
    without either the loader asks for a choice."""
    obj = objects["xdp_sections.c"]
    for opt in (["-s", section], ["-p", name]):
        img = tmp_path / "p.nbpf"
        p = nanobpf_load(obj, *opt, "-o", img)
        assert p.returncode == 0, p.stderr
        assert parse_image(img.read_bytes()).name == name, opt
    p = nanobpf_load(obj, "-o", tmp_path / "x.nbpf")
    assert p.returncode == 1 and "xdp_pass_func" in p.stderr and "xdp_drop_func" in p.stderr, p.stderr
    assert nanobpf_load(objects["xdp_stats1.c"], "-o", tmp_path / "s.nbpf").returncode == 0  # the only one


def test_nanobpf_load_long_program_name(objects, tmp_path):
    """A 40-byte function name: -p takes the full name, the image keeps its first 31 bytes."""
    img = tmp_path / "long.nbpf"
    p = nanobpf_load(objects["xdp_long_name.c"], "-p", LONG_NAME, "-o", img)
    assert p.returncode == 0, p.stderr
    assert parse_image(img.read_bytes()).name == LONG_NAME[:abi.NANOBPF_PROG_NAME_LEN - 1]
    assert nanobpf_load(objects["xdp_long_name.c"], "-p", LONG_NAME + "x", "-o", img).returncode == 1


def test_nanobpf_load_map_size(objects, tmp_path):
    """--map-size NAME=N sizes maps declared with max_entries 0 (and overrides declared sizes); a
    map left at 0 gets the default with a note; an unknown name is no size at all."""
    obj, img = objects["xdp_blocklist_sized.c"], tmp_path / "sized.nbpf"
    p = nanobpf_load(obj, "--map-size", "blocklist=16", "--map-size", "queue_pkts=4", "-o", img)
    assert p.returncode == 0, p.stderr
    assert {m.name: m.max_entries for m in parse_image(img.read_bytes()).maps} == SIZES
    p = nanobpf_load(obj, "--map-size", "blocklist=16", "-o", img)
    assert p.returncode == 0, p.stderr
    sizes = {m.name: m.max_entries for m in parse_image(img.read_bytes()).maps}
    assert sizes == {"blocklist": 16, "queue_pkts": abi.NANOBPF_MAP_DEFAULT_ENTRIES}
    assert "queue_pkts" in p.stderr and "--map-size" in p.stderr, p.stderr
    assert nanobpf_load(obj, "--map-size", "blocklist=0", "-o", img).returncode == 2
    p = nanobpf_load(objects["xdp_port_filter.c"], "--map-size", "port_rules=8", "-o", img)
    assert p.returncode == 0, p.stderr
    assert {m.name: m.max_entries for m in parse_image(img.read_bytes()).maps}["port_rules"] == 8


def test_pinned_maps_have_one_shape(objects):
    """xdp_stats1.c and every program of xdp_sections.c declare the pinned xdp_stats_map alike, so the
    device shares one map between them (as Linux does through the pin)."""
    shapes = set()
    for src, prog in (("xdp_stats1.c", None), ("xdp_sections.c", "xdp_pass_func"),
                      ("xdp_sections.c", "xdp_drop_func"), ("xdp_sections.c", "xdp_abort_func")):
        (m,) = [m for m in load(objects[src], prog).maps if m.name == "xdp_stats_map"]
        assert m.pinning == abi.NANOBPF_PIN_BY_NAME, (src, prog)
        shapes.add((m.type, m.key_size, m.value_size, m.max_entries))
    assert len(shapes) == 1, shapes


def test_pinned_map_shared_on_linux(objects, pin_base):
    """In Linux the pin makes the second object reuse the first one's map: the drop program's counts
    land next to the stats program's."""
    ok, why = linux.available()
    if not ok:
        pytest.skip(f"linux: {why}")
    if pin_base is None:
        pytest.skip("linux: no bpffs")
    root = os.path.join(pin_base, "shared")
    os.mkdir(root)
    frames = [f for _, f in standard_frames()[:6]]
    arp = dict(standard_frames())["arp"]
    with linux.LinuxXdp(objects["xdp_stats1.c"], pin_root_path=root) as a:
        for f in frames:
            assert a.run(f)[0] == XDP_PASS
        with linux.LinuxXdp(objects["xdp_sections.c"], program="xdp_drop_func", pin_root_path=root) as b:
            assert b.pinned == {"xdp_stats_map": os.path.join(root, "xdp_stats_map")}
            assert [b.run(f)[0] for f in frames + [arp]] == [XDP_DROP] * len(frames) + [XDP_PASS]

            def count(x, action):
                return struct.unpack("<QQ", sum_percpu(x.map_lookup_percpu("xdp_stats_map", u32(action))))

            for x in (a, b):
                assert count(x, XDP_PASS) == (len(frames) + 1, sum(map(len, frames)) + len(arp))
                assert count(x, XDP_DROP) == (len(frames), sum(map(len, frames)))
