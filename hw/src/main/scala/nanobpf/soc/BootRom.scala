package nanobpf.soc

import chisel3._
import chisel3.util._
import nanobpf.common._

/** Read-only boot ROM holding `image` (little endian, zero padded to 64-bit words).
  * One-cycle read latency; writes are refused with an error. The image is the binary built from
  * firmware/bootrom, read at elaboration.
  */
class BootRom(image: Seq[Byte], region: SocMap.Region) extends Module {
  require(image.nonEmpty, "boot ROM image is empty")
  require(image.size <= region.size, s"boot ROM image (${image.size} B) exceeds the region (${region.size} B)")
  val io = IO(Flipped(new BusPort))
  val words = image.padTo((image.size + 7) / 8 * 8, 0.toByte).grouped(8).map { w =>
    w.zipWithIndex.map { case (b, i) => BigInt(b & 0xff) << (8 * i) }.sum
  }.toSeq
  val rom = VecInit(words.map(_.U(64.W)))
  val index = (io.req.bits.addr - region.base.U) >> 3
  io.req.ready := true.B
  io.resp.valid := RegNext(io.req.fire, false.B)
  io.resp.bits.rdata := RegEnable(Mux(index < words.size.U, rom(index(log2Ceil(words.size max 2) - 1, 0)), 0.U),
    io.req.fire)
  io.resp.bits.err := RegEnable(io.req.bits.write, io.req.fire)
}
