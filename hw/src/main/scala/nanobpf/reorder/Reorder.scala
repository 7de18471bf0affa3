package nanobpf.reorder

import chisel3._
import chisel3.util._
import nanobpf.reasm.PktParams
import nanobpf.common.Layout
import nanobpf.common.SocMap.{PktComp, PktDesc}

/** Run-time configuration of the reorder unit (registers `reorder_timeout`, `order_conn`). */
class ReorderConfig extends Bundle {
  val timeout = UInt(32.W)
  val orderConn = UInt(4.W)
}

/** A completion leaving the reorder unit, with what the egress needs to know about its packet. */
class Released(p: PktParams) extends Bundle {
  val word = UInt(64.W) // pkt_comp
  val lport = UInt(2.W) // logical ingress port (for XDP_TX)
  val seq = UInt(16.W)
  val domain = UInt(p.domainBits.W)
  val late = Bool() // skipped by the timeout, released when it completed
}

/** Reorder unit: completions come back from the cores in any order; they leave in arrival order
  * within each order domain (docs/packet-path.md).
  *
  * A packet's domain is its logical ingress port, or, when `order_conn` has that port's bit and the
  * packet has a connection slot, one of `connGroups` connection groups (slot mod groups): a connection
  * always maps to the same group, so its packets stay in order while other connections may pass.
  * Each domain is a linked list of slots in arrival order (`enq`, one per cycle); a completion marks its
  * slot done; each cycle one domain whose oldest packet is done releases it (round robin over domains).
  * Drops are released like any other completion (the egress frees their slot), so they never stall a
  * domain. If the oldest packet of a domain waits `timeout` cycles (0: never), it is skipped and
  * counted; when it completes later it is released at once with `late` set.
  */
class Reorder(p: PktParams) extends Module {
  val io = IO(new Bundle {
    val cfg = Input(new ReorderConfig)
    val enq = Flipped(Valid(UInt(64.W))) // pkt_desc, in arrival order
    val comp = Flipped(Decoupled(UInt(64.W))) // pkt_comp of a slot given out by enq
    val out = Decoupled(new Released(p))
    val timeouts = Output(Bool())
    val lateOut = Output(Bool())
  })
  val nd = p.domains
  val sb = p.slotBits
  val nextOf = Mem(p.slots, UInt(sb.W))
  val lportOf = Mem(p.slots, UInt(2.W))
  val seqOf = Mem(p.slots, UInt(16.W))
  val domainOf = Mem(p.slots, UInt(p.domainBits.W))
  val wordOf = Mem(p.slots, UInt(64.W))
  val done = RegInit(VecInit(Seq.fill(p.slots)(false.B)))
  val abandoned = RegInit(VecInit(Seq.fill(p.slots)(false.B)))
  val head = Reg(Vec(nd, UInt(sb.W)))
  val tail = Reg(Vec(nd, UInt(sb.W)))
  val count = RegInit(VecInit(Seq.fill(nd)(0.U((sb + 1).W))))
  val timer = RegInit(VecInit(Seq.fill(nd)(0.U(32.W))))

  // ---- arrival
  val eSlot = Layout.get(io.enq.bits, PktDesc.Slot)(sb - 1, 0)
  val eLport = Layout.get(io.enq.bits, PktDesc.Lport)
  val byConn = io.cfg.orderConn(eLport) && Layout.get(io.enq.bits, PktDesc.ConnValid).asBool
  val groupBits = log2Ceil(p.connGroups)
  val group = if (groupBits == 0) 0.U else Layout.get(io.enq.bits, PktDesc.ConnSlot)(groupBits - 1, 0)
  val eDom = Mux(byConn, p.ports.U +& group, eLport.pad(p.domainBits))(p.domainBits - 1, 0)

  // ---- release and timeout candidates
  val headDone = VecInit((0 until nd).map(d => count(d) =/= 0.U && done(head(d))))
  val expired = VecInit((0 until nd).map(d => count(d) =/= 0.U && !done(head(d)) &&
    io.cfg.timeout =/= 0.U && timer(d) >= io.cfg.timeout))
  val lateQ = Module(new Queue(new Released(p), p.slots))
  // The round-robin choice may change while the output waits: a register stage keeps `out` stable.
  val outQ = Module(new Queue(new Released(p), 2))
  val rrArb = Module(new RRArbiter(UInt(1.W), nd))
  for (d <- 0 until nd) {
    rrArb.io.in(d).valid := headDone(d)
    rrArb.io.in(d).bits := 0.U
  }
  rrArb.io.out.ready := outQ.io.enq.ready && !lateQ.io.deq.valid
  val rel = rrArb.io.out.fire
  val relDom = rrArb.io.chosen
  val relSlot = head(relDom)
  val skip = expired.asUInt.orR
  val skipDom = PriorityEncoder(expired)
  val skipSlot = head(skipDom)

  def released(slot: UInt, late: Bool): Released = {
    val r = Wire(new Released(p))
    r.word := wordOf(slot)
    r.lport := lportOf(slot)
    r.seq := seqOf(slot)
    r.domain := domainOf(slot)
    r.late := late
    r
  }
  outQ.io.enq.valid := lateQ.io.deq.valid || rrArb.io.out.valid
  outQ.io.enq.bits := Mux(lateQ.io.deq.valid, lateQ.io.deq.bits, released(relSlot, false.B))
  lateQ.io.deq.ready := outQ.io.enq.ready
  io.out <> outQ.io.deq

  // ---- completions: done, or released at once if their packet was skipped
  val cSlot = Layout.get(io.comp.bits, PktComp.Slot)(sb - 1, 0)
  val cLate = abandoned(cSlot) || (skip && skipSlot === cSlot)
  io.comp.ready := lateQ.io.enq.ready
  lateQ.io.enq.valid := io.comp.fire && cLate
  lateQ.io.enq.bits := released(cSlot, true.B)
  lateQ.io.enq.bits.word := io.comp.bits
  when(skip) { abandoned(skipSlot) := true.B }
  when(io.comp.fire) { // after the skip: a packet completing as it is skipped is released late, not abandoned
    wordOf(cSlot) := io.comp.bits
    when(cLate) { abandoned(cSlot) := false.B }.otherwise { done(cSlot) := true.B }
  }
  when(rel) { done(relSlot) := false.B }

  // ---- per-domain lists
  when(io.enq.valid) {
    lportOf(eSlot) := eLport
    seqOf(eSlot) := Layout.get(io.enq.bits, PktDesc.Seq)
    domainOf(eSlot) := eDom
  }
  val leaves = VecInit((0 until nd).map(d => (rel && relDom === d.U) || (skip && skipDom === d.U)))
  val lefts = VecInit((0 until nd).map(d => count(d) - leaves(d).asUInt))
  when(io.enq.valid && lefts(eDom) =/= 0.U) { nextOf(tail(eDom)) := eSlot }
  for (d <- 0 until nd) {
    val join = io.enq.valid && eDom === d.U
    count(d) := lefts(d) + join.asUInt
    when(leaves(d)) { head(d) := nextOf(head(d)) }
    when(join) {
      tail(d) := eSlot
      when(lefts(d) === 0.U) { head(d) := eSlot }
    }
    timer(d) := Mux(leaves(d) || count(d) === 0.U || done(head(d)), 0.U, Mux(timer(d).andR, timer(d), timer(d) + 1.U))
  }
  io.timeouts := skip
  io.lateOut := lateQ.io.enq.fire
}
