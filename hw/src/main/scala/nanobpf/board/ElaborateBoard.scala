package nanobpf.board

import java.nio.file.{Files, Paths}
import nanobpf.soc.SocParams
import nanobpf.common.Emit

/** Emits a board's Chisel part: `ElaborateBoard --board genesys2 --bootrom rom.bin --mem-init fw.hex
  * --out DIR [--cores N]`. The firmware image is baked into main memory (no loader on the board).
  */
object ElaborateBoard extends App {
  val usage =
    """usage: ElaborateBoard --board genesys2 --bootrom FILE --mem-init FILE --out DIR [--cores N]
      |  --board NAME     genesys2 (the only board so far)
      |  --bootrom FILE   raw boot ROM binary (firmware/bootrom)
      |  --mem-init FILE  $readmemh image of the firmware, baked into main memory
      |  --out DIR        directory for NanobpfBoard.sv and filelist.f
      |  --cores N        number of CVA6 cores (default 1)""".stripMargin
  def fail(msg: String): Nothing = { System.err.println(s"ElaborateBoard: $msg\n$usage"); sys.exit(2) }
  if (args.contains("--help") || args.contains("-h")) { println(usage); sys.exit(0) }
  val opts = args.toSeq.grouped(2).map {
    case Seq(k, v) if k.startsWith("--") => k.drop(2) -> v
    case other                           => fail(s"bad argument(s): ${other.mkString(" ")}")
  }.toMap
  for (k <- opts.keys if !Set("board", "bootrom", "mem-init", "out", "cores").contains(k)) fail(s"unknown option --$k")
  /** Board name -> core clock in Hz. */
  val boards = Map("genesys2" -> 50_000_000)
  val board = opts.getOrElse("board", fail("--board is required"))
  val coreHz = boards.getOrElse(board, fail(s"unknown board $board (known: ${boards.keys.mkString(", ")})"))
  val romPath = Paths.get(opts.getOrElse("bootrom", fail("--bootrom is required")))
  if (!Files.isReadable(romPath)) fail(s"cannot read boot ROM image $romPath (build it with `make firmware`)")
  val memInit = opts.getOrElse("mem-init", fail("--mem-init is required"))
  if (!Files.isReadable(Paths.get(memInit))) fail(s"cannot read firmware image $memInit")
  val out = opts.getOrElse("out", fail("--out is required"))
  val cores = opts.get("cores").map(c => c.toIntOption.getOrElse(fail(s"--cores: not a number: $c"))).getOrElse(1)
  val params =
    try BoardParams(SocParams(nCores = cores, bootRom = Files.readAllBytes(romPath).toSeq,
      memInitFile = Paths.get(memInit).toAbsolutePath.toString, uartDiv = coreHz / 115200), coreHz = coreHz)
    catch { case e: IllegalArgumentException => fail(e.getMessage) }
  Emit(new NanobpfBoard(params), out)
}
