package nanobpf.common

import chisel3.RawModule

/** SystemVerilog emission shared by the top-level apps. */
object Emit {
  /** No randomisation (Verilator and yosys both start from the reset values); lowering that yosys reads. */
  val firtoolOpts = Array(
    "-disable-all-randomization",
    "-strip-debug-info",
    "-lowering-options=disallowLocalVariables,disallowPackedArrays"
  )

  def apply(gen: => RawModule, dir: String): Unit =
    _root_.circt.stage.ChiselStage.emitSystemVerilogFile(gen, args = Array("--target-dir", dir), firtoolOpts = firtoolOpts)
}
