package nanobpf.datapath

import chisel3._
import chisel3.util._
import nanobpf.common.StreamMemPort
import nanobpf.pktpath.PacketPath
import nanobpf.pisa.{Pisa, PortBeat, UserBeat}
import nanobpf.reasm.{FrameInfo, PktParams, ReasmBeat}
import nanobpf.common.BusPort
import nanobpf.common.SocMap.PisaRegs.{RolesHostLport, RolesNetworkLport}

/** The packet's way through the DPU, in one place (docs/architecture.md section 2):
  *
  * {{{
  *  in (frames from the ports, user = physical port)
  *   -> PISA ingress: parser, match-action (port table, QUIC profile, CID table)
  *        to_host / to_network ----------------------------------------------.
  *        to_cores (with metadata)                                           |
  *   -> reassembly into packet-memory slots (mem.write)                      |
  *   -> core select (JBSQ/SJBSQ/RSS/RR) -> per-core descriptor queues        |
  *        cores pop `pkt.core_desc[i]`, run the XDP program on the frame in  |
  *        packet memory, write `pkt.core_comp[i]`                            |
  *   -> reorder (arrival order per port or connection group)                 |
  *        drops free their slot                                              |
  *   -> egress: frame read back from packet memory (mem.read), slot freed    |
  *   -> PISA deparser (checksums, VLAN tag) <-------------------------------'
  *   -> out (frames to the ports, with their physical port)
  * }}}
  *
  * Packet memory itself is outside (the SoC shares it with the cores and the AEAD engine); `mem` is
  * its stream port. Registers: PISA on `pisaBus` (region `pisa`), the packet path on `pktBus` (`pkt`).
  */
class Datapath(p: PktParams) extends Module {
  val io = IO(new Bundle {
    val pisaBus = Flipped(new BusPort)
    val pktBus = Flipped(new BusPort)
    val in = Flipped(Decoupled(new UserBeat(p.pisa, UInt(2.W))))
    val out = Decoupled(new PortBeat(p.pisa))
    val mem = Flipped(new StreamMemPort(p.memAddrBits))
  })
  val pisa = Module(new Pisa(p.pisa))
  val path = Module(new PacketPath(p))
  val egress = Module(new Egress(p))
  pisa.io.bus <> io.pisaBus
  path.io.bus <> io.pktBus

  // ---- ingress: ports -> PISA -> reassembly buffer (metadata as the frame's side band)
  pisa.io.in <> io.in
  val toCores = pisa.io.toCores
  val m = toCores.bits.meta
  val beat = Wire(new ReasmBeat(p))
  beat.beat := toCores.bits.beat
  beat.info.lport := m.lport
  beat.info.quic := m.quic
  beat.info.connValid := m.cidHit
  beat.info.connSlot := m.slot
  // flow hash for the core select when the CID table did not know the connection: the CID bytes folded
  beat.info.hash := m.cid.asBools.grouped(16).map(b => VecInit(b.toSeq).asUInt).reduce(_ ^ _)
  beat.info.gso := false.B
  beat.info.ctrl := m.ctrl
  import nanobpf.common.SocMap.PktMeta
  import nanobpf.common.Layout.put
  // what PISA parsed, for the program (slot_meta -> the context fields of ebpf abi struct nanobpf_xdp_ctx)
  beat.info.meta := (put(PktMeta.L3Off, m.l3off) | put(PktMeta.L4Off, m.l4off) | put(PktMeta.Ipver, m.ipver) |
    put(PktMeta.Udp, m.udp) | put(PktMeta.Vlans, m.vlans) | put(PktMeta.CidLen, m.cidLen)).pad(FrameInfo.metaBits)
  beat.bad := false.B
  path.io.in.valid := toCores.valid
  path.io.in.bits := beat
  toCores.ready := path.io.in.ready
  path.io.gso.valid := false.B // host GSO batches: not recognised by the PISA parser yet
  path.io.gso.bits := DontCare
  io.mem.write.valid := path.io.mem.valid
  io.mem.write.bits.addr := path.io.mem.bits.addr
  io.mem.write.bits.data := path.io.mem.bits.data
  io.mem.write.bits.strb := path.io.mem.bits.strb

  // ---- egress: released completions -> frames read back -> PISA deparser
  egress.io.rel <> path.io.egress
  io.mem.readAddr := egress.io.readAddr
  egress.io.readGrant := io.mem.readGrant
  egress.io.readData := io.mem.readData
  path.io.free := egress.io.free
  egress.io.hostLport := pisa.io.roles(RolesHostLport.msb, RolesHostLport.lsb)
  egress.io.netLport := pisa.io.roles(RolesNetworkLport.msb, RolesNetworkLport.lsb)
  pisa.io.fromCores <> egress.io.out
  path.io.egressSent := egress.io.sent
  path.io.egressBad := egress.io.bad
  io.out <> pisa.io.out

  // ---- frame accounting per physical port (pkt counters rx_port*/tx_port*)
  for (i <- 0 until 4) {
    path.io.portRx(i) := io.in.fire && io.in.bits.beat.last && io.in.bits.user === i.U
    path.io.portTx(i) := io.out.fire && io.out.bits.beat.last && io.out.bits.port === i.U
  }
}
