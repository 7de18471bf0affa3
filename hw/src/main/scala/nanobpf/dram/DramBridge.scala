package nanobpf.dram

import chisel3._
import chisel3.util._
import nanobpf.common._

/** Build parameters of [[DramBridge]]. */
case class DramBridgeParams(
    /** Bus address of DRAM byte 0 (the main_mem region's base). */
    base: BigInt,
    /** Bytes of bus address space the bridge answers for (the region's size). */
    windowBytes: BigInt,
    /** Bytes of DRAM (LiteDRAM's dram.properties size_bytes); window offsets at or past it are errors. */
    dramBytes: BigInt,
    /** AXI address width: the DRAM's byte address (LiteDRAM: log2 of its size). */
    addrBits: Int = 30,
    /** AXI data width: LiteDRAM's native port (32-bit DDR3 at 1:4 = 256). */
    dataBits: Int = 256,
    /** AXI ID width of LiteDRAM's user port. */
    idBits: Int = 4,
    /** Depth of each clock-crossing FIFO (one access is in flight at a time, so 4 is plenty). */
    fifoDepth: Int = 4) {
  require(dataBits >= 64 && isPow2(dataBits), "dataBits: a power of two of at least 64")
  require(base % 8 == 0 && windowBytes > 0 && base + windowBytes <= (BigInt(1) << 32), "the window lies in the 32-bit bus space")
  require(dramBytes == (BigInt(1) << addrBits), s"dramBytes ($dramBytes) must be 2^addrBits (addrBits $addrBits)")
  /** 64-bit lanes per AXI beat. */
  val lanes: Int = dataBits / 64
  val laneBits: Int = log2Ceil(lanes)
  /** log2 of the beat's bytes: AXI size, and the beat's address alignment. */
  val beatShift: Int = log2Ceil(dataBits / 8)
}

/** One access crossing into the DRAM clock. `addr` is the DRAM byte address of the beat (aligned). */
class DramCmd(p: DramBridgeParams) extends Bundle {
  val write = Bool()
  val addr = UInt(p.addrBits.W)
  val lane = UInt(p.laneBits.max(1).W)
  val wdata = UInt(64.W)
  val wstrb = UInt(8.W)
}

/** What comes back into the core clock: the lane read (zero when err) and whether the DRAM refused it. */
class DramAnswer extends Bundle {
  val rdata = UInt(64.W)
  val err = Bool()
}

/** Main memory in external DRAM: a slave of the SoC's internal bus (one 64-bit access at a time, in the
  * module's clock, the core clock) to an AXI4 manager at LiteDRAM's native width in `dramClock`
  * (LiteDRAM's user_clk). Each access becomes one single-beat AXI transaction (len 0, size = the beat,
  * INCR): a write puts wdata/wstrb in the 64-bit lane addr[beatShift-1:3] of the beat, other strobes
  * low; a read returns that lane. The two clocks cross through [[AsyncFifo]]s, one each way.
  *
  * Invariants: exactly one `resp` pulse per accepted request; `req.ready` is low from acceptance to that
  * pulse; `req.ready` is also low while either side is in reset (a reset of either clock domain resets
  * both sides of the bridge; an access in flight then is lost, so the board resets the SoC with the
  * DRAM). An address at or past `dramBytes` in the window is answered with err without touching the
  * DRAM; an AXI error response (SLVERR/DECERR) answers err, and an errored read returns zero, never
  * the beat's data. Latency: about 3 + 3 cycles of FIFO synchronisers plus the DRAM's own (LiteDRAM's
  * sim model: 14-18 user_clk cycles to the first read data); LiteDRAM holds its AXI port until its
  * init_done, so an access waits for the DRAM's initialisation.
  */
class DramBridge(p: DramBridgeParams) extends Module {
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val dramClock = Input(Clock())
    val dramReset = Input(Bool())
    val axi = new Axi4(Axi4Params(idBits = p.idBits, addrBits = p.addrBits, dataBits = p.dataBits))
  })

  // Either reset resets both sides: a FIFO whose two ends are reset apart would replay stale entries.
  // The core reset is synchronised into the DRAM clock; the DRAM reset is stretched to 8 of its cycles
  // (4 core cycles at 100/50 MHz) so the core clock's synchroniser cannot miss it.
  val dramSideReset = withClock(io.dramClock) {
    val coreReset = RegNext(RegNext(reset.asBool, true.B), true.B)
    io.dramReset || coreReset
  }
  val dramResetLong = withClockAndReset(io.dramClock, io.dramReset) {
    val hold = RegInit(7.U(3.W))
    when(hold =/= 0.U) { hold := hold - 1.U }
    hold =/= 0.U
  }
  val coreSideReset = reset.asBool || RegNext(RegNext(io.dramReset || dramResetLong, true.B), true.B)

  // ---------------------------------------------------------------- core clock
  val cmdFifo = withReset(coreSideReset)(Module(new AsyncFifo(new DramCmd(p), p.fifoDepth)))
  val ansFifo = withClockAndReset(io.dramClock, dramSideReset)(Module(new AsyncFifo(new DramAnswer, p.fifoDepth)))
  cmdFifo.io.deqClock := io.dramClock
  cmdFifo.io.deqReset := dramSideReset
  ansFifo.io.deqClock := clock
  ansFifo.io.deqReset := coreSideReset

  val busy = withReset(coreSideReset)(RegInit(false.B))
  val offset = io.bus.req.bits.addr -& p.base.U
  val inDram = io.bus.req.bits.addr >= p.base.U && offset < (p.dramBytes min p.windowBytes).U
  // Out of range: answered here, one cycle later, with err.
  val refused = withReset(coreSideReset)(RegNext(io.bus.req.fire && !inDram, false.B))
  io.bus.req.ready := !busy && cmdFifo.io.enq.ready && !coreSideReset
  cmdFifo.io.enq.valid := io.bus.req.valid && !busy && inDram
  cmdFifo.io.enq.bits.write := io.bus.req.bits.write
  cmdFifo.io.enq.bits.addr := (offset(p.addrBits - 1, p.beatShift) ## 0.U(p.beatShift.W))
  cmdFifo.io.enq.bits.lane := (if (p.lanes > 1) offset(p.beatShift - 1, 3) else 0.U)
  cmdFifo.io.enq.bits.wdata := io.bus.req.bits.wdata
  cmdFifo.io.enq.bits.wstrb := io.bus.req.bits.wstrb
  ansFifo.io.deq.ready := true.B
  when(io.bus.req.fire) { busy := true.B }
  when(io.bus.resp.valid) { busy := false.B }
  io.bus.resp.valid := refused || ansFifo.io.deq.valid
  io.bus.resp.bits.err := refused || ansFifo.io.deq.bits.err
  io.bus.resp.bits.rdata := Mux(refused || ansFifo.io.deq.bits.err, 0.U, ansFifo.io.deq.bits.rdata)

  // ---------------------------------------------------------------- DRAM clock
  withClockAndReset(io.dramClock, dramSideReset) {
    object S extends ChiselEnum { val Idle, Write, WriteResp, Read, ReadData, Answer = Value }
    val state = RegInit(S.Idle)
    val cmd = Reg(new DramCmd(p))
    val awDone = RegInit(false.B)
    val wDone = RegInit(false.B)
    val ans = Reg(new DramAnswer)

    cmdFifo.io.deq.ready := state === S.Idle
    when(cmdFifo.io.deq.fire) {
      cmd := cmdFifo.io.deq.bits
      awDone := false.B
      wDone := false.B
      state := Mux(cmdFifo.io.deq.bits.write, S.Write, S.Read)
    }

    def ax(a: Axi4Ax): Unit = {
      a.id := 0.U
      a.addr := cmd.addr
      a.len := 0.U
      a.size := p.beatShift.U
      a.burst := Axi4.BurstIncr
      a.lock := false.B
      a.cache := 0.U
      a.prot := 0.U
    }
    ax(io.axi.aw.bits)
    io.axi.aw.bits.atop := 0.U
    ax(io.axi.ar.bits)
    io.axi.aw.valid := state === S.Write && !awDone
    io.axi.w.valid := state === S.Write && !wDone
    io.axi.w.bits.data := Fill(p.lanes, cmd.wdata)
    io.axi.w.bits.strb := (cmd.wstrb.pad(p.dataBits / 8) << (cmd.lane ## 0.U(3.W)))(p.dataBits / 8 - 1, 0)
    io.axi.w.bits.last := true.B
    io.axi.b.ready := state === S.WriteResp
    io.axi.ar.valid := state === S.Read
    io.axi.r.ready := state === S.ReadData

    when(state === S.Write) {
      val aw = awDone || io.axi.aw.fire
      val w = wDone || io.axi.w.fire
      awDone := aw
      wDone := w
      when(aw && w) { state := S.WriteResp }
    }
    when(io.axi.b.fire) {
      ans.rdata := 0.U
      ans.err := io.axi.b.bits.resp(1) // SLVERR or DECERR
      state := S.Answer
    }
    when(io.axi.ar.fire) { state := S.ReadData }
    when(io.axi.r.fire) {
      val err = io.axi.r.bits.resp(1)
      val lanes = io.axi.r.bits.data.asTypeOf(Vec(p.lanes, UInt(64.W)))
      ans.rdata := Mux(err, 0.U, lanes(cmd.lane))
      ans.err := err
      state := S.Answer
    }
    ansFifo.io.enq.valid := state === S.Answer
    ansFifo.io.enq.bits := ans
    when(ansFifo.io.enq.fire) { state := S.Idle }
  }
}
