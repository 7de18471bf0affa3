package nanobpf.pisa

import chisel3._
import chisel3.util._

/** Up to beatBytes + 4 bytes of a frame (a beat with a VLAN tag inserted or removed). */
class Chunk(p: PisaParams) extends Bundle {
  val bytes = Vec(p.beatBytes + 4, UInt(8.W))
  val n = UInt(log2Ceil(p.beatBytes + 5).W)
  val last = Bool()
  val port = UInt(2.W)
}

/** A beat of the egress stream with its physical output port. */
class PortBeat(p: PisaParams) extends Bundle {
  val beat = new Beat(p)
  val port = UInt(2.W)
}

/** Packs chunks (1..beatBytes+4 bytes each) back into full beats. One beat per cycle in and out while
  * chunks are full beats; a frame that grew by a tag takes one cycle more. Holds one frame at a time;
  * the next frame's first chunk may enter in the cycle the previous frame's last beat leaves.
  */
class Packer(p: PisaParams) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new Chunk(p)))
    val out = Decoupled(new PortBeat(p))
  })
  val w = p.beatBytes
  val cap = 2 * w + 4
  val acc = RegInit(0.U((8 * cap).W))
  val accN = RegInit(0.U(log2Ceil(cap + 1).W))
  val accLast = RegInit(false.B)
  val port = Reg(UInt(2.W))

  io.out.valid := accN >= w.U || (accLast && accN =/= 0.U)
  io.out.bits.beat.data := acc(8 * w - 1, 0)
  val outN = Mux(accN >= w.U, w.U, accN)
  io.out.bits.beat.keep := (UIntToOH(outN, w + 1) - 1.U)(w - 1, 0)
  io.out.bits.beat.last := accLast && accN <= w.U
  io.out.bits.port := port
  val outFire = io.out.fire
  val restN = accN - Mux(outFire, outN, 0.U)
  val rest = Mux(outFire, acc >> (8 * w), acc)
  io.in.ready := (!accLast || (outFire && io.out.bits.beat.last)) && restN < w.U
  val inFire = io.in.fire
  val chunk = io.in.bits.bytes.asUInt
  val restMask = (UIntToOH(restN ## 0.U(3.W), 8 * cap + 1) - 1.U)(8 * cap - 1, 0)
  when(outFire || inFire) {
    acc := (rest & restMask) | Mux(inFire, (chunk << (restN ## 0.U(3.W)))(8 * cap - 1, 0), 0.U)
    accN := restN + Mux(inFire, io.in.bits.n, 0.U)
    accLast := (accLast && !(outFire && io.out.bits.beat.last)) || (inFire && io.in.bits.last)
  }
  when(inFire) { port := io.in.bits.port }
}
