package nanobpf.soc

import java.nio.file.{Files, Paths}
import nanobpf.common._

/** Emits the SoC as SystemVerilog: `Elaborate --cores N --bootrom rom.bin --out DIR [--mem-init F] [--fw-image F]`. */
object Elaborate extends App {
  val usage =
    """usage: Elaborate --cores N --bootrom FILE --out DIR [--mem-init FILE] [--fw-image FILE]
      |  --cores N        number of CVA6 cores (required: `make hw` passes CORES, whose default is the
      |                   SoC's, SOC_DEFAULT_CORES in sw/python/nanobpf/__init__.py)
      |  --bootrom FILE   raw boot ROM binary (built from firmware/bootrom)
      |  --out DIR        directory for NanobpfSoc.sv
      |  --mem-init FILE  $readmemh image baked into main memory
      |  --fw-image FILE  $readmemh image in the fw_image ROM (what the board's boot ROM, bootrom-board.bin,
      |                   copies into main memory; default: none, the region answers errors)""".stripMargin
  def fail(msg: String): Nothing = { System.err.println(s"Elaborate: $msg\n$usage"); sys.exit(2) }
  val opts = args.toSeq.grouped(2).map {
    case Seq(k, v) if k.startsWith("--") => k.drop(2) -> v
    case Seq("--help") | Seq("-h")       => println(usage); sys.exit(0)
    case other                           => fail(s"bad argument(s): ${other.mkString(" ")}")
  }.toMap
  for (k <- opts.keys if !Set("bootrom", "out", "cores", "mem-init", "fw-image").contains(k)) fail(s"unknown option --$k")
  val romPath = Paths.get(opts.getOrElse("bootrom", fail("--bootrom is required")))
  if (!Files.isReadable(romPath)) fail(s"cannot read boot ROM image $romPath (build it with `make firmware`)")
  val out = opts.getOrElse("out", fail("--out is required"))
  val coresArg = opts.getOrElse("cores", fail("--cores is required"))
  val cores = coresArg.toIntOption.getOrElse(fail(s"--cores: not a number: $coresArg"))
  val params =
    try SocParams(nCores = cores, bootRom = Files.readAllBytes(romPath).toSeq, memInitFile = opts.getOrElse("mem-init", ""),
      fwImageFile = opts.get("fw-image").map(f => Paths.get(f).toAbsolutePath.toString).getOrElse(""))
    catch { case e: IllegalArgumentException => fail(e.getMessage) }
  Emit(new NanobpfSoc(params), out)
}
