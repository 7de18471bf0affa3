"""nanobpf-rtl-files: the SoC file lists for simulation and for synthesis."""
import subprocess
import sys

from nanobpf import ROOT, command

TOOL = command("nanobpf-rtl-files")


def files(tmp_path, *extra):
    (tmp_path / "filelist.f").write_text("NanobpfSoc.sv\nAxiInterconnect.sv\n")
    p = subprocess.run([TOOL, "--chisel", str(tmp_path), *extra],
                       capture_output=True, text=True, check=True)
    return p.stdout.split()


def test_lists_cva6_then_generated_then_ours_then_chisel(tmp_path):
    f = files(tmp_path)
    assert f[0] == "+define+WT_DCACHE"
    assert str(ROOT / "hw/vsrc/cva6_config_pkg.sv") in f
    assert not any(x.endswith("cv64a6_imafdc_sv39_config_pkg.sv") for x in f)
    assert not any("fpu_div_sqrt_mvp" in x or "/common/local/util/instr_tracer" in x for x in f)
    pkg = [i for i, x in enumerate(f) if x.endswith("nanobpf_soc_pkg.sv")]
    ariane = [i for i, x in enumerate(f) if x.endswith("/ariane_pkg.sv")]
    assert len(pkg) == 1 and ariane and pkg[0] > ariane[0]  # the package uses ariane_pkg types
    assert f[-2:] == [str(tmp_path / "NanobpfSoc.sv"), str(tmp_path / "AxiInterconnect.sv")]


def test_synthesis_list_swaps_only_the_ram_wrapper(tmp_path):
    sim, syn = files(tmp_path), files(tmp_path, "--synthesis")
    assert [x for x in sim if x not in syn] == [x for x in sim if x.endswith("util/tc_sram_wrapper.sv")]
    assert [x for x in syn if x not in sim] == [str(ROOT / "hw/vsrc/synth/tc_sram_wrapper.sv")]
    assert len(sim) == len(syn)


def test_missing_chisel_output_is_explained(tmp_path):
    p = subprocess.run([TOOL, "--chisel", str(tmp_path / "none")], capture_output=True, text=True)
    assert p.returncode != 0 and "make hw" in p.stderr


def test_cva6_is_trimmed_as_soc_toml_says(tmp_path):
    """[cva6] of hw/defs/soc.toml: the sizes in the copies of CVA6's files (the TLBs of both MMUs, the
    scoreboard, the data cache's ways and write buffer, the instruction queue; the package's files are
    not listed), the MMU-less load/store unit, our files for the switches, branch prediction in
    nanobpf_soc_pkg::ARIANE_CFG."""
    import re
    from nanobpf.soc import CVA6
    f = files(tmp_path)
    gen = ROOT / "build/generated/cva6"

    def copy(name):
        listed = [x for x in f if x.endswith("/" + name)]
        assert listed == [str(gen / name)]
        return (gen / name).read_text()

    sizes = re.findall(r"\.(?:INSTR|DATA)_TLB_ENTRIES\s*\(\s*(\d+)\s*\)", copy("load_store_unit.sv"))
    assert sizes == [str(CVA6["tlb_entries"])] * 4
    pkg = copy("ariane_pkg.sv")
    assert re.search(r"localparam NR_SB_ENTRIES = (\d+);", pkg)[1] == str(CVA6["scoreboard_entries"])
    ways = re.findall(r"localparam int unsigned DCACHE_SET_ASSOC\s*=\s*(\S+);", pkg)
    assert ways == ["`CONFIG_L1D_ASSOCIATIVITY", str(CVA6["dcache_ways"])]  # OpenPiton's, then ours
    assert re.search(r"localparam DCACHE_WBUF_DEPTH\s*=\s*(\d+);", copy("wt_cache_pkg.sv"))[1] == \
        str(CVA6["dcache_wbuf_depth"])
    regfile = ROOT / "hw/vsrc/cva6/ariane_regfile_lutram.sv"
    assert (str(regfile) in f) == CVA6["lutram_regfile"]
    assert any(x.endswith("/ariane_regfile_ff.sv") for x in f) != CVA6["lutram_regfile"]
    bht = ROOT / "hw/vsrc/cva6/bht_lutram.sv"
    assert (str(bht) in f) == CVA6["lutram_bht"]
    assert any(x.endswith("/frontend/bht.sv") for x in f) != CVA6["lutram_bht"]
    lsu = copy("load_store_unit.sv")
    no_mmu = "1'b0 /* [cva6] mmu = false */ && (riscv::XLEN == 64)" in lsu
    assert no_mmu == (not CVA6["mmu"])
    # without the MMU, the two checks it made stay (CVA6's MMU-less branch drops them)
    assert ("is_inside_execute_regions" in lsu and "assign mmu_exception = misaligned_q;" in lsu) == no_mmu
    assert ("assign mmu_exception = '0;" in lsu) != no_mmu
    sizes = re.findall(r"CONFIG_L1I_SIZE\s*=?\s*(\d+)\*1024", pkg)
    assert sizes == ["16", str(CVA6["icache_kib"])]  # OpenPiton's define, then ours
    fifo = re.search(r"localparam int unsigned FETCH_FIFO_DEPTH\s*=\s*(\d+);", pkg)[1]
    assert fifo == str(CVA6["fetch_fifo_depth"])
    perf = ROOT / "hw/vsrc/cva6/perf_counters_off.sv"
    assert (str(perf) in f) != CVA6["perf_counters"]
    assert any(x.endswith("/core/perf_counters.sv") for x in f) == CVA6["perf_counters"]
    pkg = (ROOT / "build/generated/vsrc/nanobpf_soc_pkg.sv").read_text()
    assert (f"RASDepth: {CVA6['ras_depth']}, BTBEntries: {CVA6['btb_entries']}, "
            f"BHTEntries: {CVA6['bht_entries']}") in pkg
