package nanobpf.board

import chisel3._
import chisel3.util._
import nanobpf.common.AsyncFifo
import nanobpf.mac.{AxisBeat, EthMac, GmiiRx, GmiiTx, MacParams}
import nanobpf.soc.{NanobpfSoc, SocParams}
import nanobpf.common.{Axi4, Axi4Params, SocMap}
import nanobpf.dram.{DramBridge, DramBridgeParams}

/** Build parameters of a board design. */
case class BoardParams(
    /** The SoC; on a board its main memory is external (externalMainMem, the DRAM), the firmware comes from
      * its fw_image ROM (fwImageFile) and uartDiv = core clock / baud. */
    soc: SocParams,
    /** Main memory in the board's DRAM: the bridge to LiteDRAM's AXI port (ElaborateBoard reads the
      * generator's dram.properties). */
    dram: DramBridgeParams,
    /** The Ethernet MAC. */
    mac: MacParams = MacParams(),
    /** Core clock in Hz (LED heartbeat): the board's, from its board.toml ([clocks] core_hz, ElaborateBoard --core-hz). */
    coreHz: Int,
    /** Datapath clock in Hz (activity LEDs): [clocks] net_hz, ElaborateBoard --net-hz. */
    netHz: Int)

/** The clock-domain-independent part of a board (docs/board.md): the SoC in the core clock, the
  * Ethernet MAC in the datapath clock (its receive side in the PHY's clock), the link self-test, the
  * Ethernet counters brought into the core clock, and the status LEDs. The board's top-level
  * SystemVerilog adds clocking, resets and the PHY's I/O primitives.
  *
  * The Ethernet port is the DPU's: received frames cross into the core clock and enter the SoC's
  * datapath as its host port (one-arm mode: the PISA port table tells host and network apart by VLAN),
  * and what the datapath sends leaves on it. With SW0 on, the link self-test holds the port instead:
  * every good frame received goes back out with its MAC addresses swapped (EthEcho). LEDs: 0 heartbeat (core clock), 1 clocks locked, 2 frame received, 3 frame
  * sent, 7..4 the firmware's (dpu.leds).
  *
  * Main memory is the board's DDR3: the SoC's main_mem port goes through [[DramBridge]] to LiteDRAM's
  * AXI port (`io.dram`) in LiteDRAM's user_clk (`dramClock`/`dramReset`). LED 1 shows the clocks and the
  * DDR3 together: on when the MMCM is locked and LiteDRAM reports init_done, blinking (4 Hz) when
  * LiteDRAM reports init_error (its calibration failed), off otherwise (reset, or still initialising).
  */
class NanobpfBoard(p: BoardParams) extends RawModule {
  val coreClock = IO(Input(Clock()))
  val coreReset = IO(Input(Bool()))
  val netClock = IO(Input(Clock()))
  val netReset = IO(Input(Bool()))
  val rxClock = IO(Input(Clock()))
  val rxReset = IO(Input(Bool()))
  val dramClock = IO(Input(Clock()))
  val dramReset = IO(Input(Bool()))
  val io = IO(new Bundle {
    val gmiiRx = Input(new GmiiRx)
    val gmiiTx = Output(new GmiiTx)
    val uartTx = Output(Bool())
    val switches = Input(UInt(8.W))
    val locked = Input(Bool())
    val leds = Output(UInt(8.W))
    /** LiteDRAM's status (asynchronous to the core clock: synchronised here). */
    val dramInitDone = Input(Bool())
    val dramInitError = Input(Bool())
    /** LiteDRAM's AXI4 user port (in dramClock). */
    val dram = new Axi4(Axi4Params(idBits = p.dram.idBits, addrBits = p.dram.addrBits, dataBits = p.dram.dataBits))
  })
  require(p.soc.externalMainMem, "the board's main memory is its DRAM (SocParams.externalMainMem)")
  val nCounters = SocMap.DpuRegs.EthCounterCount
  // Frames between the MAC (datapath clock) and the SoC's datapath (core clock).
  val rxFifo = withClockAndReset(netClock, netReset)(Module(new AsyncFifo(new AxisBeat(p.mac.beatBytes), 16)))
  val txFifo = withClockAndReset(coreClock, coreReset)(Module(new AsyncFifo(new AxisBeat(p.mac.beatBytes), 16)))
  rxFifo.io.deqClock := coreClock
  rxFifo.io.deqReset := coreReset
  txFifo.io.deqClock := netClock
  txFifo.io.deqReset := netReset

  val (macCounters, rxLed, txLed) = withClockAndReset(netClock, netReset) {
    val mac = Module(new EthMac(p.mac))
    mac.io.rxClock := rxClock
    mac.io.rxReset := rxReset
    mac.io.gmiiRx := io.gmiiRx
    io.gmiiTx := mac.io.gmiiTx
    // SW0 on: the link self-test (echo) holds the port; off: the DPU's datapath. Switched between frames.
    val echo = Module(new EthEcho(p.mac.beatBytes))
    echo.io.enable := true.B
    val sw0 = RegNext(RegNext(io.switches(0), false.B), false.B)
    val rxInFrame = RegInit(false.B)
    val selfTest = RegInit(false.B)
    when(!rxInFrame) { selfTest := sw0 }
    when(mac.io.rx.fire) { rxInFrame := !mac.io.rx.bits.last }
    val rxSelf = Mux(rxInFrame, selfTest, sw0)
    echo.io.in.valid := mac.io.rx.valid && rxSelf
    echo.io.in.bits := mac.io.rx.bits
    rxFifo.io.enq.valid := mac.io.rx.valid && !rxSelf
    rxFifo.io.enq.bits := mac.io.rx.bits
    mac.io.rx.ready := Mux(rxSelf, echo.io.in.ready, rxFifo.io.enq.ready)
    // transmit: a whole frame from the echo or from the datapath, the echo first when both wait
    val txLocked = RegInit(false.B)
    val txFromEcho = RegInit(false.B)
    val pickEcho = Mux(txLocked, txFromEcho, echo.io.out.valid)
    mac.io.tx.valid := Mux(pickEcho, echo.io.out.valid, txFifo.io.deq.valid)
    mac.io.tx.bits := Mux(pickEcho, echo.io.out.bits, txFifo.io.deq.bits)
    echo.io.out.ready := pickEcho && mac.io.tx.ready
    txFifo.io.deq.ready := !pickEcho && mac.io.tx.ready
    when(mac.io.tx.fire) {
      txLocked := !mac.io.tx.bits.last
      txFromEcho := pickEcho
    }
    val rxSeen = RegNext(mac.io.counters(SocMap.EthCounter.RxFrames)) =/= mac.io.counters(SocMap.EthCounter.RxFrames)
    val txSeen = RegNext(mac.io.counters(SocMap.EthCounter.TxFrames)) =/= mac.io.counters(SocMap.EthCounter.TxFrames)
    (mac.io.counters, Stretch(rxSeen, p.netHz / 20), Stretch(txSeen, p.netHz / 20))
  }

  // Counters into the core clock: every 64 datapath cycles a snapshot is taken and a toggle flips;
  // the core side copies the snapshot when it sees the toggle (the snapshot is stable for 64 cycles,
  // far longer than the toggle's synchroniser).
  val (snapshot, toggle) = withClockAndReset(netClock, netReset) {
    val tick = Counter(64).inc()
    val snap = RegEnable(macCounters, VecInit(Seq.fill(nCounters)(0.U(32.W))), tick)
    val tog = RegInit(false.B)
    when(tick) { tog := !tog }
    (snap, tog)
  }

  withClockAndReset(coreClock, coreReset) {
    val soc = Module(new NanobpfSoc(p.soc))
    val bridge = Module(new DramBridge(p.dram))
    bridge.io.bus <> soc.mainMem.get
    bridge.io.dramClock := dramClock
    bridge.io.dramReset := dramReset
    io.dram <> bridge.io.axi
    // console and sim_end are simulation outputs; the bus errors are shown on an LED instead
    val togSync = RegNext(RegNext(RegNext(toggle, false.B), false.B), false.B)
    val counters = RegInit(VecInit(Seq.fill(nCounters)(0.U(32.W))))
    when(togSync =/= RegNext(togSync, false.B)) { counters := snapshot }
    soc.io.board.ethCounters := counters
    soc.io.board.switches := io.switches
    io.uartTx := soc.io.board.uartTx
    // The one RJ45 is the DPU's host port (hw/defs/soc.toml [datapath]); host and network are told apart
    // by VLAN in the PISA port table (one-arm mode). Everything the datapath sends leaves on it.
    require(p.mac.beatBytes == SocMap.BusBytes, "the MAC's beats are the datapath's")
    soc.io.eth.rx.valid := rxFifo.io.deq.valid
    soc.io.eth.rx.bits.beat.data := rxFifo.io.deq.bits.data
    soc.io.eth.rx.bits.beat.keep := rxFifo.io.deq.bits.keep
    soc.io.eth.rx.bits.beat.last := rxFifo.io.deq.bits.last
    soc.io.eth.rx.bits.user := SocMap.Datapath.HostPort.U
    rxFifo.io.deq.ready := soc.io.eth.rx.ready
    txFifo.io.enq.valid := soc.io.eth.tx.valid
    txFifo.io.enq.bits.data := soc.io.eth.tx.bits.beat.data
    txFifo.io.enq.bits.keep := soc.io.eth.tx.bits.beat.keep
    txFifo.io.enq.bits.last := soc.io.eth.tx.bits.beat.last
    soc.io.eth.tx.ready := txFifo.io.enq.ready
    soc.io.simDrain := false.B
    val heartbeat = Counter(p.coreHz / 2)
    val beat = RegInit(false.B)
    when(heartbeat.inc()) { beat := !beat }
    val initDone = RegNext(RegNext(io.dramInitDone, false.B), false.B)
    val initError = RegNext(RegNext(io.dramInitError, false.B), false.B)
    val blink = RegInit(false.B)
    when(Counter(p.coreHz / 8).inc()) { blink := !blink }
    val ready = Mux(initError, blink, io.locked && initDone)
    io.leds := soc.io.board.leds ## txLed ## rxLed ## ready ## beat
  }
}

/** Holds a pulse high for `cycles` cycles (an LED you can see). */
object Stretch {
  def apply(pulse: Bool, cycles: Int): Bool = {
    val left = RegInit(0.U(log2Ceil(cycles + 1).W))
    when(pulse) { left := cycles.U }.elsewhen(left =/= 0.U) { left := left - 1.U }
    left =/= 0.U
  }
}

/** Link self-test: with `enable`, each frame goes back out with destination and source MAC
  * addresses swapped; without, frames are consumed and dropped. Frames have at least two beats (the
  * MAC drops runts; a one-beat frame is dropped here). One beat per cycle but one bubble per frame.
  */
class EthEcho(beatBytes: Int) extends Module {
  require(beatBytes == 8, "EthEcho is written for 8-byte beats")
  val io = IO(new Bundle {
    val enable = Input(Bool())
    val in = Flipped(Decoupled(new AxisBeat(beatBytes)))
    val out = Decoupled(new AxisBeat(beatBytes))
  })
  object S extends ChiselEnum { val First, Second, SecondOut, Rest, Drop = Value }
  val state = RegInit(S.First)
  val first = Reg(Vec(8, UInt(8.W))) // destination 0-5, source 0-1
  val inB = io.in.bits.data.asTypeOf(Vec(8, UInt(8.W)))

  io.out.valid := false.B
  io.out.bits := io.in.bits
  io.in.ready := false.B
  switch(state) {
    is(S.First) {
      io.in.ready := true.B
      when(io.in.fire) {
        first := inB
        state := Mux(io.in.bits.last, S.First, Mux(io.enable, S.Second, S.Drop))
      }
    }
    is(S.Second) { // out: the source address then destination 0-1; the second beat stays in
      io.out.valid := io.in.valid
      io.out.bits.data := VecInit(first(6), first(7), inB(0), inB(1), inB(2), inB(3), first(0), first(1)).asUInt
      io.out.bits.keep := Fill(8, 1.U(1.W))
      io.out.bits.last := false.B
      when(io.out.fire) { state := S.SecondOut }
    }
    is(S.SecondOut) { // out: destination 2-5, then the second beat's own bytes 4-7
      io.out.valid := io.in.valid
      io.in.ready := io.out.ready
      io.out.bits.data := VecInit(first(2), first(3), first(4), first(5), inB(4), inB(5), inB(6), inB(7)).asUInt
      when(io.in.fire) { state := Mux(io.in.bits.last, S.First, S.Rest) }
    }
    is(S.Rest) {
      io.out.valid := io.in.valid
      io.in.ready := io.out.ready
      when(io.in.fire && io.in.bits.last) { state := S.First }
    }
    is(S.Drop) {
      io.in.ready := true.B
      when(io.in.fire && io.in.bits.last) { state := S.First }
    }
  }
}
