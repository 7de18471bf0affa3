package nanobpf.aead

import chisel3._
import chisel3.util._
import nanobpf.common.{BusPort, EbpfAbi, SocMap}

/** Key table storage (region `keytable`): connection slot `i` holds its `struct nanobpf_quic_keys`
  * (80 bytes, the ebpf abi) at byte `i * 80`. The bus reads and writes it a 64-bit word at a time
  * with byte strobes (one cycle); the engine has its own read port (one cycle of latency). Block RAM.
  */
class KeyTable(p: AeadParams) extends Module {
  val words = p.keySlots * (EbpfAbi.QuicKeys.Size / 8)
  require(EbpfAbi.QuicKeys.Size % 8 == 0)
  require(words * 8 <= SocMap.Keytable.size, "key slots do not fit in the keytable region")
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val read = Input(Valid(UInt(log2Ceil(words).W)))
    val data = Output(UInt(64.W))
  })
  val mem = SyncReadMem(words, Vec(8, UInt(8.W)))
  val req = io.bus.req.bits
  val word = (req.addr - SocMap.Keytable.base.U)(log2Ceil(SocMap.Keytable.size) - 1, 3)
  val inRange = word < words.U
  val fire = io.bus.req.fire
  val rw = mem.readWrite(word(log2Ceil(words) - 1, 0), VecInit((0 until 8).map(b => req.wdata(8 * b + 7, 8 * b))),
    req.wstrb.asBools, fire && inRange, req.write)
  io.bus.req.ready := true.B
  io.bus.resp.valid := RegNext(fire, false.B)
  io.bus.resp.bits.rdata := Mux(RegNext(inRange && !req.write), rw.asUInt, 0.U)
  io.bus.resp.bits.err := RegEnable(!inRange, fire)
  io.data := mem.read(io.read.bits, io.read.valid).asUInt
}
