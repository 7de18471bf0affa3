package nanobpf.common

import chisel3._
import chisel3.util._

/** One 64-bit word access on the SoC's internal slave bus. `addr` is the byte address. */
class BusReq extends Bundle {
  val addr = UInt(32.W)
  val write = Bool()
  val wdata = UInt(64.W)
  val wstrb = UInt(8.W)
}

/** Answer to one [[BusReq]]: read data (writes: ignored) and whether the access was refused. */
class BusResp extends Bundle {
  val rdata = UInt(64.W)
  val err = Bool()
}

/** Slave port of the interconnect. Protocol: the interconnect keeps at most one request outstanding;
  * the slave answers each accepted request with exactly one `resp` pulse, one or more cycles later.
  */
class BusPort extends Bundle {
  val req = Decoupled(new BusReq)
  val resp = Flipped(Valid(new BusResp))
}

/** A bus access the interconnect refused (unmapped address, slave error, unsupported atomic). */
class BusError(nMasters: Int) extends Bundle {
  val master = UInt(log2Ceil(nMasters max 2).W)
  val addr = UInt(64.W)
  val write = Bool()
}

/** What an interconnect does in a cycle, for the simulation's bus statistics (`nanobpf-sim --bus-stats`);
  * built into the simulation's SoC only (SocParams.busActivity; the board's has none).
  */
class BusActivity(nMasters: Int, nSlaves: Int) extends Bundle {
  /** A transaction holds the bus (or is granted) this cycle. */
  val busy = Bool()
  /** A transaction is granted this cycle. */
  val start = Bool()
  /** The manager it serves. */
  val master = UInt(log2Ceil(nMasters max 2).W)
  /** The slave of its current beat; nSlaves when the address is unmapped. */
  val slave = UInt(log2Ceil(nSlaves + 1).W)
  val write = Bool()
  /** The address of the transaction granted this cycle (with start). */
  val addr = UInt(32.W)
  /** Its AXI ID's low bit: CVA6 sends instruction-cache refills with 0, data-cache accesses with 1. */
  val id0 = Bool()
  /** Managers with an AW or AR waiting that the bus does not serve this cycle. */
  val waiting = UInt(nMasters.W)
}

