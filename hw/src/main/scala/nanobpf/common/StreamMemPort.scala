package nanobpf.common

import chisel3._
import chisel3.util._

/** The stream side of packet memory: the reassembly buffer writes frames, the egress reads them
  * back. A read is taken only in a cycle where `readGrant` is high; its data is on `readData` in the
  * next cycle.
  */
class StreamMemPort(wordBits: Int) extends Bundle {
  val write = Flipped(Valid(new Bundle {
    val addr = UInt(wordBits.W)
    val data = UInt(64.W)
    val strb = UInt(8.W)
  }))
  val readAddr = Flipped(Valid(UInt(wordBits.W)))
  val readGrant = Output(Bool())
  val readData = Output(UInt(64.W))
}
