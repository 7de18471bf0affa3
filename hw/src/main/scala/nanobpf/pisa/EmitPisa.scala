package nanobpf.pisa

import chisel3._
import chisel3.util._
import nanobpf.common._

/** Stand-alone wrapper of [[Capture]] + [[Parser]] for the parser's cocotb block test: frames in,
  * one parse result per frame out (beats are discarded).
  */
class ParserBlock(p: PisaParams = PisaParams()) extends Module {
  val io = IO(new Bundle {
    val in = Flipped(Decoupled(new UserBeat(p, UInt(2.W))))
    val out = Valid(new Parsed(p, UInt(2.W)))
    val addr = Output(UInt((8 * Parser.addrBytes).W)) // the peer's address id, byte 0 lowest
  })
  val capture = Module(new Capture(p, UInt(2.W)))
  val parser = Module(new Parser(p, UInt(2.W), stepShim = true, ingress = true))
  capture.io.in <> io.in
  capture.io.beats.ready := true.B
  capture.io.room := true.B
  parser.io.in := capture.io.hdr
  io.out := parser.io.out
  io.addr := parser.io.addr.asUInt
}

/** Stand-alone deparser with its register block, for the deparser's cocotb block test. */
class DeparserBlock(p: PisaParams = PisaParams()) extends Module {
  val io = IO(new Bundle {
    val bus = Flipped(new nanobpf.common.BusPort)
    val in = Flipped(Decoupled(new UserBeat(p, new EgressCmd)))
    val out = Decoupled(new PortBeat(p))
  })
  val regs = Module(new PisaRegs(p))
  val dep = Module(new Deparser(p))
  regs.io.bus <> io.bus
  dep.io.cfg := regs.io.cfg
  regs.io.cid.key.valid := false.B // no ingress here: the CID table is never looked up
  regs.io.cid.key.bits := DontCare
  regs.io.count := dep.io.count
  dep.io.in <> io.in
  io.out <> dep.io.out
}
