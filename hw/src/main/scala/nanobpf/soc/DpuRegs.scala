package nanobpf.soc

import chisel3._
import chisel3.util._

/** One console character written by a core. */
class ConsoleChar(nCores: Int) extends Bundle {
  val core = UInt(log2Ceil(nCores max 2).W)
  val char = UInt(8.W)
}

/** DPU control/status registers (layout: hw/defs/soc.toml, block `dpu`).
  *
  * Identity, core count and cycle counter; a per-core console (each write to `console[c]` emits one
  * character on `io.console`, at most one per cycle since the bus is serial); `sim_end` (a write
  * pulses `io.simEnd` with the exit code); per-core uncached `mailbox` words for rendezvous.
  * One-cycle access latency. Errors: offsets with no register, writes to read-only registers.
  */
class DpuRegs(nCores: Int) extends Module with RegSlave {
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val console = Valid(new ConsoleChar(nCores))
    val simEnd = Valid(UInt(8.W))
  })
  def busPort = io.bus
  import SocMap.DpuRegs._

  val cycle = RegInit(0.U(64.W))
  cycle := cycle + 1.U
  val mailbox = RegInit(VecInit(Seq.fill(nCores)(0.U(64.W))))

  val off = offset(SocMap.Dpu)
  val rdata = WireDefault(0.U(64.W))
  val err = WireDefault(true.B)
  io.console.valid := false.B
  io.console.bits := DontCare
  io.simEnd.valid := false.B
  io.simEnd.bits := wdata(7, 0)

  def readOnly(at: Int, value: UInt): Unit = when(off === at.U) { rdata := value; err := isWrite }
  readOnly(Id, IdReset.U(64.W))
  readOnly(NumCores, nCores.U(64.W))
  readOnly(Cycle, cycle)
  when(off === SimEnd.U) {
    err := false.B
    io.simEnd.valid := fire && isWrite
  }
  for (c <- 0 until nCores) {
    when(off === (Console + ConsoleStride * c).U) {
      err := false.B
      io.console.valid := fire && isWrite && wstrb(0)
      io.console.bits.core := c.U
      io.console.bits.char := wdata(7, 0)
    }
    when(off === (Mailbox + MailboxStride * c).U) {
      err := false.B
      rdata := mailbox(c)
      when(fire && isWrite) { mailbox(c) := merge(mailbox(c)) }
    }
  }
  // Per-core arrays are sized for SocMap.MaxCores; entries beyond nCores read 0 and ignore writes.
  val inArray = (base: Int, stride: Int) => off >= base.U && off < (base + stride * SocMap.MaxCores).U
  when(inArray(Console, ConsoleStride) || inArray(Mailbox, MailboxStride)) { err := false.B }
  respond(rdata, err)
}
