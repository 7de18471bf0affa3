package nanobpf.common

import chisel3._

/** Fields of the generated layouts. */
object Layout {
  def get(word: UInt, f: SocMap.Field): UInt = word(f.msb, f.lsb)
  def put(f: SocMap.Field, v: UInt): UInt = (v.pad(f.width)(f.width - 1, 0) << f.lsb).asUInt
}
