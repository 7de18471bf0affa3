package nanobpf.soc

import chisel3._
import chisel3.util._
import nanobpf.common._

/** Build-time parameters of the SoC. */
case class SocParams(
    /** Number of CVA6 cores; core 0 is the control core. */
    nCores: Int = 4,
    /** Boot ROM contents: the raw binary of firmware/bootrom (no default: the SoC cannot boot without it). */
    bootRom: Seq[Byte],
    /** $readmemh file baked into main memory; empty: loaded at run time (simulation). */
    memInitFile: String = "",
    /** Main memory outside the SoC (the board's DDR3 behind nanobpf.dram.DramBridge): the SoC exposes the
      * main_mem region's bus port as `mainMem` instead of instantiating MainMemory. Off in simulation. */
    externalMainMem: Boolean = false,
    /** $readmemh file of the read-only firmware image (region fw_image) that the board's boot ROM copies
      * into main memory; empty: no image, the region answers every access with an error (simulation). */
    fwImageFile: String = "",
    /** UART bit time in core cycles after reset (dpu.uart_div): the simulation's default, or core clock / baud on a board. */
    uartDiv: Int = SocMap.DpuRegs.UartDivReset.toInt,
    /** The interconnect's `busActivity` output for `nanobpf-sim --bus-stats` (simulation; a board has none). */
    busActivity: Boolean = true,
    /** The AES-128-GCM engine (its `cores` follows nCores; it addresses the whole packet memory). */
    aead: nanobpf.aead.AeadParams = nanobpf.aead.AeadParams()) {
  require(nCores >= 1 && nCores <= SocMap.MaxCores, s"nCores must be 1..${SocMap.MaxCores}, got $nCores")
  require(!(externalMainMem && memInitFile.nonEmpty), "external main memory cannot be baked in (memInitFile): use fwImageFile")
  /** The datapath: one descriptor queue per core (core 0, the control core, takes data packets only
    * when it is the only core), packet memory slots from hw/defs/soc.toml. */
  val pkt: nanobpf.reasm.PktParams = nanobpf.reasm.PktParams(queues = nCores, slots = SocMap.Datapath.Slots,
    slotBytes = SocMap.Datapath.SlotBytes, headroom = SocMap.Datapath.Headroom, firstDataQueue = if (nCores > 1) 1 else 0)
  val aeadInSoc: nanobpf.aead.AeadParams = aead.copy(cores = nCores, memAddrBits = log2Ceil(SocMap.PacketMem.size))
}

/** NanoBPF SoC: N CVA6 cores, each with its own RAM for its stack (CoreLocal), on a serial AXI interconnect with boot ROM, CLINT, DPU registers, the
  * datapath (PISA pipeline and packet path, nanobpf.datapath.Datapath), the AES-128-GCM engine with
  * its key table storage, the packet memory they all share, and main memory (address map:
  * hw/defs/soc.toml). Reset is synchronous, active high; the cores see its inverse. `eth` carries the
  * frames of the DPU's physical ports (hw/defs/soc.toml [datapath]: host and network); the other
  * outputs carry what the simulation harness (or the board top) shows the user.
  */
class NanobpfSoc(p: SocParams) extends Module {
  val io = IO(new Bundle {
    /** One character per cycle at most from some core's console. */
    val console = Valid(new ConsoleChar(p.nCores))
    /** Pulses when firmware writes dpu.sim_end; bits = exit code. */
    val simEnd = Valid(UInt(8.W))
    /** Pulses on a refused bus access (unmapped, slave error, unsupported atomic). */
    val busError = Valid(new BusError(p.nCores))
    /** What the interconnect does each cycle, for `nanobpf-sim --bus-stats` (simulation builds only: SocParams.busActivity). */
    val busActivity = Option.when(p.busActivity)(Output(new BusActivity(p.nCores, SocMap.regions.size)))
    /** UART, switches, LEDs and Ethernet counters (hw/defs/soc.toml block dpu). */
    val board = new BoardIo
    /** Frames into the DPU (`user` = physical port) and out of it (with their physical port). */
    val eth = new Bundle {
      val rx = Flipped(Decoupled(new nanobpf.pisa.UserBeat(p.pkt.pisa, UInt(2.W))))
      val tx = Decoupled(new nanobpf.pisa.PortBeat(p.pkt.pisa))
    }
    /** The simulation harness's drain request (dpu.sim_drain); false on a board. */
    val simDrain = Input(Bool())
    /** dpu.datapath_ready: the firmware has configured the datapath (the harness then sends frames). */
    val datapathReady = Output(Bool())
  })

  require(SocMap.BusBytes == 8, "the SoC bus is 64 bit (CVA6's AXI width)")
  val xbar = Module(new AxiInterconnect(p.nCores, SocMap.regions, withActivity = p.busActivity))
  val bootRom = Module(new BootRom(p.bootRom, SocMap.Bootrom))
  val clint = Module(new Clint(p.nCores))
  val dpu = Module(new DpuRegs(p.nCores, p.uartDiv))
  /** Main memory's bus port when it is outside the SoC (SocParams.externalMainMem). */
  val mainMem = if (p.externalMainMem) Some(IO(new BusPort)) else None
  val mem = if (p.externalMainMem) None else Some(Module(new MainMemory(SocMap.MainMem, p.memInitFile)).suggestName("mem"))
  val fwImage = Module(new FirmwareImage(SocMap.FwImage, p.fwImageFile))
  val sharedMem = Module(new MainMemory(SocMap.SharedMem, "", loadPlusarg = false))
  val aead = Module(new nanobpf.aead.AeadBlock(p.aeadInSoc))
  val packetMem = Module(new PacketMemory(SocMap.PacketMem, p.aeadInSoc.memAddrBits))
  aead.io.mem <> packetMem.io.engine
  val datapath = Module(new nanobpf.datapath.Datapath(p.pkt))
  datapath.io.mem <> packetMem.io.stream
  datapath.io.in <> io.eth.rx
  io.eth.tx <> datapath.io.out
  dpu.io.simDrain := io.simDrain
  io.datapathReady := dpu.io.datapathReady
  /** The slave serving each region of hw/defs/soc.toml; a region without hardware is an error. */
  val slaveOf: Map[String, BusPort] =
    Map("bootrom" -> bootRom.io, "clint" -> clint.io.bus, "dpu" -> dpu.io.bus, "main_mem" -> mainMem.getOrElse(mem.get.io),
      "fw_image" -> fwImage.io,
      "aead" -> aead.io.bus, "keytable" -> aead.io.keys, "packet_mem" -> packetMem.io.bus,
      "pisa" -> datapath.io.pisaBus, "pkt" -> datapath.io.pktBus, "shared_mem" -> sharedMem.io)
  for ((region, port) <- SocMap.regions.zip(xbar.io.slaves))
    port <> slaveOf.getOrElse(region.name, throw new IllegalArgumentException(s"no hardware serves region ${region.name}"))

  for (h <- 0 until p.nCores) {
    val tile = Module(new nanobpf_cva6_tile).suggestName(s"core$h")
    tile.io.clk_i := clock
    tile.io.rst_ni := !reset.asBool
    tile.io.hart_id_i := h.U
    tile.io.ipi_i := clint.io.ipi(h)
    tile.io.time_irq_i := clint.io.timerIrq(h)
    // the core's own RAM (its stack) in front of the shared bus
    val local = Module(new CoreLocal(SocMap.CoreLocal)).suggestName(s"core${h}_local")
    local.io.core <> tile.io.axi
    xbar.io.masters(h) <> local.io.bus
  }
  io.console := dpu.io.console
  io.simEnd := dpu.io.simEnd
  io.busError := xbar.io.error
  for (a <- io.busActivity; x <- xbar.io.activity) a := x
  io.board <> dpu.io.board
}
