"""Reference models of the packet path between the PISA pipeline and the cores (docs/packet-path.md):
the reassembly buffer (free list, descriptors), the core select (JBSQ(n), SJBSQ(n), RSS, round robin)
and the reorder unit. Word layouts (pkt_desc, pkt_comp) and enumerations come from hw/defs/soc.toml
through nanobpf.soc; the cocotb tests use these models as scoreboards and the benchmark uses the
ideal-queue simulation as its yardstick."""
import heapq
from collections import deque

from nanobpf.soc import ENUMS, pack_layout, unpack_layout

POLICY = ENUMS["pkt_policy"]
COUNTER = ENUMS["pkt_counter"]
PORTS = 4  # logical ports: order domains 0..3; connection groups follow


def desc_word(**fields):
    return pack_layout("pkt_desc", valid=1, **fields)


def desc_fields(word):
    return unpack_layout("pkt_desc", word)


def comp_word(**fields):
    return pack_layout("pkt_comp", **fields)


def comp_fields(word):
    return unpack_layout("pkt_comp", word)


class Reasm:
    """Reassembly buffer: a FIFO free list of slots (full at reset, 0..slots-1), a frame takes the head
    slot if it is good, sequence numbers count good frames (16 bit)."""

    def __init__(self, slots=64, slot_bytes=2048, headroom=256):
        self.slots, self.slot_bytes, self.headroom = slots, slot_bytes, headroom
        self.free = deque(range(slots))
        self.seq = 0
        self.counters = {"rx_frames": 0, "rx_drop_full": 0, "rx_drop_bad": 0}

    def frame(self, data, lport=0, quic=0, conn_valid=0, conn_slot=0, hash_=0, gso=0, bad=False):
        """-> (descriptor word, flow hash) or None (dropped, counted)."""
        if not self.free:
            self.counters["rx_drop_full"] += 1
            return None
        if bad or len(data) > self.slot_bytes - self.headroom:
            self.counters["rx_drop_bad"] += 1
            return None
        slot = self.free.popleft()
        d = desc_word(slot=slot, len=len(data), lport=lport, quic=quic, conn_valid=conn_valid, gso=gso,
                      seq=self.seq, conn_slot=conn_slot)
        self.seq = (self.seq + 1) & 0xFFFF
        self.counters["rx_frames"] += 1
        return d, (conn_slot if conn_valid else hash_)

    def release(self, slot):
        assert slot not in self.free, f"slot {slot} freed twice"
        self.free.append(slot)


class CoreSelect:
    """One decision: which core gets the next descriptor (None: hold), given the outstanding counts."""

    def __init__(self, queues, depth=8, policy="jbsq", bound=4, first=0):
        self.queues, self.depth, self.first = queues, depth, first   # data packets: queues first .. queues-1
        self.policy, self.bound = policy, bound
        self.outstanding = [0] * queues
        self.rr = first
        self.owner = {}
        self.popped = set()

    def limit(self):
        if self.policy in ("jbsq", "sjbsq"):
            return min(max(self.bound, 1), self.depth)
        return self.depth

    def decide(self, hash_, ctrl=False):
        """ctrl: a control frame, always for queue 0 (the control core's), up to the queue depth."""
        if ctrl:
            return 0 if self.outstanding[0] < self.depth else None
        lim, f, out = self.limit(), self.first, self.outstanding
        n = self.queues - f
        avail = [o < lim for o in out]
        home = f + hash_ % n
        if self.policy == "jbsq":
            best = None
            for i in range(f, self.queues):
                if avail[i] and (best is None or out[i] < out[best]):
                    best = i
            return best
        if self.policy == "sjbsq":
            for k in range(n):
                q = f + (home - f + k) % n
                if avail[q]:
                    return q
            return None
        if self.policy == "rss":
            return home if avail[home] else None
        return self.rr if avail[self.rr] else None

    def dispatch(self, core, slot, ctrl=False):
        self.outstanding[core] += 1
        self.owner[slot] = core
        if self.policy == "rr" and not ctrl:
            self.rr = self.first + (self.rr - self.first + 1) % (self.queues - self.first)

    def pop(self, core, slot):
        """The core took the descriptor of `slot` from its queue."""
        assert self.owner.get(slot) == core, f"core {core} popped slot {slot} it was not given"
        self.popped.add(slot)

    def complete(self, core, slot):
        """False (and nothing changes) for a slot this core was not given, has not popped, or completed."""
        if self.owner.get(slot) != core or slot not in self.popped:
            return False
        del self.owner[slot]
        self.popped.discard(slot)
        self.outstanding[core] -= 1
        return True


def order_domain(desc, order_conn=0, groups=4):
    f = desc_fields(desc)
    if (order_conn >> f["lport"]) & 1 and f["conn_valid"]:
        return PORTS + (f["conn_slot"] % groups)
    return f["lport"]


class ReorderCheck:
    """Scoreboard of the reorder unit: released completions must follow arrival order within each
    domain (late ones excepted: they were skipped), each completion leaves exactly once."""

    def __init__(self, order_conn=0, groups=4):
        self.order_conn, self.groups = order_conn, groups
        self.pending = {}  # domain -> deque of slots in arrival order
        self.completed = {}  # slot -> comp word
        self.skipped = set()

    def enq(self, desc):
        f = desc_fields(desc)
        d = order_domain(desc, self.order_conn, self.groups)
        self.pending.setdefault(d, deque()).append((f["slot"], f["seq"]))
        return d

    def complete(self, word):
        self.completed[comp_fields(word)["slot"]] = word

    def released(self, word, domain, seq, late):
        """Check one released completion; returns its slot."""
        slot = comp_fields(word)["slot"]
        assert self.completed.get(slot) == word, f"slot {slot}: released {word:#x}, completed {self.completed.get(slot)}"
        del self.completed[slot]
        q = self.pending.get(domain)
        if late:  # skipped by the timeout: it and every older packet of its domain were passed over
            if (slot, seq) in self.skipped:
                self.skipped.discard((slot, seq))
                return slot
            assert q and (slot, seq) in q, f"slot {slot} seq {seq} released late but not waiting in domain {domain}"
            while q[0] != (slot, seq):
                self.skipped.add(q.popleft())
            q.popleft()
            return slot
        assert q, f"slot {slot} released from empty domain {domain}"
        # Entries before it may only have been skipped by the timeout.
        while q[0] != (slot, seq):
            self.skipped.add(q.popleft())
            assert q, f"slot {slot} seq {seq} not waiting in domain {domain}"
        q.popleft()
        return slot


def ideal_single_queue(arrivals, services, servers):
    """Sojourn time of each job in an ideal M/G/k FCFS system with one shared queue: each job starts
    when it has arrived and a server is free (the yardstick of the core select benchmark)."""
    free = [0.0] * servers
    heapq.heapify(free)
    out = []
    for a, s in zip(arrivals, services):
        t = max(a, heapq.heappop(free))
        heapq.heappush(free, t + s)
        out.append(t + s - a)
    return out
