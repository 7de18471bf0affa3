package nanobpf.aead

import chisel3._
import chisel3.util._
import nanobpf.common.{BusPort, SocMap}
import nanobpf.common._

/** The AES-128-GCM engine with its registers (region `aead`) and key table storage (region
  * `keytable`), and the header-protection masker beside it (HpMasker, sharing the key table's read
  * port); `mem` is its port into packet memory. This is the unit the SoC instantiates and the
  * cocotb test drives.
  */
class AeadBlock(p: AeadParams = AeadParams()) extends Module {
  val io = IO(new Bundle {
    val bus = Flipped(new BusPort)
    val keys = Flipped(new BusPort)
    val mem = new MemPort(p.memAddrBits)
  })
  val regs = Module(new AeadRegs(p))
  val keys = Module(new KeyTable(p))
  val engine = Module(new GcmEngine(p))
  regs.io.bus <> io.bus
  keys.io.bus <> io.keys
  engine.io.mem <> io.mem
  // the key table's read port: the engine's when it fetches a request's keys, else the masker's
  val hp = Module(new HpMasker(p))
  keys.io.read := Mux(engine.io.keyRead.valid, engine.io.keyRead, hp.io.keyRead)
  hp.io.keyGrant := !engine.io.keyRead.valid
  engine.io.keyData := keys.io.data
  hp.io.keyData := keys.io.data
  hp.io.req := regs.io.hpReq
  hp.io.sample := regs.io.hpSample
  regs.io.hpResult := hp.io.result
  engine.io.req <> regs.io.req
  regs.io.comp <> engine.io.comp

  import SocMap.{AeadCounter, AeadStatus}
  val done = engine.io.comp.fire
  val st = engine.io.comp.bits.status
  val count = WireDefault(VecInit(Seq.fill(regs.nCounters)(0.U(16.W))))
  count(AeadCounter.Ok) := (done && st === AeadStatus.Ok.U).asUInt
  count(AeadCounter.TagMismatch) := (done && st === AeadStatus.TagMismatch.U).asUInt
  count(AeadCounter.Errors) := (done && st =/= AeadStatus.Ok.U && st =/= AeadStatus.TagMismatch.U).asUInt
  count(AeadCounter.Blocks) := engine.io.aesBlock.asUInt
  count(AeadCounter.BusyCycles) := engine.io.busy.asUInt
  count(AeadCounter.Bytes) := engine.io.payloadBytes
  regs.io.count := count
}
