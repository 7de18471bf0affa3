package nanobpf.soc

import chisel3._
import chisel3.util._
import nanobpf.common._

/** One console character written by a core. */
class ConsoleChar(nCores: Int) extends Bundle {
  val core = UInt(log2Ceil(nCores max 2).W)
  val char = UInt(8.W)
}

/** What the DPU registers exchange with the board (all in the core clock domain except as noted). */
class BoardIo extends Bundle {
  /** UART console line (idle high). */
  val uartTx = Output(Bool())
  /** Slide switches, asynchronous (synchronised inside). */
  val switches = Input(UInt(8.W))
  /** The firmware's LEDs (dpu.leds). */
  val leds = Output(UInt(4.W))
  /** Ethernet MAC counters, already brought into the core clock domain (0 without a MAC). */
  val ethCounters = Input(Vec(SocMap.DpuRegs.EthCounterCount, UInt(32.W)))
}

/** DPU control/status registers (layout: hw/defs/soc.toml, block `dpu`).
  *
  * Identity, core count and cycle counter; a per-core console (each write to `console[c]` emits one
  * character on `io.console`, at most one per cycle since the bus is serial); `sim_end` (a write
  * pulses `io.simEnd` with the exit code); per-core uncached `mailbox` words for rendezvous; the board
  * I/O: UART transmitter (`uart_*`, bit time `uartDiv` cycles after reset), switches, LEDs, Ethernet
  * counters. One-cycle access latency. Errors: offsets with no register, writes to read-only registers.
  */
class DpuRegs(nCores: Int, uartDiv: Int = SocMap.DpuRegs.UartDivReset.toInt) extends Module with RegSlave {
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val console = Valid(new ConsoleChar(nCores))
    val simEnd = Valid(UInt(8.W))
    val board = new BoardIo
    /** The simulation harness's drain request (dpu.sim_drain). */
    val simDrain = Input(Bool())
    /** dpu.datapath_ready: the firmware has configured the datapath. */
    val datapathReady = Output(Bool())
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
  // board I/O
  val uart = Module(new UartTx())
  val uartDivReg = RegInit(uartDiv.U(16.W))
  val uartDropped = RegInit(0.U(16.W))
  val leds = RegInit(0.U(4.W))
  uart.io.div := uartDivReg
  uart.io.enq.valid := false.B
  uart.io.enq.bits := wdata(7, 0)
  io.board.uartTx := uart.io.txd
  io.board.leds := leds
  val switches = RegNext(RegNext(io.board.switches, 0.U), 0.U)
  when(off === UartTx.U) {
    err := !isWrite
    when(fire && isWrite && wstrb(0)) {
      uart.io.enq.valid := true.B
      when(!uart.io.enq.ready && uartDropped =/= "hFFFF".U) { uartDropped := uartDropped + 1.U }
    }
  }
  readOnly(UartStatus, uartDropped ## 0.U(14.W) ## uart.io.idle ## !uart.io.enq.ready)
  when(off === UartDiv.U) {
    err := false.B
    rdata := uartDivReg
    when(fire && isWrite) { uartDivReg := merge(uartDivReg.pad(64))(15, 0) }
  }
  readOnly(Switches, switches)
  readOnly(SimDrain, io.simDrain)
  val dpReady = RegInit(false.B)
  io.datapathReady := dpReady
  when(off === DatapathReady.U) {
    err := false.B
    rdata := dpReady
    when(fire && isWrite && wstrb(0)) { dpReady := wdata(0) }
  }
  when(off === Leds.U) {
    err := false.B
    rdata := leds
    when(fire && isWrite && wstrb(0)) { leds := wdata(3, 0) }
  }
  for (i <- 0 until EthCounterCount) readOnly(EthCounter + EthCounterStride * i, io.board.ethCounters(i))

  // Per-core arrays are sized for SocMap.MaxCores; entries beyond nCores read 0 and ignore writes.
  val inArray = (base: Int, stride: Int) => off >= base.U && off < (base + stride * SocMap.MaxCores).U
  when(inArray(Console, ConsoleStride) || inArray(Mailbox, MailboxStride)) { err := false.B }
  respond(rdata, err)
}
