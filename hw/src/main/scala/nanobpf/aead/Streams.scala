package nanobpf.aead

import chisel3._
import chisel3.util._
import nanobpf.common._

/** Up to 16 bytes of a byte stream, in memory order (`data(0)` is the first byte). */
class Chunk extends Bundle {
  val data = Vec(16, UInt(8.W))
  /** Bytes in use, 1..16; the bytes after them are zero. */
  val bytes = UInt(5.W)
  /** The last chunk of the stream. */
  val last = Bool()
}

/** One 64-bit word access to packet memory (word address). Reads answer on `rdata` one cycle after
  * the request fires; `ready` low stalls the port.
  */
class MemReq(addrBits: Int) extends Bundle {
  val addr = UInt((addrBits - 3).W)
  val write = Bool()
  val wdata = UInt(64.W)
  val strb = UInt(8.W)
}

class MemPort(addrBits: Int) extends Bundle {
  val req = Decoupled(new MemReq(addrBits))
  val rdata = Input(UInt(64.W))
}

object Bytes {
  /** `base` with `n` bytes of `src` (from index 0) written at byte position `at`. */
  def place(base: Seq[UInt], src: Seq[UInt], at: UInt, n: UInt): Seq[UInt] =
    base.indices.map { i =>
      val rel = i.U - at
      val inside = i.U >= at && rel < n
      Mux(inside, VecInit(src.padTo(base.length, 0.U(8.W)))(rel(log2Ceil(base.length) - 1, 0)), base(i))
    }
  def word(bytes: Seq[UInt]): UInt = VecInit(bytes).asUInt
  def ofWord(w: UInt): Seq[UInt] = (0 until 8).map(i => w(8 * i + 7, 8 * i))
}

/** Reads `len` bytes from byte address `addr` (any alignment) and delivers them as 16-byte chunks, the
  * last one shorter when `len` is not a multiple of 16. Each memory word is read once; up to one word
  * per cycle, so a chunk every two cycles when the consumer keeps up. `len` must be at least 1.
  * With `readOnLeave`, a word is also read in the cycle a chunk leaves if that chunk makes its room:
  * the reader then keeps up with a consumer that takes a chunk every four cycles while a writer shares
  * the port (two reads and two writes a chunk); counting only the room already free, a cycle of each
  * chunk is lost to the read's latency (one every five), which a consumer as slow as that costs nothing.
  */
class StreamReader(addrBits: Int, readOnLeave: Boolean = false) extends Module {
  val io = IO(new Bundle {
    val start = Input(Valid(new Bundle { val addr = UInt(addrBits.W); val len = UInt(13.W) }))
    val busy = Output(Bool())
    val mem = Decoupled(UInt((addrBits - 3).W))
    val rdata = Input(Valid(UInt(64.W)))
    val out = Decoupled(new Chunk)
  })
  val wordAddr = Reg(UInt((addrBits - 3).W))
  val toIssue = RegInit(0.U(11.W)) // words still to read
  val toRecv = RegInit(0.U(13.W)) // bytes still to arrive
  val toEmit = RegInit(0.U(13.W)) // bytes still to deliver
  val skip = Reg(UInt(3.W)) // bytes to drop from the next word that arrives (first word only)
  val bufBytes = 32
  val buf = RegInit(VecInit(Seq.fill(bufBytes)(0.U(8.W))))
  val count = RegInit(0.U(6.W))
  val inflight = RegInit(false.B)

  io.busy := toEmit =/= 0.U
  // room for the word in flight and this one; a chunk leaving now is a whole one while words remain to be read
  io.mem.valid := toIssue =/= 0.U && count + Mux(inflight, 8.U, 0.U) <=
    (if (readOnLeave) Mux(io.out.fire, (bufBytes + 8).U, (bufBytes - 8).U) else (bufBytes - 8).U)
  io.mem.bits := wordAddr
  when(io.mem.fire) { wordAddr := wordAddr + 1.U; toIssue := toIssue - 1.U }
  inflight := io.mem.fire

  val take = Mux(count > 16.U, 16.U, count)
  io.out.valid := count >= 16.U || (count =/= 0.U && toRecv === 0.U)
  io.out.bits.data := VecInit(Seq.tabulate(16)(i => Mux(i.U < take, buf(i), 0.U)))
  io.out.bits.bytes := take(4, 0)
  io.out.bits.last := toEmit === take
  val afterOut = Mux(io.out.fire, VecInit(buf.drop(16) ++ Seq.fill(16)(0.U(8.W))), buf)
  val countAfterOut = Mux(io.out.fire, count - take, count)
  when(io.out.fire) { toEmit := toEmit - take }

  val word = Bytes.ofWord(io.rdata.bits >> (skip ## 0.U(3.W)))
  val avail = 8.U - skip
  val n = Mux(toRecv < avail, toRecv, avail)
  when(io.rdata.valid) {
    buf := VecInit(Bytes.place(afterOut, word, countAfterOut, n))
    count := (countAfterOut + n)(5, 0)
    toRecv := toRecv - n
    skip := 0.U
  }.otherwise {
    buf := afterOut
    count := countAfterOut
  }
  when(io.start.valid) {
    val a = io.start.bits.addr
    wordAddr := a >> 3
    skip := a(2, 0)
    toIssue := ((a(2, 0) +& io.start.bits.len) + 7.U) >> 3
    toRecv := io.start.bits.len
    toEmit := io.start.bits.len
    count := 0.U
    buf := VecInit(Seq.fill(bufBytes)(0.U(8.W)))
  }
}

/** Writes a stream of chunks to memory from byte address `addr` (any alignment), whole words where it
  * can and byte strobes at the ends. `done` pulses when the last chunk's bytes are all written.
  */
class StreamWriter(addrBits: Int) extends Module {
  val io = IO(new Bundle {
    val start = Input(Valid(UInt(addrBits.W)))
    val in = Flipped(Decoupled(new Chunk))
    val mem = Decoupled(new MemReq(addrBits))
    val busy = Output(Bool())
  })
  val wordAddr = Reg(UInt((addrBits - 3).W))
  val buf = RegInit(VecInit(Seq.fill(32)(0.U(8.W))))
  val valid = RegInit(0.U(32.W))
  val fill = RegInit(0.U(6.W)) // next byte position, relative to wordAddr * 8
  val active = RegInit(false.B)
  val ending = RegInit(false.B)

  io.busy := active
  io.mem.valid := active && (fill >= 8.U || (ending && fill =/= 0.U))
  io.mem.bits.addr := wordAddr
  io.mem.bits.write := true.B
  io.mem.bits.wdata := Bytes.word(buf.take(8))
  io.mem.bits.strb := valid(7, 0)

  val shifted = Mux(io.mem.fire, VecInit(buf.drop(8) ++ Seq.fill(8)(0.U(8.W))), buf)
  val validShifted = Mux(io.mem.fire, valid >> 8, valid)
  val fillShifted = Mux(io.mem.fire, Mux(fill >= 8.U, fill - 8.U, 0.U), fill)
  when(io.mem.fire) { wordAddr := wordAddr + 1.U }

  io.in.ready := active && !ending && fill <= 16.U
  val n = io.in.bits.bytes
  when(io.in.fire) {
    buf := VecInit(Bytes.place(shifted, io.in.bits.data, fillShifted, n))
    valid := validShifted | (((1.U(17.W) << n) - 1.U) << fillShifted)(31, 0)
    fill := fillShifted + n
    ending := io.in.bits.last
  }.otherwise {
    buf := shifted
    valid := validShifted
    fill := fillShifted
  }
  when(ending && fillShifted === 0.U && !io.in.fire) { active := false.B; ending := false.B }
  when(io.start.valid) {
    wordAddr := io.start.bits >> 3
    fill := io.start.bits(2, 0)
    valid := 0.U
    active := true.B
    ending := false.B
  }
}
