package nanobpf.pisa

import chisel3._
import chisel3.util._
import nanobpf.common._

/** Front of a store-and-forward stage: passes the beats of each frame on (to a data FIFO) while
  * capturing its first `windowBytes` bytes and its length. One cycle after a frame's last beat,
  * `hdr` carries the header window (zeros past the frame), the length and the frame's side-band.
  *
  * Frames longer than `maxFrame` are cut: the beat that crosses the limit goes on marked `last` and
  * the rest of the frame is consumed and discarded, so the FIFO never holds more than one longest
  * frame per frame; the parser flags the frame too long from its length. A last beat is accepted
  * only while `room` says the consumer can take one more header record.
  */
class Capture[T <: Data](p: PisaParams, userGen: T) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new UserBeat(p, userGen)))
    val beats = Decoupled(new Beat(p))
    val hdr = Valid(new HeaderRec(p, userGen))
    val room = Input(Bool())
  })
  val first = RegInit(true.B)
  val idx = RegInit(0.U(log2Ceil(p.windowBeats + 1).W))
  val len = RegInit(0.U(16.W))
  val cutting = RegInit(false.B)
  val window = Reg(Vec(p.windowBytes, UInt(8.W)))
  val user = Reg(userGen.cloneType)

  val b = io.in.bits.beat
  val n = PopCount(b.keep)
  val lenBefore = Mux(first, 0.U, len)
  val sum = lenBefore +& n
  val lenAfter = Mux(sum > 0xffff.U, 0xffff.U, sum)(15, 0)
  val over = lenAfter > p.maxFrame.U
  val discard = !first && cutting
  val lastOk = !b.last || io.room

  io.beats.valid := io.in.valid && !discard && lastOk
  io.beats.bits := b
  io.beats.bits.last := b.last || over
  io.in.ready := (discard || io.beats.ready) && lastOk
  val fire = io.in.fire

  val lanes = Bytes.bytesOf(b.data, p.beatBytes).zipWithIndex.map { case (d, i) => Mux(b.keep(i), d, 0.U) }
  when(fire) {
    first := b.last
    len := lenAfter
    idx := Mux(first, 1.U, Mux(idx === p.windowBeats.U, idx, idx + 1.U))
    cutting := !b.last && (discard || over)
    when(first) { user := io.in.bits.user }
    for (j <- 0 until p.windowBytes) {
      val k = j / p.beatBytes
      val lane = lanes(j % p.beatBytes)
      when(first) { window(j) := (if (k == 0) lane else 0.U) }
        .elsewhen(idx === k.U) { window(j) := lane }
    }
  }
  io.hdr.valid := RegNext(fire && b.last, false.B)
  io.hdr.bits.window := window
  io.hdr.bits.length := len
  io.hdr.bits.user := user
}
