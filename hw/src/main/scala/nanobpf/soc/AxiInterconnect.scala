package nanobpf.soc

import chisel3._
import chisel3.util._
import nanobpf.common._

/** N AXI4 managers to M [[BusPort]] slaves, one transaction at a time.
  *
  * A round-robin arbiter picks one manager's AW or AR, then the transaction runs to its response
  * before the next one starts. Each burst beat becomes one [[BusReq]] to the slave whose region holds
  * the beat's address.
  *
  * Every request to a slave comes from this block's registers: the accepted AW or AR (and the W beat
  * offered with an AW) is taken into registers, and its first request goes out the next cycle. No path
  * runs from a manager's signals through the arbiter into a slave in one cycle: that path (a core's
  * store, its core-local port, the arbiter's choice and the address decode, then the slave's own
  * logic) was the core clock's deepest in the board's synthesis (docs/board.md, "Timing"). Timing with
  * one-cycle slaves and a manager that takes R and B at once: a single-beat read holds the bus 3
  * cycles (accepted; its request to the slave; the slave's answer passed on as R in the cycle it
  * comes), each further beat 2; a write beat 2 after it is taken (its request; the answer, with B for
  * the last beat); and the next transaction is accepted in the cycle a write's B is taken, so back to
  * back a single-beat write holds the bus 2 cycles (every core's write-through stores outside its
  * core-local RAM cross this bus; `nanobpf-sim --bus-stats` measures it). A slave may see a request
  * in the cycle after it answers the previous one, never in the same. The managers' BREADY must not
  * depend combinationally on their AWREADY, WREADY or ARREADY (CVA6's is its B FIFO's full flag).
  *
  * Because transactions never overlap, atomics are simple and exact:
  *  - AXI5 atomics (AWATOP, what CVA6 emits for RISC-V AMOs): AtomicStore, AtomicLoad and AtomicSwap
  *    of 4 or 8 bytes are done as read, modify, write; AtomicCompare and atomic bursts get SLVERR
  *    (their W beats are drained and loads get all their R beats, so the protocol stays intact).
  *  - Exclusive accesses (AxLOCK, CVA6's LR/SC): one reservation per manager on an 8-byte granule;
  *    any write to the granule clears it; an exclusive write succeeds (EXOKAY) only with the
  *    reservation held, otherwise it answers OKAY and writes nothing. A burst reserves only the
  *    granule of its first beat (RISC-V LR is a single beat).
  * Invariant: every accepted AW gets exactly one B, every AR (and AtomicLoad/Swap) its R beats, even
  * on errors, so a bad access never hangs a core; errors are also reported on `error`.
  */
class AxiInterconnect(nMasters: Int, regions: Seq[SocMap.Region], axi: Axi4Params = Axi4Params(), withActivity: Boolean = false)
    extends Module {
  require(regions.forall(r => r.base + r.size <= (BigInt(1) << 32)), "slave regions must lie below 4 GiB (BusReq.addr is 32 bit)")
  val io = IO(new Bundle {
    val masters = Vec(nMasters, Flipped(new Axi4(axi)))
    val slaves = Vec(regions.size, new BusPort)
    val error = Valid(new BusError(nMasters))
    val activity = Option.when(withActivity)(Output(new BusActivity(nMasters, regions.size)))
  })

  object S extends ChiselEnum {
    val idle, wData, wReq, wResp, bResp, rReq, rResp, rBeat, aData, aDrain, aErr, aRead, aReadResp, aWrite, aWriteResp,
      aResp =
      Value
  }
  val state = RegInit(S.idle)
  val mIdx = Reg(UInt(log2Ceil(nMasters max 2).W))
  val id = Reg(UInt(axi.idBits.W))
  val addr = Reg(UInt(axi.addrBits.W))
  val len = Reg(UInt(8.W))
  val size = Reg(UInt(3.W))
  val burst = Reg(UInt(2.W))
  val lock = Reg(Bool())
  val atop = Reg(UInt(6.W))
  val beat = Reg(UInt(8.W))
  val resp = Reg(UInt(2.W))
  val rdata = Reg(UInt(axi.dataBits.W))
  val wdata = Reg(UInt(axi.dataBits.W))
  val wstrb = Reg(UInt((axi.dataBits / 8).W))
  val exclOk = Reg(Bool()) // exclusive write: reservation held
  val wLast = Reg(Bool())
  val isWrite = Reg(Bool())
  val rDone = Reg(Bool())
  val bDone = Reg(Bool())

  val reservation = RegInit(VecInit(Seq.fill(nMasters)(0.U.asTypeOf(Valid(UInt((axi.addrBits - 3).W))))))

  /** A new transaction may be accepted this cycle: idle, or the current write's B is taken now. */
  val acc = WireDefault(false.B)
  /** Whether `a` lies in region `r`: for a naturally aligned power-of-two region (all of soc.toml's) one
    * compare of the bits above its size, cheaper than two magnitude compares. */
  def inRegion(a: UInt, r: SocMap.Region): Bool =
    if (isPow2(r.size) && r.base % r.size == 0) a(axi.addrBits - 1, log2Ceil(r.size)) === (r.base >> log2Ceil(r.size)).U
    else a >= r.base.U && a < (r.base + r.size).U
  // --- address decode of the beat in hand: always of the registered address, so that a slave's
  // request never depends on a manager's signals in the same cycle
  val hits = VecInit(regions.map(inRegion(addr, _)))
  val mapped = hits.asUInt.orR
  val sel = OHToUInt(hits)

  /** Element `i` of `v`; a one-element Seq needs no index (and Chisel warns about a 1-bit one). */
  def at[T <: Data](v: Seq[T], i: UInt): T = if (v.size == 1) v.head else VecInit(v)(i)

  // --- per-port control wires; ports are driven by index compares (no dynamic-index writes)
  val awReady, wReady, arReady, bValid, rValid = WireDefault(false.B)
  val rLast = WireDefault(beat === len)
  val bResp = WireDefault(resp)
  val rData = WireDefault(rdata)
  val rResp = WireDefault(resp)
  // --- arbitration: round robin over managers with a pending AW or AR
  val wants = VecInit(io.masters.map(x => x.aw.valid || x.ar.valid))
  val idxBits = log2Ceil(nMasters max 2)
  val last = RegInit(0.U(idxBits.W))
  val order = (1 to nMasters).map(k => ((last +& k.U) % nMasters.U)(idxBits - 1, 0))
  val pick = PriorityMux(order.map(i => at(wants, i)), order)
  /** The manager whose AW, AR and W the bus looks at: the picked one while accepting, else the current. */
  val front = Mux(acc, pick, mIdx)

  for ((port, i) <- io.masters.zipWithIndex) {
    val f = front === i.U
    val cur = mIdx === i.U // R and B belong to the current transaction
    port.aw.ready := awReady && f; port.w.ready := wReady && f; port.ar.ready := arReady && f
    port.b.valid := bValid && cur; port.b.bits.id := id; port.b.bits.resp := bResp
    port.r.valid := rValid && cur; port.r.bits.id := id; port.r.bits.data := rData; port.r.bits.resp := rResp
    port.r.bits.last := rLast
  }
  /** valid and bits of the front manager's channel (ready is driven per port above). */
  def fronted[T <: Data](ch: Axi4 => DecoupledIO[T]) = new {
    val valid = at(io.masters.map(ch(_).valid), front)
    val bits = at(io.masters.map(ch(_).bits), front)
  }
  val aw = fronted(_.aw)
  val ar = fronted(_.ar)
  val w = fronted(_.w)
  val bReady = at(io.masters.map(_.b.ready), mIdx)
  val rReady = at(io.masters.map(_.r.ready), mIdx)

  val reqValid, reqWrite = WireDefault(false.B)
  val reqWdata = WireDefault(wdata)
  for ((port, i) <- io.slaves.zipWithIndex) {
    port.req.valid := reqValid && sel === i.U
    port.req.bits.addr := addr(31, 0)
    port.req.bits.write := reqWrite
    port.req.bits.wdata := reqWdata
    port.req.bits.wstrb := wstrb
  }
  val reqReady = VecInit(io.slaves.map(_.req.ready))(sel)
  val reqFire = reqValid && reqReady
  /** The slave of the request in flight. */
  val outSel = RegInit(0.U(log2Ceil(regions.size max 2).W))
  when(reqFire) { outSel := sel }
  val slaveResp = at(io.slaves.map(_.resp), outSel)
  io.error.valid := false.B
  io.error.bits.master := mIdx
  io.error.bits.addr := addr
  io.error.bits.write := isWrite

  def fail(code: UInt): Unit = { resp := code; io.error.valid := true.B }
  /** B's response: EXOKAY for an exclusive write that held its reservation and met no error. */
  def bOf(r: UInt): UInt = Mux(lock && exclOk && r === Axi4.OKAY, Axi4.EXOKAY, r)
  def granule(a: UInt): UInt = a(axi.addrBits - 1, 3)
  def clearReservations(a: UInt): Unit =
    for (r <- reservation) when(r.bits === granule(a)) { r.valid := false.B }
  val nextAddr = Axi4.nextAddr(addr, size, len, burst)
  /** Take the front manager's W beat (its `ready` is set by the caller). */
  def takeW(): Unit = { wdata := w.bits.data; wstrb := w.bits.strb; wLast := w.bits.last }

  // --- what the bus does this cycle, when built withActivity (the simulation's SoC): a cycle that
  // ends one transaction (a write's B) and starts the next counts for the one it starts, whose
  // manager, slave, direction, address and ID it names (those of the picked manager's AW, else AR)
  for (a <- io.activity) {
    val starting = acc && wants.asUInt.orR
    val idle = state === S.idle
    val newHits = VecInit(regions.map(inRegion(Mux(aw.valid, aw.bits.addr, ar.bits.addr), _)))
    a.busy := !idle || starting
    a.start := starting
    val fresh = idle || starting
    a.master := Mux(fresh, pick, mIdx)
    a.slave := Mux(fresh, Mux(newHits.asUInt.orR, OHToUInt(newHits), regions.size.U), Mux(mapped, sel, regions.size.U))
    a.write := Mux(fresh, aw.valid, isWrite)
    a.addr := Mux(aw.valid, aw.bits.addr, ar.bits.addr)(31, 0)
    a.id0 := Mux(aw.valid, aw.bits.id, ar.bits.id)(0)
    a.waiting := Mux(a.busy, wants.asUInt & ~UIntToOH(Mux(fresh, pick, mIdx), nMasters), 0.U)
  }

  /** The R beat was taken: the next beat's request, or the end of the burst. Unlike B, the last R does
    * not let the next transaction in at once: CVA6's RREADY depends on its AWREADY/WREADY (an atomic
    * granted on AW+W invalidates and refuses R that cycle), which would close a combinational loop. */
  def nextBeat(): Unit =
    when(beat === len) { state := S.idle }.otherwise {
      beat := beat + 1.U; addr := nextAddr; resp := Axi4.OKAY; state := S.rReq // each beat its own response
    }

  switch(state) {
    is(S.idle) { acc := true.B }
    // ---- plain and exclusive writes: each W beat taken into registers, then its slave request
    is(S.wData) {
      wReady := true.B
      when(w.valid) { takeW(); state := S.wReq }
    }
    is(S.wReq) {
      when(!mapped || (lock && !exclOk)) { // unmapped, or a failed exclusive: drop the beat
        when(!mapped) { fail(Axi4.DECERR) }
        when(wLast) { state := S.bResp }.otherwise { addr := nextAddr; state := S.wData }
      }.otherwise {
        reqValid := true.B
        reqWrite := true.B
        when(reqFire) { clearReservations(addr); state := S.wResp }
      }
    }
    is(S.wResp) {
      when(slaveResp.valid) {
        when(slaveResp.bits.err) { fail(Axi4.SLVERR) }
        when(wLast) { // B goes out with the last beat's answer; bResp holds it if the manager waits
          bValid := true.B
          bResp := bOf(Mux(slaveResp.bits.err, Axi4.SLVERR, resp))
          state := S.bResp
          when(bReady) { state := S.idle; acc := true.B }
        }.otherwise { addr := nextAddr; state := S.wData }
      }
    }
    is(S.bResp) {
      bValid := true.B
      bResp := bOf(resp)
      when(bReady) { state := S.idle; acc := true.B }
    }
    // ---- reads: one slave request per R beat
    is(S.rReq) {
      when(!mapped) {
        fail(Axi4.DECERR); rdata := 0.U; state := S.rBeat
      }.otherwise {
        reqValid := true.B
        when(reqFire) { state := S.rResp }
      }
    }
    is(S.rResp) { // the slave's answer goes out as R in the cycle it comes; rBeat holds it if the manager waits
      when(slaveResp.valid) {
        val code = Mux(slaveResp.bits.err, Axi4.SLVERR, Mux(lock, Axi4.EXOKAY, resp))
        when(slaveResp.bits.err) { fail(Axi4.SLVERR) }
        rdata := slaveResp.bits.rdata; resp := code
        rValid := true.B; rData := slaveResp.bits.rdata; rResp := code
        state := S.rBeat
        when(rReady) { nextBeat() }
      }
    }
    is(S.rBeat) {
      rValid := true.B
      when(rReady) { nextBeat() }
    }
    // ---- atomics: take the single W beat, read, modify, write, answer B (and R for loads)
    is(S.aData) {
      wReady := true.B
      when(w.valid) {
        takeW()
        val supported = len === 0.U && (size === 2.U || size === 3.U) && mapped &&
          (atop(5, 4) =/= 3.U || atop(3, 0) === 0.U) // AtomicCompare is not supported
        when(!supported) {
          fail(Mux(mapped, Axi4.SLVERR, Axi4.DECERR)); rdata := 0.U
          state := Mux(w.bits.last, S.aErr, S.aDrain)
        }.otherwise { state := S.aRead }
        rDone := atop(5) === 0.U; bDone := false.B // AtomicStore has no R
      }
    }
    is(S.aDrain) { // an unsupported atomic burst: take the rest of its W beats
      wReady := true.B
      when(w.valid && w.bits.last) { state := S.aErr }
    }
    is(S.aErr) { // its R beats (AtomicLoad/Swap/Compare), each with the error, then B
      when(atop(5)) {
        rValid := true.B
        when(rReady) { when(beat === len) { state := S.bResp }.otherwise { beat := beat + 1.U } }
      }.otherwise { state := S.bResp }
    }
    is(S.aRead) {
      reqValid := true.B
      when(reqFire) { state := S.aReadResp }
    }
    is(S.aReadResp) {
      when(slaveResp.valid) {
        rdata := slaveResp.bits.rdata
        when(slaveResp.bits.err) { fail(Axi4.SLVERR); state := S.aResp }.otherwise { state := S.aWrite }
      }
    }
    is(S.aWrite) {
      reqValid := true.B
      reqWrite := true.B
      reqWdata := AtomicAlu(atop, size, addr(2), rdata, wdata)
      when(reqFire) { clearReservations(addr); state := S.aWriteResp }
    }
    is(S.aWriteResp) {
      when(slaveResp.valid) {
        when(slaveResp.bits.err) { fail(Axi4.SLVERR) }
        state := S.aResp
      }
    }
    is(S.aResp) {
      bValid := !bDone
      rValid := !rDone
      rLast := true.B
      val b = bDone || bReady
      val r = rDone || rReady
      bDone := b; rDone := r
      when(b && r) { state := S.idle }
    }
  }
  // --- a new transaction: accepted when the bus is idle or in the cycle the last write's B is taken
  // (after the switch: it overrides the state the finished transaction left); its first request goes
  // out the next cycle, from the registers written here
  when(acc && wants.asUInt.orR) {
    mIdx := pick; last := pick; beat := 0.U; resp := Axi4.OKAY
    isWrite := aw.valid
    when(aw.valid) {
      awReady := true.B
      id := aw.bits.id; addr := aw.bits.addr; len := aw.bits.len; size := aw.bits.size
      burst := aw.bits.burst; lock := aw.bits.lock; atop := aw.bits.atop
      val held = at(reservation.map(r => r.valid && r.bits === granule(aw.bits.addr)), pick)
      exclOk := held
      state := Mux(aw.bits.atop =/= 0.U, S.aData, S.wData)
      when(aw.bits.atop === 0.U && w.valid) { // the first W beat (CVA6 sends it with its AW), as in wData
        wReady := true.B
        takeW()
        state := S.wReq
      }
    }.otherwise {
      arReady := true.B
      id := ar.bits.id; addr := ar.bits.addr; len := ar.bits.len; size := ar.bits.size
      burst := ar.bits.burst; lock := ar.bits.lock; atop := 0.U
      state := S.rReq
    }
    for ((r, i) <- reservation.zipWithIndex) when(pick === i.U) {
      when(aw.valid && aw.bits.lock) { r.valid := false.B } // an exclusive write consumes it
      when(!aw.valid && ar.bits.lock) { r.valid := true.B; r.bits := granule(ar.bits.addr) }
    }
  }
}

/** New memory word for an AXI atomic (AtomicStore/AtomicLoad op, or AtomicSwap), little endian.
  * `upper` selects the upper 32-bit lane for 4-byte operations.
  */
object AtomicAlu {
  def apply(atop: UInt, size: UInt, upper: Bool, old: UInt, data: UInt): UInt = {
    val is32 = size === 2.U
    val shift = Mux(is32 && upper, 32.U, 0.U)
    val a = old >> shift
    val b = data >> shift
    def sext(x: UInt) = Mux(is32, Cat(Fill(32, x(31)), x(31, 0)), x(63, 0)).asSInt
    def zext(x: UInt) = Mux(is32, x(31, 0).pad(64), x(63, 0))
    val op = atop(2, 0)
    val result = Wire(UInt(64.W))
    result := MuxLookup(op, 0.U)(
      Seq(
        0.U -> (zext(a) + zext(b)), // ADD
        1.U -> (zext(a) & ~zext(b)), // CLR
        2.U -> (zext(a) ^ zext(b)), // EOR
        3.U -> (zext(a) | zext(b)), // SET
        4.U -> Mux(sext(a) > sext(b), zext(a), zext(b)), // SMAX
        5.U -> Mux(sext(a) < sext(b), zext(a), zext(b)), // SMIN
        6.U -> Mux(zext(a) > zext(b), zext(a), zext(b)), // UMAX
        7.U -> Mux(zext(a) < zext(b), zext(a), zext(b)) // UMIN
      )
    )
    val isSwap = atop(5, 4) === 3.U
    val word = Mux(isSwap, zext(b), result)
    (Mux(is32, word(31, 0).pad(64), word) << shift)(63, 0)
  }
}
