"""Reference models of the hardware blocks.

A reference model here is a Python model of one hardware block (hw/src/main/scala/nanobpf/...): given
the same inputs and register writes as the RTL, it computes what the block must produce, and the block's
tests use it as their scoreboard (the cocotb benches in sim/cocotb, the unit tests in tests/unit check
the models themselves against published vectors and scapy). Encodings come only from the generated
definitions (nanobpf.soc, i.e. `nanobpf_soc` from hw/defs/soc.toml; `nanobpf_ebpf_defs`;
`nanobpf_ctrl_defs`), so a model and its RTL cannot disagree on them. A model imports nothing else of
the package and nothing from tests/ or sim/; host modules may use them (the device model nanobpf.devmodel
runs its PISA stage on `pisa`, nanobpf-bench-dispatch's yardstick is `pktpath`'s ideal queue).

- `aead`: the AES-128-GCM engine and its key table storage (docs/aead.md).
- `pisa`: the PISA transport pipeline: parser, match-action tables (the hashed CID table), deparser
  (docs/pisa.md).
- `pktpath`: the packet path: reassembly buffer, core select policies, reorder unit, and the ideal
  single-queue simulation (docs/packet-path.md).
- `packetizer`: the packetization buffer (host GSO batches to frames; docs/packet-path.md).
- `ethmac`: what the 1G Ethernet MAC does with a received frame (docs/board.md).
"""
