package nanobpf.pisa

import chisel3._
import chisel3.util._
import nanobpf.common.{BusPort, RegSlave, SocMap}
import nanobpf.common.SocMap.{PisaCidOp, PisaCidStatus, PisaCounter}
import nanobpf.common._

/** One entry of the connection-ID table. */
class CidEntry(p: PisaParams) extends Bundle {
  val valid = Bool()
  val len = UInt(5.W)
  val cid = UInt((8 * p.maxCid).W) // zero past len
  val slot = UInt(16.W)
}

/** Table and configuration state the pipeline reads every cycle. Table words keep the register
  * layout (hw/defs/soc.toml); [[PisaConfig.field]] extracts a field.
  */
class PisaConfig(p: PisaParams) extends Bundle {
  val roles = UInt(32.W)
  val lportCfg = Vec(4, UInt(32.W))
  val portEntry = Vec(p.portEntries, UInt(32.W))
  val profileEntry = Vec(p.profileEntries, UInt(32.W))
  val cid = Vec(p.cidEntries, new CidEntry(p))
}

object PisaConfig {
  def field(word: UInt, f: SocMap.Field): UInt = word(f.msb, f.lsb)
}

/** Register block of the pipeline (block `pisa` of hw/defs/soc.toml, one-cycle access).
  *
  * Tables and logical-port configuration are plain registers written whole. The CID table is managed
  * by a small command engine: write the key and argument, then `cid_cmd`; two cycles later the
  * insert, delete or lookup is done and `cid_result` says how (a full table refuses a new CID and
  * counts `cid_full`). An entry changes in one cycle, so a packet sees it either before or after.
  * Counters: `io.count(i)` adds to `counter[i]` every cycle.
  */
class PisaRegs(p: PisaParams) extends Module with RegSlave {
  val nCounters = SocMap.PisaRegs.CounterCount
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val cfg = Output(new PisaConfig(p))
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
  val cidResult = RegInit(0.U(32.W))
  val invalid = 0.U.asTypeOf(new CidEntry(p))
  val cid = RegInit(VecInit(Seq.fill(p.cidEntries)(invalid)))
  val counters = RegInit(VecInit(Seq.fill(nCounters)(0.U(64.W))))

  // ---- CID command engine: C1 compares the key with every entry, C2 applies the command.
  val busy1 = RegInit(false.B)
  val busy2 = RegInit(false.B)
  val op = Reg(UInt(2.W))
  val argLen = field(cidArg, CidArgLen)
  val argSlot = field(cidArg, CidArgSlot)
  val keyBytes = Bytes.bytesOf(cidKey.asUInt, 3 * 8).take(p.maxCid)
  val key = VecInit(keyBytes.zipWithIndex.map { case (b, i) => Mux(i.U < argLen, b, 0.U) }).asUInt
  val matchVec = RegNext(VecInit(cid.map(e => e.valid && e.len === argLen && e.cid === key)))
  val freeVec = RegNext(VecInit(cid.map(!_.valid)))
  val found = matchVec.asUInt.orR
  val foundIdx = PriorityEncoder(matchVec)
  val hasFree = freeVec.asUInt.orR
  val freeIdx = PriorityEncoder(freeVec)
  val cidFull = WireDefault(false.B)
  /** A value placed in register field f (layout from hw/defs/soc.toml). */
  def at(f: SocMap.Field, v: UInt): UInt = (v.pad(f.width)(f.width - 1, 0) << f.lsb).asUInt
  def result(status: Int, index: UInt, slot: UInt) =
    cidResult := at(CidResultStatus, status.U) | at(CidResultIndex, index) | at(CidResultSlot, slot)
  when(busy2) {
    busy2 := false.B
    when(argLen > p.maxCid.U) { result(PisaCidStatus.BadLen, 0.U, 0.U) }
      .elsewhen(op === PisaCidOp.Insert.U) {
        when(found || hasFree) {
          val at = Mux(found, foundIdx, freeIdx)
          cid(at).valid := true.B
          cid(at).len := argLen
          cid(at).cid := key
          cid(at).slot := argSlot
          result(PisaCidStatus.Ok, at, argSlot)
        }.otherwise {
          cidFull := true.B
          result(PisaCidStatus.Full, 0.U, 0.U)
        }
      }
      .elsewhen(!found) { result(PisaCidStatus.NotFound, 0.U, 0.U) }
      .otherwise {
        when(op === PisaCidOp.Delete.U) { cid(foundIdx) := invalid }
        result(PisaCidStatus.Ok, foundIdx, cid(foundIdx).slot)
      }
  }
  when(busy1) { busy1 := false.B; busy2 := true.B }
  val busy = busy1 || busy2

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
  ro(CidUsed, PopCount(cid.map(_.valid)))
  val clear = WireDefault(false.B)
  when(off === CounterClear.U) { err := !isWrite; clear := wr && wdata(0) }
  when(off === CidCmd.U) {
    err := !isWrite
    when(wr && !busy && field(wdata, CidCmdOp) =/= PisaCidOp.Nop.U) {
      op := field(wdata, CidCmdOp)
      busy1 := true.B
    }
  }
  for (i <- 0 until nCounters) {
    ro(Counter + CounterStride * i, counters(i))
    val inc = io.count(i) + (if (i == PisaCounter.CidFull) cidFull.asUInt else 0.U)
    counters(i) := Mux(clear, 0.U, counters(i) + inc)
  }
  respond(rdata, err)

  io.cfg.roles := roles
  io.cfg.lportCfg := lportCfg
  io.cfg.portEntry := portEntry
  io.cfg.profileEntry := profileEntry
  io.cfg.cid := cid
}
