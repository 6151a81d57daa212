"""``gse report area``: generic CMOS gate counts per block, memories as macros."""

import json

import pytest

from opengse.firmware.cli import main
from opengse.platforms.area import FIGURES, format_area, markdown_table


def test_report_area_json(tmp_path, capsys):
    assert main(["report", "area", "-b", "ctl_encoder", "-b", "sprayer", "--json", "-o", str(tmp_path)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"ctl_encoder", "sprayer"}
    enc, spr = result["ctl_encoder"], result["sprayer"]
    for f in (enc, spr):
        assert set(f["gates"]) <= {"$_NAND_", "$_NOR_", "$_NOT_", "$_DFF_P_"}
        assert f["cells"] == sum(f["gates"].values()) and f["flip_flops"] > 0
        assert f["transistors"] > 4 * f["cells"] // 2
    # The encoder has no memory; the sprayer's seq table is one 16-word x 16-bit SRAM.
    assert enc["memory_bits"] == 0 and enc["memories"] == []
    assert spr["memory_bits"] == 16 * 16
    assert spr["memories"] == ["gse_sram_1r1w_16x16 (seq_table)"]


def test_report_area_table_and_errors(tmp_path, capsys):
    assert main(["report", "area", "-b", "ctl_encoder", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "ctl_encoder" in out and "transistors" in out and "total" in out
    assert main(["report", "area", "-b", "nosuch", "-o", str(tmp_path)]) == 2
    assert "unknown block" in capsys.readouterr().err
    assert main(["report", "volume"]) == 2


SMALL_SPINE = """
[gse]
nodes = 8
[blocks.spine]
buffer_bytes = 256
"""


@pytest.mark.timeout(600)
def test_report_area_top_by_parts(tmp_path, capsys):
    """A top is synthesised by parts: its figures are its glue's plus each distinct
    part's times its instances, and the table says so."""
    cfg = tmp_path / "small.toml"
    cfg.write_text(SMALL_SPINE)
    out = tmp_path / "area"
    assert main(["report", "area", "-b", "spine", "-c", str(cfg), "--json", "-o", str(out)]) == 0
    result = json.loads(capsys.readouterr().out)
    top = result["spine"]
    assert top["module"] == "gse_spine" and top["method"] == "by parts"
    parts, glue = top["parts"], top["glue"]
    # 2 ports: 2 parsers, 2 x 2 data queues, ...; identical instances share one synthesis
    assert any(len(p["instances"]) > 1 for p in parts)
    paths = [i for p in parts for i in p["instances"]]
    assert len(paths) == len(set(paths)) and {"parser_0", "parser_1", "data_buf_1_0"} <= set(paths)
    for k in FIGURES:
        assert top[k] == glue[k] + sum(len(p["instances"]) * p[k] for p in parts), k
    for f in (glue, *parts):
        assert set(f["gates"]) <= {"$_NAND_", "$_NOR_", "$_NOT_", "$_DFF_P_"}
        assert f["cells"] == sum(f["gates"].values())
    assert top["cells"] == sum(top["gates"].values()) and top["flip_flops"] == top["gates"]["$_DFF_P_"]
    # every memory is a macro, counted once where it sits: 2 x 2 data queues, 2 control
    # queues, 2 input stores
    assert top["memory_bits"] == sum(int(d) * int(w) for d, w in _shapes(top["memories"]))
    where = sorted(m.split("(")[1].split("_")[0] for m in top["memories"])
    assert where == ["ctl", "ctl", "data", "data", "data", "data", "pause", "pause"]
    # the CPU it took (this process and Yosys): about 18 s on the shared machine
    assert top["cpu_seconds"] > 0 and top["wall_seconds"] > 0
    # the table: its columns, the top's row and the sum it is
    table = format_area(result)
    head = table.splitlines()[0].split()
    assert head == ["block", "module", "synthesis", "cells", "flip-flops", "transistors", "memory", "bits"]
    row = next(line.split() for line in table.splitlines() if line.startswith("spine "))
    assert row[1:] == ["gse_spine", "by", "parts", *(str(top[k]) for k in FIGURES)]
    assert f"= {top['cells']}" in table and "glue" in table
    md = markdown_table(result)
    assert md.splitlines()[0].startswith("| block | module | synthesis | cells |")


def _shapes(memories):
    # "gse_sram_1r1w_32x73 (data_buf_0_0.ram)" -> ("32", "73")
    for m in memories:
        yield m.split()[0].rsplit("_", 1)[1].split("x")
