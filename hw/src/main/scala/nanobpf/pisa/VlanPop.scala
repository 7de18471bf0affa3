package nanobpf.pisa

import chisel3._
import chisel3.util._
import nanobpf.common.Bytes

/** A frame's physical port and the outer VLAN tag the ingress took off it ([[VlanPop]]). */
class PortTag extends Bundle {
  val port = UInt(2.W)
  /** The frame came with an outer 802.1Q/802.1ad tag, now removed; `tci` is that tag's TCI. */
  val tagged = Bool()
  val tci = UInt(16.W)
}

/** The ingress's first step: takes the outer VLAN tag (TPID 0x8100 or 0x88A8 at bytes 12..13, the
  * whole tag present) off every frame and hands its TCI on beside the frame, for the port table.
  *
  * Why: a VLAN names a logical port (one-arm mode: the host link and the network link are two VLANs on
  * one physical port), so it belongs to the link, not to the frame. Behind it the frame is what an
  * untagged link carries: the host link's shim or a control frame right after the MAC addresses, where
  * the parser, the firmware and the programs look for them; the egress puts the egress logical port's
  * tag back (lport_cfg). A second (inner) tag stays in the frame. Linux NICs call this receive VLAN
  * offload.
  *
  * One beat per cycle, no bubbles; one beat of latency (a beat leaves when the next one has come, whose
  * first four bytes may move into it); a frame that lost its tag may end one beat earlier.
  */
class VlanPop(p: PisaParams) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new UserBeat(p, UInt(2.W))))
    val out = Decoupled(new UserBeat(p, new PortTag))
  })
  val w = p.beatBytes
  val tagBeat = 12 / w // the beat holding frame bytes 12..15 (the tag)
  val j = 12 % w       // where they start in it
  require(j + 4 <= w, "the tag lies within one beat")

  val hold = Reg(new UserBeat(p, UInt(2.W)))
  val held = RegInit(false.B)
  val holdIdx = Reg(UInt(2.W))     // index of the held beat in its frame, saturating at tagBeat + 1
  val nextIdx = RegInit(0.U(2.W))  // index the next beat in will have
  val pop = Reg(Bool())            // this frame's tag is being removed (decided at its beat tagBeat)
  val tci = Reg(UInt(16.W))
  val port = Reg(UInt(2.W))

  def bytes(b: Beat): Seq[UInt] = Bytes.bytesOf(b.data, w)
  def count(b: Beat): UInt = PopCount(b.keep)
  def isTag(b: Beat): Bool = {
    val d = bytes(b)
    val tpid = d(j) ## d(j + 1)
    b.keep(j + 3) && (tpid === 0x8100.U || tpid === 0x88a8.U)
  }
  def tciOf(b: Beat): UInt = { val d = bytes(b); d(j + 2) ## d(j + 3) }
  def keepOf(n: UInt): UInt = (UIntToOH(n, w + 1) - 1.U)(w - 1, 0)

  val in = io.in.bits.beat
  val h = hold.beat
  val hb = bytes(h)
  val ib = bytes(in)
  // removing: the held beat is the tag's or a later one of a frame that had a tag
  val shifting = pop && holdIdx >= tagBeat.U
  val flush = h.last // the held beat ends its frame: it leaves without waiting for the next
  // the next beat's bytes 0..3 join a shifted beat; a last beat with no more than 4 bytes ends in it
  val merge = held && shifting && !flush && in.last && count(in) <= 4.U

  io.out.valid := held && (flush || io.in.valid)
  val ob = Wire(Vec(w, UInt(8.W)))
  for (b <- 0 until w) {
    val shifted = if (b + 4 < w) hb(b + 4) else ib(b + 4 - w)
    ob(b) := (if (b < j) Mux(shifting && holdIdx =/= tagBeat.U, shifted, hb(b)) else Mux(shifting, shifted, hb(b)))
  }
  val outN = Mux(!shifting, count(h), Mux(flush, count(h) - 4.U, Mux(merge, (w - 4).U + count(in), w.U)))
  io.out.bits.beat.data := ob.asUInt
  io.out.bits.beat.keep := Mux(shifting, keepOf(outN), h.keep)
  io.out.bits.beat.last := flush || merge
  // the side band is read on a frame's first beat; with the tag in beat 1, it is the beat coming in
  val decideNow = if (tagBeat == 0) false.B else holdIdx === 0.U && !flush
  io.out.bits.user.port := port
  io.out.bits.user.tagged := Mux(decideNow, isTag(in), pop)
  io.out.bits.user.tci := Mux(decideNow, tciOf(in), tci)

  io.in.ready := !held || io.out.ready
  when(io.in.fire) {
    nextIdx := Mux(in.last, 0.U, Mux(nextIdx === (tagBeat + 1).U, nextIdx, nextIdx + 1.U))
    when(nextIdx === 0.U) { port := io.in.bits.user }
    when(nextIdx === tagBeat.U) { pop := isTag(in); tci := tciOf(in) }
  }
  // the held beat: the one that came in, unless it merged into the beat leaving
  when(io.in.fire && !merge) {
    hold := io.in.bits
    holdIdx := nextIdx
    held := true.B
  }.elsewhen(io.out.fire) { held := false.B }
  // (port, pop and tci change at the clock edge: a frame's last beat leaving in the cycle the next
  // frame's first comes in still sees its own)
}
