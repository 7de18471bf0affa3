package nanobpf.soc

import chisel3.RawModule
import nanobpf.common._
import nanobpf.pktpath._

/** Emits the SoC blocks that have their own cocotb tests, one directory per configuration:
  * `EmitBlocks --out DIR` writes DIR/<block>-<variant>/ (e.g. dpu_regs-c4). One JVM for all of them,
  * so test workers never run mill concurrently.
  */
object EmitBlocks extends App {
  val usage = "usage: EmitBlocks --out DIR [--only NAME]"
  val (out, only) = args.toSeq match {
    case Seq("--out", dir) => (dir, None)
    case Seq("--out", dir, "--only", name) => (dir, Some(name))
    case Seq("--help") | Seq("-h") => println(usage); sys.exit(0)
    case _ => System.err.println(usage); sys.exit(2)
  }
  /** Block name and variant -> generator. Tests name their RTL directory the same way. */
  val blocks: Seq[(String, () => RawModule)] =
    Seq(1, 4).map(n => s"dpu_regs-c$n" -> (() => new DpuRegs(n))) ++
      Seq(1, 3).map(n => s"clint-c$n" -> (() => new Clint(n))) ++
      Seq(2).map(n => s"interconnect-m$n" -> (() => new AxiInterconnect(n, SocMap.regions))) ++
      Seq(
        "pisa_parser-w8" -> (() => new nanobpf.pisa.ParserBlock()),
        "pisa_deparser-w8" -> (() => new nanobpf.pisa.DeparserBlock()),
        "pisa-w8" -> (() => new nanobpf.pisa.Pisa()),
        "pisa-w16" -> (() => new nanobpf.pisa.Pisa(nanobpf.pisa.PisaParams(beatBytes = 16, cidBuckets = 4))),
        "packetizer-w8" -> (() => new nanobpf.reasm.PacketizerBlock()),
        "packetizer-w16" -> (() => new nanobpf.reasm.PacketizerBlock(nanobpf.reasm.PktParams(beatBytes = 16))),
        "reasm-w8" -> (() => new nanobpf.reasm.ReasmBlock(nanobpf.reasm.PktParams(slots = 16))),
        "dispatch-q4" -> (() => new nanobpf.coresel.Dispatch(nanobpf.reasm.PktParams(queues = 4))),
        "dispatch-q8" -> (() => new nanobpf.coresel.Dispatch(nanobpf.reasm.PktParams(queues = 8, slots = 128))),
        "packet_path-q4" -> (() => new nanobpf.pktpath.PacketPathBlock()), // default sizes: utilisation (make bench-dispatch)
        "packet_path-q2" -> (() => new nanobpf.pktpath.PacketPathBlock(nanobpf.reasm.PktParams(queues = 2, slots = 16))),
        "dispatch-q3" -> (() => new nanobpf.coresel.Dispatch(nanobpf.reasm.PktParams(queues = 3, slots = 32))),
        "egress-w8" -> (() => new nanobpf.datapath.Egress(nanobpf.reasm.PktParams(slots = 16))),
        "eth_mac-w8" -> (() => new nanobpf.mac.EthMac()),
        "eth_echo-w8" -> (() => new nanobpf.board.EthEcho(8)), // with eth_mac-w8 and the RGMII PHY: sim/cocotb/eth_rgmii
        // in front of LiteDRAM's --sim core (boards/genesys2/ddr3.yml `sim`: 256 MiB, 28-bit address) with a
        // 512 MiB window, so the upper half is past the DRAM: sim/cocotb/dram_bridge checks both against dram.properties
        "dram_bridge-sim" -> (() => new nanobpf.dram.DramBridge(nanobpf.dram.DramBridgeParams(base = SocMap.MainMem.base,
          windowBytes = BigInt(512) << 20, dramBytes = BigInt(256) << 20, addrBits = 28))),
        "aead-r2g32" -> (() => new nanobpf.aead.AeadBlock()), // the SoC's build
        "aead-r1g8" -> (() => new nanobpf.aead.AeadBlock(nanobpf.aead.AeadParams(roundsPerCycle = 1, ghashBits = 8, cores = 2, perCore = 2))),
        // the area/throughput trade-off (make bench-aead)
        "aead-r3g32" -> (() => new nanobpf.aead.AeadBlock(nanobpf.aead.AeadParams(roundsPerCycle = 3))),
        "aead-r5g64" -> (() => new nanobpf.aead.AeadBlock(nanobpf.aead.AeadParams(roundsPerCycle = 5, ghashBits = 64))),
        "aead-r10g128" -> (() => new nanobpf.aead.AeadBlock(nanobpf.aead.AeadParams(roundsPerCycle = 10, ghashBits = 128))))
  for (n <- only if !blocks.exists(_._1 == n)) {
    System.err.println(s"EmitBlocks: no block $n (blocks: ${blocks.map(_._1).mkString(" ")})"); sys.exit(2)
  }
  for ((name, gen) <- blocks if only.forall(_ == name)) {
    Emit(gen(), s"$out/$name")
    println(s"EmitBlocks: $out/$name")
  }
}
