package nanobpf.mac

import chisel3._
import chisel3.util._

/** Store-and-forward frame FIFO: a frame becomes visible on `out` only after its last beat arrived
  * with no error; a bad frame is rolled back whole, so nothing of it ever leaves.
  *
  * Input: with `backpressure` the FIFO holds `in` while it is full (transmit side, the stream can
  * wait); without it `in` is always ready and a frame that does not fit is dropped (`Overflow`, receive
  * side, the wire cannot wait). Frames with more than `maxBytes` bytes are dropped (`Oversize`), as are
  * frames whose beats have gaps in `keep` or an empty last beat when `checkKeep` (`Phy`, reported as
  * malformed). `dropped` pulses with the reason, `accepted` with the byte count of each good frame
  * (both registered: the cycle after the frame's last beat was taken in).
  * Output: one beat per cycle (block RAM with a three-entry prefetch queue).
  *
  * Each input beat first goes into a one-entry pipe register with its facts (byte count, keep shape)
  * already worked out, and the frame bookkeeping starts from that register: without it, `clk_net`'s
  * deepest path ran from the producer's output multiplexers (the clock-crossing FIFO's read side)
  * through the popcount, the byte sum, the verdict and the write pointer in one 8 ns cycle
  * (docs/board.md, timing). Costs a cycle of latency per frame, no throughput: the register passes a
  * beat per cycle, and on the receive side (no backpressure) it is always ready.
  */
class FrameFifo(p: MacParams, maxBytes: Int, backpressure: Boolean, checkKeep: Boolean) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new RxWord(p.beatBytes)))
    val out = Decoupled(new AxisBeat(p.beatBytes))
    val accepted = Valid(UInt(16.W))
    val dropped = Valid(UInt(FrameErr.width.W))
  })
  val n = p.beatBytes
  val depth = p.fifoBeats
  val aw = log2Ceil(depth)
  val mem = SyncReadMem(depth, new AxisBeat(n))
  val wp = RegInit(0.U((aw + 1).W)) // next write (tentative, this frame)
  val cp = RegInit(0.U((aw + 1).W)) // end of the last committed frame
  val rp = RegInit(0.U((aw + 1).W)) // next read
  val bytes = RegInit(0.U(16.W)) // this frame so far
  val err = RegInit(FrameErr.None.U(FrameErr.width.W)) // first problem seen in this frame

  val full = wp === (rp ^ (1 << aw).U)

  class InBeat extends Bundle {
    val word = new RxWord(n)
    val cnt = UInt(log2Ceil(n + 1).W) // bytes in the beat
    val malformed = Bool() // keep has gaps, or an empty last beat (checkKeep)
  }
  val stage = Module(new Queue(new InBeat, 1, pipe = true))
  stage.io.enq.valid := io.in.valid
  stage.io.enq.bits.word := io.in.bits
  locally {
    val b = io.in.bits.beat
    val contiguous = (b.keep & (b.keep + 1.U)) === 0.U
    stage.io.enq.bits.cnt := PopCount(b.keep)
    stage.io.enq.bits.malformed :=
      (if (checkKeep) (!b.last && !b.keep.andR) || (b.last && (!contiguous || b.keep === 0.U)) else false.B)
  }
  io.in.ready := stage.io.enq.ready
  val in = stage.io.deq
  in.ready := (if (backpressure) !full else true.B)

  // the verdicts leave from registers (a cycle after the last beat): the counters that add them up
  // then start from flip-flops too
  val accepted = Wire(Valid(UInt(16.W)))
  val dropped = Wire(Valid(UInt(FrameErr.width.W)))
  accepted.valid := false.B
  accepted.bits := 0.U
  dropped.valid := false.B
  dropped.bits := 0.U
  io.accepted := RegNext(accepted, 0.U.asTypeOf(accepted))
  io.dropped := RegNext(dropped, 0.U.asTypeOf(dropped))

  when(in.fire) {
    val b = in.bits.word.beat
    val malformed = in.bits.malformed
    val newBytes = bytes + in.bits.cnt // bytes saturates at maxBytes + 1: no overflow
    val tooLong = newBytes > maxBytes.U
    val thisErr = MuxCase(err, Seq(
      (err =/= FrameErr.None.U) -> err,
      malformed -> FrameErr.Phy.U,
      tooLong -> FrameErr.Oversize.U,
      (full && b.keep =/= 0.U) -> FrameErr.Overflow.U))
    val write = thisErr === FrameErr.None.U && b.keep =/= 0.U
    when(write) {
      mem.write(wp(aw - 1, 0), b)
    }
    when(b.last) {
      // the input's own verdict (MacRx) comes first, in eth_counter's order
      val verdict = Mux(in.bits.word.err =/= FrameErr.None.U, in.bits.word.err, thisErr)
      when(verdict === FrameErr.None.U && (newBytes =/= 0.U)) {
        val end = wp + write.asUInt
        wp := end
        cp := end
        accepted.valid := true.B
        accepted.bits := newBytes
      }.otherwise {
        wp := cp
        dropped.valid := true.B
        dropped.bits := Mux(verdict === FrameErr.None.U, FrameErr.Phy.U, verdict) // an empty frame
      }
      bytes := 0.U
      err := FrameErr.None.U
    }.otherwise {
      when(write) { wp := wp + 1.U }
      bytes := Mux(newBytes > maxBytes.U, (maxBytes + 1).U, newBytes)
      err := thisErr
    }
  }
  // read side: prefetch into a small queue so a beat can leave every cycle
  val q = Module(new Queue(new AxisBeat(n), 3))
  val inflight = RegInit(false.B)
  val canRead = rp =/= cp && (q.io.count +& inflight.asUInt) < 3.U
  val rdata = mem.read(rp(aw - 1, 0), canRead)
  when(canRead) { rp := rp + 1.U }
  inflight := canRead
  q.io.enq.valid := inflight
  q.io.enq.bits := rdata
  io.out <> q.io.deq
}
