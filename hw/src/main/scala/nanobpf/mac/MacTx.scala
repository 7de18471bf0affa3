package nanobpf.mac

import chisel3._
import chisel3.util._

/** GMII transmitter: preamble (7 x 0x55) and SFD, the frame's bytes, zero padding to 60 bytes, the
  * FCS, then `ifgBytes` idle bytes. One byte per cycle. Its input comes from a store-and-forward
  * FrameFifo, so a frame, once started, never runs dry. `sent` pulses with the byte count (padding
  * included, FCS excluded) at the end of each frame.
  * Back-to-back frames take 8 + max(frame, 60) + 4 + ifgBytes cycles each: line rate.
  */
class MacTx(p: MacParams) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new AxisBeat(p.beatBytes)))
    val gmii = Output(new GmiiTx)
    val sent = Valid(UInt(16.W))
  })
  val n = p.beatBytes
  object S extends ChiselEnum { val Idle, Pre, Data, Pad, Fcs, Gap = Value }
  val state = RegInit(S.Idle)
  val cnt = RegInit(0.U(16.W)) // position within the current state
  val bytes = RegInit(0.U(16.W)) // frame bytes sent (without FCS)
  val crc = Reg(UInt(32.W))
  val txd = RegInit(0.U(8.W))
  val txEn = RegInit(false.B)

  io.gmii.txd := txd
  io.gmii.txEn := txEn
  io.gmii.txEr := false.B
  io.in.ready := false.B
  io.sent.valid := false.B
  io.sent.bits := bytes

  val beat = io.in.bits
  val lane = cnt(log2Ceil(n) - 1, 0)
  val byte = beat.data.asTypeOf(Vec(n, UInt(8.W)))(lane)
  val lastLane = lane === (n - 1).U || !beat.keep(Mux(lane === (n - 1).U, lane, lane + 1.U))

  def emit(b: UInt): Unit = { txd := b; txEn := true.B }

  switch(state) {
    is(S.Idle) {
      txEn := false.B
      when(io.in.valid) { state := S.Pre; cnt := 0.U; emit(0x55.U) }
    }
    is(S.Pre) {
      cnt := cnt + 1.U
      emit(Mux(cnt === 6.U, 0xd5.U, 0x55.U))
      when(cnt === 6.U) { state := S.Data; cnt := 0.U; crc := Crc32.Init; bytes := 0.U }
    }
    is(S.Data) {
      emit(byte)
      crc := Crc32.step(crc, byte)
      bytes := bytes + 1.U
      cnt := cnt + 1.U
      when(lastLane) {
        io.in.ready := true.B
        cnt := 0.U
        when(beat.last) { state := Mux(bytes + 1.U < 60.U, S.Pad, S.Fcs) }
      }
    }
    is(S.Pad) {
      emit(0.U)
      crc := Crc32.step(crc, 0.U)
      bytes := bytes + 1.U
      when(bytes + 1.U === 60.U) { state := S.Fcs; cnt := 0.U }
    }
    is(S.Fcs) {
      val fcs = (~crc).asTypeOf(Vec(4, UInt(8.W)))
      emit(fcs(cnt(1, 0)))
      cnt := cnt + 1.U
      when(cnt === 3.U) { state := S.Gap; cnt := 0.U; io.sent.valid := true.B }
    }
    is(S.Gap) {
      txEn := false.B
      cnt := cnt + 1.U
      when(cnt === (p.ifgBytes - 1).U) { state := S.Idle }
    }
  }
}
