package nanobpf.pisa

import chisel3._
import chisel3.util._
import nanobpf.common.{BusPort, RegSlave, SocMap}
import nanobpf.common.SocMap.{PisaCidOp, PisaCidStatus, PisaCounter}
import nanobpf.common._

/** Table and configuration state the pipeline reads every cycle. Table words keep the register
  * layout (hw/defs/soc.toml); [[PisaConfig.field]] extracts a field.
  */
class PisaConfig(p: PisaParams) extends Bundle {
  val roles = UInt(32.W)
  val lportCfg = Vec(4, UInt(32.W))
  val portEntry = Vec(p.portEntries, UInt(32.W))
  val profileEntry = Vec(p.profileEntries, UInt(32.W))
}

object PisaConfig {
  def field(word: UInt, f: SocMap.Field): UInt = word(f.msb, f.lsb)
}

/** Register block of the pipeline (block `pisa` of hw/defs/soc.toml, one-cycle access).
  *
  * Tables and logical-port configuration are plain registers written whole. The CID table
  * ([[CidTable]], block RAM) takes commands: write the key and argument, then `cid_cmd`; a few cycles
  * later the insert, delete or lookup is done and `cid_result` says how (an insert whose buckets are
  * all taken is refused and counts `cid_full`). A command written while the table is busy (clearing
  * after reset) waits and starts when it is done. An entry changes in one cycle, so a packet sees it
  * either before or after. The match-action stage looks CIDs up through `io.cid`.
  * Counters: `io.count(i)` adds to `counter[i]` every cycle ([[PisaCounters]], distributed RAM).
  */
class PisaRegs(p: PisaParams) extends Module with RegSlave {
  val nCounters = SocMap.PisaRegs.CounterCount
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val cfg = Output(new PisaConfig(p))
    val cid = Flipped(new CidLookup(p))
    val count = Input(Vec(nCounters, UInt(16.W)))
  })
  def busPort = io.bus
  import SocMap.PisaRegs._
  import PisaConfig.field

  val roles = RegInit(0.U(32.W))
  val lportCfg = RegInit(VecInit(Seq.fill(4)(0.U(32.W))))
  val portEntry = RegInit(VecInit(Seq.fill(p.portEntries)(0.U(32.W))))
  val profileEntry = RegInit(VecInit(Seq.fill(p.profileEntries)(0.U(32.W))))
  val cidKey = RegInit(VecInit(Seq.fill(3)(0.U(64.W))))
  val cidArg = RegInit(0.U(32.W))
  val cidResult = RegInit(0.U(64.W))
  /** Widest increment of each counter: a frame's length, a beat's bytes, or one event. */
  val incBits = Seq.tabulate(nCounters) {
    case PisaCounter.RxBytes => 16
    case PisaCounter.TxBytes => log2Ceil(p.beatBytes + 1)
    case PisaCounter.CidFull => 2 // the pipeline's count and the table's refusal
    case _ => 1
  }
  val counters = Module(new PisaCounters(incBits))

  // ---- CID table: a command waits in `pending` until the table takes it (its key and argument then).
  val table = Module(new CidTable(p))
  table.io.lookup <> io.cid
  val pending = RegInit(false.B)
  val pendingOp = Reg(UInt(2.W))
  val argLen = field(cidArg, CidArgLen)
  val keyBytes = Bytes.bytesOf(cidKey.asUInt, 3 * 8).take(p.maxCid)
  table.io.cmd.valid := pending && argLen <= p.maxCid.U
  table.io.cmd.bits.op := pendingOp
  table.io.cmd.bits.key.seal := field(cidArg, CidArgSeal).asBool
  table.io.cmd.bits.key.len := argLen
  // the bytes past the length are zero, except for length 0, whose 20 bytes are a peer's address id
  table.io.cmd.bits.key.cid := VecInit(keyBytes.zipWithIndex.map { case (b, i) => Mux(i.U < argLen || argLen === 0.U, b, 0.U) }).asUInt
  table.io.cmd.bits.slot := field(cidArg, CidArgSlot)
  val cidFull = table.io.full
  /** A value placed in register field f (layout from hw/defs/soc.toml). */
  def at(f: SocMap.Field, v: UInt): UInt = (v.pad(f.width)(f.width - 1, 0) << f.lsb).asUInt
  def result(status: UInt, index: UInt, slot: UInt) =
    cidResult := at(CidResultStatus, status) | at(CidResultIndex, index) | at(CidResultSlot, slot)
  when(table.io.done.valid) { result(table.io.done.bits.status, table.io.done.bits.index, table.io.done.bits.slot) }
  val badLen = pending && argLen > p.maxCid.U
  when(badLen) { pending := false.B; result(PisaCidStatus.BadLen.U, 0.U, 0.U) } // never reaches the table
  when(table.io.cmd.fire) { pending := false.B }
  val busy = pending || table.io.busy

  // ---- bus
  val off = offset(SocMap.Pisa)
  val rdata = WireDefault(0.U(64.W))
  val err = WireDefault(true.B)
  val wr = fire && isWrite
  def ro(at: Int, v: UInt): Unit = when(off === at.U) { rdata := v; err := isWrite }
  def rw(at: Int, r: UInt): Unit = when(off === at.U) {
    rdata := r; err := false.B
    when(wr) { r := merge(r.pad(64))(r.getWidth - 1, 0) }
  }
  def array(at: Int, stride: Int, regs: Seq[UInt], count: Int): Unit =
    for (i <- 0 until count) {
      if (i < regs.size) rw(at + stride * i, regs(i))
      else when(off === (at + stride * i).U) { err := false.B } // beyond this build: reads 0
    }
  def put(f: SocMap.Field, v: Int) = BigInt(v) << f.lsb
  ro(Id, IdReset.U)
  ro(Params, (put(ParamsBeatBytes, p.beatBytes) | put(ParamsPortEntries, p.portEntries) |
    put(ParamsProfileEntries, p.profileEntries) | put(ParamsCidEntries, p.cidEntries) |
    put(ParamsMaxFrame, p.maxFrame)).U(64.W))
  rw(Roles, roles)
  array(LportCfg, LportCfgStride, lportCfg, 4)
  array(PortEntry, PortEntryStride, portEntry, 8)
  array(ProfileEntry, ProfileEntryStride, profileEntry, 8)
  array(CidKey, CidKeyStride, cidKey, 3)
  rw(CidArg, cidArg)
  ro(CidResult, cidResult | at(CidResultBusy, busy))
  ro(CidUsed, table.io.used)
  val clear = WireDefault(false.B)
  when(off === CounterClear.U) { err := !isWrite; clear := wr && wdata(0) }
  when(off === CidCmd.U) {
    err := !isWrite
    when(wr && !pending && field(wdata, CidCmdOp) =/= PisaCidOp.Nop.U) {
      pendingOp := field(wdata, CidCmdOp)
      pending := true.B
    }
  }
  counters.io.clear := clear
  counters.io.readIndex := ((off - Counter.U) >> log2Ceil(CounterStride))(log2Ceil(nCounters) - 1, 0)
  for (i <- 0 until nCounters) {
    ro(Counter + CounterStride * i, counters.io.readValue)
    counters.io.inc(i) := io.count(i) + (if (i == PisaCounter.CidFull) cidFull.asUInt else 0.U)
  }
  respond(rdata, err)

  io.cfg.roles := roles
  io.cfg.lportCfg := lportCfg
  io.cfg.portEntry := portEntry
  io.cfg.profileEntry := profileEntry
}
