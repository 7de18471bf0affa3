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

  // Register terms: (selected, read data, error). The offsets are distinct, so a response is the OR of
  // its terms in a balanced tree; `when` blocks in series would build a priority chain of one
  // multiplexer per register, which set the core clock's deepest path (docs/board.md, "Timing").
  private val regTerms = scala.collection.mutable.ArrayBuffer[(Bool, UInt, Bool)]()
  /** A register (or range) the access selects when `hit`: its read data and its error. */
  def term(hit: Bool, v: UInt, e: Bool): Unit = regTerms += ((hit, v, e))
  /** A register at offset `at` of the block, read as `v`, refused when `e`. */
  def reg(at: UInt, v: UInt, e: Bool): Unit = term(offsetNow === at, v, e)
  /** An offset with no read data (reads 0), refused when `e`. */
  def noData(at: UInt, e: Bool): Unit = term(offsetNow === at, 0.U, e)
  /** The offset `reg` and `noData` compare with: set once by the block (`offset(region)`). */
  private var offsetNow: UInt = 0.U
  def decodeAt(off: UInt): Unit = offsetNow = off
  /** Answer with the terms: the selected one's data, its error; an offset no term has is an error. */
  def respondTerms(): Unit = {
    val rdata = VecInit(regTerms.toSeq.map { case (hit, v, _) => Mux(hit, v.pad(64), 0.U(64.W)) }).reduceTree(_ | _)
    val known = VecInit(regTerms.toSeq.map(_._1)).asUInt.orR
    respond(rdata, !known || VecInit(regTerms.toSeq.map { case (hit, _, e) => hit && e }).asUInt.orR)
  }

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
