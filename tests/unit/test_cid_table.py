"""PISA's connection-ID table as the model computes it (the RTL is checked against the model entry by
entry in sim/cocotb/pisa): capacity of the hashed table, the cuckoo move, colliding CIDs for tests."""
import random

import pytest

from nanobpf.models import pisa as P
from nanobpf.soc import DATAPATH, REGS, pack


def command(p, op, cid, slot=0, seal=False):
    key = bytes(cid).ljust(24, b"\0")
    for i in range(3):
        p.reg_write("cid_key", int.from_bytes(key[8 * i:8 * i + 8], "little"), i)
    p.reg_write("cid_arg", pack("pisa", "cid_arg", len=len(cid), seal=int(seal), slot=slot))
    p.reg_write("cid_cmd", pack("pisa", "cid_cmd", op=P.CID_OP[op]))
    r = p.reg_read("cid_result")
    return r >> REGS[("pisa", "cid_result")].fields["status"][0] & 3


def test_the_build_holds_at_least_1024_connections():
    """The goal (issue 25): 1,024 connections. Random CIDs of the lengths stacks use (8 bytes: quiche,
    aioquic, ngtcp2; 20: the longest; 4: short custom ones) all go in, on several seeds."""
    p = P.Pisa()
    assert p.cid_entries == DATAPATH["cid_ways"] * DATAPATH["cid_buckets"] >= 1024
    for seed, length in ((1, 8), (2, 20), (3, 4), (4, None)):
        p = P.Pisa()
        rng = random.Random(seed)
        cids = set()
        while len(cids) < 1024:
            cids.add(rng.randbytes(length if length else rng.randrange(4, 21)))
        for i, c in enumerate(sorted(cids)):
            assert command(p, "insert", c, slot=i) == P.CID_STATUS["ok"], f"seed {seed}: refused after {i}"
        assert p.reg_read("cid_used") == 1024
        # every one is found where a lookup looks, with its slot
        for i, c in enumerate(sorted(cids)):
            at = p.cid_find(c)
            assert at is not None and p.cid_table[at].slot == i


def test_cuckoo_move_keeps_every_entry():
    """A small table (4 ways x 4 buckets) fills past the point where all of a new CID's buckets are
    taken: inserts move an occupant and every CID inserted stays findable with its slot, until a
    refusal, which changes nothing."""
    p = P.Pisa(cid_buckets=4)
    rng = random.Random(7)
    held, moves = {}, 0
    while True:
        c = rng.randbytes(8)
        if c in held:
            continue
        before = list(p.cid_table)
        direct = any(p.cid_table[i] is None for i in p.cid_candidates(c))
        st = command(p, "insert", c, slot=len(held))
        if st == P.CID_STATUS["full"]:
            assert p.cid_table == before
            break
        assert st == P.CID_STATUS["ok"]
        moves += not direct
        held[c] = len(held)
        for k, slot in held.items():
            at = p.cid_find(k)
            assert at is not None and p.cid_table[at].slot == slot
    assert moves > 0, "no insert needed a move: the test did not reach the cuckoo path"
    assert p.reg_read("cid_used") == len(held) > 8
    assert p.counters[P.COUNTER["cid_full"]] == 1


def test_colliding_cids_fill_all_places():
    base = bytes(range(1, 9))
    others = P.cid_collisions(base, 6)
    p = P.Pisa()
    assert len(set(others)) == 6 and base not in others
    assert all(p.cid_candidates(c) == p.cid_candidates(base) for c in others)
    for c in others[:p.cid_ways]:
        assert command(p, "insert", c) == P.CID_STATUS["ok"]
    assert command(p, "insert", base) == P.CID_STATUS["full"]
    with pytest.raises(ValueError):
        P.cid_collisions(b"\x01\x02", 3)  # 16 bits cannot collide on 36 hash bits


def test_the_direction_is_part_of_the_key():
    """A sealing entry's CID (the peer's) and an opening entry's (the device's own) may have the same
    bytes: two entries, each found only in its direction, deleted apart; an opening entry hashes as
    before the direction was in the key (bit 165 zero)."""
    p = P.Pisa()
    c = bytes(range(10, 18))
    assert P.cid_key(c, seal=True) == P.cid_key(c) | 1 << 165
    assert command(p, "insert", c, slot=3) == P.CID_STATUS["ok"]
    assert p.cid_find(c, seal=True) is None
    assert command(p, "lookup", c, seal=True) == P.CID_STATUS["not_found"]
    assert command(p, "insert", c, slot=9, seal=True) == P.CID_STATUS["ok"]
    assert p.reg_read("cid_used") == 2
    assert p.cid_table[p.cid_find(c)].slot == 3 and p.cid_table[p.cid_find(c, seal=True)].slot == 9
    assert command(p, "delete", c, seal=True) == P.CID_STATUS["ok"]
    assert p.cid_find(c, seal=True) is None and p.cid_table[p.cid_find(c)].slot == 3


def test_a_frame_to_seal_looks_up_its_shims_cid_among_the_sealing_entries():
    """Behind the host link's shim the CID is as long as the shim says and is looked up among the sealing
    entries: the frame's context gets that entry's slot (conn); the same CID from the network finds the
    opening entry; a shim other than ENCRYPT, or a CID length the entry does not have, finds none."""
    import struct
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    import nanobpf_ctrl_defs as C
    p = P.default_tables(P.Pisa())
    port = 443
    host, net = DATAPATH["host_lport"], DATAPATH["net_lport"]
    p.reg_write("profile_entry", pack("pisa", "profile_entry", valid=1, lport=net, udp_port=port, short_cid_len=8), 0)
    p.reg_write("profile_entry", pack("pisa", "profile_entry", valid=1, lport=host, udp_port=port, short_cid_len=0), 1)
    cid = bytes(range(1, 9))
    command(p, "insert", cid, slot=5)
    command(p, "insert", cid[:6], slot=11, seal=True)
    pkt = bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=port, dport=4433) / (b"\x40" + cid + bytes(40)))

    def seal(flags, n):
        f = pkt[:12] + struct.pack(">HBB", C.SHIM_ETHERTYPE, flags, n) + pkt[12:]
        _, meta, _ = p.ingress(f, DATAPATH["host_port"])
        return P.xdp_parse(meta)
    assert seal(C.NANOBPF_SHIM_F_ENCRYPT, 6)[4:] == (6, 12)
    assert seal(C.NANOBPF_SHIM_F_ENCRYPT, 8)[4:] == (8, 0)   # an opening entry's CID: not for sealing
    assert seal(C.NANOBPF_SHIM_F_ENCRYPT, 5)[4:] == (5, 0)
    assert seal(C.NANOBPF_SHIM_F_DECRYPTED, 6)[4:] == (0, 0)  # not a frame to seal: the profile's length 0
    back = bytes(Ether() / IP(src="10.0.0.2", dst="10.0.0.1") / UDP(sport=4433, dport=port) / (b"\x40" + cid + bytes(40)))
    _, meta, _ = p.ingress(back, DATAPATH["net_port"])
    assert P.xdp_parse(meta)[4:] == (8, 6)
