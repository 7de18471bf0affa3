package nanobpf.soc

import chisel3._
import chisel3.util._
import nanobpf.aead.MemPort

/** Packet memory on the SoC bus (region `packet_mem`, uncached): true dual-port block RAM, one port
  * for the bus (one cycle, byte strobes) and one for the AEAD engine (`engine`, never stalls, read
  * data one cycle after the request). Engine addresses are offsets into the region.
  */
class PacketMemory(region: SocMap.Region, engineAddrBits: Int) extends Module {
  val words = (region.size / 8).toInt
  require(BigInt(1) << engineAddrBits == region.size, "the engine must address exactly the packet memory")
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val engine = Flipped(new MemPort(engineAddrBits))
  })
  val mem = SyncReadMem(words, Vec(8, UInt(8.W)))
  def bytes(w: UInt) = VecInit((0 until 8).map(b => w(8 * b + 7, 8 * b)))
  val req = io.bus.req.bits
  val fire = io.bus.req.fire
  val word = (req.addr - region.base.U)(log2Ceil(region.size) - 1, 3)
  val busData = mem.readWrite(word, bytes(req.wdata), req.wstrb.asBools, fire, req.write)
  io.bus.req.ready := true.B
  io.bus.resp.valid := RegNext(fire, false.B)
  io.bus.resp.bits.rdata := busData.asUInt
  io.bus.resp.bits.err := false.B

  val e = io.engine.req
  e.ready := true.B
  io.engine.rdata := mem.readWrite(e.bits.addr, bytes(e.bits.wdata), e.bits.strb.asBools, e.valid, e.bits.write).asUInt
}
