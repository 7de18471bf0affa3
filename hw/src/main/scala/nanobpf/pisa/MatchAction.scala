package nanobpf.pisa

import chisel3._
import chisel3.util._
import nanobpf.common.SocMap.{PisaAction, PisaCounter, PisaDrop, PisaQuic}
import nanobpf.common.SocMap.PisaRegs._

/** Ingress match-action stages, one lookup per cycle, latency [[MatchAction.latency]]:
  *  1. port table: (physical port, outer VLAN tag or none, as [[VlanPop]] took it off) -> logical
  *     port (miss: drop no_lport);
  *  2. QUIC profile table: (logical port, UDP destination port; behind the host link's shim the source
  *     port, [[Parser]]) -> short-header CID length (a frame to seal: its shim's);
  *  3. QUIC header: long or short form and the destination connection ID (a zero-length one: the
  *     peer's address id, [[Parser]], is the key);
  *  4. CID table ([[CidTable]], looked up with stage 3's key, answering in stage 4): exact match
  *     (direction, length, bytes) -> connection slot, a frame to seal among the sealing entries; the
  *     action: a short-header packet
  *     whose CID hits goes to the cores, everything else follows the logical port's default action
  *     (drop: reason policy); parse errors drop with their reason.
  * `count` reports the frame's counter events in the cycle its metadata leaves.
  */
class MatchAction(p: PisaParams) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Valid(new Parsed(p, new PortTag)))
    /** The peer's address id ([[Parser]]), with `in`. */
    val addr = Input(Vec(Parser.addrBytes, UInt(8.W)))
    val cfg = Input(new PisaConfig(p))
    val cid = new CidLookup(p)
    val out = Valid(new IngressResult(p))
    val count = Output(Vec(CounterCount, UInt(16.W)))
  })
  import PisaConfig.field

  // ---- 1: port table
  class M1 extends Bundle {
    val pr = new Parsed(p, new PortTag); val portHit = Bool(); val lport = UInt(2.W)
    val addr = Vec(Parser.addrBytes, UInt(8.W))
  }
  val in = io.in.bits
  val tagged = in.user.tagged
  val portHits = io.cfg.portEntry.map { e =>
    field(e, PortEntryValid).asBool && field(e, PortEntryPort) === in.user.port &&
      field(e, PortEntryTagged).asBool === tagged && (!tagged || field(e, PortEntryVid) === in.user.tci(11, 0))
  }
  val m1 = Wire(new M1)
  m1.pr := in
  m1.addr := io.addr
  m1.portHit := portHits.reduce(_ || _)
  m1.lport := PriorityMux(portHits :+ true.B, io.cfg.portEntry.map(field(_, PortEntryLport)) :+ 0.U)
  val r1 = RegNext(m1)
  val v1 = RegNext(io.in.valid, false.B)

  // ---- 2: QUIC profile table
  class M2 extends M1 { val profHit = Bool(); val cidLen = UInt(5.W); val dflt = UInt(2.W) }
  val profHits = io.cfg.profileEntry.map { e =>
    field(e, ProfileEntryValid).asBool && field(e, ProfileEntryLport) === r1.lport &&
      field(e, ProfileEntryUdpPort) === r1.pr.profilePort
  }
  val m2 = Wire(new M2)
  m2.pr := r1.pr
  m2.addr := r1.addr
  m2.portHit := r1.portHit
  m2.lport := r1.lport
  m2.profHit := r1.pr.udp && profHits.reduce(_ || _)
  m2.cidLen := PriorityMux(profHits :+ true.B, io.cfg.profileEntry.map(field(_, ProfileEntryShortCidLen)) :+ 0.U)
  m2.dflt := field(io.cfg.lportCfg(r1.lport), LportCfgDefaultAction)
  val r2 = RegNext(m2)
  val v2 = RegNext(v1, false.B)

  // ---- 3: QUIC header and connection ID
  class M3 extends M2 { val quic = UInt(2.W); val cid = UInt((8 * p.maxCid).W) }
  val q = r2.pr.quic
  val avail = r2.pr.ulen - 8.U
  val long = q(0)(7)
  val dcil = q(5)
  val longOk = avail >= 6.U && dcil <= p.maxCid.U && avail >= dcil +& 6.U
  // a frame to seal: its short header's CID is as long as the host's shim says (the peer's choice)
  val shortLen = Mux(r2.pr.seal, r2.pr.sealCidLen, r2.cidLen)
  val shortOk = shortLen <= p.maxCid.U && avail >= shortLen +& 1.U
  val isQuic = r2.profHit && r2.pr.ulen > 8.U && Mux(long, longOk, shortOk)
  val n = Mux(long, dcil, shortLen)
  val m3 = Wire(new M3)
  m3.pr := r2.pr
  m3.addr := r2.addr
  m3.portHit := r2.portHit
  m3.lport := r2.lport
  m3.profHit := r2.profHit
  m3.cidLen := Mux(isQuic, n(4, 0), 0.U)
  m3.dflt := r2.dflt
  m3.quic := Mux(!isQuic, PisaQuic.None.U, Mux(long, PisaQuic.Long.U, PisaQuic.Short.U))
  // the CID's bytes (zero past its length); a zero-length CID: the peer's address id, which the key
  // table names such a peer by (one mux per byte with the CID's sources)
  val zeroLen = n === 0.U
  m3.cid := VecInit((0 until p.maxCid).map(k =>
    Mux(!isQuic, 0.U, Mux(zeroLen, r2.addr(k), Mux(k.U < n, Mux(long, q(6 + k), q(1 + k)), 0.U))))).asUInt
  val r3 = RegNext(m3)
  val v3 = RegNext(v2, false.B)
  io.cid.key.valid := v2 && isQuic
  io.cid.key.bits.seal := r2.pr.seal // behind the shim: the sealing entries' CIDs
  io.cid.key.bits.len := m3.cidLen
  io.cid.key.bits.cid := m3.cid

  // ---- 4: CID table and the action
  val quic = r3.quic =/= PisaQuic.None.U
  val cidHit = quic && io.cid.hit
  val pr = r3.pr
  val res = Wire(new IngressResult(p))
  val toCores = r3.quic === PisaQuic.Short.U && cidHit
  // Control frames and shims are the host link's: to the cores from the host, dropped from anywhere else.
  val fromHost = r3.lport === field(io.cfg.roles, RolesHostLport)
  val foreign = Mux(pr.ctrl && !fromHost, PisaDrop.CtrlForeign.U, Mux(pr.shim && !fromHost, PisaDrop.ShimForeign.U, PisaDrop.None.U))
  val action = Mux(pr.drop =/= PisaDrop.None.U || !r3.portHit || foreign =/= PisaDrop.None.U, PisaAction.Drop.U,
    Mux(toCores || pr.ctrl, PisaAction.ToCores.U, r3.dflt))
  res.drop := Mux(pr.drop =/= PisaDrop.None.U, pr.drop,
    Mux(!r3.portHit, PisaDrop.NoLport.U, Mux(foreign =/= PisaDrop.None.U, foreign,
      Mux(action === PisaAction.Drop.U, PisaDrop.Policy.U, PisaDrop.None.U))))
  val m = res.meta
  m.action := action
  m.ctrl := pr.ctrl
  m.port := pr.user.port
  m.lport := r3.lport
  m.length := pr.length
  m.vlans := pr.vlans
  m.l3off := pr.l3off
  m.ipver := Mux(pr.isV4, 4.U, Mux(pr.isV6, 6.U, 0.U))
  m.l4off := pr.l4off
  m.udp := pr.udp
  m.quic := r3.quic
  m.cidLen := r3.cidLen
  m.cid := r3.cid
  m.cidHit := cidHit
  m.slot := Mux(cidHit, io.cid.slot, 0.U)
  val r4 = RegNext(res)
  val v4 = RegNext(v3, false.B)
  val ev = RegNext(VecInit(Seq(
    r3.portHit && pr.drop === PisaDrop.None.U, // port table consulted only for frames that parse
    !r3.portHit && pr.drop === PisaDrop.None.U,
    r3.portHit && pr.drop === PisaDrop.None.U && r3.profHit,
    r3.portHit && pr.drop === PisaDrop.None.U && pr.udp && !r3.profHit,
    r3.portHit && pr.drop === PisaDrop.None.U && quic && cidHit,
    r3.portHit && pr.drop === PisaDrop.None.U && quic && !cidHit)))
  io.out.valid := v4
  io.out.bits := r4

  // ---- counters of the frame leaving stage 4
  for (c <- io.count) c := 0.U
  when(v4) {
    io.count(PisaCounter.RxFrames) := 1.U
    io.count(PisaCounter.RxBytes) := r4.meta.length
    io.count(PisaCounter.PortHit) := ev(0)
    io.count(PisaCounter.PortMiss) := ev(1)
    io.count(PisaCounter.ProfileHit) := ev(2)
    io.count(PisaCounter.ProfileMiss) := ev(3)
    io.count(PisaCounter.CidHit) := ev(4)
    io.count(PisaCounter.CidMiss) := ev(5)
    io.count(PisaCounter.ToHost) := r4.meta.action === PisaAction.ToHost.U
    io.count(PisaCounter.ToNetwork) := r4.meta.action === PisaAction.ToNetwork.U
    io.count(PisaCounter.ToCores) := r4.meta.action === PisaAction.ToCores.U
    io.count(PisaCounter.Dropped) := r4.meta.action === PisaAction.Drop.U
    for (d <- PisaDrop.TooLong to PisaDrop.ShimForeign)
      io.count(PisaCounter.DropTooLong - PisaDrop.TooLong + d) := r4.drop === d.U
  }
}

/** Metadata plus the drop reason (dropped frames never leave the ingress pipeline). */
class IngressResult(p: PisaParams) extends Bundle {
  val meta = new PisaMeta(p)
  val drop = UInt(4.W)
}

object MatchAction {
  val latency = 4
}
