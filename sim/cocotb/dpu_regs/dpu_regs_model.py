"""Reference model of the DPU register block, built from the generated register table (hw/defs/soc.toml)."""
from nanobpf.soc import REGS


class DpuRegsModel:
    """Register semantics by name; offsets, widths, access and reset values from REGS."""

    def __init__(self, n_cores):
        self.n = n_cores
        self.regs = {name: g for (block, name), g in REGS.items() if block == "dpu"}
        self.mailbox = [0] * n_cores
        self.uart_div = self.regs["uart_div"].reset
        self.leds = 0
        self.datapath_ready = 0
        self.uart_written = []  # bytes written to uart_tx, in order

    def decode(self, offset):
        """(register, index) at an 8-byte aligned offset, or (None, None)."""
        for name, g in self.regs.items():
            for i in range(g.count):
                if g.offset + i * g.stride == offset:
                    return g, i
        return None, None

    def access(self, offset, write, wdata, wstrb, cycle):
        """Returns (rdata, err, events): events are ("console", core, char) or ("sim_end", code).
        rdata None: depends on the UART's timing (uart_status), checked by the UART test instead."""
        g, i = self.decode(offset & ~7)
        if g is None:
            return 0, True, []
        if g.access == "ro":
            if g.name == "uart_status":
                return None, write, []
            # switches, Ethernet counters, sim_drain: inputs, 0 on the stand-alone block
            value = {"id": g.reset, "num_cores": self.n, "cycle": cycle}.get(g.name, 0)
            return value, write, []
        if g.access == "wo" and g.name == "uart_tx":
            if not write:
                return 0, True, []
            if wstrb & 1:
                self.uart_written.append(wdata & 0xFF)
            return 0, False, []
        events, rdata = [], 0
        if g.name == "sim_end" and write:
            events.append(("sim_end", wdata & 0xFF))
        elif g.name == "console" and write and i < self.n and wstrb & 1:
            events.append(("console", i, wdata & 0xFF))
        elif g.name in ("uart_div", "leds", "datapath_ready"):
            bits = g.width
            if write:
                mask = sum(0xFF << (8 * b) for b in range(8) if wstrb >> b & 1) & ((1 << bits) - 1)
                cur = getattr(self, g.name)
                setattr(self, g.name, (cur & ~mask) | (wdata & mask))
            rdata = getattr(self, g.name)
        elif g.name == "mailbox" and i < self.n:
            if write:
                mask = sum(0xFF << (8 * b) for b in range(8) if wstrb >> b & 1)
                self.mailbox[i] = (self.mailbox[i] & ~mask) | (wdata & mask)
            rdata = self.mailbox[i]
        return rdata, False, events
