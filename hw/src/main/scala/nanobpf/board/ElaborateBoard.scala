package nanobpf.board

import java.nio.file.{Files, Paths}
import nanobpf.soc.SocParams
import nanobpf.common.{Emit, SocMap}
import nanobpf.dram.DramBridgeParams

/** Emits a board's Chisel part: `ElaborateBoard --board genesys2 --bootrom rom.bin --fw-image fw.hex
  * --dram dram.properties --out DIR [--cores N]`. Main memory is the board's DRAM (LiteDRAM's AXI port,
  * described by the generator's dram.properties); the firmware image goes into the read-only region
  * fw_image, which the boot ROM (firmware/bootrom built with NANOBPF_BOOT_COPY_IMAGE) copies into it.
  */
object ElaborateBoard extends App {
  val usage =
    """usage: ElaborateBoard --board genesys2 --bootrom FILE --fw-image FILE --dram FILE --out DIR [--cores N]
      |  --board NAME     genesys2 (the only board so far)
      |  --bootrom FILE   raw boot ROM binary (firmware bootrom-board.bin: copies the image into main memory)
      |  --fw-image FILE  $readmemh image of the firmware (64-bit words), baked into the fw_image ROM
      |  --dram FILE      LiteDRAM's dram.properties (nanobpf-litedram: size, AXI widths)
      |  --out DIR        directory for NanobpfBoard.sv and filelist.f
      |  --cores N        number of CVA6 cores (default 1)""".stripMargin
  def fail(msg: String): Nothing = { System.err.println(s"ElaborateBoard: $msg\n$usage"); sys.exit(2) }
  if (args.contains("--help") || args.contains("-h")) { println(usage); sys.exit(0) }
  val opts = args.toSeq.grouped(2).map {
    case Seq(k, v) if k.startsWith("--") => k.drop(2) -> v
    case other                           => fail(s"bad argument(s): ${other.mkString(" ")}")
  }.toMap
  for (k <- opts.keys if !Set("board", "bootrom", "fw-image", "dram", "out", "cores").contains(k)) fail(s"unknown option --$k")
  /** Board name -> core clock in Hz. */
  val boards = Map("genesys2" -> 50_000_000)
  val board = opts.getOrElse("board", fail("--board is required"))
  val coreHz = boards.getOrElse(board, fail(s"unknown board $board (known: ${boards.keys.mkString(", ")})"))
  val romPath = Paths.get(opts.getOrElse("bootrom", fail("--bootrom is required")))
  if (!Files.isReadable(romPath)) fail(s"cannot read boot ROM image $romPath (build it with `make firmware`)")
  val image = Paths.get(opts.getOrElse("fw-image", fail("--fw-image is required")))
  if (!Files.isReadable(image)) fail(s"cannot read firmware image $image")
  val imageWords = HexImage.words(image)
  if (imageWords * 8 > SocMap.FwImage.size)
    fail(s"firmware image $image needs ${imageWords * 8} bytes; region fw_image holds ${SocMap.FwImage.size} (hw/defs/soc.toml)")
  if (SocMap.FwImage.size > SocMap.MainMem.size) fail("region fw_image is larger than main_mem (hw/defs/soc.toml)")
  val dramPath = Paths.get(opts.getOrElse("dram", fail("--dram is required")))
  if (!Files.isReadable(dramPath)) fail(s"cannot read $dramPath: run `make litedram BOARD=$board`")
  val dram = {
    val props = new java.util.Properties()
    val in = Files.newInputStream(dramPath)
    try props.load(in) finally in.close()
    def get(k: String): String = Option(props.getProperty(k)).getOrElse(fail(s"$dramPath: no $k"))
    def num(k: String): BigInt = scala.util.Try(BigInt(get(k))).getOrElse(fail(s"$dramPath: $k is not a number"))
    if (get("variant") != "board") fail(s"$dramPath is LiteDRAM's ${get("variant")} core, not the board's")
    DramBridgeParams(base = SocMap.MainMem.base, windowBytes = SocMap.MainMem.size, dramBytes = num("size_bytes"),
      addrBits = num("addr_bits").toInt, dataBits = num("data_bits").toInt, idBits = num("id_bits").toInt)
  }
  if (dram.dramBytes < SocMap.MainMem.size) fail(s"the DRAM (${dram.dramBytes} bytes) is smaller than main_mem")
  val out = opts.getOrElse("out", fail("--out is required"))
  val cores = opts.get("cores").map(c => c.toIntOption.getOrElse(fail(s"--cores: not a number: $c"))).getOrElse(1)
  val params =
    try BoardParams(SocParams(nCores = cores, bootRom = Files.readAllBytes(romPath).toSeq, externalMainMem = true,
      fwImageFile = image.toAbsolutePath.toString, uartDiv = coreHz / 115200), dram = dram, coreHz = coreHz)
    catch { case e: IllegalArgumentException => fail(e.getMessage) }
  Emit(new NanobpfBoard(params), out)
}

/** $readmemh images (one 64-bit word per line, `@word` addresses). */
object HexImage {
  /** Words the image spans: one past its highest word address. */
  def words(path: java.nio.file.Path): Long = {
    var addr = 0L
    var top = 0L
    scala.io.Source.fromFile(path.toFile).getLines().map(_.trim).filter(l => l.nonEmpty && !l.startsWith("//")).foreach { l =>
      if (l.startsWith("@")) addr = java.lang.Long.parseLong(l.drop(1), 16)
      else { addr += 1; top = top max addr }
    }
    top
  }
}
