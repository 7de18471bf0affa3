package nanobpf.coresel

import chisel3._
import chisel3.util._
import nanobpf.reasm.{DescHash, PktParams}
import nanobpf.common.Layout
import nanobpf.common.SocMap
import nanobpf.common.SocMap.{PktComp, PktDesc, PktPolicy}

/** Run-time configuration of the core select (register `sched`). */
class SchedConfig extends Bundle {
  val policy = UInt(2.W)
  val bound = UInt(6.W)
}

/** A completion accepted from a core: the pkt_comp word and who sent it. */
class CoreComp(p: PktParams) extends Bundle {
  val core = UInt(p.queueBits.W)
  val word = UInt(64.W)
}

/** Hardware core select with per-core descriptor queues (docs/packet-path.md).
  *
  * One decision per cycle on the descriptor at `in`: the policy picks a core whose outstanding count
  * (packets given to it and not completed) is below the limit, and the descriptor goes into that
  * core's queue; if the policy finds none the descriptor waits (`hold`), and every later descriptor
  * behind it. Limits: JBSQ(n) and SJBSQ(n) use n = sched.bound (clamped to 1..queueDepth); the RSS and
  * round-robin baselines use the whole queue. Ties in JBSQ go to the lowest core.
  *
  * With `p.firstDataQueue` = 1, queue 0 belongs to the control core and no policy chooses it. A
  * descriptor flagged `ctrl` (a control frame from the host) always goes to queue 0.
  *
  * Completions come back per core; one is taken per cycle (round robin). A completion is accepted only
  * for a slot that was given to that core, popped by it and not yet completed; anything else is
  * discarded and counted (`bad`), so a confused core cannot free another core's packet, one still in
  * its queue, or the same packet twice.
  */
class CoreSelect(p: PktParams) extends Module {
  val n = p.queues
  val io = IO(new Bundle {
    val cfg = Input(new SchedConfig)
    val in = Flipped(Decoupled(new DescHash))
    val cores = Vec(n, Decoupled(UInt(64.W)))
    val comp = Vec(n, Flipped(Decoupled(UInt(64.W))))
    val compOut = Decoupled(new CoreComp(p))
    val outstanding = Output(Vec(n, UInt(6.W)))
    val dispatched = Valid(UInt(p.queueBits.W))
    val hold = Output(Bool())
    val badComp = Output(Bool())
  })
  val queues = Seq.fill(n)(Module(new Queue(UInt(64.W), p.queueDepth)))
  val outstanding = RegInit(VecInit(Seq.fill(n)(0.U(6.W))))
  // Data packets go to queues first .. n-1 (queue 0 is the control core's when p.firstDataQueue = 1).
  val first = p.firstDataQueue
  val m = n - first
  val rrNext = RegInit(first.U(p.queueBits.W))

  // ---- decision
  val bound = Mux(io.cfg.bound === 0.U, 1.U, Mux(io.cfg.bound > p.queueDepth.U, p.queueDepth.U, io.cfg.bound))
  val bounded = io.cfg.policy === PktPolicy.Jbsq.U || io.cfg.policy === PktPolicy.Sjbsq.U
  val limit = Mux(bounded, bound, p.queueDepth.U)
  val avail = VecInit(outstanding.map(_ < limit))
  /** Data queue number k (0 .. m-1, possibly up to 2m-2 before the wrap) as a queue index. */
  def dataQueue(k: UInt): UInt = (Mux(k >= m.U, k - m.U, k) + first.U)(p.queueBits - 1, 0)
  val homeK = nanobpf.common.ModConst(io.in.bits.hash, m) // (not `% m.U`: a divider, far too deep for the core clock)
  val home = dataQueue(homeK)

  // JBSQ: fewest outstanding among the available data cores, lowest index on ties.
  val cand = outstanding.zipWithIndex.drop(first).map { case (o, i) => (avail(i), o, i.U(p.queueBits.W)) }
  val (jOk, _, jCore) = cand.reduce { (a, b) =>
    val takeB = b._1 && (!a._1 || b._2 < a._2)
    (a._1 || b._1, Mux(takeB, b._2, a._2), Mux(takeB, b._3, a._3))
  }
  // SJBSQ: first available data core probing from the home core upwards.
  val probe = (0 until m).map(k => dataQueue(homeK +& k.U))
  val sOk = probe.map(avail(_)).reduce(_ || _)
  val sCore = PriorityMux(probe.map(avail(_)), probe)

  val ok = WireDefault(avail(rrNext))
  val target = WireDefault(rrNext)
  switch(io.cfg.policy) {
    is(PktPolicy.Jbsq.U) { ok := jOk; target := jCore }
    is(PktPolicy.Sjbsq.U) { ok := sOk; target := sCore }
    is(PktPolicy.Rss.U) { ok := avail(home); target := home }
  }
  // A control frame goes to queue 0, the control core's, whatever the policy (up to the queue depth).
  val ctrl = Layout.get(io.in.bits.desc, PktDesc.Ctrl).asBool
  when(ctrl) {
    ok := outstanding(0) < p.queueDepth.U
    target := 0.U
  }

  io.in.ready := ok
  for ((q, i) <- queues.zipWithIndex) {
    q.io.enq.valid := io.in.valid && ok && target === i.U
    q.io.enq.bits := io.in.bits.desc
    io.cores(i) <> q.io.deq
  }
  when(io.in.fire && io.cfg.policy === PktPolicy.Rr.U && !ctrl) { rrNext := Mux(rrNext === (n - 1).U, first.U, rrNext + 1.U) }
  io.dispatched.valid := io.in.fire
  io.dispatched.bits := target
  io.hold := io.in.valid && !ok

  // ---- completions
  val owner = Reg(Vec(p.slots, UInt(p.queueBits.W)))
  val held = RegInit(VecInit(Seq.fill(p.slots)(false.B)))
  val arb = Module(new RRArbiter(UInt(64.W), n))
  arb.io.in <> io.comp
  val cSlot = Layout.get(arb.io.out.bits, PktComp.Slot)(p.slotBits - 1, 0)
  val cCore = arb.io.chosen
  val popped = RegInit(VecInit(Seq.fill(p.slots)(false.B))) // the core has taken the descriptor from its queue
  val good = held(cSlot) && popped(cSlot) && owner(cSlot) === cCore &&
    (Layout.get(arb.io.out.bits, PktComp.Slot) >> p.slotBits) === 0.U
  io.compOut.valid := arb.io.out.valid && good
  io.compOut.bits.core := cCore
  io.compOut.bits.word := arb.io.out.bits
  arb.io.out.ready := io.compOut.ready || !good
  io.badComp := arb.io.out.valid && !good
  val compDone = arb.io.out.fire && good
  for (i <- 0 until n) when(io.cores(i).fire) { popped(Layout.get(io.cores(i).bits, PktDesc.Slot)(p.slotBits - 1, 0)) := true.B }
  when(compDone) { held(cSlot) := false.B; popped(cSlot) := false.B }
  val dSlot = Layout.get(io.in.bits.desc, PktDesc.Slot)(p.slotBits - 1, 0)
  when(io.in.fire) {
    held(dSlot) := true.B
    owner(dSlot) := target
  }
  for (i <- 0 until n) {
    val inc = io.in.fire && target === i.U
    val dec = compDone && cCore === i.U
    outstanding(i) := outstanding(i) + inc.asUInt - dec.asUInt
  }
  io.outstanding := outstanding
}
