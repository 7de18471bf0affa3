package nanobpf.soc

import chisel3._
import chisel3.util._

/** Build-time parameters of the SoC. */
case class SocParams(
    /** Number of CVA6 cores; core 0 is the control core. */
    nCores: Int = 4,
    /** Boot ROM contents: the raw binary of firmware/bootrom (no default: the SoC cannot boot without it). */
    bootRom: Seq[Byte],
    /** $readmemh file baked into main memory (board builds); empty: loaded at run time (simulation). */
    memInitFile: String = "") {
  require(nCores >= 1 && nCores <= SocMap.MaxCores, s"nCores must be 1..${SocMap.MaxCores}, got $nCores")
}

/** NanoBPF SoC: N CVA6 cores on a serial AXI interconnect with boot ROM, CLINT, DPU registers and
  * main memory (address map: hw/defs/soc.toml). Reset is synchronous, active high; the cores see
  * its inverse. The outputs carry what the simulation harness (or the board top) shows the user.
  */
class NanobpfSoc(p: SocParams) extends Module {
  val io = IO(new Bundle {
    /** One character per cycle at most from some core's console. */
    val console = Valid(new ConsoleChar(p.nCores))
    /** Pulses when firmware writes dpu.sim_end; bits = exit code. */
    val simEnd = Valid(UInt(8.W))
    /** Pulses on a refused bus access (unmapped, slave error, unsupported atomic). */
    val busError = Valid(new BusError(p.nCores))
  })

  val regions = Seq(SocMap.Bootrom, SocMap.Clint, SocMap.Dpu, SocMap.MainMem)
  val xbar = Module(new AxiInterconnect(p.nCores, regions))
  val bootRom = Module(new BootRom(p.bootRom, SocMap.Bootrom))
  val clint = Module(new Clint(p.nCores))
  val dpu = Module(new DpuRegs(p.nCores))
  val mem = Module(new MainMemory(SocMap.MainMem, p.memInitFile))
  xbar.io.slaves(0) <> bootRom.io
  xbar.io.slaves(1) <> clint.io.bus
  xbar.io.slaves(2) <> dpu.io.bus
  xbar.io.slaves(3) <> mem.io

  for (h <- 0 until p.nCores) {
    val tile = Module(new nanobpf_cva6_tile).suggestName(s"core$h")
    tile.io.clk_i := clock
    tile.io.rst_ni := !reset.asBool
    tile.io.hart_id_i := h.U
    tile.io.ipi_i := clint.io.ipi(h)
    tile.io.time_irq_i := clint.io.timerIrq(h)
    xbar.io.masters(h) <> tile.io.axi
  }
  io.console := dpu.io.console
  io.simEnd := dpu.io.simEnd
  io.busError := xbar.io.error
}
