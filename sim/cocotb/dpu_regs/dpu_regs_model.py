"""Reference model of the DPU register block, built from the generated register table (hw/defs/soc.toml)."""
from nanobpf.soc import REGS


class DpuRegsModel:
    """Register semantics by name; offsets, widths, access and reset values from REGS."""

    def __init__(self, n_cores):
        self.n = n_cores
        self.regs = {name: g for (block, name), g in REGS.items() if block == "dpu"}
        self.mailbox = [0] * n_cores

    def decode(self, offset):
        """(register, index) at an 8-byte aligned offset, or (None, None)."""
        for name, g in self.regs.items():
            for i in range(g.count):
                if g.offset + i * g.stride == offset:
                    return g, i
        return None, None

    def access(self, offset, write, wdata, wstrb, cycle):
        """Returns (rdata, err, events): events are ("console", core, char) or ("sim_end", code)."""
        g, i = self.decode(offset & ~7)
        if g is None:
            return 0, True, []
        if g.access == "ro":
            value = {"id": g.reset, "num_cores": self.n, "cycle": cycle}[g.name]
            return value, write, []
        events, rdata = [], 0
        if g.name == "sim_end" and write:
            events.append(("sim_end", wdata & 0xFF))
        elif g.name == "console" and write and i < self.n and wstrb & 1:
            events.append(("console", i, wdata & 0xFF))
        elif g.name == "mailbox" and i < self.n:
            if write:
                mask = sum(0xFF << (8 * b) for b in range(8) if wstrb >> b & 1)
                self.mailbox[i] = (self.mailbox[i] & ~mask) | (wdata & mask)
            rdata = self.mailbox[i]
        return rdata, False, events
