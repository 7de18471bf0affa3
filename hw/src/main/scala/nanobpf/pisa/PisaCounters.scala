package nanobpf.pisa

import chisel3._
import chisel3.util._

/** PISA's event counters: 64-bit values in distributed RAM instead of one 64-bit register and adder
  * each.
  *
  * Every cycle, counter i's increment goes into its own narrow accumulator. One counter per cycle (round
  * robin) has its accumulator added into the RAM, and the accumulator restarts with that cycle's
  * increment. An accumulator is therefore never more than `n` increments behind, and `incBits(i)` +
  * log2(n) bits hold them. A read gives RAM + accumulator, which is what a 64-bit register would hold:
  * the readers (firmware, host, the Python model) see no difference. `clear` zeroes every accumulator at
  * once. It marks every RAM word stale (read as 0) until that word's next flush, because a RAM cannot be
  * cleared in one cycle. As with the registers it replaces, a read or a clear does not see the increments
  * of its own cycle.
  *
  * @param incBits widest increment of each counter (a wider one is an error of the caller, asserted)
  */
class PisaCounters(incBits: Seq[Int]) extends Module {
  val n = incBits.size
  require(n >= 2 && isPow2(n), "counters: a power of two (the round-robin pointer wraps)")
  val io = IO(new Bundle {
    val inc = Input(Vec(n, UInt(16.W)))
    val clear = Input(Bool())
    val readIndex = Input(UInt(log2Ceil(n).W))
    val readValue = Output(UInt(64.W))
  })
  val ram = Mem(n, UInt(64.W))
  val stale = RegInit(VecInit(Seq.fill(n)(true.B))) // the RAM holds no value before its first flush
  val acc = incBits.map(b => RegInit(0.U((b + log2Ceil(n)).W)))
  val ptr = RegInit(0.U(log2Ceil(n).W))
  ptr := ptr + 1.U

  def word(i: UInt): UInt = Mux(stale(i), 0.U, ram(i))
  val accs = VecInit(acc.map(_.pad(64)))
  io.readValue := word(io.readIndex) + accs(io.readIndex)

  for ((a, i) <- acc.zipWithIndex) {
    val inc = io.inc(i)(incBits(i) - 1, 0)
    assert(io.inc(i) >> incBits(i) === 0.U, s"PISA counter $i: increment wider than ${incBits(i)} bits")
    a := Mux(io.clear, 0.U, Mux(ptr === i.U, inc, a + inc))
  }
  when(io.clear) {
    stale.foreach(_ := true.B)
  }.otherwise {
    ram(ptr) := word(ptr) + accs(ptr)
    stale(ptr) := false.B
  }
}
