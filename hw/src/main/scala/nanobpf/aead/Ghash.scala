package nanobpf.aead

import chisel3._
import chisel3.util._

/** GCM's multiply in GF(2^128) (SP 800-38D 6.3, Algorithm 1), `bits` bits of X per cycle. Blocks are
  * 128-bit integers with the first byte in the top bits; "bit 0" of the standard is the top bit.
  */
object Gf128 {
  val R: BigInt = BigInt(0xe1) << 120
  /** One step of Algorithm 1: Z ^= x_i ? V : 0; V = V >> 1 (^ R if V's last bit was set). */
  def step(z: UInt, v: UInt, xi: Bool): (UInt, UInt) =
    (z ^ Mux(xi, v, 0.U), (v >> 1) ^ Mux(v(0), R.U(128.W), 0.U))
}

/** GHASH accumulator: on each `in` block X, Y := (Y ^ X) * H. `clear` (with `h`) starts a new hash.
  * A block takes 128 / bits cycles, back to back: `in` is ready again in the cycle the product is done.
  */
class Ghash(bits: Int) extends Module {
  val io = IO(new Bundle {
    val clear = Input(Bool())
    val h = Input(UInt(128.W))
    val in = Flipped(Decoupled(UInt(128.W)))
    val y = Output(UInt(128.W))
    /** No block in progress: `y` is the hash of every block accepted so far. */
    val idle = Output(Bool())
  })
  val steps = 128 / bits
  val y = RegInit(0.U(128.W))
  val h = Reg(UInt(128.W))
  val x = Reg(UInt(128.W))
  val z = Reg(UInt(128.W))
  val v = Reg(UInt(128.W))
  val busy = RegInit(false.B)
  val step = RegInit(0.U(log2Ceil(steps + 1).W))

  var zz: UInt = z
  var vv: UInt = v
  for (i <- 0 until bits) {
    val (z2, v2) = Gf128.step(zz, vv, x(127 - i))
    zz = z2; vv = v2
  }
  val last = busy && step === (steps - 1).U
  io.in.ready := (!busy || last) && !io.clear
  io.idle := !busy
  io.y := y
  when(busy) {
    z := zz; v := vv; x := (x << bits)(127, 0); step := step + 1.U
    when(last) { y := zz; busy := false.B }
  }
  when(io.in.fire) {
    x := Mux(busy, zz, y) ^ io.in.bits; z := 0.U; v := h; step := 0.U; busy := true.B
  }
  when(io.clear) { y := 0.U; h := io.h }
}
