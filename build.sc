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
  def gendefs = T.source(millSourcePath / os.up / "sw" / "tools" / "nanobpf-gendefs")
  /** The eBPF ABI definition (XDP actions, key table layout) and its generator. */
  def abiDefs = T.source(millSourcePath / "defs" / "ebpf.toml")
  def genabi = T.source(millSourcePath / os.up / "sw" / "tools" / "nanobpf-genabi")

  /** The control protocol definition (the hardware needs its EtherTypes) and its generator. */
  def ctrlDefs = T.source(millSourcePath / "defs" / "ctrl.toml")
  def genctrl = T.source(millSourcePath / os.up / "sw" / "tools" / "nanobpf-genctrl")

  /** Scala views of the SoC, eBPF ABI and control protocol definitions (never edited by hand). */
  def generatedSources = T {
    os.proc("python3", gendefs().path, "--defs", socDefs().path, "--scala", T.dest / "SocMap.scala").call()
    os.proc("python3", genabi().path, "--defs", abiDefs().path, "--scala", T.dest / "EbpfAbi.scala").call()
    os.proc("python3", genctrl().path, "--defs", ctrlDefs().path, "--scala", T.dest / "CtrlDefs.scala").call()
    Seq(PathRef(T.dest))
  }
}
