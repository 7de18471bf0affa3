"""nanobpf-synth-estimate: cell counting and the utilisation table (yosys itself runs in make synth-estimate)."""
from nanobpf.board import synth_estimate as tool


def test_cells_are_counted_by_resource():
    cells = {"LUT1": 3, "LUT6": 10, "RAM64M": 2, "SRLC32E": 1, "FDRE": 7, "FDCE": 2, "RAMB36E1": 3,
             "RAMB18E1": 3, "DSP48E1": 4, "CARRY4": 9, "MUXF7": 5}
    used, lutram = tool.count(cells)
    assert lutram == 2 * 4 + 1
    assert used == {"LUT": 13 + 9, "FF": 9, "BRAM36": 4.5, "DSP": 4}


def test_table_shows_capacity_and_percentages():
    used, lutram = tool.count({"LUT6": 20380, "FDRE": 4076, "RAMB36E1": 89, "DSP48E1": 0})
    text = tool.table(used, lutram, "t")
    assert "| LUT | 20380 | 203800 | 10.0% |" in text
    assert "| FF | 4076 | 407600 | 1.0% |" in text
    assert "| BRAM36 | 89 | 445 | 20.0% |" in text
    assert "| DSP | 0 | 840 | 0.0% |" in text


def test_fit_counts_cores_by_the_scarcest_resource():
    # a 2-core design: 100 BRAM36 of which 2 x 40 are the cores; one more block of 5 to come
    used = {"LUT": 50_000, "FF": 40_000, "BRAM36": 100, "DSP": 4}
    tile = {"LUT": 20_000, "FF": 15_000, "BRAM36": 40, "DSP": 2}
    extra = {"LUT": 0, "FF": 0, "BRAM36": 5, "DSP": 0}
    f = tool.fit(used, tile, extra, 2)
    assert f["BRAM36"] == (445 - (100 - 80 + 5)) // 40 == 10
    assert f["LUT"] == (203_800 - 10_000) // 20_000 == 9
    assert f["cores"] == 9 and f["cores_80"] == int((0.8 * 203_800 - 10_000) // 20_000)


def test_a_synthesis_is_reused_only_for_the_same_unchanged_files(tmp_path):
    src = tmp_path / "a.sv"
    src.write_text("module a; endmodule\n")
    out = tmp_path / "out"
    out.mkdir()
    files = ["+define+X", str(src)]
    (out / "files.f").write_text("\n".join(files) + "\n")
    (out / "utilisation.json").write_text('{"top": "a", "LUT": 1, "FF": 2, "BRAM36": 0, "DSP": 0, "lutram": 0}\n')
    assert tool.reusable(out, files, "a")["LUT"] == 1
    assert tool.reusable(out, files, "b") is None                      # another top
    assert tool.reusable(out, files + [str(src)], "a") is None         # another file list
    import os
    t = (out / "utilisation.json").stat().st_mtime
    os.utime(src, (t + 10, t + 10))                                    # a source changed since
    assert tool.reusable(out, files, "a") is None


def test_a_recorded_digest_survives_a_rewrite_with_the_same_contents(tmp_path):
    src = tmp_path / "a.sv"
    src.write_text("module a; endmodule\n")
    out = tmp_path / "out"
    out.mkdir()
    files = [str(src)]
    (out / "files.f").write_text(str(src) + "\n")
    (out / "utilisation.json").write_text(
        '{"top": "a", "LUT": 1, "FF": 2, "BRAM36": 0, "DSP": 0, "lutram": 0, "sources": "%s"}\n' % tool.digest(files))
    import os
    t = (out / "utilisation.json").stat().st_mtime
    os.utime(src, (t + 10, t + 10))                                    # written again, same contents
    assert tool.reusable(out, files, "a")["LUT"] == 1
    src.write_text("module a; wire w; endmodule\n")                    # contents changed
    assert tool.reusable(out, files, "a") is None


# yosys 0.23's `stat -json` of a design with hierarchy: valid module entries, then its hierarchy text
# (cell types naming modules have no leading backslash, the module keys do).
HIER_STAT = """{
   "creator": "Yosys 0.23",
   "modules": {
      "\\\\top": {"num_cells_by_type": {"LUT6": 10, "FDRE": 2, "tile$top.soc.core0": 1, "tile$top.soc.core1": 1,
                                         "dp$top.soc.dp": 1}},
      "\\\\tile$top.soc.core0": {"num_cells_by_type": {"LUT6": 100, "RAMB36E1": 3, "DSP48E1": 1}},
      "\\\\tile$top.soc.core1": {"num_cells_by_type": {"LUT6": 100, "RAMB36E1": 3, "DSP48E1": 1}},
      "\\\\dp$top.soc.dp": {"num_cells_by_type": {"LUT5": 40, "RAMB18E1": 1}}
   },
       tile$top.soc.core0      1
}
"""


def test_hierarchy_is_summed_from_per_module_counts(tmp_path):
    (tmp_path / "stat.json").write_text(HIER_STAT)
    stat = tool.load_stat(tmp_path / "stat.json")
    used, _ = tool.count(tool.hier_cells(stat, "top"))
    assert used == {"LUT": 10 + 200 + 40, "FF": 2, "BRAM36": 6.5, "DSP": 2}
    tree = tool.blocks(stat, "top")
    tiles = tool.find_block(tree, "tile")
    assert tiles["count"] == 2 and tiles["total"]["LUT"] == 200 and tiles["each"]["BRAM36"] == 3
    table = tool.blocks_table(tree, 3)
    assert "| top | 250 | 2 | 6.5 | 2 |" in table and "tile x 2 | 200 | 0 | 6 | 2 |" in table


def test_hier_prep_keeps_blocks_and_points_every_tile_at_one(tmp_path):
    il = tmp_path / "design.il"
    il.write_text("\n".join("module \\" + m for m in [
        "top", "NanobpfSoc$top.soc", "nanobpf_cva6_tile$top.soc.core0", "nanobpf_cva6_tile$top.soc.core1",
        "cva6$top.soc.core0.core", "cva6$top.soc.core1.core", "ram_512x73$top.soc.q.ram_ext",
        "banks_8192x64$top.soc.pm.banks_0_ext", "Deep$top.soc.a.b.c.d", "gen$top.soc.g[0].x"]) + "\n")
    cmds = tool.hier_prep(il, "top", 3, tile_units=3)
    assert cmds[0] == "chtype -map nanobpf_cva6_tile$top.soc.core1 nanobpf_cva6_tile$top.soc.core0"
    kept = {c.split()[-1] for c in cmds if c.startswith("setattr")}
    assert kept == {"NanobpfSoc$top.soc", "nanobpf_cva6_tile$top.soc.core0", "cva6$top.soc.core0.core"}
    # by default the tile is one block: its units are flattened into it
    kept = {c.split()[-1] for c in tool.hier_prep(il, "top", 3) if c.startswith("setattr")}
    assert kept == {"NanobpfSoc$top.soc", "nanobpf_cva6_tile$top.soc.core0"}


def test_lookup_tables_stay_apart_at_any_depth_synthesised_once(tmp_path):
    il = tmp_path / "design.il"
    il.write_text("\n".join("module \\" + m for m in [
        "top", "Aead$top.soc.aead", "AesSbox$top.soc.aead.engine.aes.s_1", "AesSbox$top.soc.aead.engine.aes.s",
        "AesSbox$top.soc.aead.hp.aes.s", "AesSbox$top.soc.g[0].s", "AesSboxLike$top.soc.aead.e.x"]) + "\n")
    first = "AesSbox$top.soc.aead.engine.aes.s"
    for cmds in (tool.hier_prep(il, "top", 2), tool.flat_prep(il, "top")):
        # every instance's module becomes the first one (no parameters: they are all the same)
        assert f"chtype -map AesSbox$top.soc.aead.engine.aes.s_1 {first}" in cmds
        assert f"chtype -map AesSbox$top.soc.aead.hp.aes.s {first}" in cmds
        # a generate-block path would be read as a pattern: that one is flattened like any logic
        assert not any("g[0]" in c for c in cmds)
        kept = {c.split()[-1] for c in cmds if c.startswith("setattr")}
        assert first in kept and "AesSboxLike$top.soc.aead.e.x" not in kept
        assert cmds.index("hierarchy -top top") < min(i for i, c in enumerate(cmds) if c.startswith("setattr"))
    assert {c.split()[-1] for c in tool.flat_prep(il, "top") if c.startswith("setattr")} == {first}
    assert "Aead$top.soc.aead" in {c.split()[-1] for c in tool.hier_prep(il, "top", 2) if c.startswith("setattr")}


def test_a_result_of_an_older_flow_is_not_reused(tmp_path, monkeypatch):
    src = tmp_path / "a.sv"
    src.write_text("module a; endmodule\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "files.f").write_text(str(src) + "\n")
    (out / "utilisation.json").write_text(
        '{"top": "a", "LUT": 1, "FF": 2, "BRAM36": 0, "DSP": 0, "lutram": 0, "sources": "%s"}\n' % tool.digest([str(src)]))
    assert tool.reusable(out, [str(src)], "a")["LUT"] == 1
    monkeypatch.setattr(tool, "FLOW", tool.FLOW + "+")
    assert tool.reusable(out, [str(src)], "a") is None
