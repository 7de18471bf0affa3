package nanobpf.pisa

import chisel3._
import chisel3.util._
import nanobpf.common.SocMap.PisaDrop
import nanobpf.common._

/** Header parser: Ethernet, up to two 802.1Q/802.1ad tags, IPv4 (options via IHL), IPv6 (fixed
  * header), UDP; keeps the first bytes after the UDP header for the QUIC stage. Fully pipelined, one
  * header per cycle, latency [[Parser.latency]]. Each stage shifts the header so the next layer starts
  * at byte 0 (a 3-way mux for VLANs, an 11-way mux for the IPv4 header length), which keeps the logic
  * shallow. Error predicates are computed independently; `drop` is the lowest pisa_drop that applies.
  *
  * The host link's shim (EtherType 0x88B6 right after the MAC addresses, hw/defs/ctrl.toml) is stepped
  * over like a tag when `stepShim` (at most one tag may follow it; the frame counts no tag):
  *  - the deparser's parser (`ingress` false) finds the headers of a frame the device opened, whose
  *    checksums it recomputes behind its DECRYPTED shim;
  *  - the ingress parser (`ingress` true) finds the headers of a frame the host asks to have sealed,
  *    for the program's seal path (the context fields). There the parse only informs: a frame whose
  *    headers behind the shim fail a check is passed on unparsed (not IP, no reason but too_long), as
  *    every shim frame was before, so the program and the firmware's guard drop it by their own reasons;
  *    and the QUIC profile port of a stepped frame is its UDP source port (the host's own port, where a
  *    frame from the network names it as the destination).
  * `shim` is set for a stepped frame too (only the host link may carry one); a stepped frame is never a
  * control frame. The ingress parser also reads the shim's flags and CID length: a stepped frame whose
  * shim asks for sealing (flags ENCRYPT, CID length 0..20) and whose headers parse is `seal`, with the
  * length of the destination CID its QUIC header carries in `sealCidLen` (the match-action stages look
  * that CID up among the sealing entries). And it gives, beside each result, the peer's address id
  * (`addr`: what the key table names a peer that uses zero-length CIDs by, struct nanobpf_quic_cid's id
  * with NANOBPF_QUIC_ADDR_*: the peer's IPv6 address, an IPv4 one as ::ffff:a.b.c.d, the peer's UDP
  * port and the local one, big-endian). The peer is the source of a frame from the network and the
  * destination of a frame to seal.
  *
  * `lengthsFromFrame` (the deparser's: EgressCmd.fixLen) names the frames whose IP length (IPv4 total
  * length, IPv6 payload length) and UDP length are taken as the frame's end makes them, not as their
  * header fields say: the result (checks, sums, `ulen`) is that of the frame with those fields set,
  * which the deparser then writes into it.
  */
class Parser[T <: Data](p: PisaParams, userGen: T, stepShim: Boolean = false, ingress: Boolean = false,
    lengthsFromFrame: Option[T => Bool] = None) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Valid(new HeaderRec(p, userGen)))
    val out = Valid(new Parsed(p, userGen))
    /** The ingress parser's peer address id, with `out` (zero elsewhere). */
    val addr = Output(Vec(Parser.addrBytes, UInt(8.W)))
  })
  import Bytes._
  val l3Bytes = 96 // IPv4 header with options (60) + UDP (8) + QUIC bytes, from the L3 start

  // ---- stage 1: Ethernet and VLAN tags
  class S1 extends Bundle {
    val length = UInt(16.W); val user = userGen.cloneType; val vlans = UInt(2.W); val outerTci = UInt(16.W)
    val et = UInt(16.W); val l3off = UInt(8.W); val tooLong = Bool(); val trunc = Bool(); val stepped = Bool()
    val seal = Bool(); val sealCidLen = UInt(5.W)
    val l3 = Vec(l3Bytes, UInt(8.W))
  }
  val w = io.in.bits.window
  val isTag = (e: UInt) => e === 0x8100.U || e === 0x88a8.U
  val tag1 = isTag(be16(w, 12))
  val tag2 = tag1 && isTag(be16(w, 16))
  // The shim (4 bytes after the MAC addresses) is stepped over as a tag: at most one tag may follow it
  // (the same three header positions), and the frame counts no tag.
  val shim = stepShim.B && be16(w, 12) === nanobpf.common.CtrlDefs.ShimEthertype.U
  val shimTag = shim && isTag(be16(w, 16))
  val at18 = (tag1 && !tag2) || (shim && !shimTag)
  val at22 = tag2 || shimTag
  val s1 = Wire(new S1)
  val len0 = io.in.bits.length
  s1.length := len0
  s1.user := io.in.bits.user
  s1.vlans := tag1.asUInt +& tag2.asUInt
  s1.outerTci := be16(w, 14)
  s1.et := Mux(at22, be16(w, 20), Mux(at18, be16(w, 16), be16(w, 12)))
  s1.l3off := Mux(at22, 22.U, Mux(at18, 18.U, 14.U))
  s1.tooLong := len0 > p.maxFrame.U
  s1.stepped := shim
  // the shim's flags (byte 14) and CID length (byte 15): a frame to seal, read by the ingress only
  s1.seal := ingress.B && shim && w(14) === nanobpf.common.CtrlDefs.ShimFEncrypt.U && w(15) <= p.maxCid.U
  s1.sealCidLen := w(15)(4, 0)
  s1.trunc := len0 < 14.U || (at18 && len0 < 18.U) || (at22 && len0 < 22.U)
  for (k <- 0 until l3Bytes) s1.l3(k) := Mux(at22, w(22 + k), Mux(at18, w(18 + k), w(14 + k)))
  def fixLen(u: T): Bool = lengthsFromFrame.map(_(u)).getOrElse(false.B)
  // lengths from the frame: the IP length field as the frame's end sets it (wrapped when the frame is
  // too short for the header: the checks below find it truncated then)
  val toEnd = len0 - s1.l3off
  when(fixLen(io.in.bits.user) && s1.et === 0x0800.U) { s1.l3(2) := toEnd(15, 8); s1.l3(3) := toEnd(7, 0) }
  when(fixLen(io.in.bits.user) && s1.et === 0x86dd.U) { s1.l3(4) := (toEnd - 40.U)(15, 8); s1.l3(5) := (toEnd - 40.U)(7, 0) }
  val r1 = RegNext(s1)
  val v1 = RegNext(io.in.valid, false.B)

  // ---- stage 2: IPv4 / IPv6
  class S2 extends Bundle {
    val length = UInt(16.W); val user = userGen.cloneType; val vlans = UInt(2.W); val outerTci = UInt(16.W)
    val l3off = UInt(8.W); val isV4 = Bool(); val isV6 = Bool(); val l4off = UInt(8.W); val udp = Bool()
    val l4Short = Bool(); val l4len = UInt(16.W); val ctrl = Bool(); val shim = Bool(); val stepped = Bool()
    val seal = Bool(); val sealCidLen = UInt(5.W)
    val tooLong = Bool(); val trunc = Bool(); val badHdr = Bool(); val badLen = Bool()
    val hdrParts = Vec(5, UInt(24.W)); val oldCsum = UInt(16.W); val addrParts = Vec(5, UInt(24.W))
    val l4 = Vec(8 + p.quicBytes, UInt(8.W)); val peer = Vec(16, UInt(8.W))
  }
  val l3 = r1.l3
  val isV4 = r1.et === 0x0800.U
  val isV6 = r1.et === 0x86dd.U
  val ver = l3(0)(7, 4)
  val ihl = l3(0)(3, 0)
  val hl = ihl ## 0.U(2.W)
  val tot = be16(l3, 2)
  val plen = be16(l3, 4)
  val len1 = r1.length
  val s2 = Wire(new S2)
  s2.length := len1
  s2.user := r1.user
  s2.vlans := r1.vlans
  s2.outerTci := r1.outerTci
  s2.l3off := r1.l3off
  s2.isV4 := isV4
  s2.isV6 := isV6
  s2.ctrl := r1.et === nanobpf.common.CtrlDefs.Ethertype.U && !r1.stepped
  s2.shim := r1.et === nanobpf.common.CtrlDefs.ShimEthertype.U || r1.stepped
  s2.stepped := r1.stepped
  s2.seal := r1.seal
  s2.sealCidLen := r1.sealCidLen
  s2.tooLong := r1.tooLong
  s2.trunc := r1.trunc || (isV4 && (len1 < r1.l3off +& 20.U || len1 < r1.l3off +& hl)) ||
    (isV6 && len1 < r1.l3off +& 40.U)
  s2.badHdr := (isV4 && (ver =/= 4.U || ihl < 5.U)) || (isV6 && ver =/= 6.U)
  s2.badLen := (isV4 && (tot < hl || tot +& r1.l3off > len1)) || (isV6 && plen +& r1.l3off +& 40.U > len1)
  val frag = be16(l3, 6)(13, 0)
  s2.udp := (isV4 && l3(9) === 17.U && frag === 0.U) || (isV6 && l3(6) === 17.U)
  s2.l4Short := Mux(isV4, tot < hl +& 8.U, plen < 8.U)
  s2.l4len := Mux(isV4, tot - hl, plen)
  s2.l4off := Mux(isV6, r1.l3off + 40.U, Mux(isV4, r1.l3off + hl, 0.U))
  // IPv4 header words 0..29 below IHL*2, except the checksum (word 5), summed in 5 groups of 6.
  val words = (0 until 30).map(i => Mux(i.U < (ihl ## 0.U(1.W)) && (i != 5).B, be16(l3, 2 * i), 0.U))
  for (g <- 0 until 5) s2.hdrParts(g) := words.slice(6 * g, 6 * g + 6).map(_.pad(24)).reduce(_ + _)
  s2.oldCsum := be16(l3, 10)
  // Addresses for the UDP pseudo-header: IPv4 words 6..9, IPv6 words 4..19.
  val addr = (4 until 20).map(i => be16(l3, 2 * i))
  for (g <- 0 until 4) s2.addrParts(g) := Mux(isV4, 0.U, addr.slice(4 * g, 4 * g + 4).map(_.pad(24)).reduce(_ + _))
  s2.addrParts(4) := Mux(isV4, (6 until 10).map(i => be16(l3, 2 * i).pad(24)).reduce(_ + _), 0.U)
  // The peer's address (ingress only): the source, or behind a shim (a frame to seal) the destination.
  for (k <- 0 until 16) s2.peer(k) := {
    if (!ingress) 0.U
    else {
      val v4 = if (k < 10) 0.U else if (k < 12) 0xff.U else Mux(r1.stepped, l3(16 + k - 12), l3(12 + k - 12))
      Mux(isV6, Mux(r1.stepped, l3(24 + k), l3(8 + k)), Mux(isV4, v4, 0.U))
    }
  }
  val sel = Mux(isV6, 10.U, Mux(ihl < 5.U, 5.U, ihl))
  for (k <- 0 until 8 + p.quicBytes)
    s2.l4(k) := MuxLookup(sel, l3(20 + k))((5 to 15).map(i => i.U -> l3(4 * i + k)))
  val udpToEnd = len1 - s2.l4off // lengths from the frame: the UDP length
  when(fixLen(r1.user) && s2.udp) { s2.l4(4) := udpToEnd(15, 8); s2.l4(5) := udpToEnd(7, 0) }
  val r2 = RegNext(s2)
  val v2 = RegNext(v1, false.B)

  // ---- stage 3: UDP, checksums, drop reason
  val o = Wire(new Parsed(p, userGen))
  val l4 = r2.l4
  val ulen = be16(l4, 4)
  o.length := r2.length
  o.user := r2.user
  o.vlans := r2.vlans
  o.outerTci := r2.outerTci
  val hdrSum = r2.hdrParts.reduce(_ + _)
  val badCsum = r2.isV4 && fold(hdrSum + r2.oldCsum) =/= 0xffff.U
  val badUdp = r2.udp && (r2.l4Short || ulen < 8.U || ulen > r2.l4len)
  // ingress: headers behind the shim that fail a check are not parsed (see the class comment)
  val hidden = ingress.B && r2.stepped && (r2.trunc || r2.badHdr || r2.badLen || badCsum || badUdp)
  o.l3off := r2.l3off
  o.isV4 := r2.isV4 && !hidden
  o.isV6 := r2.isV6 && !hidden
  o.ctrl := r2.ctrl
  o.shim := r2.shim
  o.seal := r2.seal && !hidden
  o.sealCidLen := r2.sealCidLen
  o.l4off := Mux(hidden, 0.U, r2.l4off)
  o.udp := r2.udp && !hidden
  o.profilePort := Mux(ingress.B && r2.stepped, be16(l4, 0), be16(l4, 2))
  o.ulen := ulen
  for (k <- 0 until p.quicBytes) o.quic(k) := l4(8 + k)
  o.tooLong := r2.tooLong
  o.trunc := r2.trunc && !hidden
  o.badHdr := r2.badHdr && !hidden
  o.badLen := r2.badLen && !hidden
  o.badCsum := badCsum && !hidden
  o.badUdp := badUdp && !hidden
  o.ipCsum := ~fold(hdrSum)
  o.pseudo := r2.addrParts.reduce(_ + _) + 17.U + ulen
  o.drop := PriorityMux(Seq(
    o.tooLong -> PisaDrop.TooLong.U, o.trunc -> PisaDrop.Truncated.U, o.badHdr -> PisaDrop.BadIpHdr.U,
    o.badLen -> PisaDrop.BadIpLen.U, o.badCsum -> PisaDrop.BadIpCsum.U, o.badUdp -> PisaDrop.BadUdpLen.U,
    true.B -> PisaDrop.None.U))
  io.out.valid := RegNext(v2, false.B)
  io.out.bits := RegNext(o)
  // the address id: the peer's address, its port, the local port (the UDP header's source and destination),
  // placed as hw/defs/ebpf.toml's NANOBPF_QUIC_ADDR_* say
  val peerPort = Seq(Mux(r2.stepped, l4(2), l4(0)), Mux(r2.stepped, l4(3), l4(1)))
  val localPort = Seq(Mux(r2.stepped, l4(0), l4(2)), Mux(r2.stepped, l4(1), l4(3)))
  io.addr := RegNext(VecInit((0 until Parser.addrBytes).map { i =>
    if (!ingress) 0.U(8.W)
    else if (i >= Parser.ipOff && i < Parser.ipOff + 16) r2.peer(i - Parser.ipOff)
    else if (i >= Parser.peerPortOff && i < Parser.peerPortOff + 2) peerPort(i - Parser.peerPortOff)
    else if (i >= Parser.localPortOff && i < Parser.localPortOff + 2) localPort(i - Parser.localPortOff)
    else 0.U(8.W)
  }))
}

object Parser {
  /** Cycles from `in` to `out`. */
  val latency = 3
  /** A peer's address id: struct nanobpf_quic_cid's id (hw/defs/ebpf.toml: NANOBPF_KEYTABLE_CID_MAX bytes,
    * laid out by NANOBPF_QUIC_ADDR_*: the 16-byte address, the peer's and the local UDP port). */
  val addrBytes = nanobpf.common.EbpfAbi.KeytableCidMax.toInt
  val ipOff = nanobpf.common.EbpfAbi.QuicAddrIpOff.toInt
  val peerPortOff = nanobpf.common.EbpfAbi.QuicAddrPeerPortOff.toInt
  val localPortOff = nanobpf.common.EbpfAbi.QuicAddrLocalPortOff.toInt
  require(ipOff + 16 <= addrBytes && peerPortOff + 2 <= addrBytes && localPortOff + 2 <= addrBytes &&
    Seq((ipOff, 16), (peerPortOff, 2), (localPortOff, 2)).combinations(2).forall { case Seq((a, n), (b, m)) => a + n <= b || b + m <= a },
    "NANOBPF_QUIC_ADDR_*: the address and the two ports must fit the id and not overlap")
}
