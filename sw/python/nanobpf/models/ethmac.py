"""What the 1G Ethernet MAC (hw/src/main/scala/nanobpf/mac, docs/board.md) does with a received frame:
the reference its cocotb tests (sim/cocotb/eth_mac, sim/cocotb/eth_rgmii) share."""
import struct
import zlib

MAX_FRAME = 1522  # longest frame accepted, FCS included (1518 + a VLAN tag)
MIN_FRAME = 64    # shortest, FCS included; shorter ones are runts


def wire_frame(payload):
    """`payload` followed by its FCS (CRC-32, least significant byte first), without padding, so runts
    can be made."""
    return bytes(payload) + struct.pack("<L", zlib.crc32(payload))


def rx_verdict(wire, error=False):
    """The counter (enum `eth_counter` in hw/defs/soc.toml) a received frame goes to: `rx_frames` when it
    is delivered, else the reason it is dropped. `wire`: the bytes after the SFD, FCS included;
    `error`: RX_ER was seen, or the preamble/SFD was bad."""
    if error:
        return "rx_phy_err"
    if len(wire) < MIN_FRAME:
        return "rx_runt"
    if len(wire) > MAX_FRAME:
        return "rx_oversize"
    if struct.pack("<L", zlib.crc32(wire[:-4])) != bytes(wire[-4:]):
        return "rx_fcs_err"
    return "rx_frames"
