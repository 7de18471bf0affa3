package nanobpf.soc

import chisel3._
import chisel3.util._
import nanobpf.common._

/** A core's own RAM (region `core_local`: its stack and thread-local block) in front of the shared
  * interconnect.
  *
  * Why: CVA6's D-cache writes through, so every store reaches the bus, and most of a packet's stores
  * are the stack's (saved registers, spills: about 150 of 215 for a seal). On the shared interconnect,
  * which serves one transaction at a time for every core, they made most of its traffic and the cores
  * wait for each other. Here the core's transactions to its region go to a RAM of its own, in
  * parallel with the other cores', and only the rest to the shared bus.
  *
  * The core's AXI port is split by address: one write (AW, its W beats, B) and one read (AR, its R
  * beats) in flight at a time, each to the local RAM or to the shared bus. An atomic with a read
  * answer (AtomicLoad, AtomicSwap) gets its R beat from where its AW went, so it waits for a read in
  * flight and a read waits for it. Ready never depends on the core's other channels within a cycle
  * (only on the registers of what is in flight and the target's own ready). The local RAM
  * ([[LocalRam]]) takes plain reads and writes, bursts included; atomics and exclusive accesses go to
  * the shared bus whatever their address, which answers those for this region with an error (it is
  * not on that bus) and reports it: nothing the firmware does on its stack needs them.
  */
class CoreLocal(region: SocMap.Region, axi: Axi4Params = Axi4Params()) extends Module {
  val io = IO(new Bundle {
    /** From the core. */
    val core = Flipped(new Axi4(axi))
    /** To the shared interconnect. */
    val bus = new Axi4(axi)
  })
  val ramPort = Module(new LocalRam(axi))
  val ram = Module(new MainMemory(region, "", loadPlusarg = false))
  ramPort.io.ram <> ram.io
  val local = ramPort.io.axi

  private val bits = log2Ceil(region.size)
  require(isPow2(region.size) && region.base % region.size == 0, "core_local must be a naturally aligned power of two")
  def isLocal(a: UInt): Bool = a(axi.addrBits - 1, bits) === (region.base >> bits).U

  // ---- reads (and atomics' R): one in flight, its source remembered
  val rBusy = RegInit(false.B)
  val rLocal = Reg(Bool())
  // ---- writes: one in flight (AW accepted until its B)
  val wBusy = RegInit(false.B)
  val wLocal = Reg(Bool())

  val aw = io.core.aw
  val awLocal = isLocal(aw.bits.addr) && aw.bits.atop === 0.U && !aw.bits.lock
  val awHasR = aw.bits.atop(5) // AtomicLoad, AtomicSwap, AtomicCompare: answered on R too
  val awOpen = !wBusy && !(awHasR && rBusy)
  local.aw.bits := aw.bits
  io.bus.aw.bits := aw.bits
  local.aw.valid := aw.valid && awOpen && awLocal
  io.bus.aw.valid := aw.valid && awOpen && !awLocal
  aw.ready := awOpen && Mux(awLocal, local.aw.ready, io.bus.aw.ready)

  // W: to the write in flight, or with the AW offered now (CVA6 offers the first W beat with its AW;
  // a target takes W only with or after its AW)
  val wToLocal = Mux(wBusy, wLocal, awLocal)
  val wOpen = wBusy || (aw.valid && awOpen)
  local.w.bits := io.core.w.bits
  io.bus.w.bits := io.core.w.bits
  local.w.valid := io.core.w.valid && wOpen && wToLocal
  io.bus.w.valid := io.core.w.valid && wOpen && !wToLocal
  io.core.w.ready := wOpen && Mux(wToLocal, local.w.ready, io.bus.w.ready)

  io.core.b.valid := wBusy && Mux(wLocal, local.b.valid, io.bus.b.valid)
  io.core.b.bits := Mux(wLocal, local.b.bits, io.bus.b.bits)
  local.b.ready := wBusy && wLocal && io.core.b.ready
  io.bus.b.ready := wBusy && !wLocal && io.core.b.ready

  val ar = io.core.ar
  val arLocal = isLocal(ar.bits.addr) && !ar.bits.lock
  local.ar.bits := ar.bits
  io.bus.ar.bits := ar.bits
  local.ar.valid := ar.valid && !rBusy && arLocal
  io.bus.ar.valid := ar.valid && !rBusy && !arLocal
  ar.ready := !rBusy && Mux(arLocal, local.ar.ready, io.bus.ar.ready)

  io.core.r.valid := rBusy && Mux(rLocal, local.r.valid, io.bus.r.valid)
  io.core.r.bits := Mux(rLocal, local.r.bits, io.bus.r.bits)
  local.r.ready := rBusy && rLocal && io.core.r.ready
  io.bus.r.ready := rBusy && !rLocal && io.core.r.ready

  when(io.core.r.fire && io.core.r.bits.last) { rBusy := false.B }
  when(io.core.b.fire) { wBusy := false.B }
  when(aw.fire) {
    wBusy := true.B; wLocal := awLocal
    when(awHasR) { rBusy := true.B; rLocal := awLocal }
  }
  when(ar.fire) { rBusy := true.B; rLocal := arLocal }
}

/** An AXI subordinate for a RAM with a [[BusPort]] (one access per cycle, read data a cycle later): one
  * transaction at a time, reads first; each burst beat one RAM access (INCR, WRAP and FIXED bursts by
  * [[Axi4.nextAddr]]). A transaction's first access goes out in the cycle it is accepted (a write's
  * with the W beat offered alongside its AW, as CVA6 offers it), and the RAM's answer goes on as R or B
  * in the cycle it comes: a single-beat read or write takes 2 cycles. Plain accesses only:
  * [[CoreLocal]] sends it no atomic and no exclusive access.
  */
class LocalRam(p: Axi4Params = Axi4Params()) extends Module {
  val io = IO(new Bundle {
    val axi = Flipped(new Axi4(p))
    val ram = new BusPort
  })
  object S extends ChiselEnum { val idle, rReq, rResp, rBeat, wData, wResp, bResp = Value }
  val state = RegInit(S.idle)
  val id = Reg(UInt(p.idBits.W))
  val addr = Reg(UInt(p.addrBits.W))
  val len = Reg(UInt(8.W))
  val size = Reg(UInt(3.W))
  val burst = Reg(UInt(2.W))
  val beat = Reg(UInt(8.W))
  val rdata = Reg(UInt(p.dataBits.W))
  val wLast = Reg(Bool())
  val nextAddr = Axi4.nextAddr(addr, size, len, burst)

  val ar = io.axi.ar
  val aw = io.axi.aw
  val w = io.axi.w
  val idle = state === S.idle
  ar.ready := idle
  aw.ready := idle && !ar.valid
  w.ready := false.B
  io.axi.b.valid := false.B
  io.axi.b.bits.id := id
  io.axi.b.bits.resp := Axi4.OKAY
  io.axi.r.valid := false.B
  io.axi.r.bits.id := id
  io.axi.r.bits.data := rdata
  io.axi.r.bits.resp := Axi4.OKAY
  io.axi.r.bits.last := beat === len
  io.ram.req.valid := false.B
  io.ram.req.bits.addr := addr(31, 0)
  io.ram.req.bits.write := false.B
  io.ram.req.bits.wdata := w.bits.data
  io.ram.req.bits.wstrb := w.bits.strb

  def take(a: Axi4Ax): Unit = {
    id := a.id; addr := a.addr; len := a.len; size := a.size; burst := a.burst; beat := 0.U
  }
  def readBeatDone(): Unit =
    when(beat === len) { state := S.idle }.otherwise { beat := beat + 1.U; addr := nextAddr; state := S.rReq }
  switch(state) {
    is(S.idle) {
      when(ar.valid) { // accepted now (ready), its first beat's read goes out now
        take(ar.bits)
        io.ram.req.bits.addr := ar.bits.addr(31, 0)
        io.ram.req.valid := true.B
        state := Mux(io.ram.req.ready, S.rResp, S.rReq)
      }.elsewhen(aw.valid) {
        take(aw.bits)
        state := S.wData
        when(w.valid) { // the first W beat with its AW
          io.ram.req.bits.addr := aw.bits.addr(31, 0)
          io.ram.req.bits.write := true.B
          io.ram.req.valid := true.B
          w.ready := io.ram.req.ready
          when(io.ram.req.ready) { wLast := w.bits.last; state := S.wResp }
        }
      }
    }
    is(S.rReq) {
      io.ram.req.valid := true.B
      when(io.ram.req.fire) { state := S.rResp }
    }
    is(S.rResp) { // the RAM's answer goes out as R now; rBeat holds it while the manager waits
      when(io.ram.resp.valid) {
        rdata := io.ram.resp.bits.rdata
        io.axi.r.valid := true.B
        io.axi.r.bits.data := io.ram.resp.bits.rdata
        state := S.rBeat
        when(io.axi.r.ready) { readBeatDone() }
      }
    }
    is(S.rBeat) {
      io.axi.r.valid := true.B
      when(io.axi.r.ready) { readBeatDone() }
    }
    is(S.wData) {
      io.ram.req.valid := w.valid
      io.ram.req.bits.write := true.B
      w.ready := io.ram.req.ready
      when(io.ram.req.fire) { wLast := w.bits.last; state := S.wResp }
    }
    is(S.wResp) {
      when(io.ram.resp.valid) {
        when(wLast) {
          io.axi.b.valid := true.B
          state := Mux(io.axi.b.ready, S.idle, S.bResp)
        }.otherwise { addr := nextAddr; state := S.wData }
      }
    }
    is(S.bResp) {
      io.axi.b.valid := true.B
      when(io.axi.b.ready) { state := S.idle }
    }
  }
}
