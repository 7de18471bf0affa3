package nanobpf.reasm

import chisel3._
import chisel3.util._
import nanobpf.pisa.{Beat, PisaParams}
import nanobpf.common.SocMap

/** Build parameters of the packet path between the PISA pipeline and the cores (docs/packet-path.md).
  * Word layouts (descriptor, completion, GSO header) come from hw/defs/soc.toml.
  */
case class PktParams(
    beatBytes: Int = 8,
    slots: Int = 64,
    slotBytes: Int = 2048,
    headroom: Int = 256,
    queues: Int = 4,
    queueDepth: Int = 8,
    connGroups: Int = 4,
    maxFrame: Int = 1522,
    /** First queue the core select gives data packets to: 1 in a SoC with a control core (queue 0 is its own). */
    firstDataQueue: Int = 0) {
  require(isPow2(slots) && slots >= 2 && slots <= (1 << SocMap.PktDesc.Slot.width), "slots: power of two, fits pkt_desc.slot")
  require(isPow2(slotBytes) && headroom % beatBytes == 0 && headroom + maxFrame <= slotBytes, "slot: headroom + max frame")
  require(slotBytes - headroom < (1 << SocMap.PktDesc.Len.width), "a slot's frame length must fit pkt_desc.len")
  require(queues >= 1 && queues <= 16 && queueDepth >= 1 && queueDepth < 64)
  require(isPow2(connGroups))
  require(firstDataQueue >= 0 && firstDataQueue < queues, "at least one data queue")
  val pisa = PisaParams(beatBytes = beatBytes, maxFrame = maxFrame)
  val slotBits = log2Ceil(slots)
  val beatsPerSlot = slotBytes / beatBytes
  val memBeats = slots * beatsPerSlot
  val memAddrBits = log2Ceil(memBeats)
  val queueBits = log2Ceil(queues max 2)
  /** Order domains: one per logical port, then the connection groups. */
  val ports = 4
  val domains = ports + connGroups
  val domainBits = log2Ceil(domains)
}

/** Side band of a frame entering the reassembly buffer, valid on its first beat. */
class FrameInfo extends Bundle {
  val lport = UInt(2.W)
  val quic = UInt(2.W)
  val connValid = Bool()
  val connSlot = UInt(16.W)
  /** Flow hash for the core select when there is no connection slot (e.g. folded CID bytes). */
  val hash = UInt(16.W)
  val gso = Bool()
  /** A control frame from the host: the control core's queue. */
  val ctrl = Bool()
  /** What PISA parsed (layout pkt_meta, the low 32 bits), kept per slot for the cores (pkt.slot_meta). */
  val meta = UInt(FrameInfo.metaBits.W)
}

object FrameInfo {
  val metaBits = 32
  require(SocMap.PktMeta.Width == 64 && SocMap.PktMeta.CidLen.msb < metaBits, "pkt_meta's fields fit the 32 bits kept per slot")
}

/** A beat into the reassembly buffer: `info` is taken on the first beat of a frame; `bad` on the
  * last beat drops the whole frame (its source found it malformed after it started).
  */
class ReasmBeat(p: PktParams) extends Bundle {
  val beat = new Beat(p.pisa)
  val info = new FrameInfo
  val bad = Bool()
}

/** A descriptor (layout pkt_desc) with the flow hash the core select uses. */
class DescHash extends Bundle {
  val desc = UInt(64.W)
  val hash = UInt(16.W)
}
