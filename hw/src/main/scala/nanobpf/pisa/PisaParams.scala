package nanobpf.pisa

import chisel3._
import chisel3.util._

/** Build parameters of the PISA pipeline (docs/pisa.md). Logical and physical ports are 2 bits wide
  * (hw/defs/soc.toml `pisa` register fields).
  */
case class PisaParams(
    beatBytes: Int = 8,
    maxFrame: Int = 1522,
    portEntries: Int = 8,
    profileEntries: Int = 8,
    /** Connection-ID table: ways x buckets, hashed (CidTable); hw/defs/soc.toml [datapath]. */
    cidWays: Int = nanobpf.common.SocMap.Datapath.CidWays,
    cidBuckets: Int = nanobpf.common.SocMap.Datapath.CidBuckets) {
  require(beatBytes >= 8 && isPow2(beatBytes) && beatBytes <= 128, "beat width: 8..128 bytes, a power of two")
  require(maxFrame >= 64 && maxFrame < (1 << 16), "max frame: 64..65535 bytes")
  require(portEntries <= 8 && profileEntries <= 8)
  require(cidWays >= 1 && cidWays <= nanobpf.common.SocMap.CidHash.Masks.size, "CID table ways: 1..the hash masks generated")
  require(cidBuckets >= 2 && isPow2(cidBuckets) && cidBuckets <= (1 << nanobpf.common.SocMap.CidHash.Masks.head.size),
    "CID table buckets: a power of two")
  val cidEntries = cidWays * cidBuckets
  val beatBits = 8 * beatBytes
  /** Header bytes the parser sees: two VLAN tags + IPv4 with options + UDP + QUIC long header CID. */
  val windowBytes = 128
  val windowBeats = (windowBytes / beatBytes) max 1
  /** Data FIFO in beats: room for two longest frames, so a frame's header can be parsed while the
    * previous one drains.
    */
  val fifoBeats = 1 << log2Ceil(2 * ((maxFrame + 4 + beatBytes - 1) / beatBytes + 1))
  val metaDepth = 32
  val maxCid = nanobpf.common.EbpfAbi.KeytableCidMax.toInt // RFC 9000's longest CID, from hw/defs/ebpf.toml
  val quicBytes = 6 + maxCid // QUIC bytes after the UDP header the parser keeps
}

/** One AXI4-Stream beat: byte i of the beat is data(8i+7, 8i); keep has contiguous low bits. */
class Beat(p: PisaParams) extends Bundle {
  val data = UInt(p.beatBits.W)
  val keep = UInt(p.beatBytes.W)
  val last = Bool()
}

/** A beat with per-frame side-band data (constant over the frame; sampled on the first beat). */
class UserBeat[T <: Data](p: PisaParams, userGen: T) extends Bundle {
  val beat = new Beat(p)
  val user = userGen.cloneType
}

/** What the deparser is told about a frame: where it goes, whether to recompute checksums, and whether
  * to set the IP and UDP lengths from the frame's end first (which recomputes the checksums too). */
class EgressCmd extends Bundle {
  val action = UInt(2.W)
  val fixCsum = Bool()
  val fixLen = Bool()
}

/** Metadata of a frame leaving the ingress pipeline (the Python model's `Meta`). */
class PisaMeta(p: PisaParams) extends Bundle {
  val action = UInt(2.W)
  val port = UInt(2.W)
  val lport = UInt(2.W)
  val length = UInt(16.W)
  val vlans = UInt(2.W)
  val l3off = UInt(8.W)
  val ipver = UInt(3.W)
  val l4off = UInt(8.W)
  val udp = Bool()
  val quic = UInt(2.W)
  val cidLen = UInt(5.W)
  val cid = UInt((8 * p.maxCid).W) // byte i in bits 8i+7..8i, zero past cidLen; cidLen 0: the peer's address id
  val cidHit = Bool()
  val slot = UInt(16.W)
  /** A control frame from the host: for the control core's queue. */
  val ctrl = Bool()
}

/** Frame and header bytes captured for the parser. */
class HeaderRec[T <: Data](p: PisaParams, userGen: T) extends Bundle {
  val window = Vec(p.windowBytes, UInt(8.W))
  val length = UInt(16.W)
  val user = userGen.cloneType
}

/** The parser's result (the Python model's `Parsed`, plus what the deparser needs for checksums). */
class Parsed[T <: Data](p: PisaParams, userGen: T) extends Bundle {
  val length = UInt(16.W)
  val user = userGen.cloneType
  val vlans = UInt(2.W)
  val outerTci = UInt(16.W)
  val l3off = UInt(8.W)
  val isV4 = Bool()
  val isV6 = Bool()
  /** EtherType (after the VLAN tags) of the control protocol, or of the data-frame shim (hw/defs/ctrl.toml);
    * `shim` also for a frame whose shim the parser stepped over ([[Parser]]). */
  val ctrl = Bool()
  val shim = Bool()
  /** The ingress parser stepped over a shim that asks for sealing (flags ENCRYPT, CID length <= 20) and
    * parsed the headers behind it; `sealCidLen`: the shim's CID length ([[Parser]]). */
  val seal = Bool()
  val sealCidLen = UInt(5.W)
  val l4off = UInt(8.W)
  val udp = Bool()
  /** The UDP port the QUIC profile table matches: the destination port, or the source port of a frame
    * whose shim the ingress parser stepped over (the host's own port). */
  val profilePort = UInt(16.W)
  val ulen = UInt(16.W)
  val quic = Vec(p.quicBytes, UInt(8.W))
  val tooLong = Bool()
  val trunc = Bool()
  val badHdr = Bool()
  val badLen = Bool()
  val badCsum = Bool()
  val badUdp = Bool()
  /** pisa_drop reason: the lowest that applies. */
  val drop = UInt(4.W)
  /** IPv4 header checksum with the checksum field as zero (the deparser's new value). */
  val ipCsum = UInt(16.W)
  /** Pseudo-header sum (addresses, protocol, UDP length), not folded. */
  val pseudo = UInt(24.W)
}
