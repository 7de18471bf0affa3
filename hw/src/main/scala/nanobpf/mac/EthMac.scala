package nanobpf.mac

import chisel3._
import chisel3.util._
import nanobpf.common.AsyncFifo
import nanobpf.common.SocMap.{DpuRegs, EthCounter}

/** 1 Gbit/s Ethernet MAC between a GMII PHY interface and AXI4-Stream (docs/board.md).
  *
  * Receive: MacRx in the PHY's receive clock (`rxClock`) -> AsyncFifo -> FrameFifo (store and
  * forward, bad frames dropped whole) -> `rx`. Transmit: `tx` -> FrameFifo (holds the stream while
  * full; malformed or oversized frames dropped) -> MacTx -> GMII, in the module's clock. The module's
  * clock is the datapath clock (125 MHz on the board, which also clocks the GMII transmit side).
  * `counters` are free-running 32-bit event counters indexed by hw/defs/soc.toml enum eth_counter.
  */
class EthMac(p: MacParams = MacParams()) extends Module {
  val io = IO(new Bundle {
    val rxClock = Input(Clock())
    val rxReset = Input(Bool())
    val gmiiRx = Input(new GmiiRx)
    val gmiiTx = Output(new GmiiTx)
    val rx = Decoupled(new AxisBeat(p.beatBytes))
    val tx = Flipped(Decoupled(new AxisBeat(p.beatBytes)))
    val counters = Output(Vec(DpuRegs.EthCounterCount, UInt(32.W)))
  })
  val netClock = clock
  val netReset = reset.asBool

  // receive: the PHY clock domain ends at the async FIFO
  val cross = withClockAndReset(io.rxClock, io.rxReset) {
    val rx = Module(new MacRx(p))
    rx.io.gmii := io.gmiiRx
    val cross = Module(new AsyncFifo(new RxWord(p.beatBytes), 8))
    cross.io.enq.valid := rx.io.out.valid
    cross.io.enq.bits := rx.io.out.bits
    // The FIFO drains one word per net cycle and fills at most one per 8 rx cycles, so it is never
    // full with the clocks running; if it were, the frame is marked and dropped downstream.
    val lost = RegInit(false.B)
    when(rx.io.out.valid && !cross.io.enq.ready) { lost := true.B }
    when(lost && rx.io.out.valid && rx.io.out.bits.beat.last && cross.io.enq.ready) {
      cross.io.enq.bits.err := FrameErr.Overflow.U
      lost := false.B
    }
    cross
  }
  cross.io.deqClock := netClock
  cross.io.deqReset := netReset
  val rxFifo = Module(new FrameFifo(p, p.maxFrame - 4, backpressure = false, checkKeep = false))
  rxFifo.io.in <> cross.io.deq
  io.rx <> rxFifo.io.out

  val txFifo = Module(new FrameFifo(p, p.maxFrame - 4, backpressure = true, checkKeep = true))
  txFifo.io.in.valid := io.tx.valid
  txFifo.io.in.bits.beat := io.tx.bits
  txFifo.io.in.bits.err := FrameErr.None.U
  io.tx.ready := txFifo.io.in.ready
  val mac = Module(new MacTx(p))
  mac.io.in <> txFifo.io.out
  io.gmiiTx := mac.io.gmii

  val counters = RegInit(VecInit(Seq.fill(DpuRegs.EthCounterCount)(0.U(32.W))))
  io.counters := counters
  def add(i: Int, en: Bool, v: UInt = 1.U): Unit = when(en) { counters(i) := counters(i) + v }
  add(EthCounter.RxFrames, rxFifo.io.accepted.valid)
  add(EthCounter.RxBytes, rxFifo.io.accepted.valid, rxFifo.io.accepted.bits)
  val rxDrop = rxFifo.io.dropped
  add(EthCounter.RxPhyErr, rxDrop.valid && rxDrop.bits === FrameErr.Phy.U)
  add(EthCounter.RxRunt, rxDrop.valid && rxDrop.bits === FrameErr.Runt.U)
  add(EthCounter.RxOversize, rxDrop.valid && rxDrop.bits === FrameErr.Oversize.U)
  add(EthCounter.RxFcsErr, rxDrop.valid && rxDrop.bits === FrameErr.Fcs.U)
  add(EthCounter.RxOverflow, rxDrop.valid && rxDrop.bits === FrameErr.Overflow.U)
  add(EthCounter.TxFrames, mac.io.sent.valid)
  add(EthCounter.TxBytes, mac.io.sent.valid, mac.io.sent.bits)
  add(EthCounter.TxBad, txFifo.io.dropped.valid)
}
