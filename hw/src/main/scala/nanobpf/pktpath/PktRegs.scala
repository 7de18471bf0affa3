package nanobpf.pktpath

import chisel3._
import chisel3.util._
import nanobpf.reasm.PktParams
import nanobpf.common.Layout
import nanobpf.reorder.ReorderConfig
import nanobpf.common.{BusPort, RegSlave, SocMap}
import nanobpf.coresel._

/** Register block of the packet path (block `pkt` of hw/defs/soc.toml, one-cycle access).
  *
  * A core pops its next descriptor by reading `core_desc[core]` (0 when its queue is empty) and hands
  * the packet back by writing its completion to `core_comp[core]`. Configuration: the core select
  * policy and bound, the reorder timeout and per-port connection ordering. Counters: `io.count(i)` adds
  * to `counter[i]` every cycle; `core_dispatched` counts descriptors per core.
  */
class PktRegs(p: PktParams) extends Module with RegSlave {
  val nCounters = SocMap.PktRegs.CounterCount
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val sched = Output(new SchedConfig)
    val order = Output(new ReorderConfig)
    val cores = Vec(p.queues, Flipped(Decoupled(UInt(64.W))))
    val comp = Vec(p.queues, Decoupled(UInt(64.W)))
    val outstanding = Input(Vec(p.queues, UInt(6.W)))
    val dispatched = Flipped(Valid(UInt(p.queueBits.W)))
    val freeSlots = Input(UInt(16.W))
    val count = Input(Vec(nCounters, Bool()))
    /** slot_meta reads: the slot addressed, and its parse result (pkt_meta) from the reassembly buffer. */
    val metaSlot = Output(UInt(p.slotBits.W))
    val meta = Input(UInt(nanobpf.reasm.FrameInfo.metaBits.W))
  })
  def busPort = io.bus
  import SocMap.PktRegs._
  import Layout.put

  val sched = RegInit(SchedReset.U(32.W))
  val timeout = RegInit(0.U(32.W))
  val orderConn = RegInit(0.U(32.W))
  val counters = RegInit(VecInit(Seq.fill(nCounters)(0.U(64.W))))
  val perCore = RegInit(VecInit(Seq.fill(p.queues)(0.U(64.W))))

  val off = offset(SocMap.Pkt)
  decodeAt(off) // the read data and error: one term per register (RegSlave.term)
  val wr = fire && isWrite
  val rd = fire && !isWrite
  /** Popping and pushing take whole 64-bit words: a narrower access is refused and changes nothing. */
  val aligned = io.bus.req.bits.addr(2, 0) === 0.U
  def ro(at: Int, v: UInt): Unit = reg(at.U, v, isWrite)
  def rw(at: Int, r: UInt): Unit = {
    reg(at.U, r, false.B)
    when(off === at.U && wr) { r := merge(r.pad(64))(r.getWidth - 1, 0) }
  }
  ro(Params, (put(ParamsQueues, p.queues.U) | put(ParamsQueueDepth, p.queueDepth.U) | put(ParamsSlots, p.slots.U) |
    put(ParamsSlotBytes, p.slotBytes.U) | put(ParamsHeadroom, p.headroom.U)))
  rw(Sched, sched)
  rw(ReorderTimeout, timeout)
  rw(OrderConn, orderConn)
  ro(FreeSlots, io.freeSlots)
  val clear = WireDefault(false.B)
  noData(CounterClear.U, !isWrite)
  when(off === CounterClear.U) { clear := wr && wdata(0) }

  for (i <- 0 until CoreDescCount) {
    val descAt = (CoreDesc + CoreDescStride * i).U
    val compAt = (CoreComp + CoreCompStride * i).U
    val outAt = (CoreOutstanding + CoreOutstandingStride * i).U
    val dispAt = (CoreDispatched + CoreDispatchedStride * i).U
    if (i < p.queues) {
      io.cores(i).ready := rd && off === descAt && aligned
      reg(descAt, Mux(io.cores(i).valid, io.cores(i).bits, 0.U), isWrite || !aligned)
      io.comp(i).valid := wr && off === compAt && wstrb.andR
      io.comp(i).bits := wdata
      noData(compAt, !isWrite || !wstrb.andR || !io.comp(i).ready)
      ro((CoreOutstanding + CoreOutstandingStride * i), io.outstanding(i))
      ro((CoreDispatched + CoreDispatchedStride * i), perCore(i))
      perCore(i) := Mux(clear, 0.U, perCore(i) + (io.dispatched.valid && io.dispatched.bits === i.U).asUInt)
    } else { // beyond this build: reads 0, writes ignored
      Seq(descAt, outAt, dispAt).foreach(at => noData(at, isWrite))
      noData(compAt, !isWrite)
    }
  }
  // slot_meta[i]: the offset picks the slot, so one read port serves every entry; entries past this
  // build's slots (a smaller stand-alone block) read 0
  require(p.slots <= SlotMetaCount, "slot_meta has an entry for every packet memory slot")
  val metaIdx = (off - SlotMeta.U) >> 3
  io.metaSlot := metaIdx(p.slotBits - 1, 0)
  term(off >= SlotMeta.U && off < (SlotMeta + SlotMetaStride * SlotMetaCount).U && off(2, 0) === 0.U,
    Mux(metaIdx < p.slots.U, io.meta.pad(64), 0.U), isWrite)
  for (i <- 0 until nCounters) {
    ro(Counter + CounterStride * i, counters(i))
    counters(i) := Mux(clear, 0.U, counters(i) + io.count(i).asUInt)
  }
  respondTerms()

  io.sched.policy := Layout.get(sched, SchedPolicy)
  io.sched.bound := Layout.get(sched, SchedBound)
  io.order.timeout := timeout
  io.order.orderConn := orderConn(3, 0)
}
