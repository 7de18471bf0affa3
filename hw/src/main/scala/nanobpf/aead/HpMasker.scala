package nanobpf.aead

import chisel3._
import chisel3.util._
import nanobpf.common.EbpfAbi

/** Header-protection masks beside the AEAD engine (RFC 9001 5.4.3: mask = AES-ECB(hp key, sample)),
  * for the open path: a core that must unmask a header before it can ask for the open waits only for
  * this one block, never behind the engine's queue of whole packets.
  *
  * Each core has one request: the 16-byte sample it read from the packet (its core_hp_sample registers,
  * read when the request starts: the core does not write them while it waits) and the key table slot
  * whose header-protection key masks it (core_hp_slot, which makes the request). Requests are served one at a time,
  * lowest core first: the key's three words are read from the key table storage through the engine's
  * read port in the cycles the engine does not use it, then one iterative AES block (a round a cycle).
  * A core's result is its mask's first 5 bytes (the first byte's and the packet number's), valid until
  * its next request; a request made while the previous one is in flight supersedes it (the older
  * result is never shown as the newer one's).
  */
class HpMasker(p: AeadParams) extends Module {
  private val K = EbpfAbi.QuicKeys
  private val keyWords = K.Size.toInt / 8 // words of a key table slot
  private val firstWord = K.HpOffset.toInt / 8
  private val shift = K.HpOffset.toInt % 8 // the key's first byte inside its first word
  private val nWords = (shift + 16 + 7) / 8
  val io = IO(new Bundle {
    val req = Input(Vec(p.cores, Valid(UInt(p.slotBits.W)))) // a core's request: its key table slot
    val sample = Input(Vec(p.cores, Vec(16, UInt(8.W)))) // each core's sample registers (read when its request starts)
    val result = Output(Vec(p.cores, Valid(UInt(40.W))))
    val keyRead = Output(Valid(UInt(log2Ceil(p.keySlots * keyWords).W)))
    val keyGrant = Input(Bool()) // the read port is ours this cycle (the engine is not fetching)
    val keyData = Input(UInt(64.W)) // the word read the cycle before
  })
  val pending = RegInit(VecInit(Seq.fill(p.cores)(false.B)))
  val slot = Reg(Vec(p.cores, UInt(p.slotBits.W)))
  val valid = RegInit(VecInit(Seq.fill(p.cores)(false.B)))
  val mask = Reg(Vec(p.cores, UInt(40.W)))
  for (c <- 0 until p.cores) {
    io.result(c).valid := valid(c)
    io.result(c).bits := mask(c)
  }

  // ---- one request at a time: fetch the key, then the block
  val busy = RegInit(false.B)
  val who = Reg(UInt(log2Ceil(p.cores max 2).W))
  val word = RegInit(0.U(log2Ceil(nWords + 1).W)) // key words asked for
  val got = RegInit(0.U(log2Ceil(nWords + 1).W)) // key words arrived
  val keyBuf = Reg(Vec(nWords * 8, UInt(8.W)))
  val block = Reg(Vec(16, UInt(8.W)))
  val sent = RegInit(false.B)
  val aes = Module(new Aes128(1))

  val start = !busy && pending.asUInt.orR
  val pick = PriorityEncoder(pending.asUInt)
  when(start) {
    busy := true.B
    who := pick
    block := io.sample(pick)
    word := 0.U
    got := 0.U
    sent := false.B
    pending(pick) := false.B
  }
  io.keyRead.valid := busy && word < nWords.U
  io.keyRead.bits := (slot(who) * keyWords.U +& firstWord.U +& word)(io.keyRead.bits.getWidth - 1, 0)
  val asked = io.keyRead.valid && io.keyGrant
  when(asked) { word := word + 1.U }
  val arriving = RegNext(asked, false.B)
  when(arriving) { // in the order asked
    got := got + 1.U
    for (w <- 0 until nWords; b <- 0 until 8) when(got === w.U) { keyBuf(8 * w + b) := io.keyData(8 * b + 7, 8 * b) }
  }
  aes.io.in.valid := busy && !sent && got === nWords.U
  aes.io.in.bits.key := VecInit((0 until 16).map(i => keyBuf(shift + i)))
  aes.io.in.bits.block := block
  when(aes.io.in.fire) { sent := true.B }
  aes.io.out.ready := true.B
  when(aes.io.out.fire) {
    busy := false.B
    // a newer request of the same core came meanwhile: this mask is not its
    when(!pending(who)) {
      valid(who) := true.B
      mask(who) := VecInit(aes.io.out.bits.take(5)).asUInt
    }
  }
  // a new request: its slot, its result not valid until it is computed
  for (c <- 0 until p.cores) when(io.req(c).valid) {
    pending(c) := true.B
    valid(c) := false.B
    slot(c) := io.req(c).bits
  }
}
