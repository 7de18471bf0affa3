package nanobpf.aead

import chisel3._
import chisel3.util._
import nanobpf.common.{EbpfAbi, SocMap}

/** One request to the engine, as the register block assembled it. */
class AeadRequest(p: AeadParams) extends Bundle {
  val op = UInt(2.W)
  val nextPhase = Bool()
  val slot = UInt(16.W)
  val aadLen = UInt(8.W)
  val dataLen = UInt(12.W)
  val id = UInt(16.W)
  val aadAddr = UInt(32.W)
  val dataAddr = UInt(32.W)
  val pn = UInt(64.W)
  val core = UInt(p.coreBits.W)
}

class AeadCompletion(p: AeadParams) extends Bundle {
  val core = UInt(p.coreBits.W)
  val id = UInt(16.W)
  val status = UInt(3.W)
  val cycles = UInt(32.W)
}

/** AES-128-GCM as QUIC uses it (RFC 9001 5.3, 5.4.3), over data in packet memory.
  *
  * One request at a time, in order. Seal and open: read the slot's 80-byte key table value (10 words),
  * compute H = E(K, 0) and E(K, J0), hash the additional data, then stream the payload: the reader
  * fetches it, the AES core makes the keystream (counter 2, 3, ...) ahead of it, and each 16-byte
  * chunk is XORed, written back in place and hashed in the same cycle. Last the length block; seal
  * writes the tag after the payload, open reads and compares it. hp_mask encrypts one sample with the
  * header protection key. seal_hp seals, then protects the header (the AAD) in place: once the tag is
  * written it reads the sample 4 bytes after the packet number (the header's last (first byte & 3) + 1
  * bytes), encrypts it with the header protection key and XORs the mask into the first byte and the
  * packet number (read back), so a core asks once and never touches the sealed packet. Throughput in the payload phase is one chunk per
  * max(ceil(10 / roundsPerCycle), 128 / ghashBits, 4) cycles; the memory port carries two reads and two
  * writes per chunk (5 cycles a chunk below 3 rounds per cycle, where AES is the limit anyway). Requests that do not fit (lengths, ranges, slot, op, missing next keys)
  * complete with an error status before any memory is touched.
  */
class GcmEngine(p: AeadParams) extends Module {
  val io = IO(new Bundle {
    val req = Flipped(Decoupled(new AeadRequest(p)))
    val comp = Decoupled(new AeadCompletion(p))
    val keyRead = Output(Valid(UInt(log2Ceil(p.keySlots * 10).W)))
    val keyData = Input(UInt(64.W))
    val mem = new MemPort(p.memAddrBits)
    /** Events for the counters: an AES block started; payload bytes of a request completed ok. */
    val aesBlock = Output(Bool())
    val payloadBytes = Output(UInt(12.W))
    val busy = Output(Bool())
  })
  import SocMap.AeadOp
  import SocMap.AeadStatus
  val K = EbpfAbi.QuicKeys

  // an AES block in 4 cycles or fewer: the memory port's two reads and two writes a block are the limit,
  // none may be lost to the read's latency
  val reader = Module(new StreamReader(p.memAddrBits, readOnLeave = p.roundsPerCycle >= 3))
  val writer = Module(new StreamWriter(p.memAddrBits))
  val aes = Module(new Aes128(p.roundsPerCycle))
  val ghash = Module(new Ghash(p.ghashBits))

  // Memory port: the writer first (it drains what the reader made room for).
  io.mem.req.valid := writer.io.mem.valid || reader.io.mem.valid
  io.mem.req.bits := writer.io.mem.bits
  when(!writer.io.mem.valid) {
    io.mem.req.bits.addr := reader.io.mem.bits
    io.mem.req.bits.write := false.B
    io.mem.req.bits.wdata := 0.U
    io.mem.req.bits.strb := 0.U
  }
  writer.io.mem.ready := io.mem.req.ready
  reader.io.mem.ready := io.mem.req.ready && !writer.io.mem.valid
  reader.io.rdata.valid := RegNext(reader.io.mem.fire, false.B)
  reader.io.rdata.bits := io.mem.rdata

  val sIdle :: sKeys :: sH :: sAad :: sData :: sLen :: sTag :: sHp :: sProtect :: sDone :: Nil = Enum(10)
  val state = RegInit(sIdle)
  val r = Reg(new AeadRequest(p))
  val status = Reg(UInt(3.W))
  val cycles = Reg(UInt(32.W))
  io.busy := state =/= sIdle
  when(state =/= sIdle) { cycles := cycles + 1.U }

  // ---- request checks (nothing is touched when one fails)
  val memBytes = BigInt(1) << p.memAddrBits
  val q = io.req.bits
  val isHp = q.op === AeadOp.HpMask.U
  val aadEnd = q.aadAddr +& Mux(isHp, 16.U, q.aadLen)
  val dataEnd = q.dataAddr +& q.dataLen +& 16.U
  val badLen = q.dataLen > p.maxData.U || aadEnd > memBytes.U || dataEnd > memBytes.U ||
    (q.op === AeadOp.SealHp.U && q.aadLen < 2.U) // a first byte and at least one packet number byte
  val badReq = q.op > AeadOp.SealHp.U || q.slot >= p.keySlots.U
  io.req.ready := state === sIdle
  val keyWord = RegInit(0.U(4.W))
  when(io.req.fire) {
    r := q
    cycles := 1.U
    keyWord := 0.U
    when(badReq) { status := AeadStatus.BadRequest.U; state := sDone }
      .elsewhen(badLen) { status := AeadStatus.BadLength.U; state := sDone }
      .otherwise { status := AeadStatus.Ok.U; state := sKeys }
  }

  // ---- key fetch: the slot's whole value, 10 words
  val keyBytes = Reg(Vec(80, UInt(8.W)))
  val fetching = state === sKeys && keyWord < 10.U
  io.keyRead.valid := fetching
  io.keyRead.bits := (r.slot(p.slotBits - 1, 0) * 10.U + keyWord)(io.keyRead.bits.getWidth - 1, 0)
  val arriving = RegNext(fetching, false.B)
  val arrivingWord = RegNext(keyWord)
  when(arriving) {
    for (w <- 0 until 10; b <- 0 until 8) when(arrivingWord === w.U) { keyBytes(8 * w + b) := io.keyData(8 * b + 7, 8 * b) }
  }
  when(fetching) { keyWord := keyWord + 1.U }
  def field(off: Int, n: Int): Seq[UInt] = (0 until n).map(i => keyBytes(off + i))
  val key = VecInit(field(K.KeyOffset, 16).zip(field(K.KeyOffset + 16, 16)).map { case (c, n) => Mux(r.nextPhase, n, c) })
  val iv = field(K.IvOffset, 12).zip(field(K.IvOffset + 12, 12)).map { case (c, n) => Mux(r.nextPhase, n, c) }
  val hpKey = VecInit(field(K.HpOffset, 16))
  val hasNext = keyBytes(K.FlagsOffset)(0)
  // nonce = IV xor the packet number, big-endian in the last 8 bytes (RFC 9001 5.3)
  val nonce = iv.zipWithIndex.map { case (b, i) => if (i < 4) b else b ^ r.pn(8 * (11 - i) + 7, 8 * (11 - i)) }
  def counterBlock(c: UInt): Vec[UInt] = {
    val c32 = c.pad(32)
    VecInit(nonce ++ (0 until 4).map(i => c32(8 * (3 - i) + 7, 8 * (3 - i))))
  }

  // ---- AES feed: what to encrypt next, in order
  val nBlocks = (r.dataLen +& 15.U) >> 4
  val aesSent = RegInit(0.U(9.W)) // AES requests made for this request
  val aesGot = RegInit(0.U(9.W)) // AES results taken
  val h = Reg(UInt(128.W))
  val ek0 = Reg(Vec(16, UInt(8.W)))
  aes.io.in.valid := false.B
  aes.io.in.bits.key := key
  aes.io.in.bits.block := VecInit(Seq.fill(16)(0.U(8.W)))
  aes.io.out.ready := false.B
  io.aesBlock := aes.io.in.fire

  // ---- GHASH and the stream engines
  def bigEndian(v: Seq[UInt]): UInt = Cat(v)
  def masked(c: Chunk): Seq[UInt] = c.data.zipWithIndex.map { case (b, i) => Mux(i.U < c.bytes, b, 0.U) }
  val clearHash = RegNext(false.B, false.B) // a new hash starts the cycle after H and E(K, J0) are known
  ghash.io.clear := clearHash
  ghash.io.h := h
  ghash.io.in.valid := false.B
  ghash.io.in.bits := 0.U
  reader.io.start.valid := false.B
  reader.io.start.bits.addr := 0.U
  reader.io.start.bits.len := 0.U
  reader.io.out.ready := false.B
  writer.io.start.valid := false.B
  writer.io.start.bits := r.dataAddr(p.memAddrBits - 1, 0)
  writer.io.in.valid := false.B
  writer.io.in.bits := DontCare

  val started = RegInit(false.B) // the phase's reader (and writer) have been started
  val tag = VecInit((0 until 16).map(i => ghash.io.y(127 - 8 * i, 120 - 8 * i) ^ ek0(i)))
  val isSealHp = r.op === AeadOp.SealHp.U
  val isSeal = r.op === AeadOp.Seal.U || isSealHp

  // ---- seal_hp: the header's first byte (seen as the AAD streams by) names the packet number length
  val b0 = Reg(UInt(8.W))
  val aadFirst = Reg(Bool())
  val mask = Reg(Vec(5, UInt(8.W)))
  val protectStep = RegInit(0.U(2.W))
  def pnLenOf(first: UInt): UInt = first(1, 0) +& 1.U
  val pnAddr = (r.aadAddr + r.aadLen - pnLenOf(b0))(p.memAddrBits - 1, 0)

  switch(state) {
    is(sKeys) {
      when(!fetching && !arriving) {
        aesSent := 0.U; aesGot := 0.U; started := false.B
        when(r.nextPhase && !hasNext) { status := AeadStatus.NoKey.U; state := sDone }
          .elsewhen(r.op === AeadOp.HpMask.U) { state := sHp }
          .otherwise { state := sH }
      }
    }
    is(sH) { // E(K, 0) = H, then E(K, J0)
      aes.io.in.valid := aesSent < 2.U
      aes.io.in.bits.block := Mux(aesSent === 0.U, VecInit(Seq.fill(16)(0.U(8.W))), counterBlock(1.U))
      when(aes.io.in.fire) { aesSent := aesSent + 1.U }
      aes.io.out.ready := true.B
      when(aes.io.out.fire) {
        aesGot := aesGot + 1.U
        when(aesGot === 0.U) { h := bigEndian(aes.io.out.bits) }
          .otherwise {
            ek0 := aes.io.out.bits
            clearHash := true.B
            aesSent := 0.U; aesGot := 0.U
            state := Mux(r.aadLen === 0.U, Mux(r.dataLen === 0.U, sLen, sData), sAad)
          }
      }
    }
    is(sAad) {
      reader.io.start.valid := !started
      reader.io.start.bits.addr := r.aadAddr(p.memAddrBits - 1, 0)
      reader.io.start.bits.len := r.aadLen
      started := true.B
      ghash.io.in.valid := started && reader.io.out.valid
      ghash.io.in.bits := bigEndian(masked(reader.io.out.bits))
      reader.io.out.ready := started && ghash.io.in.ready
      when(!started) { aadFirst := true.B }
      val first = Mux(aadFirst, reader.io.out.bits.data(0), b0)
      when(reader.io.out.fire) { b0 := first; aadFirst := false.B }
      when(reader.io.out.fire && reader.io.out.bits.last) {
        started := false.B
        state := Mux(r.dataLen === 0.U, sLen, sData)
        // seal_hp: the packet number inside the header and the sample inside the sealed packet, or
        // nothing is written (the sample ends at most at the tag's end)
        val pnLen = pnLenOf(first)
        val sampleEnd = r.aadAddr +& r.aadLen -& pnLen +& 20.U
        when(isSealHp && (r.aadLen < pnLen +& 1.U || sampleEnd > r.dataAddr +& r.dataLen +& 16.U)) {
          status := AeadStatus.BadLength.U
          state := sDone
        }
      }
    }
    is(sData) {
      reader.io.start.valid := !started
      reader.io.start.bits.addr := r.dataAddr(p.memAddrBits - 1, 0)
      reader.io.start.bits.len := r.dataLen
      writer.io.start.valid := !started
      started := true.B
      // keystream for counter 2, 3, ... made ahead of the data
      aes.io.in.valid := started && aesSent < nBlocks
      aes.io.in.bits.block := counterBlock(aesSent + 2.U)
      when(aes.io.in.fire) { aesSent := aesSent + 1.U }
      val chunk = reader.io.out.bits
      val out = VecInit(chunk.data.zip(aes.io.out.bits).zipWithIndex.map { case ((d, k), i) =>
        Mux(i.U < chunk.bytes, d ^ k, 0.U)
      })
      val go = started && reader.io.out.valid && aes.io.out.valid && writer.io.in.ready && ghash.io.in.ready
      reader.io.out.ready := go
      aes.io.out.ready := go
      writer.io.in.valid := go
      writer.io.in.bits.data := out
      writer.io.in.bits.bytes := chunk.bytes
      writer.io.in.bits.last := chunk.last && !isSeal
      ghash.io.in.valid := go
      ghash.io.in.bits := bigEndian(Mux(isSeal, out, VecInit(masked(chunk))))
      when(go && chunk.last) { started := false.B; state := sLen }
    }
    is(sLen) { // [len(A)]64 || [len(C)]64, in bits
      ghash.io.in.valid := !started
      ghash.io.in.bits := (r.aadLen << 3).pad(64) ## (r.dataLen << 3).pad(64)
      when(ghash.io.in.fire) { started := true.B }
      when(started && ghash.io.idle) { started := false.B; state := sTag }
    }
    is(sTag) {
      when(isSeal) { // the tag goes after the payload, through the same writer
        writer.io.start.valid := !started && r.dataLen === 0.U
        writer.io.in.valid := started
        writer.io.in.bits.data := tag
        writer.io.in.bits.bytes := 16.U
        writer.io.in.bits.last := true.B
        started := true.B
        when(writer.io.in.fire) {
          state := Mux(isSealHp, sProtect, sDone)
          started := false.B
          aesSent := 0.U
          protectStep := 0.U
        }
      }.otherwise { // compare with the tag after the payload once the plaintext is written
        reader.io.start.valid := !started
        reader.io.start.bits.addr := (r.dataAddr + r.dataLen)(p.memAddrBits - 1, 0)
        reader.io.start.bits.len := 16.U
        started := true.B
        reader.io.out.ready := started
        when(reader.io.out.fire) {
          status := Mux(reader.io.out.bits.data.asUInt === tag.asUInt, AeadStatus.Ok.U, AeadStatus.TagMismatch.U)
          state := sDone
        }
      }
    }
    is(sHp) { // mask = E(hp, sample)
      reader.io.start.valid := !started
      reader.io.start.bits.addr := r.aadAddr(p.memAddrBits - 1, 0)
      reader.io.start.bits.len := 16.U
      writer.io.start.valid := !started
      started := true.B
      aes.io.in.valid := started && reader.io.out.valid && aesSent === 0.U
      aes.io.in.bits.key := hpKey
      aes.io.in.bits.block := reader.io.out.bits.data
      reader.io.out.ready := aes.io.in.ready && aesSent === 0.U && started
      when(aes.io.in.fire) { aesSent := 1.U }
      writer.io.in.valid := aes.io.out.valid
      writer.io.in.bits.data := aes.io.out.bits
      writer.io.in.bits.bytes := 16.U
      writer.io.in.bits.last := true.B
      aes.io.out.ready := writer.io.in.ready
      when(writer.io.in.fire) { state := sDone }
    }
    is(sProtect) { // seal_hp: header protection of the sealed packet, in place (RFC 9001 5.4.1)
      switch(protectStep) {
        is(0.U) { // mask = E(hp, sample), the sample read once every sealed byte is in memory
          reader.io.start.valid := !started && !writer.io.busy
          reader.io.start.bits.addr := pnAddr + 4.U
          reader.io.start.bits.len := 16.U
          when(reader.io.start.valid) { started := true.B }
          aes.io.in.valid := started && reader.io.out.valid && aesSent === 0.U
          aes.io.in.bits.key := hpKey
          aes.io.in.bits.block := reader.io.out.bits.data
          reader.io.out.ready := started && aes.io.in.ready && aesSent === 0.U
          when(aes.io.in.fire) { aesSent := 1.U }
          aes.io.out.ready := true.B
          when(aes.io.out.fire) {
            for (i <- 0 until 5) mask(i) := aes.io.out.bits(i)
            started := false.B
            protectStep := 1.U
          }
        }
        is(1.U) { // the first byte: its low 4 bits (long header) or 5 (short header)
          writer.io.start.valid := !started
          writer.io.start.bits := r.aadAddr(p.memAddrBits - 1, 0)
          started := true.B
          writer.io.in.valid := started
          writer.io.in.bits.data := VecInit(Seq(b0 ^ (mask(0) & Mux(b0(7), 0x0f.U, 0x1f.U))) ++ Seq.fill(15)(0.U(8.W)))
          writer.io.in.bits.bytes := 1.U
          writer.io.in.bits.last := true.B
          when(writer.io.in.fire) { started := false.B; protectStep := 2.U }
        }
        is(2.U) { // the packet number, read back (whatever its alignment) and written masked
          reader.io.start.valid := !started && !writer.io.busy
          reader.io.start.bits.addr := pnAddr
          reader.io.start.bits.len := pnLenOf(b0)
          writer.io.start.valid := reader.io.start.valid
          writer.io.start.bits := pnAddr
          when(reader.io.start.valid) { started := true.B }
          writer.io.in.valid := started && reader.io.out.valid
          writer.io.in.bits.data := VecInit(reader.io.out.bits.data.zipWithIndex.map { case (d, i) =>
            if (i < 4) d ^ mask(i + 1) else 0.U(8.W)
          })
          writer.io.in.bits.bytes := pnLenOf(b0)
          writer.io.in.bits.last := true.B
          reader.io.out.ready := started && writer.io.in.ready
          when(writer.io.in.fire) { state := sDone }
        }
      }
    }
    is(sDone) {
      started := false.B
    }
  }
  // a completion leaves only when every byte of the request is in memory
  io.comp.valid := state === sDone && !writer.io.busy
  io.comp.bits.core := r.core
  io.comp.bits.id := r.id
  io.comp.bits.status := status
  io.comp.bits.cycles := cycles
  when(io.comp.fire) { state := sIdle }
  io.payloadBytes := Mux(io.comp.fire && status === AeadStatus.Ok.U && r.op =/= AeadOp.HpMask.U, r.dataLen, 0.U)
}
