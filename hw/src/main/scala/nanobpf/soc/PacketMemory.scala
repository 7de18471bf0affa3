package nanobpf.soc

import chisel3._
import chisel3.util._
import nanobpf.aead.MemPort
import nanobpf.common._

/** The one packet memory of the DPU (region `packet_mem`, uncached), shared by the reassembly buffer
  * (writes received frames), the egress (reads released frames), the cores (bus) and the AEAD engine.
  *
  * Two banks of true dual-port block RAM, interleaved by 64-bit word (bank = word address bit 0).
  * Port A of each bank serves the stream (the reassembly write always wins; the egress read waits a
  * cycle when both want the same bank), port B the engine and the bus (the engine wins, the bus
  * waits). Streams walk consecutive words, so after one conflict the egress is out of phase with the
  * writer and both run at one word per cycle; the engine and the bus never slow the stream down.
  */
class PacketMemory(region: SocMap.Region, engineAddrBits: Int) extends Module {
  val words = (region.size / 8).toInt
  val wordBits = log2Ceil(words)
  require(BigInt(1) << engineAddrBits == region.size, "the engine must address exactly the packet memory")
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val engine = Flipped(new MemPort(engineAddrBits))
    val stream = new StreamMemPort(wordBits)
  })
  def bytes(w: UInt) = VecInit((0 until 8).map(b => w(8 * b + 7, 8 * b)))
  val banks = Seq.fill(2)(SyncReadMem(words / 2, Vec(8, UInt(8.W))))

  // ---- port A: stream
  val s = io.stream
  val wBank = s.write.bits.addr(0)
  val rBank = s.readAddr.bits(0)
  s.readGrant := !(s.write.valid && wBank === rBank)
  val aData = banks.zipWithIndex.map { case (m, b) =>
    val w = s.write.valid && wBank === b.U
    val r = s.readAddr.valid && rBank === b.U && !w
    val addr = Mux(w, s.write.bits.addr, s.readAddr.bits) >> 1
    m.readWrite(addr, bytes(s.write.bits.data), s.write.bits.strb.asBools, w || r, w).asUInt
  }
  s.readData := Mux(RegNext(rBank), aData(1), aData(0))

  // ---- port B: engine, then bus
  val e = io.engine.req
  val req = io.bus.req.bits
  val busWord = (req.addr - region.base.U)(log2Ceil(region.size) - 1, 3)
  val eBank = e.bits.addr(0)
  val bBank = busWord(0)
  e.ready := true.B
  io.bus.req.ready := !(e.valid && eBank === bBank)
  val busFire = io.bus.req.fire
  val bData = banks.zipWithIndex.map { case (m, b) =>
    val eSel = e.valid && eBank === b.U
    val bSel = busFire && bBank === b.U
    val addr = Mux(eSel, e.bits.addr, busWord) >> 1
    val wr = Mux(eSel, e.bits.write, req.write)
    m.readWrite(addr, bytes(Mux(eSel, e.bits.wdata, req.wdata)), Mux(eSel, e.bits.strb, req.wstrb).asBools, eSel || bSel, wr)
      .asUInt
  }
  io.engine.rdata := Mux(RegNext(eBank), bData(1), bData(0))
  io.bus.resp.valid := RegNext(busFire, false.B)
  io.bus.resp.bits.rdata := Mux(RegNext(bBank), bData(1), bData(0))
  io.bus.resp.bits.err := false.B
}
