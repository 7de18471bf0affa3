package nanobpf.soc

import chisel3._
import chisel3.util._
import nanobpf.common._

/** Core-local interruptor (SiFive CLINT layout): per-hart msip and mtimecmp, one mtime that counts
  * core clock cycles. Outputs are level interrupts: `ipi(h)` while msip[h] bit 0 is set, `timerIrq(h)`
  * while mtime >= mtimecmp[h]. One-cycle access latency. Offsets with no register answer an error;
  * entries of harts beyond nCores (up to SocMap.MaxCores) read 0 and ignore writes.
  */
class Clint(nCores: Int) extends Module with RegSlave {
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val ipi = Output(Vec(nCores, Bool()))
    val timerIrq = Output(Vec(nCores, Bool()))
  })
  def busPort = io.bus
  import SocMap.ClintRegs._

  val msip = RegInit(VecInit(Seq.fill(nCores)(false.B)))
  val mtimecmp = RegInit(VecInit(Seq.fill(nCores)(MtimecmpReset.U(64.W))))
  val mtime = RegInit(0.U(64.W))
  mtime := mtime + 1.U

  val off = offset(SocMap.Clint)
  // msip registers are 4 bytes apart: one 64-bit word holds harts 2k (low half) and 2k+1 (high half).
  def msipWord(h: Int) = (Msip + MsipStride * h) & ~7
  def msipLane(h: Int) = ((Msip + MsipStride * h) & 7) * 8
  val rdata = WireDefault((0 until nCores).map(h => Mux(off === msipWord(h).U, msip(h).asUInt << msipLane(h), 0.U(64.W))).reduce(_ | _))
  val hit = WireDefault(false.B)
  for (h <- 0 until nCores) {
    when(off === msipWord(h).U) {
      hit := true.B
      when(fire && isWrite && wstrb(msipLane(h) / 8)) { msip(h) := wdata(msipLane(h)) }
    }
    when(off === (Mtimecmp + MtimecmpStride * h).U) {
      hit := true.B
      rdata := mtimecmp(h)
      when(fire && isWrite) { mtimecmp(h) := merge(mtimecmp(h)) }
    }
  }
  when(off === Mtime.U) {
    hit := true.B
    rdata := mtime
    when(fire && isWrite) { mtime := merge(mtime) }
  }
  // Per-hart arrays are sized for SocMap.MaxCores; entries beyond nCores read 0 and ignore writes.
  val inArray = (base: Int, stride: Int) => off >= (base & ~7).U && off < (base + stride * SocMap.MaxCores).U
  when(inArray(Msip, MsipStride) || inArray(Mtimecmp, MtimecmpStride)) { hit := true.B }
  respond(rdata, !hit)
  io.ipi := msip
  for (h <- 0 until nCores) io.timerIrq(h) := mtime >= mtimecmp(h)
}
