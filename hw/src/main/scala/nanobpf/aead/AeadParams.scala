package nanobpf.aead

import chisel3.util.log2Ceil

/** Parameters of the AES-128-GCM engine. */
case class AeadParams(
    /** AES rounds computed per cycle (1 to 10): a block takes ceil(10 / roundsPerCycle) cycles. */
    roundsPerCycle: Int = 2,
    /** GHASH multiplier bits per cycle (8, 16, 32, 64 or 128): a block takes 128 / ghashBits cycles. */
    ghashBits: Int = 32,
    /** Key slots of the key table storage: the eBPF ABI's NANOBPF_KEYTABLE_SLOTS (hw/defs/ebpf.toml), twice
      * the entries the key table holds, so that a changed entry's new keys go beside the old ones. */
    keySlots: Int = nanobpf.common.EbpfAbi.KeytableSlots.toInt,
    /** Cores with their own request registers and completion queue. */
    cores: Int = 4,
    /** Requests one core may have outstanding (its completion queue depth). */
    perCore: Int = 4,
    /** Byte address bits of the memory port (packet memory). */
    memAddrBits: Int = 16,
    /** Largest payload of one request, bytes. */
    maxData: Int = 2048) {
  require(roundsPerCycle >= 1 && roundsPerCycle <= 10, "roundsPerCycle must be 1 to 10")
  require(Seq(8, 16, 32, 64, 128).contains(ghashBits), "ghashBits must divide 128")
  require(cores >= 1 && perCore >= 1)
  require(maxData >= 16 && maxData < 4096)
  val slotBits: Int = log2Ceil(keySlots)
  val coreBits: Int = log2Ceil(cores max 2)
}
