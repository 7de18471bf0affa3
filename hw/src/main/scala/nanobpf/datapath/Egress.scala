package nanobpf.datapath

import chisel3._
import chisel3.util._
import nanobpf.pisa.{Chunk, EgressCmd, Packer, UserBeat}
import nanobpf.reasm.PktParams
import nanobpf.common.Layout
import nanobpf.reorder.Released
import nanobpf.common.EbpfAbi
import nanobpf.common.SocMap.{EgressShim, PisaAction, PktComp}
import nanobpf.common.CtrlDefs

/** Where a core's XDP action sends a frame (docs/architecture.md, "XDP actions at the device"):
  * PASS onwards (host -> network, network -> host), TX back out of the ingress port, REDIRECT to the
  * logical port of the completion; as a PISA action (to_host / to_network), or drop.
  */
object XdpRoute {
  def apply(action: UInt, ingress: UInt, redirect: UInt, hostLport: UInt, netLport: UInt): UInt = {
    def toward(lport: UInt): UInt =
      Mux(lport === hostLport, PisaAction.ToHost.U, Mux(lport === netLport, PisaAction.ToNetwork.U, PisaAction.Drop.U))
    MuxLookup(action, PisaAction.Drop.U(2.W))(Seq(
      EbpfAbi.XdpPass.U -> Mux(ingress === hostLport, PisaAction.ToNetwork.U, PisaAction.ToHost.U),
      EbpfAbi.XdpTx.U -> toward(ingress),
      EbpfAbi.XdpRedirect.U -> toward(redirect)))
  }
}

/** Egress of the packet path: takes each released completion (in order), reads its frame from
  * packet memory at the slot, offset and length the core left (any byte alignment: the program may
  * have moved the start with bpf_xdp_adjust_head), re-packs it into beats and hands it to the PISA
  * deparser with its action and checksum flag; then returns the slot. A completion whose frame does not
  * fit its slot, is shorter than an Ethernet header, has no route or a shim operation it cannot do is
  * dropped (`bad`), its slot freed.
  *
  * The host link's shim (the completion's `shim`, egress_shim): `strip` leaves frame bytes 12..15 out,
  * `decrypted` puts the DECRYPTED shim in after the MAC addresses. The frame is then read in two pieces
  * (bytes 0..11, and the rest from byte 16 or 12), with the shim's 4 bytes between them for
  * `decrypted`: the packer joins them, so no core moves the MAC addresses for a shim.
  *
  * Reads go through the stream port of packet memory, one word per granted cycle, at most `depth`
  * words ahead of the output, so back-pressure from the deparser never loses a word.
  */
class Egress(p: PktParams) extends Module {
  require(p.beatBytes == 8, "the egress reads 64-bit words (the SoC's packet memory)")
  val depth = 4
  val io = IO(new Bundle {
    val rel = Flipped(Decoupled(new Released(p)))
    val readAddr = Valid(UInt(p.memAddrBits.W))
    val readGrant = Input(Bool())
    val readData = Input(UInt(64.W))
    val free = Valid(UInt(p.slotBits.W))
    val out = Decoupled(new UserBeat(p.pisa, new EgressCmd))
    val hostLport = Input(UInt(2.W))
    val netLport = Input(UInt(2.W))
    val sent = Output(Bool())
    val bad = Output(Bool())
  })
  val addrBits = p.memAddrBits + 3 // byte address in packet memory
  val busy = RegInit(false.B) // a frame is being read or is still in the packer
  val slot = Reg(UInt(p.slotBits.W))
  val word = Reg(UInt(p.memAddrBits.W)) // next word to read
  val left = Reg(UInt(10.W)) // words of this piece still to read
  val align = Reg(UInt(3.W)) // byte offset of the piece in its first word
  val endBytes = Reg(UInt(4.W)) // bytes of the piece in its last word, 1..8
  val first = Reg(Bool())
  val cmd = Reg(new EgressCmd)
  // the pieces: Head (bytes 0..11) and Shim (the DECRYPTED shim) only when the completion changes the shim
  val Head = 0.U(2.W); val Shim = 1.U(2.W); val Rest = 2.U(2.W)
  val piece = Reg(UInt(2.W))
  val restStart = Reg(UInt(addrBits.W))
  val restLen = Reg(UInt(12.W))
  val addShim = Reg(Bool())

  // ---- accept a released completion
  val c = io.rel.bits.word
  val off = Layout.get(c, PktComp.Offset)
  val len = Layout.get(c, PktComp.Len)
  val op = Layout.get(c, PktComp.Shim)
  val route = XdpRoute(Layout.get(c, PktComp.Action), io.rel.bits.lport, Layout.get(c, PktComp.Port), io.hostLport, io.netLport)
  val opOk = MuxLookup(op, false.B)(Seq(
    EgressShim.Keep.U -> true.B,
    EgressShim.Strip.U -> (len >= 18.U),
    EgressShim.Decrypted.U -> (len <= (p.maxFrame - 4).U)))
  val fits = len >= 14.U && len <= p.maxFrame.U && (off +& len) <= p.slotBytes.U && opOk
  val ok = fits && route =/= PisaAction.Drop.U
  val cSlot = Layout.get(c, PktComp.Slot)(p.slotBits - 1, 0)
  io.rel.ready := !busy
  val start = ((cSlot ## 0.U(log2Ceil(p.slotBytes).W)) + off)(addrBits - 1, 0)
  val accept = io.rel.fire && ok
  when(accept) {
    busy := true.B
    slot := cSlot
    piece := Mux(op === EgressShim.Keep.U, Rest, Head)
    restStart := start + Mux(op === EgressShim.Strip.U, 16.U, 12.U)
    restLen := len - Mux(op === EgressShim.Strip.U, 16.U, 12.U)
    addShim := op === EgressShim.Decrypted.U
    cmd.action := route
    cmd.fixCsum := Layout.get(c, PktComp.FixCsum).asBool
    cmd.fixLen := Layout.get(c, PktComp.FixLen).asBool
  }
  io.bad := io.rel.fire && !ok

  // ---- read words, at most `depth` ahead of the packer
  val chunks = Module(new Queue(new Chunk(p.pisa), depth))
  val pending = RegInit(false.B) // a read was granted last cycle: its data arrives now
  val pendLo = Reg(UInt(3.W)) // its first and past-last bytes
  val pendHi = Reg(UInt(4.W))
  val pendLast = Reg(Bool()) // the frame's last word
  val room = chunks.io.count +& pending.asUInt < depth.U
  io.readAddr.valid := busy && left =/= 0.U && room
  io.readAddr.bits := word
  val issued = io.readAddr.valid && io.readGrant
  pending := issued
  val lastOfPiece = left === 1.U
  when(issued) {
    word := word + 1.U
    left := left - 1.U
    first := false.B
    pendLo := Mux(first, align, 0.U)
    pendHi := Mux(lastOfPiece, endBytes, 8.U)
    pendLast := lastOfPiece && piece === Rest
  }
  val bytes = (io.readData >> (pendLo ## 0.U(3.W)))(63, 0)
  // the DECRYPTED shim's 4 bytes, between the MAC addresses and the rest, when no word arrives
  val shimBytes = Seq(CtrlDefs.ShimEthertype >> 8, CtrlDefs.ShimEthertype & 0xff, CtrlDefs.ShimFDecrypted, 0L).map(b => BigInt(b).U(8.W))
  val putShim = piece === Shim && !pending
  chunks.io.enq.valid := pending || putShim
  chunks.io.enq.bits.bytes := VecInit(Seq.tabulate(p.pisa.beatBytes + 4)(i =>
    Mux(pending, if (i < 8) bytes(8 * i + 7, 8 * i) else 0.U(8.W), if (i < 4) shimBytes(i) else 0.U(8.W))))
  chunks.io.enq.bits.n := Mux(pending, pendHi - pendLo, 4.U)
  chunks.io.enq.bits.last := pending && pendLast
  chunks.io.enq.bits.port := 0.U
  // the pieces in turn: after the head's last read the rest (or first the shim), after the shim the rest
  val headDone = issued && lastOfPiece && piece === Head
  val shimDone = putShim && chunks.io.enq.ready
  when(headDone) { piece := Mux(addShim, Shim, Rest) }
  when(shimDone) { piece := Rest }
  // the slot is free once its last word has been read
  io.free.valid := pending && pendLast
  io.free.bits := slot

  // ---- where a piece starts: a whole frame or its head when accepted, the rest after the head or shim
  val toRest = (headDone && !addShim) || shimDone
  val segStart = Mux(accept, start, restStart)
  val segLen = Mux(accept, Mux(op === EgressShim.Keep.U, len, 12.U), restLen)
  val span = segStart(2, 0) +& segLen // bytes from the piece's first word's start
  when(accept || toRest) {
    word := segStart >> 3
    left := (span + 7.U) >> 3
    align := segStart(2, 0)
    endBytes := Mux(span(2, 0) === 0.U, 8.U, span(2, 0))
    first := true.B
  }

  // ---- re-pack into beats
  val packer = Module(new Packer(p.pisa))
  packer.io.in <> chunks.io.deq
  io.out.valid := packer.io.out.valid
  io.out.bits.beat := packer.io.out.bits.beat
  io.out.bits.user := cmd
  packer.io.out.ready := io.out.ready
  val frameOut = io.out.fire && io.out.bits.beat.last
  when(frameOut) { busy := false.B }
  io.sent := frameOut
  // a bad completion still frees its slot (no read is pending then: the egress was idle)
  when(io.rel.fire && !ok) {
    io.free.valid := true.B
    io.free.bits := cSlot
  }
}
