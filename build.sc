// NanoBPF hardware build (mill 0.11.13). `make hw` drives it; see docs/build.md.
import mill._, scalalib._

object hw extends SbtModule {
  def scalaVersion = "2.13.16"
  val chiselVersion = "7.14.0"
  def ivyDeps = Agg(ivy"org.chipsalliance::chisel:$chiselVersion")
  def scalacPluginIvyDeps = Agg(ivy"org.chipsalliance:::chisel-plugin:$chiselVersion")
  def scalacOptions = Seq("-deprecation", "-feature", "-language:reflectiveCalls", "-Ymacro-annotations")

  /** The SoC definition file: single source of the address map and register layouts. */
  def socDefs = T.source(millSourcePath / "defs" / "soc.toml")
  /** The generators (the nanobpf package's gen modules), run with the project venv's Python. */
  def generators = T.source(millSourcePath / os.up / "sw" / "python" / "nanobpf" / "gen")
  def python = (millSourcePath / os.up / "build" / "venv" / "bin" / "python").toString
  /** The eBPF ABI definition (XDP actions, key table layout). */
  def abiDefs = T.source(millSourcePath / "defs" / "ebpf.toml")

  /** The control protocol definition (the hardware needs its EtherTypes). */
  def ctrlDefs = T.source(millSourcePath / "defs" / "ctrl.toml")

  /** Scala views of the SoC, eBPF ABI and control protocol definitions (never edited by hand). */
  def generatedSources = T {
    generators()
    os.proc(python, "-m", "nanobpf.gen.soc", "--defs", socDefs().path, "--scala", T.dest / "SocMap.scala").call()
    os.proc(python, "-m", "nanobpf.gen.abi", "--defs", abiDefs().path, "--scala", T.dest / "EbpfAbi.scala").call()
    os.proc(python, "-m", "nanobpf.gen.ctrl", "--defs", ctrlDefs().path, "--scala", T.dest / "CtrlDefs.scala").call()
    Seq(PathRef(T.dest))
  }
}
