"""``gse report area``: generic CMOS gate counts per block, memories as macros."""
import json

from opengse.firmware.cli import main


def test_report_area_json(tmp_path, capsys):
    assert main(["report", "area", "-b", "ctl_encoder", "-b", "sprayer", "--json",
                 "-o", str(tmp_path)]) == 0
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
