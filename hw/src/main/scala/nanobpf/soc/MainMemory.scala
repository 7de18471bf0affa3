package nanobpf.soc

import chisel3._
import chisel3.util._
import nanobpf.common._

/** The SystemVerilog RAM in hw/vsrc/nanobpf_main_mem.sv (plusarg-loadable in simulation). */
class nanobpf_main_mem(words: Int, initFile: String, loadPlusarg: Boolean)
    extends ExtModule(Map("WORDS" -> IntParam(words), "INIT_FILE" -> StringParam(initFile),
      "LOAD_PLUSARG" -> IntParam(if (loadPlusarg) 1 else 0))) {
  val io = FlatIO(new Bundle {
    val clock = Input(Clock())
    val en = Input(Bool())
    val we = Input(Bool())
    val addr = Input(UInt(log2Ceil(words).W))
    val wdata = Input(UInt(64.W))
    val wstrb = Input(UInt(8.W))
    val rdata = Output(UInt(64.W))
  })
}

/** Main memory on the bus: one access per cycle, read data one cycle later, never an error.
  * `loadPlusarg` false: a RAM the simulation's firmware image never loads (shared memory). */
class MainMemory(region: SocMap.Region, initFile: String, loadPlusarg: Boolean = true) extends Module {
  val io = IO(Flipped(new BusPort))
  val words = (region.size / 8).toInt
  val ram = Module(new nanobpf_main_mem(words, initFile, loadPlusarg))
  ram.io.clock := clock
  ram.io.en := io.req.fire
  ram.io.we := io.req.bits.write
  ram.io.addr := (io.req.bits.addr - region.base.U)(log2Ceil(words) + 2, 3)
  ram.io.wdata := io.req.bits.wdata
  ram.io.wstrb := io.req.bits.wstrb
  io.req.ready := true.B
  io.resp.valid := RegNext(io.req.fire, false.B)
  io.resp.bits.rdata := ram.io.rdata
  io.resp.bits.err := false.B
}

/** The read-only firmware image (region fw_image): on a board the firmware's $readmemh image in block
  * RAM, which hart 0's boot ROM code copies into main memory (external DRAM) before jumping there. One
  * access per cycle, read data one cycle later; writes are refused (err). Without an image (`initFile`
  * empty, simulation) there is no RAM and every access is refused, as an unmapped address would be.
  */
class FirmwareImage(region: SocMap.Region, initFile: String) extends Module {
  val io = IO(Flipped(new BusPort))
  io.req.ready := true.B
  io.resp.valid := RegNext(io.req.fire, false.B)
  if (initFile.isEmpty) {
    io.resp.bits.rdata := 0.U
    io.resp.bits.err := true.B
  } else {
    val words = (region.size / 8).toInt
    val rom = Module(new nanobpf_main_mem(words, initFile, loadPlusarg = false))
    rom.io.clock := clock
    rom.io.en := io.req.fire
    rom.io.we := false.B
    rom.io.addr := (io.req.bits.addr - region.base.U)(log2Ceil(words) + 2, 3)
    rom.io.wdata := 0.U
    rom.io.wstrb := 0.U
    val refused = RegEnable(io.req.bits.write, io.req.fire)
    io.resp.bits.rdata := Mux(refused, 0.U, rom.io.rdata)
    io.resp.bits.err := refused
  }
}
