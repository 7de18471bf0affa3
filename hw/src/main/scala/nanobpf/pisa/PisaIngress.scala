package nanobpf.pisa

import chisel3._
import chisel3.util._
import nanobpf.common.SocMap.PisaAction
import nanobpf.common.SocMap.PisaRegs.CounterCount

/** A frame's beat with its ingress metadata (constant over the frame). */
class MetaBeat(p: PisaParams) extends Bundle {
  val beat = new Beat(p)
  val meta = new PisaMeta(p)
}

/** Ingress half of the PISA pipeline: VLAN pop -> capture -> parser -> match-action, store and forward.
  *
  * [[VlanPop]] takes each frame's outer VLAN tag off first (the port table matches its VID): behind it
  * everything sees the frame as an untagged link carries it, and so do the cores.
  * Beats go into a data FIFO while the header is parsed; the frame leaves with its metadata once its
  * last beat is in and its metadata is ready (latency: [[PisaIngress.latency]] cycles from the last
  * beat in to the first beat out, on an idle pipeline). Dropped frames are drained from the FIFO
  * without leaving. Frames leave in arrival order, one beat per cycle, back-to-back.
  */
class PisaIngress(p: PisaParams) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new UserBeat(p, UInt(2.W)))) // user: physical port
    val out = Decoupled(new MetaBeat(p))
    val cfg = Input(new PisaConfig(p))
    val cid = new CidLookup(p)
    val count = Output(Vec(CounterCount, UInt(16.W)))
  })
  val pop = Module(new VlanPop(p))
  val capture = Module(new Capture(p, new PortTag))
  val parser = Module(new Parser(p, new PortTag, stepShim = true, ingress = true))
  val ma = Module(new MatchAction(p))
  val data = Module(new Queue(new Beat(p), p.fifoBeats, useSyncReadMem = true))
  val meta = Module(new Queue(new IngressResult(p), p.metaDepth, useSyncReadMem = true))

  pop.io.in <> io.in
  capture.io.in <> pop.io.out
  data.io.enq <> capture.io.beats
  // Records in flight in the parser and match-action stages never exceed their latency + 1.
  capture.io.room := meta.io.count < (p.metaDepth - PisaIngress.inFlight).U
  parser.io.in := capture.io.hdr
  ma.io.in := parser.io.out
  ma.io.addr := parser.io.addr
  ma.io.cfg := io.cfg
  io.cid <> ma.io.cid
  meta.io.enq.valid := ma.io.out.valid
  meta.io.enq.bits := ma.io.out.bits
  assert(!meta.io.enq.valid || meta.io.enq.ready, "PISA ingress metadata FIFO overflow")
  io.count := ma.io.count

  // Output: a frame's beats with its metadata; dropped frames are drained.
  val drop = meta.io.deq.bits.meta.action === PisaAction.Drop.U
  io.out.valid := meta.io.deq.valid && data.io.deq.valid && !drop
  io.out.bits.beat := data.io.deq.bits
  io.out.bits.meta := meta.io.deq.bits.meta
  data.io.deq.ready := meta.io.deq.valid && (drop || io.out.ready)
  meta.io.deq.ready := data.io.deq.fire && data.io.deq.bits.last
}

object PisaIngress {
  val inFlight = 1 + Parser.latency + MatchAction.latency + 1
  /** Cycles from a frame's last beat in to its first beat out on an idle pipeline (VlanPop's beat included). */
  val latency = inFlight + 2
}
