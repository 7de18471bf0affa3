package nanobpf.soc

import chisel3._
import nanobpf.common._

/** One CVA6 core (hw/vsrc/nanobpf_cva6_tile.sv): RV64IMAC, no FPU, AXI4 manager port. */
class nanobpf_cva6_tile extends ExtModule {
  val io = FlatIO(new Bundle {
    val clk_i = Input(Clock())
    val rst_ni = Input(Bool())
    val hart_id_i = Input(UInt(64.W))
    val ipi_i = Input(Bool())
    val time_irq_i = Input(Bool())
    val axi = new Axi4(Axi4Params())
  })
}
