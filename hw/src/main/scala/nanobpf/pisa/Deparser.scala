package nanobpf.pisa

import chisel3._
import chisel3.util._
import nanobpf.common.SocMap.{PisaAction, PisaCounter}
import nanobpf.common.SocMap.PisaRegs._
import nanobpf.common._

/** What the checksum stage tells the rewrite stage about a frame. */
class RewriteCmd extends Bundle {
  val l3off = UInt(8.W)
  val l4off = UInt(8.W)
  val ipLenAt = UInt(8.W) // the IP length field (IPv4 total length, IPv6 payload length)
  val ipLen = UInt(16.W)
  val fixIpLen = Bool()
  val ulen = UInt(16.W)
  val fixUlen = Bool()
  val fixIp = Bool()
  val ipCsum = UInt(16.W)
  val fixUdp = Bool()
  val udpCsum = UInt(16.W)
  val insertTag = Bool() // the egress logical port is tagged: its tag goes in after the MAC addresses
  val vid = UInt(12.W)
  val port = UInt(2.W)
}

/** Egress half of the PISA pipeline: deparser with checksum update and VLAN rewrite.
  *
  * Three store-and-forward steps, each one beat per cycle:
  *  1. capture + [[Parser]] find the headers of the frame as it is now (the cores may have changed it;
  *     a host-link shim after the MAC addresses is stepped over, so an opened frame's checksums are
  *     fixed behind it); a frame that asks for its lengths from its end (fixLen) is parsed with its IP
  *     and UDP length fields set so that the datagram ends where the frame ends;
  *  2. the checksum step sums the UDP datagram (pseudo-header, header with checksum zero, payload up to
  *     the UDP length) while copying the frame to a second FIFO;
  *  3. the rewrite step patches the lengths (fixLen) and then the IPv4 header checksum and the UDP
  *     checksum (fixCsum or fixLen, when the headers parse), inserts the egress logical port's VLAN
  *     tag (roles + lport_cfg) when it has one, and [[Packer]] re-packs the bytes into beats. The
  *     ingress took the outer tag off ([[VlanPop]]): a tag the frame still carries is its own (an inner
  *     one, or one a program wrote) and stays, behind the inserted one.
  * Frames whose action is not to_host/to_network, longer than max_frame or shorter than an Ethernet
  * header are dropped and counted (tx_dropped); so is a frame towards the network that carries the host
  * link's shim (after the MAC addresses or a VLAN tag; also tx_shim): the data-plane firmware lets none
  * out, and this keeps it so whatever a program leaves in the frame.
  */
class Deparser(p: PisaParams) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new UserBeat(p, new EgressCmd)))
    val out = Decoupled(new PortBeat(p))
    val cfg = Input(new PisaConfig(p))
    val count = Output(Vec(CounterCount, UInt(16.W)))
  })
  import PisaConfig.field
  val w = p.beatBytes
  for (c <- io.count) c := 0.U

  // ---- step 1: parse
  val capture = Module(new Capture(p, new EgressCmd))
  val parser = Module(new Parser(p, new EgressCmd, stepShim = true, lengthsFromFrame = Some((u: EgressCmd) => u.fixLen)))
  val data1 = Module(new Queue(new Beat(p), p.fifoBeats, useSyncReadMem = true))
  val meta1 = Module(new Queue(new Parsed(p, new EgressCmd), p.metaDepth, useSyncReadMem = true))
  capture.io.in <> io.in
  data1.io.enq <> capture.io.beats
  capture.io.room := meta1.io.count < (p.metaDepth - Parser.latency - 2).U
  parser.io.in := capture.io.hdr
  meta1.io.enq.valid := parser.io.out.valid
  meta1.io.enq.bits := parser.io.out.bits
  assert(!meta1.io.enq.valid || meta1.io.enq.ready, "PISA egress metadata FIFO overflow")

  // ---- step 2: UDP checksum
  val data2 = Module(new Queue(new Beat(p), p.fifoBeats, useSyncReadMem = true))
  val meta2 = Module(new Queue(new RewriteCmd, p.metaDepth, useSyncReadMem = true))
  val pr = meta1.io.deq.bits
  val act = pr.user.action
  val malformed = !(act === PisaAction.ToHost.U || act === PisaAction.ToNetwork.U) || pr.tooLong || pr.length < 14.U
  // The host link's shim is host-link metadata: whatever a core left, it never goes on the wire.
  val shimOut = act === PisaAction.ToNetwork.U && pr.shim
  val drop = malformed || shimOut
  val beat = data1.io.deq.bits
  val last = beat.last
  val base = RegInit(0.U(16.W)) // byte offset of this beat in the frame
  val acc = RegInit(0.U(32.W))
  val lanes = Bytes.bytesOf(beat.data, w)
  val udpEnd = pr.l4off +& pr.ulen
  def inUdp(pos: UInt) = pos >= pr.l4off && pos < udpEnd && pos =/= pr.l4off + 6.U && pos =/= pr.l4off + 7.U
  // a frame with its lengths from its end: the UDP length it will carry, not the one in the slot
  def lane(i: Int): UInt = {
    val pos = base + i.U
    Mux(pr.user.fixLen && pos === pr.l4off + 4.U, pr.ulen(15, 8), Mux(pr.user.fixLen && pos === pr.l4off + 5.U, pr.ulen(7, 0), lanes(i)))
  }
  val beatSum = (0 until w by 2).map { i =>
    val hi = Mux(beat.keep(i) && inUdp(base + i.U), lane(i), 0.U)
    val lo = Mux(beat.keep(i + 1) && inUdp(base + (i + 1).U), lane(i + 1), 0.U)
    (hi ## lo).pad(20)
  }.reduce(_ + _)
  val total = acc + beatSum
  data2.io.enq.valid := meta1.io.deq.valid && data1.io.deq.valid && !drop && (!last || meta2.io.enq.ready)
  data2.io.enq.bits := beat
  data1.io.deq.ready := meta1.io.deq.valid && (drop || (data2.io.enq.ready && (!last || meta2.io.enq.ready)))
  meta1.io.deq.ready := data1.io.deq.fire && last
  when(data1.io.deq.fire) {
    base := Mux(last, 0.U, base + w.U)
    acc := Mux(last, 0.U, total)
  }
  val f1 = total(15, 0) +& total(31, 16)
  val sum = Bytes.fold(f1.pad(24) + pr.pseudo)
  val udpCsum = ~sum
  val lport = Mux(act === PisaAction.ToHost.U, field(io.cfg.roles, RolesHostLport), field(io.cfg.roles, RolesNetworkLport))
  val lc = io.cfg.lportCfg(lport)
  val tagged = field(lc, LportCfgEgressTagged).asBool
  val c = meta2.io.enq.bits
  c.l3off := pr.l3off
  c.l4off := pr.l4off
  val fixCsum = pr.user.fixCsum || pr.user.fixLen
  val ipOk = (pr.isV4 || pr.isV6) && !pr.trunc && !pr.badHdr
  val udpOk = pr.udp && !(pr.trunc || pr.badHdr || pr.badLen || pr.badUdp)
  c.ipLenAt := pr.l3off + Mux(pr.isV4, 2.U, 4.U)
  c.ipLen := pr.length - pr.l3off - Mux(pr.isV4, 0.U, 40.U)
  c.fixIpLen := pr.user.fixLen && ipOk
  c.ulen := pr.ulen
  c.fixUlen := pr.user.fixLen && udpOk
  c.fixIp := fixCsum && pr.isV4 && !pr.trunc && !pr.badHdr
  c.ipCsum := pr.ipCsum
  c.fixUdp := fixCsum && udpOk
  c.udpCsum := Mux(udpCsum === 0.U, 0xffff.U, udpCsum)
  c.insertTag := tagged
  c.vid := field(lc, LportCfgEgressVid)
  c.port := field(lc, LportCfgEgressPort)
  meta2.io.enq.valid := data1.io.deq.fire && last && !drop
  when(data1.io.deq.fire && last && drop) {
    io.count(PisaCounter.TxDropped) := 1.U
    io.count(PisaCounter.TxShim) := !malformed
  }

  // ---- step 3: patch checksums, rewrite the VLAN tag, re-pack
  val packer = Module(new Packer(p))
  val rc = meta2.io.deq.bits
  val b2 = data2.io.deq.bits
  val base2 = RegInit(0.U(16.W))
  val patched = Bytes.bytesOf(b2.data, w).zipWithIndex.map { case (d, i) =>
    val pos = base2 + i.U
    MuxCase(d, Seq(
      (rc.fixIpLen && pos === rc.ipLenAt) -> rc.ipLen(15, 8),
      (rc.fixIpLen && pos === rc.ipLenAt + 1.U) -> rc.ipLen(7, 0),
      (rc.fixUlen && pos === rc.l4off + 4.U) -> rc.ulen(15, 8),
      (rc.fixUlen && pos === rc.l4off + 5.U) -> rc.ulen(7, 0),
      (rc.fixIp && pos === rc.l3off + 10.U) -> rc.ipCsum(15, 8),
      (rc.fixIp && pos === rc.l3off + 11.U) -> rc.ipCsum(7, 0),
      (rc.fixUdp && pos === rc.l4off + 6.U) -> rc.udpCsum(15, 8),
      (rc.fixUdp && pos === rc.l4off + 7.U) -> rc.udpCsum(7, 0)))
  }
  val cnt = PopCount(b2.keep)
  val j = 12 % w // the tag starts at byte j of the beat holding frame bytes 12..15
  val tagBeat = base2 === (12 / w * w).U
  val tag = Seq(0x81.U(8.W), 0x00.U(8.W), 0.U(4.W) ## rc.vid(11, 8), rc.vid(7, 0))
  val ch = packer.io.in.bits
  ch.last := b2.last
  ch.port := rc.port
  ch.n := cnt
  for (k <- 0 until w + 4) ch.bytes(k) := (if (k < w) patched(k) else 0.U)
  when(tagBeat && rc.insertTag) {
    for (k <- 0 until w + 4)
      ch.bytes(k) := (if (k < j) patched(k) else if (k < j + 4) tag(k - j) else patched(k - 4))
    ch.n := cnt + 4.U
  }
  packer.io.in.valid := meta2.io.deq.valid && data2.io.deq.valid
  data2.io.deq.ready := meta2.io.deq.valid && packer.io.in.ready
  meta2.io.deq.ready := data2.io.deq.fire && b2.last
  when(data2.io.deq.fire) { base2 := Mux(b2.last, 0.U, base2 + w.U) }

  io.out <> packer.io.out
  when(io.out.fire) {
    io.count(PisaCounter.TxBytes) := PopCount(io.out.bits.beat.keep)
    io.count(PisaCounter.TxFrames) := io.out.bits.beat.last
  }
}
