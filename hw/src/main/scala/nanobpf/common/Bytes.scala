package nanobpf.common

import chisel3._
import chisel3.util._

/** Byte helpers of the stream blocks: big-endian 16-bit fields, ones'-complement folding, a word's bytes. */
object Bytes {
  def be16(v: Seq[UInt], i: Int): UInt = Cat(v(i), v(i + 1))
  /** One's-complement fold of a sum of 16-bit words (below 2^24). */
  def fold(s: UInt): UInt = {
    val a = s(15, 0) +& s(23, 16)
    (a(15, 0) + a(16)).asUInt
  }
  def bytesOf(u: UInt, n: Int): Seq[UInt] = (0 until n).map(i => u(8 * i + 7, 8 * i))
}
