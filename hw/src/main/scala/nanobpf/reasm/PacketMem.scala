package nanobpf.reasm

import chisel3._
import chisel3.util._

/** Packet memory: `slots` slots of `slotBytes`, one beat wide (block RAM on the board). One write
  * port (the buffers) and one read port with one cycle of latency (egress, tests).
  */
class PacketMem(p: PktParams) extends Module {
  val io = IO(new Bundle {
    val write = Flipped(Valid(new MemWrite(p)))
    val readAddr = Input(Valid(UInt(p.memAddrBits.W)))
    val readData = Output(UInt((8 * p.beatBytes).W))
  })
  val mem = SyncReadMem(p.memBeats, Vec(p.beatBytes, UInt(8.W)))
  when(io.write.valid) {
    mem.write(io.write.bits.addr, VecInit(Seq.tabulate(p.beatBytes)(i => io.write.bits.data(8 * i + 7, 8 * i))),
      io.write.bits.strb.asBools)
  }
  io.readData := mem.read(io.readAddr.bits, io.readAddr.valid).asUInt
}
