package nanobpf.common

import chisel3._
import chisel3.util._

/** Shared shape of the register-block slaves: accept a request, answer it in the next cycle.
  * The block reads `io.req` while `fire` is high and drives `rdata`/`err` for that request.
  */
trait RegSlave { this: Module =>
  def busPort: BusPort
  /** Offset of the access within the region, 8-byte aligned. */
  def offset(region: SocMap.Region): UInt =
    (busPort.req.bits.addr - region.base.U)(log2Ceil(region.size) - 1, 3) ## 0.U(3.W)
  def fire: Bool = busPort.req.fire
  def isWrite: Bool = busPort.req.bits.write
  def wdata: UInt = busPort.req.bits.wdata
  def wstrb: UInt = busPort.req.bits.wstrb

  /** Wire the response: `rdata` and `err` are sampled when the request fires. */
  def respond(rdata: UInt, err: Bool): Unit = {
    busPort.req.ready := true.B
    busPort.resp.valid := RegNext(fire, false.B)
    busPort.resp.bits.rdata := RegEnable(rdata, fire)
    busPort.resp.bits.err := RegEnable(err, fire)
  }

  /** `old` with the bytes enabled by `wstrb` replaced from `wdata`. */
  def merge(old: UInt): UInt =
    VecInit((0 until 8).map(b => Mux(wstrb(b), wdata(8 * b + 7, 8 * b), old(8 * b + 7, 8 * b)))).asUInt
}
