package nanobpf.aead

import chisel3._
import chisel3.util._
import nanobpf.common.Layout.{get, put}
import nanobpf.common.{BusPort, RegSlave, SocMap}

/** Register block of the AEAD engine (block `aead` of hw/defs/soc.toml, one-cycle access).
  *
  * Each core has its own request registers, so cores never interleave the words of a request: it
  * writes `core_ctl` and `core_addr` (kept between requests) and submits by writing the packet
  * number to `core_pn`. Requests of all cores share one FIFO into the engine (it cannot overflow: a
  * core with `perCore` requests outstanding is refused). Completions return to per-core queues that
  * the core pops by reading `core_comp`; a request counts as outstanding until then.
  */
class AeadRegs(p: AeadParams) extends Module with RegSlave {
  val nCounters = SocMap.AeadRegs.CounterCount
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val req = Decoupled(new AeadRequest(p))
    val comp = Flipped(Decoupled(new AeadCompletion(p)))
    val count = Input(Vec(nCounters, UInt(16.W)))
    // the header-protection masker's requests and results (HpMasker)
    val hpReq = Output(Vec(p.cores, Valid(UInt(p.slotBits.W))))
    val hpSample = Output(Vec(p.cores, Vec(16, UInt(8.W))))
    val hpResult = Input(Vec(p.cores, Valid(UInt(40.W))))
  })
  def busPort = io.bus
  import SocMap.AeadRegs._
  import SocMap.{AeadAddr, AeadComp, AeadCounter, AeadCtl, HpMask}

  val off = offset(SocMap.Aead)
  val wr = fire && isWrite
  val rd = fire && !isWrite
  val whole = io.bus.req.bits.addr(2, 0) === 0.U && (isWrite === false.B || wstrb.andR)
  decodeAt(off) // the read data and error: one term per register (RegSlave.term)
  def reg(at: Int, v: UInt, e: Bool): Unit = reg(at.U, v, e)
  def noData(at: Int, e: Bool): Unit = noData(at.U, e)
  def ro(at: Int, v: UInt): Unit = reg(at, v, isWrite)

  ro(Params, put(ParamsRoundsPerCycle, p.roundsPerCycle.U) | put(ParamsGhashBits, p.ghashBits.U) |
    put(ParamsCores, p.cores.U) | put(ParamsPerCore, p.perCore.U) | put(ParamsKeySlots, p.keySlots.U) |
    put(ParamsMaxData, p.maxData.U))
  val clear = WireDefault(false.B)
  noData(CounterClear, !isWrite)
  when(off === CounterClear.U) { clear := wr && wdata(0) }
  val counters = RegInit(VecInit(Seq.fill(nCounters)(0.U(64.W))))
  for (i <- 0 until nCounters) {
    ro(Counter + CounterStride * i, counters(i))
  }

  val fifo = Module(new Queue(new AeadRequest(p), p.cores * p.perCore))
  io.req <> fifo.io.deq
  fifo.io.enq.valid := false.B
  fifo.io.enq.bits := DontCare
  val ctl = RegInit(VecInit(Seq.fill(p.cores)(0.U(64.W))))
  val addr = RegInit(VecInit(Seq.fill(p.cores)(0.U(64.W))))
  val outstanding = RegInit(VecInit(Seq.fill(p.cores)(0.U(log2Ceil(p.perCore + 1).W))))
  val submitted = WireDefault(false.B)
  val refused = WireDefault(false.B)
  val comps = Seq.fill(p.cores)(Module(new Queue(new AeadCompletion(p), p.perCore)))
  val hpSample = Reg(Vec(p.cores, Vec(2, UInt(64.W))))
  val hpRefused = RegInit(VecInit(Seq.fill(p.cores)(false.B))) // the core's latest slot write was refused
  for (c <- 0 until p.cores) {
    io.hpSample(c) := VecInit((0 until 16).map(i => hpSample(c)(i / 8)(8 * (i % 8) + 7, 8 * (i % 8))))
    io.hpReq(c).valid := false.B
    io.hpReq(c).bits := wdata(p.slotBits - 1, 0)
  }
  io.comp.ready := (if (p.cores == 1) comps(0).io.enq.ready else VecInit(comps.map(_.io.enq.ready))(io.comp.bits.core))

  for (c <- 0 until CoreCtlCount) {
    val ctlAt = (CoreCtl + CoreCtlStride * c).U
    val addrAt = (CoreAddr + CoreAddrStride * c).U
    val pnAt = (CorePn + CorePnStride * c).U
    val compAt = (CoreComp + CoreCompStride * c).U
    if (c < p.cores) {
      reg(CoreCtl + CoreCtlStride * c, ctl(c), false.B)
      when(off === ctlAt && wr) { ctl(c) := merge(ctl(c)) }
      reg(CoreAddr + CoreAddrStride * c, addr(c), false.B)
      when(off === addrAt && wr) { addr(c) := merge(addr(c)) }
      ro(CoreOutstanding + CoreOutstandingStride * c, outstanding(c))
      val full = outstanding(c) === p.perCore.U
      val submit = wr && off === pnAt && whole
      noData(CorePn + CorePnStride * c, !isWrite || !whole || full)
      val q = fifo.io.enq.bits
      when(submit && !full) {
        fifo.io.enq.valid := true.B
        q.op := get(ctl(c), AeadCtl.Op); q.nextPhase := get(ctl(c), AeadCtl.NextPhase)
        q.slot := get(ctl(c), AeadCtl.Slot); q.aadLen := get(ctl(c), AeadCtl.AadLen)
        q.dataLen := get(ctl(c), AeadCtl.DataLen); q.id := get(ctl(c), AeadCtl.Id)
        q.aadAddr := get(addr(c), AeadAddr.AadAddr); q.dataAddr := get(addr(c), AeadAddr.DataAddr)
        q.pn := wdata; q.core := c.U
        submitted := true.B
      }
      when(submit && full) { refused := true.B }
      val cq = comps(c).io
      cq.enq.valid := io.comp.valid && io.comp.bits.core === c.U
      cq.enq.bits := io.comp.bits
      val pop = rd && off === compAt && whole
      cq.deq.ready := pop
      val b = cq.deq.bits
      reg(CoreComp + CoreCompStride * c, Mux(cq.deq.valid, put(AeadComp.Valid, 1.U) | put(AeadComp.Id, b.id) |
        put(AeadComp.Status, b.status) | put(AeadComp.Cycles, b.cycles), 0.U), isWrite || !whole)
      outstanding(c) := outstanding(c) + (submit && !full).asUInt - cq.deq.fire.asUInt
      // the header-protection masker: the sample in two words, the slot asks
      for (w <- 0 until 2) {
        val at = CoreHpSample0 + (CoreHpSample1 - CoreHpSample0) * w + CoreHpSample0Stride * c
        noData(at, !isWrite || !whole)
        when(off === at.U && wr && whole) { hpSample(c)(w) := wdata }
      }
      val inRange = wdata(31, 0) < p.keySlots.U // a 32-bit write: the upper half of wdata is not the register's
      noData(CoreHpSlot + CoreHpSlotStride * c, !isWrite || !inRange)
      when(off === (CoreHpSlot + CoreHpSlotStride * c).U) {
        io.hpReq(c).valid := wr && inRange
        when(wr) { hpRefused(c) := !inRange }
      }
      ro(CoreHpMask + CoreHpMaskStride * c, Mux(hpRefused(c), put(HpMask.Valid, 1.U) | put(HpMask.Refused, 1.U),
        put(HpMask.Valid, io.hpResult(c).valid) | put(HpMask.Mask, io.hpResult(c).bits)))
    } else { // beyond this build: reads 0, writes ignored
      for (at <- Seq(CoreCtl + CoreCtlStride * c, CoreAddr + CoreAddrStride * c, CoreOutstanding + CoreOutstandingStride * c))
        noData(at, false.B)
      for (at <- Seq(CoreHpSample0 + CoreHpSample0Stride * c, CoreHpSample1 + CoreHpSample1Stride * c, CoreHpSlot + CoreHpSlotStride * c))
        noData(at, !isWrite)
      noData(CoreHpMask + CoreHpMaskStride * c, isWrite)
      noData(CorePn + CorePnStride * c, !isWrite)
      noData(CoreComp + CoreCompStride * c, isWrite)
    }
  }
  assert(!fifo.io.enq.valid || fifo.io.enq.ready, "AEAD request FIFO overflow")
  respondTerms()
  val events = Wire(Vec(nCounters, UInt(16.W)))
  events := io.count
  events(AeadCounter.Requests) := submitted.asUInt
  events(AeadCounter.Refused) := refused.asUInt
  for (i <- 0 until nCounters) counters(i) := Mux(clear, 0.U, counters(i) + events(i))
}
