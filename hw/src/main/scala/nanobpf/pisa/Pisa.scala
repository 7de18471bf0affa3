package nanobpf.pisa

import chisel3._
import chisel3.util._
import nanobpf.common.BusPort
import nanobpf.common.SocMap.PisaAction

/** The PISA transport pipeline: ingress (parser + match-action) and egress (deparser), with their
  * register block.
  *
  * `in` (frames from the MACs, user = physical port) -> ingress. Frames for the cores leave on
  * `toCores` with their metadata; frames for the host or the network go straight to the deparser.
  * Frames the cores send back (`fromCores`, with their action and whether to recompute checksums)
  * share the deparser, frame by frame in round robin. `out` carries frames to the MACs with their
  * physical port. No frame is lost or reordered within one path.
  */
class Pisa(p: PisaParams = PisaParams()) extends Module {
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val in = Flipped(Decoupled(new UserBeat(p, UInt(2.W))))
    val toCores = Decoupled(new MetaBeat(p))
    val fromCores = Flipped(Decoupled(new UserBeat(p, new EgressCmd)))
    val out = Decoupled(new PortBeat(p))
    /** Register `roles` (which logical ports are the host and the network), for the egress of the cores' frames. */
    val roles = Output(UInt(32.W))
  })
  val regs = Module(new PisaRegs(p))
  val ingress = Module(new PisaIngress(p))
  val deparser = Module(new Deparser(p))
  regs.io.bus <> io.bus
  ingress.io.cfg := regs.io.cfg
  regs.io.cid <> ingress.io.cid
  io.roles := regs.io.cfg.roles
  deparser.io.cfg := regs.io.cfg
  regs.io.count := VecInit(ingress.io.count.zip(deparser.io.count).map { case (a, b) => a + b })
  ingress.io.in <> io.in

  // Split: to the cores, or past them to the deparser.
  val ing = ingress.io.out
  val toCores = ing.bits.meta.action === PisaAction.ToCores.U
  val bypass = Wire(Decoupled(new UserBeat(p, new EgressCmd)))
  io.toCores.valid := ing.valid && toCores
  io.toCores.bits := ing.bits
  bypass.valid := ing.valid && !toCores
  bypass.bits.beat := ing.bits.beat
  bypass.bits.user.action := ing.bits.meta.action
  bypass.bits.user.fixCsum := false.B
  bypass.bits.user.fixLen := false.B
  ing.ready := Mux(toCores, io.toCores.ready, bypass.ready)

  // Merge, frame by frame: the input that starts a frame keeps the deparser until its last beat.
  val locked = RegInit(false.B)
  val owner = RegInit(0.U(1.W))
  val prefer = RegInit(0.U(1.W))
  val sel = Mux(locked, owner, Mux(bypass.valid && io.fromCores.valid, prefer, io.fromCores.valid.asUInt))
  deparser.io.in.valid := Mux(sel === 0.U, bypass.valid, io.fromCores.valid)
  deparser.io.in.bits := Mux(sel === 0.U, bypass.bits, io.fromCores.bits)
  bypass.ready := sel === 0.U && deparser.io.in.ready
  io.fromCores.ready := sel === 1.U && deparser.io.in.ready
  when(deparser.io.in.fire) {
    val last = deparser.io.in.bits.beat.last
    locked := !last
    owner := sel
    when(last) { prefer := ~sel }
  }
  io.out <> deparser.io.out
}
