package nanobpf.common

import chisel3._
import chisel3.util._

/** AXI4 field widths. CVA6 uses id 4, address 64, data 64. */
case class Axi4Params(
    /** Transaction ID width in bits. */
    idBits: Int = 4,
    /** Address width in bits. */
    addrBits: Int = 64,
    /** Data width in bits. */
    dataBits: Int = 64)

/** Fields shared by the AW and AR channels. */
class Axi4Ax(p: Axi4Params) extends Bundle {
  val id = UInt(p.idBits.W)
  val addr = UInt(p.addrBits.W)
  val len = UInt(8.W)
  val size = UInt(3.W)
  val burst = UInt(2.W)
  val lock = Bool()
  val cache = UInt(4.W)
  val prot = UInt(3.W)
}

class Axi4Ar(p: Axi4Params) extends Axi4Ax(p)

/** AW adds the AXI5 atomic operation (AWATOP). */
class Axi4Aw(p: Axi4Params) extends Axi4Ax(p) {
  val atop = UInt(6.W)
}

class Axi4W(p: Axi4Params) extends Bundle {
  val data = UInt(p.dataBits.W)
  val strb = UInt((p.dataBits / 8).W)
  val last = Bool()
}

class Axi4B(p: Axi4Params) extends Bundle {
  val id = UInt(p.idBits.W)
  val resp = UInt(2.W)
}

class Axi4R(p: Axi4Params) extends Bundle {
  val id = UInt(p.idBits.W)
  val data = UInt(p.dataBits.W)
  val resp = UInt(2.W)
  val last = Bool()
}

/** AXI4 manager (master) port; flip it for a subordinate. Signal names match the CVA6 tile wrapper. */
class Axi4(p: Axi4Params) extends Bundle {
  val aw = Decoupled(new Axi4Aw(p))
  val w = Decoupled(new Axi4W(p))
  val b = Flipped(Decoupled(new Axi4B(p)))
  val ar = Decoupled(new Axi4Ar(p))
  val r = Flipped(Decoupled(new Axi4R(p)))
}

object Axi4 {
  val OKAY = 0.U(2.W)
  val EXOKAY = 1.U(2.W)
  val SLVERR = 2.U(2.W)
  val DECERR = 3.U(2.W)
  val BurstFixed = 0.U(2.W)
  val BurstIncr = 1.U(2.W)
  val BurstWrap = 2.U(2.W)

  /** Address of the beat after `addr` in a burst (AXI4 A3.4.1). */
  def nextAddr(addr: UInt, size: UInt, len: UInt, burst: UInt): UInt = {
    val bytes = (1.U(addr.getWidth.W) << size)(addr.getWidth - 1, 0)
    val incr = (addr & ~(bytes - 1.U)) + bytes
    // At address width: a narrower mask would zero-extend under `~` and clear the upper address bits.
    val wrapMask = (((len +& 1.U) << size) - 1.U).pad(addr.getWidth)
    val wrapped = (addr & ~wrapMask) | (incr & wrapMask)
    MuxLookup(burst, incr)(Seq(BurstFixed -> addr, BurstWrap -> wrapped))
  }
}
