package nanobpf.soc

import chisel3._
import chisel3.util._

/** N AXI4 managers to M [[BusPort]] slaves, one transaction at a time.
  *
  * A round-robin arbiter picks one manager's AW or AR, then the transaction runs to its response
  * before the next one starts. Each burst beat becomes one [[BusReq]] to the slave whose region holds
  * the beat's address. Latency: about 3 cycles per beat (request, slave answer, R/B handshake);
  * enough for the skeleton, where the cores mostly run out of their caches.
  *
  * Because transactions never overlap, atomics are simple and exact:
  *  - AXI5 atomics (AWATOP, what CVA6 emits for RISC-V AMOs): AtomicStore, AtomicLoad and AtomicSwap
  *    of 4 or 8 bytes are done as read, modify, write; AtomicCompare and bursts get SLVERR.
  *  - Exclusive accesses (AxLOCK, CVA6's LR/SC): one reservation per manager on an 8-byte granule;
  *    any write to the granule clears it; an exclusive write succeeds (EXOKAY) only with the
  *    reservation held, otherwise it answers OKAY and writes nothing.
  * Invariant: every accepted AW gets exactly one B, every AR (and AtomicLoad/Swap) its R beats, even
  * on errors, so a bad access never hangs a core; errors are also reported on `error`.
  */
class AxiInterconnect(nMasters: Int, regions: Seq[SocMap.Region], axi: Axi4Params = Axi4Params())
    extends Module {
  val io = IO(new Bundle {
    val masters = Vec(nMasters, Flipped(new Axi4(axi)))
    val slaves = Vec(regions.size, new BusPort)
    val error = Valid(new BusError(nMasters))
  })

  object S extends ChiselEnum {
    val idle, wData, wResp, bResp, rReq, rResp, rBeat, aData, aRead, aReadResp, aWrite, aWriteResp, aResp =
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

  // --- address decode of the current beat
  val hits = VecInit(regions.map(r => addr >= r.base.U && addr < (r.base + r.size).U))
  val mapped = hits.asUInt.orR
  val sel = OHToUInt(hits)

  // --- defaults
  for (m <- io.masters) {
    m.aw.ready := false.B; m.w.ready := false.B; m.ar.ready := false.B
    m.b.valid := false.B; m.b.bits.id := id; m.b.bits.resp := resp
    m.r.valid := false.B; m.r.bits.id := id; m.r.bits.data := rdata; m.r.bits.resp := resp
    m.r.bits.last := beat === len
  }
  for (s <- io.slaves) {
    s.req.valid := false.B
    s.req.bits.addr := addr(31, 0)
    s.req.bits.write := false.B
    s.req.bits.wdata := io.masters(mIdx).w.bits.data
    s.req.bits.wstrb := io.masters(mIdx).w.bits.strb
  }
  io.error.valid := false.B
  io.error.bits.master := mIdx
  io.error.bits.addr := addr
  io.error.bits.write := isWrite

  val m = io.masters(mIdx)
  val slave = io.slaves(sel)
  val slaveResp = VecInit(io.slaves.map(_.resp)).apply(sel)
  def fail(code: UInt): Unit = { resp := code; io.error.valid := true.B }
  def clearReservations(a: UInt): Unit =
    for (r <- reservation) when(r.bits === a(axi.addrBits - 1, 3)) { r.valid := false.B }
  val nextAddr = Axi4.nextAddr(addr, size, len, burst)

  // --- arbitration: round robin over managers with a pending AW or AR
  val wants = VecInit(io.masters.map(x => x.aw.valid || x.ar.valid))
  val last = RegInit(0.U(log2Ceil(nMasters max 2).W))
  val order = (1 to nMasters).map(k => (last +& k.U) % nMasters.U)
  val pick = PriorityMux(order.map(i => wants(i)), order)

  switch(state) {
    is(S.idle) {
      when(wants.asUInt.orR) {
        val c = io.masters(pick)
        mIdx := pick; last := pick; beat := 0.U; resp := Axi4.OKAY
        isWrite := c.aw.valid
        when(c.aw.valid) {
          c.aw.ready := true.B
          id := c.aw.bits.id; addr := c.aw.bits.addr; len := c.aw.bits.len; size := c.aw.bits.size
          burst := c.aw.bits.burst; lock := c.aw.bits.lock; atop := c.aw.bits.atop
          val r = reservation(pick)
          exclOk := r.valid && r.bits === c.aw.bits.addr(axi.addrBits - 1, 3)
          when(c.aw.bits.lock) { r.valid := false.B } // an exclusive write consumes the reservation
          state := Mux(c.aw.bits.atop =/= 0.U, S.aData, S.wData)
        }.otherwise {
          c.ar.ready := true.B
          id := c.ar.bits.id; addr := c.ar.bits.addr; len := c.ar.bits.len; size := c.ar.bits.size
          burst := c.ar.bits.burst; lock := c.ar.bits.lock; atop := 0.U
          when(c.ar.bits.lock) {
            reservation(pick).valid := true.B
            reservation(pick).bits := c.ar.bits.addr(axi.addrBits - 1, 3)
          }
          state := S.rReq
        }
      }
    }
    // ---- plain and exclusive writes: one slave request per W beat
    is(S.wData) {
      val skip = !mapped || (lock && !exclOk) // unmapped, or a failed exclusive: drop the beat
      when(skip) {
        m.w.ready := true.B
        when(m.w.valid) {
          when(!mapped) { fail(Axi4.DECERR) }
          when(m.w.bits.last) { state := S.bResp }.otherwise { addr := nextAddr }
        }
      }.otherwise {
        slave.req.valid := m.w.valid
        slave.req.bits.write := true.B
        m.w.ready := slave.req.ready
        when(slave.req.fire) {
          clearReservations(addr)
          wLast := m.w.bits.last
          state := S.wResp
        }
      }
    }
    is(S.wResp) {
      when(slaveResp.valid) {
        when(slaveResp.bits.err) { fail(Axi4.SLVERR) }
        when(wLast) { state := S.bResp }.otherwise { addr := nextAddr; state := S.wData }
      }
    }
    is(S.bResp) {
      m.b.valid := true.B
      when(lock && exclOk && resp === Axi4.OKAY) { m.b.bits.resp := Axi4.EXOKAY }
      when(m.b.ready) { state := S.idle }
    }
    // ---- reads: one slave request per R beat
    is(S.rReq) {
      when(!mapped) {
        fail(Axi4.DECERR); rdata := 0.U; state := S.rBeat
      }.otherwise {
        slave.req.valid := true.B
        when(slave.req.fire) { state := S.rResp }
      }
    }
    is(S.rResp) {
      when(slaveResp.valid) {
        rdata := slaveResp.bits.rdata
        when(slaveResp.bits.err) { fail(Axi4.SLVERR) }.elsewhen(lock) { resp := Axi4.EXOKAY }
        state := S.rBeat
      }
    }
    is(S.rBeat) {
      m.r.valid := true.B
      when(m.r.ready) {
        when(beat === len) { state := S.idle }.otherwise {
          beat := beat + 1.U; addr := nextAddr; state := S.rReq
        }
      }
    }
    // ---- atomics: take the single W beat, read, modify, write, answer B (and R for loads)
    is(S.aData) {
      m.w.ready := true.B
      when(m.w.valid) {
        wdata := m.w.bits.data; wstrb := m.w.bits.strb
        val supported = len === 0.U && (size === 2.U || size === 3.U) && mapped &&
          (atop(5, 4) =/= 3.U || atop(3, 0) === 0.U) // AtomicCompare is not supported
        when(!supported) { fail(Mux(mapped, Axi4.SLVERR, Axi4.DECERR)); rdata := 0.U; state := S.aResp }
          .otherwise { state := S.aRead }
        rDone := atop(5) === 0.U; bDone := false.B // AtomicStore has no R
      }
    }
    is(S.aRead) {
      slave.req.valid := true.B
      when(slave.req.fire) { state := S.aReadResp }
    }
    is(S.aReadResp) {
      when(slaveResp.valid) {
        rdata := slaveResp.bits.rdata
        when(slaveResp.bits.err) { fail(Axi4.SLVERR); state := S.aResp }.otherwise { state := S.aWrite }
      }
    }
    is(S.aWrite) {
      slave.req.valid := true.B
      slave.req.bits.write := true.B
      slave.req.bits.wdata := AtomicAlu(atop, size, addr(2), rdata, wdata)
      slave.req.bits.wstrb := wstrb
      when(slave.req.fire) { clearReservations(addr); state := S.aWriteResp }
    }
    is(S.aWriteResp) {
      when(slaveResp.valid) {
        when(slaveResp.bits.err) { fail(Axi4.SLVERR) }
        state := S.aResp
      }
    }
    is(S.aResp) {
      m.b.valid := !bDone
      m.r.valid := !rDone
      m.r.bits.last := true.B
      val b = bDone || m.b.ready
      val r = rDone || m.r.ready
      bDone := b; rDone := r
      when(b && r) { state := S.idle }
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
