package nanobpf.board

import java.nio.file.{Files, Paths}
import nanobpf.soc.SocParams
import nanobpf.common.{Emit, SocMap}
import nanobpf.dram.DramBridgeParams

/** Emits a board's Chisel part: `ElaborateBoard --board genesys2 --cores N --core-hz HZ --net-hz HZ
  * --uart-baud BAUD --bootrom rom.bin --fw-image fw.hex --dram dram.properties --out DIR`. Main memory is the
  * board's DRAM (LiteDRAM's AXI port, described by the generator's dram.properties); the firmware image goes
  * into the read-only region fw_image, which the boot ROM (firmware/bootrom built with
  * NANOBPF_BOOT_COPY_IMAGE) copies into it.
  *
  * The board's facts (clocks, baud rate, core count) are not kept here: they live in boards/<board>/board.toml
  * and the Makefile passes them (`make board-hw`, through build/generated/boards.mk); every option is required.
  */
object ElaborateBoard extends App {
  val usage =
    """usage: ElaborateBoard --board NAME --cores N --core-hz HZ --net-hz HZ --uart-baud BAUD
      |                      --bootrom FILE --fw-image FILE --dram FILE --out DIR
      |  every option is required; `make board-hw BOARD=NAME` passes them from boards/NAME/board.toml
      |  --board NAME     the board (boards/NAME), named in messages
      |  --cores N        number of CVA6 cores (make: BOARD_CORES, default [board] default_cores)
      |  --core-hz HZ     the core clock in Hz ([clocks] core_hz): LED heartbeat, UART divider
      |  --net-hz HZ      the datapath (Ethernet MAC) clock in Hz ([clocks] net_hz): activity LEDs
      |  --uart-baud BAUD the console's baud rate ([uart] baud): dpu.uart_div resets to core-hz / baud
      |  --bootrom FILE   raw boot ROM binary (firmware bootrom-board.bin: copies the image into main memory)
      |  --fw-image FILE  $readmemh image of the firmware (64-bit words), baked into the fw_image ROM
      |  --dram FILE      LiteDRAM's dram.properties (nanobpf-litedram: size, AXI widths)
      |  --out DIR        directory for NanobpfBoard.sv and filelist.f""".stripMargin
  def fail(msg: String): Nothing = { System.err.println(s"ElaborateBoard: $msg\n$usage"); sys.exit(2) }
  if (args.contains("--help") || args.contains("-h")) { println(usage); sys.exit(0) }
  val opts = args.toSeq.grouped(2).map {
    case Seq(k, v) if k.startsWith("--") => k.drop(2) -> v
    case other                           => fail(s"bad argument(s): ${other.mkString(" ")}")
  }.toMap
  val known = Seq("board", "cores", "core-hz", "net-hz", "uart-baud", "bootrom", "fw-image", "dram", "out")
  for (k <- opts.keys if !known.contains(k)) fail(s"unknown option --$k")
  val missing = known.filterNot(opts.contains)
  if (missing.nonEmpty)
    fail(s"missing ${missing.map("--" + _).mkString(", ")} (the board's facts come from boards/<board>/board.toml: " +
      "run `make board-hw BOARD=<board>`)")
  /** A positive integer option. */
  def positive(k: String): Int = opts(k).toIntOption.filter(_ > 0).getOrElse(fail(s"--$k: not a positive integer: ${opts(k)}"))
  val board = opts("board")
  val cores = positive("cores")
  val coreHz = positive("core-hz")
  val netHz = positive("net-hz")
  val baud = positive("uart-baud")
  if (coreHz / baud < 4) fail(s"--core-hz $coreHz is too slow for --uart-baud $baud (the UART needs 4 cycles a bit)")
  val romPath = Paths.get(opts("bootrom"))
  if (!Files.isReadable(romPath)) fail(s"cannot read boot ROM image $romPath (build it with `make firmware`)")
  val image = Paths.get(opts("fw-image"))
  if (!Files.isReadable(image)) fail(s"cannot read firmware image $image")
  val imageWords = HexImage.words(image)
  if (imageWords * 8 > SocMap.FwImage.size)
    fail(s"firmware image $image needs ${imageWords * 8} bytes; region fw_image holds ${SocMap.FwImage.size} (hw/defs/soc.toml)")
  if (SocMap.FwImage.size > SocMap.MainMem.size) fail("region fw_image is larger than main_mem (hw/defs/soc.toml)")
  val dramPath = Paths.get(opts("dram"))
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
  val out = opts("out")
  val params =
    try BoardParams(SocParams(nCores = cores, bootRom = Files.readAllBytes(romPath).toSeq, externalMainMem = true,
      fwImageFile = image.toAbsolutePath.toString, uartDiv = coreHz / baud, busActivity = false), dram = dram, coreHz = coreHz,
      netHz = netHz)
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
