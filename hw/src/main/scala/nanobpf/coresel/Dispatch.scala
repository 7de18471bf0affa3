package nanobpf.coresel

import chisel3._
import chisel3.util._
import nanobpf.reasm.{DescHash, PktParams}
import nanobpf.reorder.{Released, Reorder, ReorderConfig}

/** Core select and reorder unit together: descriptors in, per-core queues and completions, released
  * completions out in arrival order. This is the scheduling core of the packet path, and what the
  * cycle-level benchmark drives (cores are emulated by the benchmark).
  */
class Dispatch(p: PktParams) extends Module {
  val n = p.queues
  val io = IO(new Bundle {
    val sched = Input(new SchedConfig)
    val order = Input(new ReorderConfig)
    val in = Flipped(Decoupled(new DescHash))
    val cores = Vec(n, Decoupled(UInt(64.W)))
    val comp = Vec(n, Flipped(Decoupled(UInt(64.W))))
    val out = Decoupled(new Released(p))
    val outstanding = Output(Vec(n, UInt(6.W)))
    val dispatched = Valid(UInt(p.queueBits.W))
    val hold = Output(Bool())
    val completed = Output(Bool())
    val badComp = Output(Bool())
    val timeouts = Output(Bool())
    val late = Output(Bool())
  })
  val sel = Module(new CoreSelect(p))
  val ro = Module(new Reorder(p))
  sel.io.cfg := io.sched
  ro.io.cfg := io.order
  sel.io.in <> io.in
  ro.io.enq.valid := io.in.fire
  ro.io.enq.bits := io.in.bits.desc
  io.cores <> sel.io.cores
  sel.io.comp <> io.comp
  ro.io.comp.valid := sel.io.compOut.valid
  ro.io.comp.bits := sel.io.compOut.bits.word
  sel.io.compOut.ready := ro.io.comp.ready
  io.out <> ro.io.out
  io.outstanding := sel.io.outstanding
  io.dispatched := sel.io.dispatched
  io.hold := sel.io.hold
  io.completed := sel.io.compOut.fire
  io.badComp := sel.io.badComp
  io.timeouts := ro.io.timeouts
  io.late := ro.io.lateOut
}
