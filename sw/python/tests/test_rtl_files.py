"""nanobpf-rtl-files: the SoC file lists for simulation and for synthesis."""
import subprocess
import sys

from nanobpf import ROOT

TOOL = ROOT / "sw/tools/nanobpf-rtl-files"


def files(tmp_path, *extra):
    (tmp_path / "filelist.f").write_text("NanobpfSoc.sv\nAxiInterconnect.sv\n")
    p = subprocess.run([sys.executable, str(TOOL), "--chisel", str(tmp_path), *extra],
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
    p = subprocess.run([sys.executable, str(TOOL), "--chisel", str(tmp_path / "none")], capture_output=True, text=True)
    assert p.returncode != 0 and "make hw" in p.stderr


def test_cva6_is_trimmed_as_soc_toml_says(tmp_path):
    """[cva6] of hw/defs/soc.toml: the TLB size in the load_store_unit.sv copy (both MMUs, both TLBs; the
    package's file is not listed), branch prediction in nanobpf_soc_pkg::ARIANE_CFG."""
    import re
    from nanobpf.soc import CVA6
    f = files(tmp_path)
    lsu = [x for x in f if x.endswith("/load_store_unit.sv")]
    assert lsu == [str(ROOT / "build/generated/cva6/load_store_unit.sv")]
    sizes = re.findall(r"\.(?:INSTR|DATA)_TLB_ENTRIES\s*\(\s*(\d+)\s*\)", open(lsu[0]).read())
    assert sizes == [str(CVA6["tlb_entries"])] * 4
    pkg = (ROOT / "build/generated/vsrc/nanobpf_soc_pkg.sv").read_text()
    assert (f"RASDepth: {CVA6['ras_depth']}, BTBEntries: {CVA6['btb_entries']}, "
            f"BHTEntries: {CVA6['bht_entries']}") in pkg
