"""Print the SystemVerilog file list of the NanoBPF SoC (Verilator/slang `-f` format).

CVA6 comes from the PyPI package pythondata-cpu-cva6: its core/Flist.cv64a6_imafdc_sv39 manifest,
with the configuration package replaced by hw/vsrc/cva6_config_pkg.sv (RV64IMAC, no FPU) and the
FPU divider/square-root files and the behavioural tracer dropped (see DROPPED); the sizes of
hw/defs/soc.toml [cva6] that CVA6 4.2 hard-codes written into copies in --generated/cva6/ (see LITERALS),
code its switches change in those copies (see PATCHES) and files replaced by ours in hw/vsrc/cva6/ (see
REPLACED); with --synthesis, the RAM wrapper
replaced by a synthesizable one (see SRAM_WRAPPER). Then the
generated nanobpf_soc_pkg, the hand-written SV in hw/vsrc and the Chisel output directory.
"""
import argparse
import re
import sys
import importlib.util
from pathlib import Path
from nanobpf import ROOT

FLIST = "core/Flist.cv64a6_imafdc_sv39"
CONFIG_PKG = "core/include/cv64a6_imafdc_sv39_config_pkg.sv"
# Dropped: FPU divider/sqrt (absent from the package, unused with FpuEn=0) and the behavioural
# instruction tracer (simulation-only code that nothing instantiates; slang rejects it).
DROPPED = ("core/fpu/src/fpu_div_sqrt_mvp/", "common/local/util/instr_tracer")


def cva6_root():
    try:
        import pythondata_cpu_cva6
    except ImportError:
        sys.exit("nanobpf-rtl-files: pythondata-cpu-cva6 is not installed: run `make setup`")
    return Path(pythondata_cpu_cva6.data_location)


# For synthesis: CVA6's RAM wrapper hides its RAM behind `synthesis translate_off`; use ours.
SRAM_WRAPPER = "common/local/util/tc_sram_wrapper.sv"


# [cva6] of hw/defs/soc.toml trims CVA6 for this workload where CVA6 4.2 has no parameter: the values are
# literals in its files, so each file is copied into --generated/cva6/ with the literal replaced. Every
# pattern must match exactly `count` times (a changed CVA6 release stops the build here rather than
# silently keeping the stock size). Per file: (pattern whose group 1 and 2 surround the literal,
# [cva6] key, count).
#  - load_store_unit.sv: the MMU's 16-entry instruction and data TLBs (Sv39, and Sv32 for 32-bit builds);
#    the firmware runs in M-mode with translation off, so the TLBs are never filled.
#  - ariane_pkg.sv: the scoreboard (instructions in flight), the data cache's ways (same 32 KiB: 4
#    ways of 512 lines fill the block RAMs that 8 ways of 256 lines half-used), the frontend's
#    instruction queue and the instruction cache's size (4 ways: 32 KiB are 512 lines a way, which fill
#    the block RAMs that 16 KiB's 256 lines half-use; a way larger than a 4 KiB page needs the MMU off,
#    as CVA6 indexes the cache by the virtual address - soc.toml's check).
#  - wt_cache_pkg.sv: the data cache's write buffer (stores waiting for the bus).
LITERALS = {
    "core/load_store_unit.sv": [(r"(\.(?:INSTR|DATA)_TLB_ENTRIES\s*\(\s*)16(\s*\))", "tlb_entries", 4)],
    "core/include/ariane_pkg.sv": [(r"(localparam NR_SB_ENTRIES\s*=\s*)8(\s*;)", "scoreboard_entries", 1),
                                   (r"(localparam int unsigned DCACHE_SET_ASSOC\s*=\s*)8(\s*;)", "dcache_ways", 1),
                                   (r"(localparam int unsigned FETCH_FIFO_DEPTH\s*=\s*)4(\s*;)", "fetch_fifo_depth", 1),
                                   (r"(localparam int unsigned CONFIG_L1I_SIZE\s*=\s*)16(\*1024;)", "icache_kib", 1)],
    "core/include/wt_cache_pkg.sv": [(r"(localparam DCACHE_WBUF_DEPTH\s*=\s*)8(\s*;)", "dcache_wbuf_depth", 1)],
}
# Code changed when a [cva6] switch says so: file -> [(key, the value that selects the change, pattern,
# replacement, count)].
#  - mmu = false: load_store_unit.sv takes CVA6's own MMU-less branch (virtual = physical address, no
#    TLBs, no page table walker: the firmware runs in M-mode without translation), with the two checks
#    the MMU made on the way kept: an instruction fetched outside the execute regions of ARIANE_CFG is
#    an instruction access fault, and a misaligned load or store is an exception, one cycle after the
#    request as through the MMU (CVA6's branch drops both).
NO_MMU_FETCH = """// [cva6] mmu = false (nanobpf-rtl-files): the MMU's execute-region check, kept
        logic fetch_in_exec_region;
        assign fetch_in_exec_region = ariane_pkg::is_inside_execute_regions(ArianeCfg,
            {{64-riscv::PLEN{1'b0}}, icache_areq_i.fetch_vaddr[riscv::PLEN-1:0]});
        assign  icache_areq_o.fetch_exception      = fetch_in_exec_region ? exception_t'('0) :
            exception_t'({riscv::INSTR_ACCESS_FAULT, {{riscv::XLEN-riscv::PLEN{1'b0}},
                          icache_areq_i.fetch_vaddr[riscv::PLEN-1:0]}, 1'b1});"""
NO_MMU_MISALIGNED = """// [cva6] mmu = false (nanobpf-rtl-files): misaligned accesses still trap, registered as in the MMU
        exception_t misaligned_q;
        always_ff @(posedge clk_i or negedge rst_ni) begin
            if (~rst_ni) begin
                misaligned_q <= '0;
            end else begin
                misaligned_q       <= misaligned_exception;
                misaligned_q.valid <= misaligned_exception.valid & translation_req;
            end
        end
        assign mmu_exception = misaligned_q;"""
PATCHES = {
    "core/load_store_unit.sv": [
        ("mmu", False, r"\bMMU_PRESENT &&", "1'b0 /* [cva6] mmu = false */ &&", 2),
        ("mmu", False, r"assign  icache_areq_o\.fetch_exception      = '0;", NO_MMU_FETCH, 1),
        ("mmu", False, r"assign mmu_exception = '0;", NO_MMU_MISALIGNED, 1),
    ],
}
# Whole files replaced by ours (same module and ports) when a [cva6] switch says so: key -> (CVA6 file,
# our file, the value that selects ours).
REPLACED = {
    "lutram_regfile": ("core/ariane_regfile_ff.sv", "hw/vsrc/cva6/ariane_regfile_lutram.sv", True),
    "lutram_bht": ("core/frontend/bht.sv", "hw/vsrc/cva6/bht_lutram.sv", True),
    "perf_counters": ("core/perf_counters.sv", "hw/vsrc/cva6/perf_counters_off.sv", False),
}


def cva6_config(generated):
    """[cva6] as gendefs read it (its defaults for missing keys), from the generated Python module."""
    mod = Path(generated) / "python/nanobpf_soc.py"
    if not mod.exists():
        sys.exit(f"nanobpf-rtl-files: {mod} not found: run `make defs`")
    spec = importlib.util.spec_from_file_location("nanobpf_soc_defs", mod)
    defs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(defs)
    return defs.CVA6


def overlay(src, rel, cfg, generated):
    """The copy of a CVA6 file with its LITERALS and the PATCHES its switches select."""
    text, changes = src.read_text(), []
    for pattern, key, count in LITERALS.get(rel, []):
        text, n = re.subn(pattern, rf"\g<1>{cfg[key]}\g<2>", text)
        if n != count:
            sys.exit(f"nanobpf-rtl-files: expected {count} literal(s) for [cva6] {key} in {src}, found {n}: "
                     "CVA6 changed, update LITERALS")
        changes.append(f"{key} = {cfg[key]}")
    for key, when, pattern, replacement, count in PATCHES.get(rel, []):
        if cfg[key] != when:
            continue
        text, n = re.subn(pattern, lambda _: replacement, text)
        if n != count:
            sys.exit(f"nanobpf-rtl-files: expected {count} match(es) of {pattern!r} for [cva6] {key} in {src}, "
                     f"found {n}: CVA6 changed, update PATCHES")
        if f"{key} = {str(when).lower()}" not in changes:
            changes.append(f"{key} = {str(when).lower()}")
    out = Path(generated) / "cva6" / src.name
    out.parent.mkdir(parents=True, exist_ok=True)
    header = (f"// GENERATED by nanobpf-rtl-files (sw/python/nanobpf/rtl_files.py) from {src}: {', '.join(changes)} "
              "(hw/defs/soc.toml [cva6]). Do not edit.\n")
    if not out.exists() or out.read_text() != header + text:  # unchanged: keep the timestamp (no rebuild)
        out.write_text(header + text)
    return str(out)


def cva6_entries(root, synthesis=False, generated=ROOT / "build/generated"):
    cfg = cva6_config(generated)
    replaced = {cva6_file: ours for key, (cva6_file, ours, when) in REPLACED.items() if cfg[key] == when}
    out = []
    for line in (root / FLIST).read_text().splitlines():
        line = line.split("//")[0].strip()
        if not line:
            continue
        line = line.replace("${CVA6_REPO_DIR}", str(root))
        rel = line.split(str(root) + "/", 1)[-1]
        if rel == CONFIG_PKG:
            out.append(str(ROOT / "hw/vsrc/cva6_config_pkg.sv"))
        elif rel in LITERALS or rel in PATCHES:
            out.append(overlay(Path(line), rel, cfg, generated))
        elif rel in replaced:
            out.append(str(ROOT / replaced[rel]))
        elif rel == SRAM_WRAPPER and synthesis:
            out.append(str(ROOT / "hw/vsrc/synth/tc_sram_wrapper.sv"))
        elif rel.startswith(DROPPED):
            continue
        else:
            if not line.startswith("+") and not Path(line).exists():
                sys.exit(f"nanobpf-rtl-files: CVA6 file missing from the package: {line}")
            out.append(line)
        if rel == "core/include/ariane_pkg.sv":
            out.append("@NANOBPF_SOC_PKG@")  # needs ariane_pkg
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chisel", metavar="DIR", required=True, help="Chisel output directory (filelist.f inside)")
    ap.add_argument("--generated", metavar="DIR", default=str(ROOT / "build/generated"),
                    help="gendefs output directory (default: %(default)s)")
    ap.add_argument("--synthesis", action="store_true",
                    help="the list for synthesis: CVA6's RAM wrapper replaced by hw/vsrc/synth/tc_sram_wrapper.sv")
    a = ap.parse_args(argv)
    chisel = Path(a.chisel).resolve()
    if not (chisel / "filelist.f").exists():
        sys.exit(f"nanobpf-rtl-files: {chisel}/filelist.f not found: elaborate the SoC first (`make hw`)")
    pkg = str(Path(a.generated) / "vsrc/nanobpf_soc_pkg.sv")
    files = [pkg if f == "@NANOBPF_SOC_PKG@" else f for f in cva6_entries(cva6_root(), a.synthesis, a.generated)]
    files.append(str(ROOT / "hw/vsrc/nanobpf_cva6_tile.sv"))
    files.append(str(ROOT / "hw/vsrc/nanobpf_main_mem.sv"))
    files += [str(chisel / f) for f in (chisel / "filelist.f").read_text().split() if f.endswith(".sv")]
    print("\n".join(files))


if __name__ == "__main__":
    main()
