"""Reference model of the CLINT (nanobpf.soc.Clint), layout from the generated register table."""
from nanobpf.soc import REGS

MASK64 = (1 << 64) - 1


def merge(old, wdata, wstrb):
    mask = sum(0xFF << (8 * b) for b in range(8) if wstrb >> b & 1)
    return (old & ~mask) | (wdata & mask)


class ClintModel:
    """Time is counted in rising edges after reset (`cycle`); mtime counts them too, and a write to
    mtime at edge w sets it to the written value, from which it counts on after that edge."""

    def __init__(self, n_cores):
        self.n = n_cores
        self.r = {name: g for (block, name), g in REGS.items() if block == "clint"}
        self.msip = [0] * n_cores
        self.mtimecmp = [self.r["mtimecmp"].reset] * n_cores
        self.mtime_base, self.mtime_at = 0, -1  # mtime = base + (cycle - at) - 1 before edge `cycle`

    def mtime(self, cycle):
        return (self.mtime_base + cycle - self.mtime_at - 1) & MASK64

    def access(self, offset, write, wdata, wstrb, cycle):
        """Access taken by the edge after `cycle` edges; returns (rdata, err)."""
        msip, cmp_, mt = self.r["msip"], self.r["mtimecmp"], self.r["mtime"]
        rdata, hit = 0, False
        for h in range(self.n):
            a = msip.offset + h * msip.stride
            if offset == a & ~7:
                hit = True
                lane = (a & 7) * 8
                rdata |= self.msip[h] << lane
                if write and wstrb >> (lane // 8) & 1:
                    self.msip[h] = wdata >> lane & 1
            if offset == cmp_.offset + h * cmp_.stride:
                hit = True
                rdata = self.mtimecmp[h]
                if write:
                    self.mtimecmp[h] = merge(self.mtimecmp[h], wdata, wstrb)
        for arr in (msip, cmp_):  # entries of harts that do not exist: read 0, writes ignored
            if (arr.offset & ~7) <= offset < arr.offset + arr.stride * arr.count:
                hit = True
        if offset == mt.offset:
            hit = True
            rdata = self.mtime(cycle)
            if write:
                self.mtime_base, self.mtime_at = merge(rdata, wdata, wstrb), cycle
        return rdata, not hit

    def outputs(self, cycle):
        """(ipi, timer_irq) per hart as seen between edges `cycle` and `cycle + 1`."""
        now = self.mtime(cycle + 1)
        return list(map(bool, self.msip)), [now >= c for c in self.mtimecmp]
