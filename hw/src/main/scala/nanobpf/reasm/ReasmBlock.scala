package nanobpf.reasm

import chisel3._
import chisel3.util._

/** Reassembly buffer with its packet memory, for the cocotb block test: frames in, descriptors out,
  * slots freed by the test, memory read back through the read port.
  */
class ReasmBlock(p: PktParams = PktParams()) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new ReasmBeat(p)))
    val desc = Decoupled(new DescHash)
    val free = Flipped(Valid(UInt(p.slotBits.W)))
    val freeCount = Output(UInt((p.slotBits + 1).W))
    val readAddr = Input(Valid(UInt(p.memAddrBits.W)))
    val readData = Output(UInt((8 * p.beatBytes).W))
    val rxFrame = Output(Bool())
    val dropFull = Output(Bool())
    val dropBad = Output(Bool())
    val metaSlot = Input(UInt(p.slotBits.W))
    val meta = Output(UInt(FrameInfo.metaBits.W))
  })
  val reasm = Module(new Reasm(p))
  val mem = Module(new PacketMem(p))
  reasm.io.in <> io.in
  mem.io.write := reasm.io.mem
  io.desc <> reasm.io.desc
  reasm.io.free := io.free
  io.freeCount := reasm.io.freeCount
  mem.io.readAddr := io.readAddr
  io.readData := mem.io.readData
  io.rxFrame := reasm.io.rxFrame
  io.dropFull := reasm.io.dropFull
  io.dropBad := reasm.io.dropBad
  reasm.io.metaSlot := io.metaSlot
  io.meta := reasm.io.meta
}
