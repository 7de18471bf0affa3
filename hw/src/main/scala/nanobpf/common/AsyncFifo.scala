package nanobpf.common

import chisel3._
import chisel3.util._

/** Clock-domain crossing FIFO (Gray-coded pointers, two-flop synchronisers). `enq` is in the module's
  * implicit clock domain, `deq` in `deqClock`. Depth is a power of two; the memory is registers.
  * Latency about three `deqClock` cycles. `enq.ready` is low while full.
  */
class AsyncFifo[T <: Data](gen: T, depth: Int) extends Module {
  require(isPow2(depth) && depth >= 4)
  val io = IO(new Bundle {
    val enq = Flipped(Decoupled(gen))
    val deqClock = Input(Clock())
    val deqReset = Input(Bool())
    val deq = Decoupled(gen)
  })
  val aw = log2Ceil(depth)
  def gray(x: UInt): UInt = x ^ (x >> 1)
  def sync(x: UInt): UInt = RegNext(RegNext(x, 0.U), 0.U)

  val mem = Reg(Vec(depth, gen))
  val wbin = RegInit(0.U((aw + 1).W))
  val wgray = RegInit(0.U((aw + 1).W))
  val rgray = Wire(UInt((aw + 1).W))
  val rgraySync = sync(rgray)
  val full = wgray === (rgraySync ^ (3.U << (aw - 1)))
  io.enq.ready := !full
  when(io.enq.fire) {
    mem(wbin(aw - 1, 0)) := io.enq.bits
    val next = wbin + 1.U
    wbin := next
    wgray := gray(next)
  }

  withClockAndReset(io.deqClock, io.deqReset) {
    val rbin = RegInit(0.U((aw + 1).W))
    val rg = RegInit(0.U((aw + 1).W))
    rgray := rg
    val wgraySync = sync(wgray)
    io.deq.valid := rg =/= wgraySync
    io.deq.bits := mem(rbin(aw - 1, 0))
    when(io.deq.fire) {
      val next = rbin + 1.U
      rbin := next
      rg := gray(next)
    }
  }
}
