"""Driver for the SoC's internal slave bus (nanobpf.common.BusPort: io_bus_req_*/io_bus_resp_*).

One access at a time, as the interconnect does; it checks the protocol on the way: the slave is
ready, answers exactly one cycle after the request fires, and the answer lasts one cycle.
"""
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge
from cocotb.utils import get_sim_time

PERIOD_NS = 10


async def start(dut, reset_cycles=4):
    """Start the clock, reset; returns the time of the first rising edge with reset low."""
    import cocotb
    cocotb.start_soon(Clock(dut.clock, PERIOD_NS, unit="ns").start())
    dut.reset.value = 1
    dut.io_bus_req_valid.value = 0
    for _ in range(reset_cycles):
        await RisingEdge(dut.clock)
    dut.reset.value = 0
    await RisingEdge(dut.clock)
    return get_sim_time("ns")


class BusPortDriver:
    def __init__(self, dut, base, t0, prefix="io_bus"):
        self.dut = dut
        self.base = base
        self.t0 = t0
        self.prefix = prefix

    def _sig(self, name):
        return getattr(self.dut, f"{self.prefix}_{name}")

    def cycles_at(self, t_ns):
        """Rising edges with reset low before time t_ns: what a cycle counter shows just before it."""
        return round((t_ns - self.t0) / PERIOD_NS)

    async def access(self, offset, write=False, wdata=0, wstrb=0xFF, sample=None):
        """Returns (rdata, err, fire_time_ns, sampled): `sample(dut)` is called while the request is
        on the bus, just before the edge that takes it (to see outputs that pulse with the request)."""
        d = self.dut
        self._sig('req_valid').value = 1
        self._sig('req_bits_addr').value = self.base + offset
        self._sig('req_bits_write').value = int(write)
        self._sig('req_bits_wdata').value = wdata
        self._sig('req_bits_wstrb').value = wstrb
        await ReadOnly()
        assert self._sig('req_ready').value == 1, "slave not ready"
        sampled = sample(d) if sample else None
        await RisingEdge(d.clock)  # the request fires on this edge
        fired = get_sim_time("ns")
        self._sig('req_valid').value = 0
        await ReadOnly()
        assert self._sig('resp_valid').value == 1, "no response one cycle after the request"
        rdata, err = int(self._sig('resp_bits_rdata').value), bool(self._sig('resp_bits_err').value)
        await RisingEdge(d.clock)
        await ReadOnly()
        assert self._sig('resp_valid').value == 0, "response lasted more than one cycle"
        await RisingEdge(d.clock)
        return rdata, err, fired, sampled
