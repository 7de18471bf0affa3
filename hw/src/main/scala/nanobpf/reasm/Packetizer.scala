package nanobpf.reasm

import chisel3._
import chisel3.util._
import nanobpf.pisa.Beat
import nanobpf.common.Bytes
import nanobpf.common.SocMap.{Field, GsoHdr}
import nanobpf.common._

/** Up to `w` bytes of a byte stream: bytes 0..n-1 of `data` (byte i in bits 8i+7..8i); `end` marks
  * the chunk holding the last byte of a frame (it may be empty when the frame ended with an empty beat).
  */
class ByteChunk(w: Int) extends Bundle {
  val data = UInt((8 * w).W)
  val n = UInt(log2Ceil(w + 1).W)
  val end = Bool()
}

/** Cuts a beat stream into chunks of `want` (1..w) bytes whatever the alignment of the frame's fields:
  * a 2w-byte buffer, one beat in and one chunk out per cycle. A chunk is shorter than asked only at the
  * end of a frame; the next frame's first beat enters in the cycle its end chunk leaves.
  */
class Unpacker(p: PktParams) extends Module {
  val w = p.beatBytes
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new Beat(p.pisa)))
    val want = Input(UInt(log2Ceil(w + 1).W))
    val out = Decoupled(new ByteChunk(w))
  })
  val cap = 2 * w
  val buf = RegInit(0.U((8 * cap).W)) // bytes at and above bn are zero
  val bn = RegInit(0.U(log2Ceil(cap + 1).W))
  val blast = RegInit(false.B) // buf holds the end of a frame
  val n = Mux(bn < io.want, bn(log2Ceil(w + 1) - 1, 0), io.want)
  io.out.valid := bn >= io.want || blast
  io.out.bits.data := buf(8 * w - 1, 0)
  io.out.bits.n := n
  io.out.bits.end := blast && bn <= io.want
  val restN = bn - Mux(io.out.fire, n, 0.U)
  val rest = buf >> Mux(io.out.fire, n ## 0.U(3.W), 0.U)
  io.in.ready := (!blast || (io.out.fire && io.out.bits.end)) && restN <= w.U
  val inData = io.in.bits.data & FillInterleaved(8, io.in.bits.keep)
  when(io.in.fire) {
    buf := rest | (inData << (restN ## 0.U(3.W)))(8 * cap - 1, 0)
    bn := restN + PopCount(io.in.bits.keep)
    blast := io.in.bits.last
  }.elsewhen(io.out.fire) {
    buf := rest
    bn := restN
    blast := blast && !io.out.bits.end
  }
}

/** What an output frame carries besides its bytes: bad, and the batch slot its side band comes from. */
class FrameTag extends Bundle {
  val bad = Bool()
  val slot = UInt(1.W)
}

class PackIn(w: Int) extends Bundle {
  val c = new ByteChunk(w)
  val tag = new FrameTag
}

class TagBeat(p: PktParams) extends Bundle {
  val beat = new Beat(p.pisa)
  val tag = new FrameTag
}

/** Packs chunks of 1..w bytes (`end` closes a frame) back into full beats, one in and one out per
  * cycle; holds one frame at a time (the next frame's first chunk enters as the last beat leaves).
  * `tag` is taken from each chunk and shown on every beat of its frame.
  */
class FramePacker(p: PktParams) extends Module {
  val w = p.beatBytes
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new PackIn(w)))
    val out = Decoupled(new TagBeat(p))
  })
  val cap = 2 * w
  val acc = RegInit(0.U((8 * cap).W)) // bytes at and above accN are zero
  val accN = RegInit(0.U(log2Ceil(cap + 1).W))
  val accLast = RegInit(false.B)
  val tag = RegInit(0.U.asTypeOf(new FrameTag))
  val outN = Mux(accN >= w.U, w.U, accN)
  io.out.valid := accN >= w.U || (accLast && accN =/= 0.U)
  io.out.bits.beat.data := acc(8 * w - 1, 0)
  io.out.bits.beat.keep := (UIntToOH(outN, w + 1) - 1.U)(w - 1, 0)
  io.out.bits.beat.last := accLast && accN <= w.U
  io.out.bits.tag := tag
  val outFire = io.out.fire
  val lastOut = outFire && io.out.bits.beat.last
  val restN = accN - Mux(outFire, outN, 0.U)
  val rest = Mux(outFire, acc >> (8 * w), acc)
  io.in.ready := (!accLast || lastOut) && restN <= w.U
  val c = io.in.bits.c
  val data = c.data & FillInterleaved(8, (UIntToOH(c.n, w + 1) - 1.U)(w - 1, 0))
  when(outFire || io.in.fire) {
    acc := rest | Mux(io.in.fire, (data << (restN ## 0.U(3.W)))(8 * cap - 1, 0), 0.U)
    accN := restN + Mux(io.in.fire, c.n, 0.U)
    accLast := (accLast && !lastOut) || (io.in.fire && c.end)
  }
  when(io.in.fire) { tag := io.in.bits.tag }
}

/** A segment whose payload is complete in the payload FIFO: `len` bytes (1..seg_size), segment `idx`,
  * `bad` when the batch ended inside it (before its seg_size bytes, and it is not the last segment),
  * `slot` the copy of header and template of its batch.
  */
class SegDesc extends Bundle {
  val len = UInt(12.W)
  val idx = UInt(6.W)
  val tag = new FrameTag
}

/** One-cycle event pulses, for the pkt_counter entries gso_batches, gso_segments and gso_bad. */
class PacketizerCount extends Bundle {
  /** a batch taken: header valid and its template complete */
  val batches = Bool()
  /** a good frame left (its last beat, bad = false) */
  val segments = Bool()
  /** a batch refused (header or template incomplete or out of range) or its payload length not as
    * declared (short: cut or missing segments; long: bytes past the last segment). At most once a batch.
    */
  val bad = Bool()
}

/** Packetization buffer: turns a host GSO batch into QUIC/UDP packets (docs/architecture.md).
  *
  * Input `in`: one batch per frame (`last` ends it): 16 bytes of layout gso_hdr (a 128-bit
  * little-endian word), `hdr_len` bytes of header template (Ethernet [+ VLAN] + IPv4 or IPv6 + UDP +
  * QUIC short header), then the payload, with no alignment between the three.
  *
  * Output `out`: `segs` frames; frame i is the template with its fields patched, followed by payload
  * bytes [i * seg_size, min((i + 1) * seg_size, total)). Patches (big-endian in the packet), with
  * len_i the payload bytes of frame i and the IP version the high nibble of template byte l3_off:
  *  - IPv4: total length (l3_off + 2) = hdr_len - l3_off + len_i; identification (l3_off + 4) = ip_id + i.
  *    The IPv4 header checksum is left as in the template: the deparser fixes checksums on egress.
  *  - IPv6: payload length (l3_off + 4) = hdr_len - l4_off + len_i.
  *  - UDP length (l4_off + 4) = hdr_len - l4_off + len_i (the UDP checksum is left as in the template).
  *  - QUIC packet number: pn_len + 1 bytes at pn_off = pn + i, truncated, big-endian.
  * Where patches overlap (odd offsets), the packet number wins over UDP, UDP over IP.
  * `info` (constant over the frame): lport, connValid and connSlot from the header, quic = 1 (short
  * header), gso, hash = connSlot. `bad` is constant over a frame, so it is on its last beat too.
  *
  * Refused batches (consumed and discarded, counted bad, nothing sent): segs 0 or > 64, seg_size 0,
  * hdr_len > 192 or < l4_off + 8, l4_off <= l3_off, pn_off + pn_len + 1 > hdr_len, hdr_len + seg_size >
  * maxFrame, IP version not 4 or 6, or the batch ends before its template does.
  * The payload should be (segs - 1) * seg_size + r bytes with 1 <= r <= seg_size. If it ends inside
  * segment k < segs - 1, frames 0..k-1 are good and frame k (if it has any byte) is sent with bad = true
  * (the reassembly buffer drops it); if it goes on past the last segment the extra bytes are discarded.
  * Both count bad.
  *
  * Structure: an [[Unpacker]] cuts the input into header, template and per-segment chunks; the template
  * goes to a small memory, each segment's payload into a FIFO of beats (two longest segments) and, once
  * its length is known (seg_size bytes or end of batch), a [[SegDesc]] into a descriptor queue. The output
  * side takes a descriptor, sends the patched template then the segment's payload through a
  * [[FramePacker]], so the input fills segment i+1 while frame i goes out: about one output beat per
  * cycle and one idle cycle between frames. Header and template have two slots, used by batches in
  * turn, so a batch is received while the previous one's last frames go out; a batch waits after its
  * header until the frames of the batch before the previous one (same slot) have all left.
  */
class Packetizer(p: PktParams) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new Beat(p.pisa)))
    val out = Decoupled(new ReasmBeat(p))
    val count = Output(new PacketizerCount)
  })
  import Packetizer._
  val w = p.beatBytes
  val wBits = log2Ceil(w)
  val tWords = (MaxTemplate + w - 1) / w
  val fifoBeats = 1 << log2Ceil(2 * ((p.maxFrame + w - 1) / w))
  /** min(rem, w) as a chunk length */
  def upTo(rem: UInt) = Mux(rem < w.U, rem(log2Ceil(w + 1) - 1, 0), w.U)
  io.count := 0.U.asTypeOf(io.count)

  val unp = Module(new Unpacker(p))
  val data = Module(new Queue(UInt((8 * w).W), fifoBeats, useSyncReadMem = true))
  val desc = Module(new Queue(new SegDesc, 4))
  val pk = Module(new FramePacker(p))
  val tBits = log2Ceil(tWords)
  val tmpl = Mem(2 << tBits, UInt((8 * w).W)) // two slots of template words
  unp.io.in <> io.in

  // ---- the batch being received: header, IP version nibble of its template, slot
  val hdrBytes = Reg(Vec(16, UInt(8.W)))
  val hdr = hdrBytes.asUInt
  def f(x: Field) = Layout.get(hdr, x)
  val segSize = f(GsoHdr.SegSize)
  val segs = f(GsoHdr.Segs)
  val hdrLen = f(GsoHdr.HdrLen)
  val l3 = f(GsoHdr.L3Off)
  val l4 = f(GsoHdr.L4Off)
  val pnOff = f(GsoHdr.PnOff)
  val pnLen = f(GsoHdr.PnLen)
  val ver = Reg(UInt(4.W))
  val slot = RegInit(0.U(1.W))
  // ---- per slot, for the output side: header and IP version of the batch last taken in it, and its
  // frames not yet sent (descriptors queued, in the output step or in the packer)
  val slotHdr = Reg(Vec(2, UInt(128.W)))
  val slotVer = Reg(Vec(2, UInt(4.W)))
  val pending = RegInit(VecInit(Seq.fill(2)(0.U(7.W))))

  // ---- input side
  val sHdr :: sCheck :: sTmpl :: sTcheck :: sPay :: sDrain :: Nil = Enum(6)
  val st = RegInit(sHdr)
  val pos = RegInit(0.U(12.W)) // bytes taken of the header, the template or the current segment
  val seg = RegInit(0.U(6.W)) // segment being filled
  val ended = RegInit(false.B) // the batch's last byte has been taken
  val drainCounted = RegInit(false.B)
  val ch = unp.io.out.bits
  val n = ch.n
  val end = ch.end
  val fire = unp.io.out.fire
  val hw = 16 min w
  val newLen = pos + n
  val segDone = newLen === segSize || end
  val lastSeg = seg === segs - 1.U
  unp.io.want := MuxLookup(st, w.U)(Seq(sHdr -> hw.U, sTmpl -> upTo(hdrLen - pos), sPay -> upTo(segSize - pos)))
  unp.io.out.ready := MuxLookup(st, true.B)(Seq(
    sCheck -> false.B,
    sTcheck -> false.B,
    sPay -> (data.io.enq.ready && (!segDone || desc.io.enq.ready))))
  data.io.enq.valid := st === sPay && fire && n =/= 0.U
  data.io.enq.bits := ch.data
  desc.io.enq.valid := st === sPay && fire && segDone && newLen =/= 0.U
  desc.io.enq.bits.len := newLen
  desc.io.enq.bits.idx := seg
  desc.io.enq.bits.tag.bad := end && !lastSeg && newLen =/= segSize
  desc.io.enq.bits.tag.slot := slot
  def refuse(): Unit = {
    io.count.bad := true.B
    st := Mux(ended, sHdr, sDrain)
    drainCounted := true.B
  }

  switch(st) {
    is(sHdr) {
      when(fire) {
        for (k <- 0 until 16 / hw; j <- 0 until hw)
          when(pos === (k * hw).U) { hdrBytes(k * hw + j) := ch.data(8 * j + 7, 8 * j) }
        pos := newLen
        ended := end
        when(newLen === 16.U) {
          st := sCheck
          slot := ~slot
        }.elsewhen(end) {
          io.count.bad := true.B
          pos := 0.U
        }
      }
    }
    is(sCheck) {
      pos := 0.U
      val ok = segs =/= 0.U && segs <= MaxSegs.U && segSize =/= 0.U && hdrLen <= MaxTemplate.U &&
        hdrLen >= l4 +& 8.U && l4 > l3 && pnOff +& pnLen +& 1.U <= hdrLen && hdrLen +& segSize <= p.maxFrame.U
      when(pending(slot) === 0.U) {
        when(ok && !ended) { st := sTmpl }.otherwise { refuse() }
      }
    }
    is(sTmpl) {
      when(fire) {
        tmpl.write(slot ## (pos >> wBits)(tBits - 1, 0), ch.data)
        for (j <- 0 until w) when(pos + j.U === l3 && j.U < n) { ver := ch.data(8 * j + 7, 8 * j + 4) }
        pos := newLen
        ended := end
        when(newLen === hdrLen) {
          st := sTcheck
        }.elsewhen(end) {
          io.count.bad := true.B
          st := sHdr
          pos := 0.U
        }
      }
    }
    is(sTcheck) {
      pos := 0.U
      seg := 0.U
      when(ver =/= 4.U && ver =/= 6.U) {
        refuse()
      }.otherwise {
        io.count.batches := true.B
        slotHdr(slot) := hdr
        slotVer(slot) := ver
        when(ended) { io.count.bad := true.B } // no payload at all
        st := Mux(ended, sHdr, sPay)
      }
    }
    is(sPay) {
      when(fire) {
        pos := newLen
        when(end) {
          when(!lastSeg || newLen === 0.U) { io.count.bad := true.B }
          st := sHdr
          pos := 0.U
        }.elsewhen(segDone) {
          pos := 0.U
          seg := seg + 1.U
          when(lastSeg) {
            st := sDrain
            drainCounted := false.B
          }
        }
      }
    }
    is(sDrain) {
      when(fire) {
        when(n =/= 0.U && !drainCounted) {
          io.count.bad := true.B
          drainCounted := true.B
        }
        when(end) { st := sHdr }
      }
    }
  }

  // ---- output side: patched template, then the segment's payload
  val oIdle :: oTmpl :: oPay :: Nil = Enum(3)
  val ost = RegInit(oIdle)
  val t = RegInit(0.U(tBits.W)) // template word being sent
  val q = RegInit(0.U(12.W)) // payload bytes of the segment sent
  val d = desc.io.deq.bits
  val oh = slotHdr(d.tag.slot)
  def g(x: Field) = Layout.get(oh, x)
  val oHdrLen = g(GsoHdr.HdrLen)
  val oL3 = g(GsoHdr.L3Off)
  val oL4 = g(GsoHdr.L4Off)
  val oPnOff = g(GsoHdr.PnOff)
  val oPnLen = g(GsoHdr.PnLen)

  val base = (t ## 0.U(wBits.W)).pad(10)
  val tRem = oHdrLen - base
  val isV4 = slotVer(d.tag.slot) === 4.U
  val ipTot = (oHdrLen - oL3).pad(16) + d.len
  val udpLen = (oHdrLen - oL4).pad(16) + d.len // also the IPv6 payload length
  val ipId = g(GsoHdr.IpId) + d.idx
  val pnBytes = VecInit(Bytes.bytesOf(g(GsoHdr.Pn) + d.idx, 4))
  val word = tmpl.read(d.tag.slot ## t)
  val patched = Bytes.bytesOf(word, w).zipWithIndex.map { case (b, i) =>
    val at = base + i.U
    val j = at - oPnOff
    def hit(o: UInt, k: Int) = at === o +& k.U
    MuxCase(b, Seq(
      (at >= oPnOff && j <= oPnLen) -> pnBytes(oPnLen - j(1, 0)),
      hit(oL4, 4) -> udpLen(15, 8),
      hit(oL4, 5) -> udpLen(7, 0),
      (isV4 && hit(oL3, 2)) -> ipTot(15, 8),
      (isV4 && hit(oL3, 3)) -> ipTot(7, 0),
      hit(oL3, 4) -> Mux(isV4, ipId(15, 8), udpLen(15, 8)),
      hit(oL3, 5) -> Mux(isV4, ipId(7, 0), udpLen(7, 0))))
  }
  val pRem = d.len - q
  val pLast = pRem <= w.U
  val in = pk.io.in.bits
  pk.io.in.valid := ost === oTmpl || (ost === oPay && data.io.deq.valid)
  in.c.data := Mux(ost === oTmpl, VecInit(patched).asUInt, data.io.deq.bits)
  in.c.n := Mux(ost === oTmpl, upTo(tRem), upTo(pRem))
  in.c.end := ost === oPay && pLast
  in.tag := d.tag
  data.io.deq.ready := ost === oPay && pk.io.in.ready
  desc.io.deq.ready := ost === oPay && pk.io.in.fire && pLast
  switch(ost) {
    is(oIdle) {
      t := 0.U
      q := 0.U
      when(desc.io.deq.valid) { ost := oTmpl }
    }
    is(oTmpl) {
      when(pk.io.in.fire) {
        t := t + 1.U
        when(tRem <= w.U) { ost := oPay }
      }
    }
    is(oPay) {
      when(pk.io.in.fire) {
        q := q + w.U
        when(pLast) { ost := oIdle }
      }
    }
  }

  io.out.valid := pk.io.out.valid
  pk.io.out.ready := io.out.ready
  io.out.bits.beat := pk.io.out.bits.beat
  io.out.bits.bad := pk.io.out.bits.tag.bad
  val frameHdr = slotHdr(pk.io.out.bits.tag.slot)
  val info = io.out.bits.info
  info.lport := Layout.get(frameHdr, GsoHdr.Lport)
  info.quic := 1.U
  info.connValid := Layout.get(frameHdr, GsoHdr.ConnValid)
  info.connSlot := Layout.get(frameHdr, GsoHdr.ConnSlot)
  info.hash := Layout.get(frameHdr, GsoHdr.ConnSlot)
  info.gso := true.B
  info.ctrl := false.B
  info.meta := 0.U // not parsed by PISA: the batch header has the offsets, not handed on yet
  val frameOut = io.out.fire && io.out.bits.beat.last
  io.count.segments := frameOut && !io.out.bits.bad
  for (s <- 0 until 2)
    pending(s) := pending(s) + (desc.io.enq.fire && slot === s.U) - (frameOut && pk.io.out.bits.tag.slot === s.U)
}

object Packetizer {
  val MaxTemplate = 192
  val MaxSegs = 64
}

/** The packetization buffer as emitted for its cocotb test (sim/cocotb/packetizer). */
class PacketizerBlock(p: PktParams = PktParams()) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new Beat(p.pisa)))
    val out = Decoupled(new ReasmBeat(p))
    val count = Output(new PacketizerCount)
  })
  val pkt = Module(new Packetizer(p))
  pkt.io.in <> io.in
  io.out <> pkt.io.out
  io.count := pkt.io.count
}
