package nanobpf.soc

import chisel3._
import chisel3.util._

/** UART transmitter, 8N1, LSB first, with a byte FIFO in front. One bit lasts `div` clock cycles
  * (at least 4). `enq` is refused (ready low) while the FIFO is full; `idle` when nothing is queued and
  * the line is back at rest after the stop bit.
  */
class UartTx(fifoBytes: Int = 256) extends Module {
  val io = IO(new Bundle {
    val enq = Flipped(Decoupled(UInt(8.W)))
    val div = Input(UInt(16.W))
    val txd = Output(Bool())
    val idle = Output(Bool())
  })
  val fifo = Queue(io.enq, fifoBytes, useSyncReadMem = true)
  val shift = RegInit(0x3ff.U(10.W)) // stop bit, 8 data bits, start bit; shifted out LSB first
  val bitsLeft = RegInit(0.U(4.W))
  val timer = RegInit(0.U(16.W))
  val bitTime = Mux(io.div < 4.U, 4.U, io.div)
  val txd = RegInit(true.B) // registered: no glitches on the pin

  fifo.ready := bitsLeft === 0.U && timer === 0.U
  when(fifo.fire) {
    shift := 1.U(1.W) ## fifo.bits ## 0.U(1.W)
    bitsLeft := 10.U
    timer := 0.U
  }.elsewhen(bitsLeft =/= 0.U) {
    when(timer === 0.U) {
      txd := shift(0)
      shift := 1.U(1.W) ## shift(9, 1)
      timer := bitTime - 1.U
      bitsLeft := bitsLeft - 1.U
    }.otherwise {
      timer := timer - 1.U
    }
  }.elsewhen(timer =/= 0.U) { // the stop bit's time
    timer := timer - 1.U
  }
  io.txd := txd
  io.idle := !fifo.valid && bitsLeft === 0.U && timer === 0.U
}
