package nanobpf.mac

import chisel3._
import chisel3.util._

/** GMII receiver: strips preamble and SFD, checks the FCS and length, drops the FCS, and packs the
  * bytes into beats. Runs in the PHY's receive clock domain and never holds its input.
  *
  * Output: at most one word per cycle (a full beat every `beatBytes` bytes, the last beat at the end of
  * the frame, the cycle after RX_DV falls). The last beat carries the frame's verdict (`FrameErr`);
  * a bad frame's beats have already gone out, so whoever stores them drops them (FrameFifo). A frame
  * that ends before any data byte still produces a last beat (keep 0, err Runt or Phy).
  * Accepted preamble: any number of 0x55 bytes then 0xD5 (PHYs may shorten the preamble).
  */
class MacRx(p: MacParams) extends Module {
  val io = IO(new Bundle {
    val gmii = Input(new GmiiRx)
    val out = Valid(new RxWord(p.beatBytes))
  })
  val n = p.beatBytes
  object S extends ChiselEnum { val Idle, Pre, Data, Skip = Value }
  val state = RegInit(S.Idle)
  val g = RegNext(io.gmii) // registered once: the PHY interface's output is the timing start point

  val crc = Reg(UInt(32.W))
  val count = Reg(UInt(16.W)) // frame bytes with FCS so far (saturates)
  val phyErr = Reg(Bool())
  // The last 4 bytes seen might be the FCS: bytes leave this delay line for the packer 4 bytes late.
  val delay = Reg(Vec(4, UInt(8.W)))
  val part = Reg(Vec(n, UInt(8.W)))
  val partBytes = RegInit(0.U(log2Ceil(n + 1).W))
  val full = Reg(Vec(n, UInt(8.W))) // a complete beat waiting to learn whether it is the last one
  val fullValid = RegInit(false.B)

  io.out.valid := false.B
  io.out.bits.beat.data := full.asUInt
  io.out.bits.beat.keep := Fill(n, 1.U(1.W))
  io.out.bits.beat.last := false.B
  io.out.bits.err := FrameErr.None.U

  def startFrame(): Unit = {
    crc := Crc32.Init; count := 0.U; phyErr := false.B; partBytes := 0.U; fullValid := false.B
  }

  switch(state) {
    is(S.Idle) {
      when(g.rxDv) {
        startFrame()
        phyErr := g.rxEr
        state := Mux(g.rxd === 0xd5.U, S.Data, Mux(g.rxd === 0x55.U, S.Pre, S.Skip))
      }
    }
    is(S.Pre) {
      when(!g.rxDv) {
        // preamble only: a fragment, counted as a runt
        io.out.valid := true.B
        io.out.bits.beat.keep := 0.U
        io.out.bits.beat.last := true.B
        io.out.bits.err := Mux(phyErr, FrameErr.Phy.U, FrameErr.Runt.U)
        state := S.Idle
      }.elsewhen(g.rxd === 0xd5.U && !g.rxEr) {
        state := S.Data
      }.elsewhen(g.rxd =/= 0x55.U || g.rxEr) {
        state := S.Skip
      }
    }
    is(S.Skip) { // bad preamble: wait for the end of the frame, then report it
      when(!g.rxDv) {
        io.out.valid := true.B
        io.out.bits.beat.keep := 0.U
        io.out.bits.beat.last := true.B
        io.out.bits.err := FrameErr.Phy.U
        state := S.Idle
      }
    }
    is(S.Data) {
      when(g.rxDv) {
        crc := Crc32.step(crc, g.rxd)
        when(count =/= "hFFFF".U) { count := count + 1.U }
        when(g.rxEr) { phyErr := true.B }
        delay(0) := g.rxd
        for (i <- 1 until 4) delay(i) := delay(i - 1)
        // a data byte leaves the delay line; past the maximum nothing is kept (the frame is dropped)
        when(count >= 4.U && count < p.maxFrame.U) {
          val b = delay(3)
          when(fullValid) { // the held beat is not the last one: send it on
            io.out.valid := true.B
            fullValid := false.B
          }
          part(partBytes(log2Ceil(n) - 1, 0)) := b
          when(partBytes === (n - 1).U) {
            for (i <- 0 until n - 1) full(i) := part(i)
            full(n - 1) := b
            fullValid := true.B
            partBytes := 0.U
          }.otherwise {
            partBytes := partBytes + 1.U
          }
        }
      }.otherwise { // end of frame: the verdict goes with the last beat
        val err = MuxCase(FrameErr.None.U, Seq(
          phyErr -> FrameErr.Phy.U,
          (count < p.minFrame.U) -> FrameErr.Runt.U,
          (count > p.maxFrame.U) -> FrameErr.Oversize.U,
          (crc =/= Crc32.Residue) -> FrameErr.Fcs.U))
        io.out.valid := true.B
        io.out.bits.beat.last := true.B
        io.out.bits.err := err
        when(partBytes === 0.U) {
          io.out.bits.beat.keep := Mux(fullValid, Fill(n, 1.U(1.W)), 0.U)
        }.otherwise {
          io.out.bits.beat.data := part.asUInt
          io.out.bits.beat.keep := (UIntToOH(partBytes, n + 1) - 1.U)(n - 1, 0)
        }
        state := S.Idle
      }
    }
  }
}
