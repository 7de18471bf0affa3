package nanobpf.common

import chisel3._
import chisel3.util._

/** x mod m for a constant m, without a divider. `x % m.U` becomes a divider in synthesis (carry chains
  * and multiplexers in series: 79 LUT levels in the core select's home core, where the core clock allows
  * about 25); here each bit's weight 2^i mod m is summed in a balanced adder tree and the small sum is
  * reduced by a table, a few LUT levels. The same value as `x % m.U`; a power of two is a bit select.
  */
object ModConst {
  def apply(x: UInt, m: Int): UInt = {
    require(m >= 1, "ModConst: m >= 1")
    val out = log2Ceil(m) max 1
    if (m == 1) 0.U(out.W)
    else if (isPow2(m)) x(log2Ceil(m) - 1, 0)
    else {
      val weights = (0 until x.getWidth).map(i => BigInt(2).modPow(i, m).toInt)
      val max = weights.sum
      val terms = x.asBools.zip(weights).map { case (b, c) => Mux(b, c.U(log2Ceil(max + 1).W), 0.U) }
      val sum = VecInit(terms).reduceTree((a, b) => (a +& b)(log2Ceil(max + 1) - 1, 0))
      VecInit((0 to max).map(s => (s % m).U(out.W)) ++ Seq.fill((1 << log2Ceil(max + 1)) - max - 1)(0.U(out.W)))(sum)
    }
  }
}
