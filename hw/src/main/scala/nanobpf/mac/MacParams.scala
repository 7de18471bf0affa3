package nanobpf.mac

import chisel3._
import chisel3.util._
import nanobpf.common._

/** Build parameters of the 1G Ethernet MAC (docs/board.md). */
case class MacParams(
    /** Bytes per AXI4-Stream beat towards the pipeline. */
    beatBytes: Int = 8,
    /** Longest frame accepted on the wire, with FCS (1518 + one 802.1Q tag). */
    maxFrame: Int = 1522,
    /** Receive and transmit frame FIFOs, in beats (each must hold two longest frames). */
    fifoBeats: Int = 512,
    /** Idle bytes between frames on transmit (the 96-bit-time inter-frame gap). */
    ifgBytes: Int = 12) {
  require(beatBytes >= 2 && isPow2(beatBytes), "beat width: a power of two, at least 2 bytes")
  require(maxFrame >= 64 && maxFrame < (1 << 14), "max frame: 64..16383 bytes")
  require(fifoBeats >= 2 * (maxFrame + beatBytes - 1) / beatBytes + 2 && isPow2(fifoBeats),
    "each FIFO must be a power of two holding two longest frames")
  require(ifgBytes >= 12, "IEEE 802.3 needs at least 12 bytes of inter-frame gap")
  val minFrame = 64
}

/** One AXI4-Stream beat: byte i is data(8i+7, 8i); keep has contiguous low bits (all ones but on the last beat). */
class AxisBeat(beatBytes: Int) extends Bundle {
  val data = UInt((8 * beatBytes).W)
  val keep = UInt(beatBytes.W)
  val last = Bool()
}

/** GMII receive side, one byte per clock at 1 Gbit/s. */
class GmiiRx extends Bundle {
  val rxd = UInt(8.W)
  val rxDv = Bool()
  val rxEr = Bool()
}

/** GMII transmit side. */
class GmiiTx extends Bundle {
  val txd = UInt(8.W)
  val txEn = Bool()
  val txEr = Bool()
}

/** Why a frame was dropped; the order is the counting priority (hw/defs/soc.toml enum eth_counter). */
object FrameErr {
  val width = 3
  val None = 0
  val Phy = 1
  val Runt = 2
  val Oversize = 3
  val Fcs = 4
  val Overflow = 5
}

/** A beat with the frame's error code on its last beat. */
class RxWord(beatBytes: Int) extends Bundle {
  val beat = new AxisBeat(beatBytes)
  val err = UInt(FrameErr.width.W)
}

/** Ethernet CRC-32 (IEEE 802.3: polynomial 0x04C11DB7, bit-reflected, initial value and final xor all ones). */
object Crc32 {
  val Init = "hFFFFFFFF".U(32.W)
  /** Register value after a frame and its own FCS went through `step` (the CRC-32 residue). */
  val Residue = "hDEBB20E3".U(32.W)
  def step(crc: UInt, byte: UInt): UInt =
    (0 until 8).foldLeft(crc ^ byte.pad(32)) { (c, _) =>
      Mux(c(0), (c >> 1) ^ "hEDB88320".U(32.W), c >> 1)
    }
}
