package nanobpf.pisa

import chisel3._
import chisel3.util._
import nanobpf.common.SocMap
import nanobpf.common.SocMap.{PisaCidOp, PisaCidStatus}

/** What the CID table matches: a connection ID, its length (bytes past the length are zero) and its
  * direction: `seal` for a sealing entry's CID (the peer's, matched behind the host link's shim), else
  * the device's own CID of an opening entry (matched in packets from the network). */
class CidKey(p: PisaParams) extends Bundle {
  val seal = Bool()
  val len = UInt(5.W)
  val cid = UInt((8 * p.maxCid).W) // byte i in bits 8i+7..8i
}

/** One entry of the connection-ID table, as stored in a way's block RAM. */
class CidEntry(p: PisaParams) extends Bundle {
  val valid = Bool()
  val key = new CidKey(p)
  val slot = UInt(16.W)
}

/** The match-action stage's port: a key in one cycle, the answer in the next. */
class CidLookup(p: PisaParams) extends Bundle {
  val key = Output(Valid(new CidKey(p)))
  val hit = Input(Bool())
  val slot = Input(UInt(16.W))
}

/** A command of the register block (`cid_cmd` with `cid_key`/`cid_arg`). */
class CidCommand(p: PisaParams) extends Bundle {
  val op = UInt(2.W)
  val key = new CidKey(p)
  val slot = UInt(16.W)
}

/** How a command ended (the fields of `cid_result`). */
class CidOutcome(p: PisaParams) extends Bundle {
  val status = UInt(2.W)
  val index = UInt(log2Ceil(p.cidEntries).W)
  val slot = UInt(16.W)
}

/** The connection-ID table (docs/pisa.md): exact match of (direction, length, CID) -> connection slot, hashed into
  * block RAM so it holds thousands of connections (a comparator per entry held 64 at 30K LUTs).
  *
  * d-left hashing: `cidWays` ways of `cidBuckets` one-entry buckets, each way its own simple dual-port
  * block RAM (one read port, one write port: the cheapest shape for yosys and Vivado) with its own H3 hash of the key (masks from hw/defs/soc.toml `cid_hash_seed`). A CID may sit in its
  * bucket of any way; an insert takes the first free one in way order; when all are taken, it moves one
  * occupant (the first, in way order, that has a free bucket in another way) and takes its place (a
  * one-step cuckoo insert: the table fills to about 70% before the first refusal, status full). Lookups
  * use the read port of every way: the key in cycle t, hit and slot in t + 1, one per cycle. Commands
  * read through the same port in a cycle without a lookup (the pipeline looks up once per frame, so a
  * command waits a cycle at most), then decide and write through the write port
  * (2 cycles; an insert that moves an entry up to 2 more per way and one to place), so the table
  * changes under traffic; a lookup of the entry being written in that very cycle gets the new entry
  * (bypass), so a packet sees the table before or after a command, never in between.
  *
  * Block RAM keeps its contents over a reset: after reset the table clears every bucket (one per cycle,
  * `busy`); lookups miss and a command waits until it is done.
  */
class CidTable(p: PisaParams) extends Module {
  val io = IO(new Bundle {
    val lookup = Flipped(new CidLookup(p))
    /** A command; taken when `busy` is low (one at a time). */
    val cmd = Flipped(Decoupled(new CidCommand(p)))
    /** Pulses when a command is done. */
    val done = Valid(new CidOutcome(p))
    val busy = Output(Bool())
    /** Entries in use. */
    val used = Output(UInt(log2Ceil(p.cidEntries + 1).W))
    /** Pulses when an insert was refused because the CID's buckets were all taken. */
    val full = Output(Bool())
  })
  val ways = p.cidWays
  val bucketBits = log2Ceil(p.cidBuckets)
  val entryWidth = (new CidEntry(p)).getWidth
  val mems = Seq.fill(ways)(SyncReadMem(p.cidBuckets, UInt(entryWidth.W)))
  def bucket(k: CidKey, way: Int): UInt = CidTable.bucket(k, way, bucketBits)
  def entryOf(bits: UInt): CidEntry = bits.asTypeOf(new CidEntry(p))
  def matches(e: CidEntry, k: CidKey): Bool = e.valid && e.key.asUInt === k.asUInt

  // ---- clear after reset, then commands: read the key's buckets, decide, write (and for an insert whose
  // buckets are all taken, one cuckoo move: an occupant with a free bucket in another way goes there
  // first, then the new entry takes its old place; the occupant is never absent from the table).
  val sClear :: sIdle :: sRead :: sDecide :: sProbe :: sProbeDecide :: sPlace :: Nil = Enum(7)
  val state = RegInit(sClear)
  val clearAt = RegInit(0.U(bucketBits.W))
  val cmd = Reg(new CidCommand(p))
  val used = RegInit(0.U(log2Ceil(p.cidEntries + 1).W))
  val occupant = Reg(Vec(ways, new CidEntry(p)))
  val victim = Reg(UInt(log2Ceil(ways max 2).W))
  io.cmd.ready := state === sIdle
  io.busy := state =/= sIdle
  io.used := used
  when(io.cmd.fire) { cmd := io.cmd.bits; state := sRead }

  val probing = state === sProbe || state === sProbeDecide
  val moving = occupant(victim)
  val addr = (0 until ways).map(w => Mux(state === sClear, clearAt, Mux(probing, bucket(moving.key, w), bucket(cmd.key, w))))
  val wen = Wire(Vec(ways, Bool()))
  val wdata = Wire(new CidEntry(p))
  wen.foreach(_ := state === sClear)
  wdata := 0.U.asTypeOf(wdata)
  // The read port: the pipeline's lookup has it when it wants it; a command's read waits for a free cycle.
  val lk = io.lookup.key
  val engineRead = (state === sRead || state === sProbe) && !lk.valid
  val lookupAddr = (0 until ways).map(w => bucket(lk.bits, w))
  val port = (0 until ways).map(w => mems(w).read(Mux(lk.valid, lookupAddr(w), addr(w)), lk.valid || engineRead))
  for (w <- 0 until ways) when(wen(w)) { mems(w).write(addr(w), wdata.asUInt) }

  val entries = port.map(entryOf) // in sDecide: the key's buckets; in sProbeDecide: the occupant's
  val found = VecInit(entries.map(matches(_, cmd.key)))
  val free = VecInit(entries.map(!_.valid))
  val foundWay = PriorityEncoder(found)
  val freeWay = PriorityEncoder(free)
  val isFound = found.asUInt.orR
  val newEntry = Wire(new CidEntry(p))
  newEntry.valid := true.B
  newEntry.key := cmd.key
  newEntry.slot := cmd.slot
  val outcome = Wire(new CidOutcome(p))
  outcome := 0.U.asTypeOf(outcome)
  val finish = WireDefault(false.B)
  def indexOf(way: UInt): UInt = {
    val wayBits = log2Ceil(ways max 2)
    Cat(way.pad(wayBits)(wayBits - 1, 0), VecInit(addr)(way)).pad(log2Ceil(p.cidEntries))(log2Ceil(p.cidEntries) - 1, 0)
  }
  def write(way: UInt, e: CidEntry): Unit = { wdata := e; for (w <- 0 until ways) wen(w) := way === w.U }
  def done(status: Int, index: UInt, slot: UInt): Unit = {
    finish := true.B; state := sIdle
    outcome.status := status.U; outcome.index := index; outcome.slot := slot
  }
  io.full := false.B
  switch(state) {
    is(sClear) {
      clearAt := clearAt + 1.U
      when(clearAt === (p.cidBuckets - 1).U) { state := sIdle }
    }
    is(sRead) { when(engineRead) { state := sDecide } }
    is(sDecide) {
      when(cmd.op === PisaCidOp.Insert.U) {
        when(isFound || free.asUInt.orR) {
          val way = Mux(isFound, foundWay, freeWay)
          write(way, newEntry)
          when(!isFound) { used := used + 1.U }
          done(PisaCidStatus.Ok, indexOf(way), cmd.slot)
        }.otherwise {
          occupant := VecInit(entries)
          victim := 0.U
          state := sProbe
        }
      }.elsewhen(!isFound) {
        done(PisaCidStatus.NotFound, 0.U, 0.U)
      }.otherwise {
        when(cmd.op === PisaCidOp.Delete.U) {
          write(foundWay, 0.U.asTypeOf(new CidEntry(p)))
          used := used - 1.U
        }
        done(PisaCidStatus.Ok, indexOf(foundWay), VecInit(entries)(foundWay).slot)
      }
    }
    is(sProbe) { when(engineRead) { state := sProbeDecide } }
    is(sProbeDecide) {
      val alt = VecInit(free.zipWithIndex.map { case (f, w) => f && victim =/= w.U })
      when(alt.asUInt.orR) {
        write(PriorityEncoder(alt), moving) // the occupant's copy in its other way
        state := sPlace
      }.elsewhen(victim === (ways - 1).U) {
        io.full := true.B
        done(PisaCidStatus.Full, 0.U, 0.U)
      }.otherwise {
        victim := victim + 1.U
        state := sProbe
      }
    }
    is(sPlace) { // the new entry over the occupant's old place
      write(victim, newEntry)
      used := used + 1.U
      done(PisaCidStatus.Ok, indexOf(victim), cmd.slot)
    }
  }
  io.done.valid := finish
  io.done.bits := outcome

  // ---- lookups: a write to the bucket being read in the same cycle is passed on
  val read = (0 until ways).map { w =>
    val bypass = RegNext(wen(w) && addr(w) === lookupAddr(w))
    val written = RegNext(wdata.asUInt)
    entryOf(Mux(bypass, written, port(w)))
  }
  val key1 = RegEnable(lk.bits, lk.valid)
  val ready1 = RegNext(state =/= sClear, false.B)
  val hits = read.map(e => ready1 && matches(e, key1))
  io.lookup.hit := hits.reduce(_ || _)
  io.lookup.slot := Mux1H(hits, read.map(_.slot))
}

object CidTable {
  /** Bucket of `k` in `way`: bit b is the parity of (seal ## len ## cid) AND the way's mask b (an H3
    * hash; the device model's nanobpf.models.pisa.cid_bucket computes the same from the same generated
    * masks). */
  def bucket(k: CidKey, way: Int, bits: Int): UInt = {
    val key = k.asUInt // seal ## len ## cid
    val all = (BigInt(1) << key.getWidth) - 1
    VecInit((0 until bits).map(b => (key & (SocMap.CidHash.Masks(way)(b) & all).U(key.getWidth.W)).xorR)).asUInt
  }
}
