package nanobpf.reasm

import chisel3._
import chisel3.util._
import nanobpf.common.SocMap.PktDesc
import nanobpf.common._

/** A beat-wide write into packet memory: beat address, data, byte enables. */
class MemWrite(p: PktParams) extends Bundle {
  val addr = UInt(p.memAddrBits.W)
  val data = UInt((8 * p.beatBytes).W)
  val strb = UInt(p.beatBytes.W)
}

/** Reassembly buffer (docs/packet-path.md): writes each incoming frame into a free packet memory
  * slot (at `headroom`), and when its last beat is in, emits its descriptor (layout pkt_desc) with the
  * next arrival sequence number. Slots come from a free list; the egress returns them on `free`.
  *
  * A frame is taken one beat per cycle, always (`in` is never held). The slot at the head of the free
  * list is used while the frame is written and leaves the list only when the frame is complete and
  * good, so a dropped frame costs nothing. No free slot at the first beat: the frame is dropped
  * (`dropFull`); a frame marked `bad` on its last beat, or longer than its slot, is dropped (`dropBad`).
  * A slot in use is never written.
  */
class Reasm(p: PktParams) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new ReasmBeat(p)))
    val mem = Valid(new MemWrite(p))
    val desc = Decoupled(new DescHash)
    val free = Flipped(Valid(UInt(p.slotBits.W)))
    val freeCount = Output(UInt((p.slotBits + 1).W))
    val rxFrame = Output(Bool())
    val dropFull = Output(Bool())
    val dropBad = Output(Bool())
    /** The parse result (pkt_meta) of the frame in slot `metaSlot`, for the register block. */
    val metaSlot = Input(UInt(p.slotBits.W))
    val meta = Output(UInt(FrameInfo.metaBits.W))
  })
  // ---- free list: a ring of slot numbers, full at reset
  val ring = RegInit(VecInit((0 until p.slots).map(_.U(p.slotBits.W))))
  val rdPtr = RegInit(0.U(p.slotBits.W))
  val wrPtr = RegInit(0.U(p.slotBits.W))
  val freeCount = RegInit(p.slots.U((p.slotBits + 1).W))
  val take = WireDefault(false.B)
  val giveBack = io.free.valid && freeCount =/= p.slots.U // more frees than slots: a bug upstream, ignored
  when(giveBack) { ring(wrPtr) := io.free.bits; wrPtr := wrPtr + 1.U }
  when(take) { rdPtr := rdPtr + 1.U }
  freeCount := freeCount + giveBack.asUInt - take.asUInt
  io.freeCount := freeCount

  // ---- frame writer
  val maxBeats = (p.slotBytes - p.headroom) / p.beatBytes
  val inFrame = RegInit(false.B)
  val noSlotR = Reg(Bool()) // this frame found no free slot
  val overR = Reg(Bool()) // this frame ran past the end of its slot
  val slot = Reg(UInt(p.slotBits.W))
  val beatIdx = Reg(UInt(log2Ceil(maxBeats + 1).W))
  val bytes = Reg(UInt(16.W))
  val info = Reg(new FrameInfo)
  val seq = RegInit(0.U(16.W))

  val b = io.in.bits
  val first = !inFrame
  val curSlot = Mux(first, ring(rdPtr), slot)
  val curIdx = Mux(first, 0.U, beatIdx)
  val curNoSlot = Mux(first, freeCount === 0.U, noSlotR)
  val curOver = Mux(first, false.B, overR) || curIdx >= maxBeats.U
  val curDrop = curNoSlot || curOver
  val curInfo = Mux(first, b.info, info)
  val total = Mux(first, 0.U, bytes) +& PopCount(b.beat.keep)
  io.in.ready := true.B
  io.mem.valid := io.in.valid && !curDrop
  io.mem.bits.addr := curSlot ## (curIdx + (p.headroom / p.beatBytes).U)(log2Ceil(p.beatsPerSlot) - 1, 0)
  io.mem.bits.data := b.beat.data
  io.mem.bits.strb := b.beat.keep
  when(io.in.fire) {
    inFrame := !b.beat.last
    slot := curSlot
    beatIdx := curIdx + 1.U
    bytes := total(15, 0)
    noSlotR := curNoSlot
    overR := curOver
    when(first) { info := b.info }
  }
  val end = io.in.fire && b.beat.last
  val good = end && !curDrop && !b.bad
  take := good
  io.rxFrame := good
  io.dropFull := end && curNoSlot
  io.dropBad := end && !curNoSlot && (curOver || b.bad)

  // descriptors: at most one per slot in use, so the queue never overflows
  val descQ = Module(new Queue(new DescHash, p.slots))
  import nanobpf.common.Layout.put
  val d = descQ.io.enq.bits
  d.desc := put(PktDesc.Slot, curSlot) | put(PktDesc.Len, total) | put(PktDesc.Lport, curInfo.lport) |
    put(PktDesc.Quic, curInfo.quic) | put(PktDesc.ConnValid, curInfo.connValid) | put(PktDesc.Gso, curInfo.gso) | put(PktDesc.Ctrl, curInfo.ctrl) |
    put(PktDesc.Valid, 1.U) | put(PktDesc.Seq, seq) | put(PktDesc.ConnSlot, curInfo.connSlot)
  d.hash := Mux(curInfo.connValid, curInfo.connSlot, curInfo.hash)
  descQ.io.enq.valid := good
  // the parse result per slot: written as the frame's descriptor is made, read by the cores while the
  // slot is theirs (a slot is not reused before the egress or a drop frees it)
  val metaTab = Mem(p.slots, UInt(FrameInfo.metaBits.W))
  when(good) { metaTab(curSlot) := curInfo.meta }
  io.meta := metaTab(io.metaSlot)
  when(good) { seq := seq + 1.U }
  io.desc <> descQ.io.deq
}
