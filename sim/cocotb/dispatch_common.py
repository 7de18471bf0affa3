"""Cycle-by-cycle bench of nanobpf.coresel.Dispatch (core select + reorder unit) shared by the
coresel and reorder cocotb tests. One coroutine drives every port and checks every handshake
against the models of nanobpf.models.pktpath: each core-select decision (or hold) must be the model's, no
core ever has more than its limit outstanding, completions leave the reorder unit in arrival order
per domain, exactly once."""
import random

from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from nanobpf.models.pktpath import POLICY, CoreSelect, ReorderCheck, comp_fields, comp_word, desc_fields, desc_word

from nanobpf_ebpf_defs import NANOBPF_XDP_DROP as XDP_DROP, NANOBPF_XDP_PASS as XDP_PASS, NANOBPF_XDP_TX as XDP_TX  # noqa: E402


def v(sig):
    return int(sig.value)


def clock(dut):
    Clock(dut.clock, 10, unit="ns").start()


class Core:
    """An emulated worker core: pops a descriptor when idle, works `service()` cycles, then pushes
    its completion until taken."""

    def __init__(self):
        self.busy_until, self.desc, self.comp = 0, None, None


class DispatchBench:
    def __init__(self, dut, queues, slots, rng, policy="jbsq", bound=4, depth=8, timeout=0, order_conn=0,
                 groups=4):
        self.dut, self.n, self.rng = dut, queues, rng
        self.model = CoreSelect(queues, depth, policy, bound)
        self.check = ReorderCheck(order_conn, groups)
        self.slots = slots
        self.free = list(range(slots))
        rng.shuffle(self.free)
        self.cores = [Core() for _ in range(queues)]
        self.timeout, self.order_conn = timeout, order_conn
        self.cycle = 0
        self.seq = 0
        self.sent = self.released = self.drops = self.late = self.bad = self.holds = 0
        self.max_out = [0] * queues
        self.dispatch_log = []  # (cycle, hash, core)
        self.lport_of = {}
        self.out_ready = 1.0
        self.service = lambda core: rng.randint(1, 30)
        self.action = lambda: rng.choice([XDP_PASS] * 6 + [XDP_DROP, XDP_TX])
        self.bad_comp_prob = 0.0
        self.bad_pending = None

    async def start(self):
        """Reset the design (the test starts the clock once with `clock(dut)`)."""
        d = self.dut
        d.reset.value = 1
        d.io_in_valid.value = 0
        d.io_out_ready.value = 0
        for i in range(self.n):
            getattr(d, f"io_cores_{i}_ready").value = 0
            getattr(d, f"io_comp_{i}_valid").value = 0
        self.configure()
        for _ in range(3):
            await RisingEdge(d.clock)
        d.reset.value = 0
        await RisingEdge(d.clock)

    def configure(self):
        d, m = self.dut, self.model
        d.io_sched_policy.value = POLICY[m.policy]
        d.io_sched_bound.value = m.bound
        d.io_order_timeout.value = self.timeout
        d.io_order_orderConn.value = self.order_conn

    def new_desc(self, conn, lport=0):
        slot = self.free.pop()
        word = desc_word(slot=slot, len=64, lport=lport, conn_valid=int(conn is not None), seq=self.seq & 0xFFFF,
                         conn_slot=conn or 0)
        self.seq += 1
        return word, (conn if conn is not None else self.rng.randrange(1 << 16))

    async def run(self, packets, arrival_prob=0.3, conns=lambda rng: rng.randrange(16), lports=lambda rng: 0,
                  max_cycles=200000):
        d, n, rng = self.dut, self.n, self.rng
        pending = None
        while self.released < packets or pending:
            if self.cycle > max_cycles:
                raise AssertionError(f"stuck: {self.released}/{packets} released after {self.cycle} cycles")
            # ---- drive
            if pending is None and self.sent < packets and self.free and rng.random() < arrival_prob:
                pending = self.new_desc(conns(rng), lports(rng))
            d.io_in_valid.value = int(pending is not None)
            if pending:
                d.io_in_bits_desc.value, d.io_in_bits_hash.value = pending
            for i, c in enumerate(self.cores):
                getattr(d, f"io_cores_{i}_ready").value = int(c.desc is None)
                if c.desc is not None and c.comp is None and self.cycle >= c.busy_until:
                    f = desc_fields(c.desc)
                    c.comp = comp_word(slot=f["slot"], action=self.action(), len=f["len"], offset=256)
                    if self.bad_comp_prob and rng.random() < self.bad_comp_prob:
                        others = [s for s in range(self.slots + 8)
                                  if not (self.model.owner.get(s) == i and s in self.model.popped)]
                        c.comp, c.real = comp_word(slot=rng.choice(others), action=XDP_PASS), c.comp
                comp = c.comp
                getattr(d, f"io_comp_{i}_valid").value = int(comp is not None)
                if comp is not None:
                    getattr(d, f"io_comp_{i}_bits").value = comp
            d.io_out_ready.value = int(rng.random() < self.out_ready)
            await ReadOnly()
            # ---- sample what fires at the coming edge, check it against the models
            outs = [v(getattr(d, f"io_outstanding_{i}")) for i in range(n)]
            assert outs == self.model.outstanding, f"cycle {self.cycle}: outstanding {outs}, model {self.model.outstanding}"
            lim = self.model.limit()
            for i in range(n):
                assert outs[i] <= lim, f"core {i} has {outs[i]} outstanding, limit {lim}"
                self.max_out[i] = max(self.max_out[i], outs[i])
            in_fire = pending is not None and v(d.io_in_ready)
            if pending is not None:
                want = self.model.decide(pending[1])
                if want is None:
                    assert not in_fire, f"cycle {self.cycle}: dispatched though the model holds"
                    self.holds += 1
                else:
                    assert in_fire, f"cycle {self.cycle}: held though the model picks core {want}"
                    got = v(d.io_dispatched_bits)
                    home = pending[1] % n
                    if self.model.policy == "sjbsq" and outs[home] < lim:
                        assert got == home, f"cycle {self.cycle}: SJBSQ left home core {home} with room"
                    assert got == want, f"cycle {self.cycle}: policy {self.model.policy} picked core {got}, model {want} (outstanding {outs}, hash {pending[1]})"
            pops = [(i, v(getattr(d, f"io_cores_{i}_bits"))) for i in range(n)
                    if self.cores[i].desc is None and v(getattr(d, f"io_cores_{i}_valid"))]
            comps = [(i, self.cores[i].comp) for i in range(n)
                     if self.cores[i].comp is not None and v(getattr(d, f"io_comp_{i}_ready"))]
            out = None
            if v(d.io_out_valid) and v(d.io_out_ready):
                out = (v(d.io_out_bits_word), v(d.io_out_bits_domain), v(d.io_out_bits_seq), v(d.io_out_bits_late),
                       v(d.io_out_bits_lport))
            await RisingEdge(d.clock)
            self.cycle += 1
            # ---- update the models with what fired
            if in_fire:
                word, h = pending
                slot = desc_fields(word)["slot"]
                core = self.model.decide(h)
                self.model.dispatch(core, slot)
                self.check.enq(word)
                self.lport_of[slot] = desc_fields(word)["lport"]
                self.dispatch_log.append((self.cycle, h, core))
                self.sent += 1
                pending = None
            for i, comp in comps:
                c = self.cores[i]
                slot = comp_fields(comp)["slot"]
                if hasattr(c, "real"):  # a bogus completion: refused, the real one follows
                    assert not self.model.complete(i, slot), "bogus completion matched"
                    self.bad += 1
                    c.comp = c.real
                    del c.real
                    continue
                assert self.model.complete(i, slot), f"core {i} completed slot {slot} it does not hold"
                self.check.complete(comp)
                c.desc = c.comp = None
            for i, word in pops:
                c = self.cores[i]
                assert desc_fields(word)["valid"] == 1
                self.model.pop(i, desc_fields(word)["slot"])
                c.desc, c.busy_until = word, self.cycle + self.service(i)
            if out:
                word, dom, seq, late, lport = out
                assert not late or self.timeout, f"slot {comp_fields(word)['slot']} released late with the timeout off"
                slot = self.check.released(word, dom, seq, late)
                assert lport == self.lport_of.pop(slot), f"slot {slot}: released with ingress port {lport}"
                self.free.append(slot)
                self.released += 1
                self.late += late
                self.drops += comp_fields(word)["action"] == XDP_DROP
        return self
