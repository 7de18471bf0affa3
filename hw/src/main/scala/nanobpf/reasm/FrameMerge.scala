package nanobpf.reasm

import chisel3._
import chisel3.util._

/** Merges frame streams into one, a whole frame at a time: round robin between the inputs that have
  * a frame waiting, the chosen input keeps the output until its last beat.
  */
class FrameMerge(p: PktParams, n: Int) extends Module {
  val io = IO(new Bundle {
    val in = Vec(n, Flipped(Decoupled(new ReasmBeat(p))))
    val out = Decoupled(new ReasmBeat(p))
  })
  val locked = RegInit(false.B)
  val owner = RegInit(0.U(log2Ceil(n max 2).W))
  val arb = Module(new RRArbiter(new ReasmBeat(p), n))
  val sel = Mux(locked, owner, arb.io.chosen)
  // While locked only the owner may pass; the arbiter's choice is used only at a frame's start.
  for (i <- 0 until n) {
    val allowed = !locked || owner === i.U
    arb.io.in(i).valid := io.in(i).valid && allowed
    arb.io.in(i).bits := io.in(i).bits
    io.in(i).ready := arb.io.in(i).ready && allowed
  }
  io.out <> arb.io.out
  when(io.out.fire) {
    locked := !io.out.bits.beat.last
    owner := sel
  }
}
