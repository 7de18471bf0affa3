"""The boot configuration of a board's DPU image (firmware dpu-board-<board>: the data-plane firmware
with xdp_quic_hw built in), from the board's board.toml [dpu] table (nanobpf.board.facts):

- one-arm mode: the board's one Ethernet port (the SoC's host physical port) carries the host link as
  VLAN host_vid and the network link as VLAN net_vid. Port table: (port, host_vid) -> the host's
  logical port, (port, net_vid) -> the network's, nothing else (untagged frames and other VLANs miss:
  PISA drops them, no_lport); each logical port sends every frame to the cores and leaves tagged with
  its own VLAN on that port. The ingress takes the tag off first, so the firmware and the program see
  the frames as an untagged link carries them (docs/pisa.md).
- the QUIC program's settings: quic_port is QUIC (quic_ports), its short headers carry short_cid_len-byte
  CIDs (quic_config's lengths to open, and PISA's QUIC profiles on both logical ports, as
  nanobpf.quic.workload.profiles writes them).

No keys: the host adds them over the control protocol (KEY_ADD). Each entry is what TABLE_SET or
MAP_UPDATE would write, so the host can change any of it at run time.

    entries = boot_entries(facts.load("genesys2"))
    python -m nanobpf.board.dpu_boot --board genesys2 --boot-config FILE
"""
import argparse
import struct
import sys

from nanobpf import bootcfg
from nanobpf.board import facts


def one_arm_tables(host_vid, net_vid):
    """The @table entries of one-arm mode on the SoC's host physical port."""
    import nanobpf_soc as soc
    d, action = soc.DATAPATH, soc.ENUMS["pisa_action"]["to_cores"]
    port = d["host_port"]
    out = []
    for i, (vid, lport) in enumerate(((host_vid, d["host_lport"]), (net_vid, d["net_lport"]))):
        out.append(bootcfg.table("port", i, valid=1, port=port, tagged=1, vid=vid, lport=lport))
        out.append(bootcfg.table("lport_cfg", lport, default_action=action, egress_port=port, egress_tagged=1,
                                 egress_vid=vid))
    return out


def boot_entries(board):
    """Every entry of the board's DPU boot configuration."""
    import nanobpf_ebpf_defs as abi
    from nanobpf.quic.workload import profiles
    dpu = board.dpu
    cfg = struct.pack(abi.STRUCTS["quic_config"].fmt, abi.NANOBPF_IFINDEX_HOST, abi.NANOBPF_IFINDEX_NET,
                      1 << dpu.short_cid_len, 0)
    return ([("quic_config", struct.pack("<I", 0), cfg),
             ("quic_ports", struct.pack("<H", dpu.quic_port), struct.pack("<I", 1))]
            + profiles([dpu.quic_port], dpu.short_cid_len)
            + one_arm_tables(dpu.host_vid, dpu.net_vid))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m nanobpf.board.dpu_boot",
                                 description="Write the boot configuration of a board's DPU image (firmware "
                                             "dpu-board-BOARD): its one-arm VLANs and the QUIC program's settings, "
                                             "from boards/BOARD/board.toml [dpu].")
    ap.add_argument("--board", default=facts.DEFAULT_BOARD, help=f"the board (default {facts.DEFAULT_BOARD})")
    ap.add_argument("--boot-config", metavar="FILE", required=True, help="write the nanobpf.bootcfg blob here")
    a = ap.parse_args(argv)
    try:
        board = facts.load(a.board)
    except facts.BoardFactsError as e:
        print(f"dpu_boot: {e}", file=sys.stderr)
        return 2
    with open(a.boot_config, "wb") as f:
        f.write(bootcfg.pack(boot_entries(board)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
