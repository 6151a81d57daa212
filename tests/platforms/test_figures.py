"""The README's figures table is generated from docs/figures.json and cannot drift
from it (issue 18 item 6)."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from opengse.sim import figures as fg
from opengse.sim.benchmark import no_pnr_figures

ROOT = Path(__file__).resolve().parents[2]
GSE = str(Path(sys.executable).parent / "gse")


def _doc():
    return fg.load(ROOT / "docs" / "figures.json")


def test_readme_table_is_the_rendering_of_the_committed_figures():
    readme = (ROOT / "README.md").read_text()
    assert fg.update_readme(readme, _doc()) == readme, (
        "README.md's figures table differs from docs/figures.json: run `gse figures --write`"
    )


def test_every_row_has_a_source_and_every_block_a_row():
    doc = _doc()
    assert set(doc["rows"]) == set(fg.ROWS)
    assert all(entry["source"] for entry in doc["rows"].values())


def test_unmeasured_fmax_renders_as_not_measured():
    doc = _doc()
    doc["rows"]["tagger"]["figures"].update(fmax_mhz=None, fmax_timeouts=[1, 2, 3])
    doc["rows"]["parser"]["figures"].update(fmax_mhz=None)
    table = fg.render_table(doc)
    assert (
        "| tagger (64-bit) | 1.0 beat/clock, all sizes, 64 and 256 bit | not measured "
        "(place-and-route timed out: seeds 1, 2, 3) |" in table
    )
    assert "| parser (64-bit, strip) | 1.0 beat/clock, all sizes, 64 and 256 bit | not measured |" in table


def test_a_miss_is_marked():
    doc = _doc()
    doc["rows"]["sprayer"]["figures"].update(fmax_mhz=150.0, fmax_seeds_mhz=[150.0, 151.0, 149.0])
    assert "**150.0 MHz (seeds 150.0 / 151.0 / 149.0), misses by 4.0 %**" in fg.render_table(doc)


def test_markers_are_required():
    with pytest.raises(ValueError, match="figures markers"):
        fg.update_readme("# no table here\n", _doc())


def test_merge_dgsq_bench_no_pnr():
    """A `gse bench dgsq --no-pnr` output replaces the DGSQ rows' ECP5 figures with
    "not measured", keeps the manager's descriptor rate (which the bench does not
    measure) and drops the old seed remark."""
    doc = copy.deepcopy(_doc())
    bench = {
        "decisions_per_clock": 1.0,
        "decisions_per_clock_sustained": 0.5495,
        "arbiter": no_pnr_figures(),
        "manager": no_pnr_figures(),
    }
    assert fg.merge(doc, "grant_arbiter", bench, "test run") == ["dgsq_manager", "grant_arbiter"]
    arb, man = doc["rows"]["grant_arbiter"], doc["rows"]["dgsq_manager"]
    assert arb["source"] == "test run" and "fmax_remark" not in arb["figures"]
    assert arb["figures"]["fmax_mhz"] is None and arb["figures"]["decisions_per_clock_sustained"] == 0.5495
    assert man["figures"]["descriptors_per_clock"] == 0.295
    assert man["source"].startswith("test run; descriptors_per_clock from before (")
    table = fg.render_table(doc)
    assert (
        "| grant_arbiter (64 requesters) | 1.0 decisions/clock (burst), 0.5495 sustained | "
        "not measured | not measured |" in table
    )


def test_cli_check_write_and_update(tmp_path):
    figs, readme = tmp_path / "figures.json", tmp_path / "README.md"
    figs.write_text((ROOT / "docs" / "figures.json").read_text())
    readme.write_text(f"# x\n\n{fg.BEGIN}\n| stale |\n{fg.END}\n\nafter\n")

    def run(*a):
        return subprocess.run(
            [GSE, "figures", "--figures", str(figs), "--readme", str(readme), *a],
            capture_output=True,
            text=True,
        )

    proc = run("--check")
    assert proc.returncode == 1 and "differs" in proc.stderr
    assert run("--write").returncode == 0
    assert run("--check").returncode == 0
    assert readme.read_text().endswith(f"{fg.END}\n\nafter\n")
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"beats_per_clock": 1.0, **no_pnr_figures()}))
    proc = run("--update", "tagger", "--bench-json", str(bench))
    assert proc.returncode == 0, proc.stderr
    row = json.loads(figs.read_text())["rows"]["tagger"]
    assert (
        row["figures"]["fmax_mhz"] is None
        and "`gse bench tagger --json --no-pnr` (its saved output) at commit" in row["source"]
    )
    proc = run("--check")
    assert proc.returncode == 1  # the table now lags the figures until --write


def test_cli_bad_figures_file_one_line(tmp_path):
    bad = tmp_path / "figures.json"
    bad.write_text("{}")
    proc = subprocess.run([GSE, "figures", "--figures", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [f'gse: error: {bad}: no "rows" object']


def test_cli_bench_json_needs_update():
    proc = subprocess.run([GSE, "figures", "--bench-json", "x.json"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "gse: error: --bench-json needs --update BLOCK"
