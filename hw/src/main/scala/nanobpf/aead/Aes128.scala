package nanobpf.aead

import chisel3._
import chisel3.util._

/** AES-128 arithmetic (FIPS-197), computed here from the GF(2^8) definitions rather than copied. */
object AesMath {
  /** Multiply in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1. */
  def gmul(a0: Int, b0: Int): Int = {
    var (a, b, p) = (a0, b0, 0)
    while (b != 0) {
      if ((b & 1) != 0) p ^= a
      a = (a << 1) ^ (if ((a & 0x80) != 0) 0x11b else 0)
      b >>= 1
    }
    p & 0xff
  }
  /** S-box: multiplicative inverse, then the affine map (FIPS-197 5.1.1). */
  val sbox: Seq[Int] = (0 until 256).map { x =>
    val inv = if (x == 0) 0 else (1 until 256).find(y => gmul(x, y) == 1).get
    def rotl(v: Int, n: Int) = ((v << n) | (v >> (8 - n))) & 0xff
    inv ^ rotl(inv, 1) ^ rotl(inv, 2) ^ rotl(inv, 3) ^ rotl(inv, 4) ^ 0x63
  }
  /** Round constants of rounds 1..10 (index 0 unused). */
  val rcon: Seq[Int] = Seq(0) ++ Iterator.iterate(1)(r => gmul(r, 2)).take(10).toSeq
}

/** One AES-128 round in hardware. A block is 16 bytes in FIPS-197 input order: byte `i` is row
  * `i % 4`, column `i / 4`.
  */
object AesRound {
  type Block = Vec[UInt]
  def sub(b: UInt): UInt = { val s = Module(new AesSbox); s.in := b; s.out }
  def xtime(b: UInt): UInt = (b(6, 0) ## 0.U(1.W)) ^ Mux(b(7), 0x1b.U(8.W), 0.U(8.W))

  /** SubBytes, ShiftRows, MixColumns (skipped when `last`), AddRoundKey. */
  def round(s: Seq[UInt], rk: Seq[UInt], last: Bool): Seq[UInt] = {
    val shifted = Seq.tabulate(16) { i => val (r, c) = (i % 4, i / 4); sub(s(r + 4 * ((c + r) % 4))) }
    val mixed = (0 until 4).flatMap { c =>
      val a = (0 until 4).map(r => shifted(r + 4 * c))
      (0 until 4).map { r =>
        xtime(a(r)) ^ (xtime(a((r + 1) % 4)) ^ a((r + 1) % 4)) ^ a((r + 2) % 4) ^ a((r + 3) % 4)
      }
    }
    Seq.tabulate(16)(i => Mux(last, shifted(i), mixed(i)) ^ rk(i))
  }

  /** The next round key from the previous one (FIPS-197 5.2, on the fly). */
  def nextKey(k: Seq[UInt], rcon: UInt): Seq[UInt] = {
    val t = Seq(sub(k(13)) ^ rcon, sub(k(14)), sub(k(15)), sub(k(12)))
    val w = Array.fill(16)(0.U(8.W))
    for (i <- 0 until 16) w(i) = (if (i < 4) t(i) else w(i - 4)) ^ k(i)
    w.toSeq
  }
}

/** The S-box (FIPS-197 5.1.1), a 256-entry table, as a module of its own: `nanobpf-synth-estimate`
  * keeps it apart (its KEPT_APART), so that ABC maps each S-box alone, as an FPGA flow maps an 8-input
  * ROM: 4 LUT6 and 3 wide muxes an output bit, 32 LUTs. Flattened into the logic around it, the same
  * table cost about three times that (one AES round a cycle: 5,975 LUT flattened, 1,548 with the
  * S-boxes kept apart).
  */
class AesSbox extends RawModule {
  val in = IO(Input(UInt(8.W)))
  val out = IO(Output(UInt(8.W)))
  out := VecInit(AesMath.sbox.map(_.U(8.W)))(in)
}

class AesRequest extends Bundle {
  val key = Vec(16, UInt(8.W))
  val block = Vec(16, UInt(8.W))
}

/** Iterative AES-128 encryption with the key schedule computed on the fly: `roundsPerCycle` rounds per
  * cycle, so a block takes ceil(10 / roundsPerCycle) cycles (3 rounds a cycle: 3 + 3 + 3 + 1, the last
  * step's result taken after its first round), and a new block is accepted in the cycle the previous
  * one finishes (back to back, no bubble) as long as the result register is free. Any key on any
  * request: nothing is precomputed per key.
  */
class Aes128(roundsPerCycle: Int) extends Module {
  require(roundsPerCycle >= 1 && roundsPerCycle <= 10)
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new AesRequest))
    val out = Decoupled(Vec(16, UInt(8.W)))
  })
  val steps = (10 + roundsPerCycle - 1) / roundsPerCycle
  /** Rounds the last step computes (round 10 is the last of them). */
  val lastRounds = 10 - (steps - 1) * roundsPerCycle
  val busy = RegInit(false.B)
  val step = RegInit(0.U(log2Ceil(steps + 1).W))
  val state = Reg(Vec(16, UInt(8.W)))
  val rk = Reg(Vec(16, UInt(8.W)))
  val result = Reg(Vec(16, UInt(8.W)))
  val resultValid = RegInit(false.B)
  val rcons = VecInit(AesMath.rcon.map(_.U(8.W)) ++ Seq.fill(16 - 11)(0.U(8.W)))

  var s: Seq[UInt] = state
  var k: Seq[UInt] = rk
  val after = for (j <- 0 until roundsPerCycle) yield {
    val r = step * roundsPerCycle.U + (j + 1).U // round number 1..10 (beyond 10 in the last step: unused)
    k = AesRound.nextKey(k, rcons(r(3, 0)))
    s = AesRound.round(s, k, r === 10.U)
    s
  }
  val lastStep = busy && step === (steps - 1).U
  val canFinish = !resultValid || io.out.ready
  io.in.ready := !busy || (lastStep && canFinish)
  io.out.valid := resultValid
  io.out.bits := result

  when(io.out.fire) { resultValid := false.B }
  when(busy) {
    when(!lastStep) {
      state := VecInit(s); rk := VecInit(k); step := step + 1.U
    }.elsewhen(canFinish) {
      result := VecInit(after(lastRounds - 1)); resultValid := true.B; busy := false.B
    }
  }
  when(io.in.fire) {
    state := VecInit((io.in.bits.block zip io.in.bits.key).map { case (a, b) => a ^ b })
    rk := io.in.bits.key
    step := 0.U
    busy := true.B
  }
}
