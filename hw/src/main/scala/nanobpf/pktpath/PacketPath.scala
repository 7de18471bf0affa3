package nanobpf.pktpath

import chisel3._
import chisel3.util._
import nanobpf.pisa.Beat
import nanobpf.reasm.{FrameMerge, MemWrite, PacketMem, Packetizer, PktParams, Reasm, ReasmBeat}
import nanobpf.common.Layout
import nanobpf.reorder.Released
import nanobpf.common.{BusPort, EbpfAbi}
import nanobpf.common.SocMap.{PktComp, PktCounter}
import nanobpf.coresel._

/** The packet path between the PISA pipeline and the cores (docs/packet-path.md): frames from the
  * pipeline (`in`) and from the packetization buffer (host GSO batches on `gso`) merged a frame at a
  * time into the reassembly buffer and packet memory, core select with per-core queues the cores pop through registers, reorder unit.
  * Released completions leave on `egress` in order; drops (XDP aborted/drop) free their slot here and
  * are not passed on. Frames are written to packet memory through `mem` (the memory is outside: the
  * SoC shares it with the cores and the AEAD engine); the egress reads a released frame there and then
  * returns the slot on `free`.
  */
class PacketPath(p: PktParams = PktParams()) extends Module {
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val in = Flipped(Decoupled(new ReasmBeat(p)))
    val gso = Flipped(Decoupled(new Beat(p.pisa)))
    val mem = Valid(new MemWrite(p))
    val egress = Decoupled(new Released(p))
    val free = Flipped(Valid(UInt(p.slotBits.W)))
    val freeSlots = Output(UInt((p.slotBits + 1).W))
    /** Events of the egress (outside this block), counted here. */
    val egressSent = Input(Bool())
    val egressBad = Input(Bool())
    /** Frames into and out of the datapath per physical port (outside this block), counted here. */
    val portRx = Input(Vec(4, Bool()))
    val portTx = Input(Vec(4, Bool()))
  })
  val reasm = Module(new Reasm(p))
  val dispatch = Module(new Dispatch(p))
  val regs = Module(new PktRegs(p))
  regs.io.bus <> io.bus
  val pktz = Module(new Packetizer(p))
  val merge = Module(new FrameMerge(p, 2))
  pktz.io.in <> io.gso
  merge.io.in(0) <> io.in
  merge.io.in(1) <> pktz.io.out
  reasm.io.in <> merge.io.out
  io.mem := reasm.io.mem
  dispatch.io.in <> reasm.io.desc
  dispatch.io.sched := regs.io.sched
  dispatch.io.order := regs.io.order
  regs.io.cores <> dispatch.io.cores
  dispatch.io.comp <> regs.io.comp
  regs.io.outstanding := dispatch.io.outstanding
  regs.io.dispatched := dispatch.io.dispatched
  regs.io.freeSlots := reasm.io.freeCount
  reasm.io.metaSlot := regs.io.metaSlot
  regs.io.meta := reasm.io.meta

  // Released drops free their slot here; the free port is shared with the egress, which wins.
  val rel = dispatch.io.out
  val isDrop = PacketPath.isDrop(Layout.get(rel.bits.word, PktComp.Action))
  io.egress.valid := rel.valid && !isDrop
  io.egress.bits := rel.bits
  rel.ready := Mux(isDrop, !io.free.valid, io.egress.ready)
  reasm.io.free.valid := io.free.valid || (rel.fire && isDrop)
  reasm.io.free.bits := Mux(io.free.valid, io.free.bits, Layout.get(rel.bits.word, PktComp.Slot)(p.slotBits - 1, 0))
  io.freeSlots := reasm.io.freeCount

  val c = regs.io.count
  c.foreach(_ := false.B)
  c(PktCounter.RxFrames) := reasm.io.rxFrame
  c(PktCounter.RxDropFull) := reasm.io.dropFull
  c(PktCounter.RxDropBad) := reasm.io.dropBad
  c(PktCounter.Dispatched) := dispatch.io.dispatched.valid
  c(PktCounter.HoldCycles) := dispatch.io.hold
  c(PktCounter.Completions) := dispatch.io.completed
  c(PktCounter.BadCompletions) := dispatch.io.badComp
  c(PktCounter.Released) := rel.fire
  c(PktCounter.ReleasedDrop) := rel.fire && isDrop
  c(PktCounter.Timeouts) := dispatch.io.timeouts
  c(PktCounter.Late) := dispatch.io.late
  c(PktCounter.GsoBatches) := pktz.io.count.batches
  c(PktCounter.GsoSegments) := pktz.io.count.segments
  c(PktCounter.GsoBad) := pktz.io.count.bad
  c(PktCounter.EgressFrames) := io.egressSent
  c(PktCounter.EgressBad) := io.egressBad
  for (i <- 0 until 4) {
    c(PktCounter.RxPort0 + i) := io.portRx(i)
    c(PktCounter.TxPort0 + i) := io.portTx(i)
  }
}

object PacketPath {
  /** The XDP actions that free a packet's slot without sending it (hw/defs/ebpf.toml xdp_action). */
  def isDrop(action: UInt): Bool = action === EbpfAbi.XdpAborted.U || action === EbpfAbi.XdpDrop.U
}

/** The packet path with a packet memory of its own and a read port into it, for the cocotb block test
  * and the stand-alone utilisation figure (in the SoC the memory is shared: soc.PacketMemory).
  */
class PacketPathBlock(p: PktParams = PktParams()) extends Module {
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val in = Flipped(Decoupled(new ReasmBeat(p)))
    val gso = Flipped(Decoupled(new Beat(p.pisa)))
    val egress = Decoupled(new Released(p))
    val free = Flipped(Valid(UInt(p.slotBits.W)))
    val readAddr = Input(Valid(UInt(p.memAddrBits.W)))
    val readData = Output(UInt((8 * p.beatBytes).W))
    val freeSlots = Output(UInt((p.slotBits + 1).W))
  })
  val path = Module(new PacketPath(p))
  val mem = Module(new PacketMem(p))
  path.io.bus <> io.bus
  path.io.in <> io.in
  path.io.gso <> io.gso
  io.egress <> path.io.egress
  path.io.free := io.free
  path.io.egressSent := false.B
  path.io.egressBad := false.B
  path.io.portRx.foreach(_ := false.B)
  path.io.portTx.foreach(_ := false.B)
  io.freeSlots := path.io.freeSlots
  mem.io.write := path.io.mem
  mem.io.readAddr := io.readAddr
  io.readData := mem.io.readData
}
