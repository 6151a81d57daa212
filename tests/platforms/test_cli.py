"""The ``gse`` command line: exports work, bad input gets one line and a non-zero exit."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

GSE = [str(Path(sys.executable).parent / "gse")]


def gse(*args):
    return subprocess.run(GSE + list(args), capture_output=True, text=True)


@pytest.mark.parametrize(
    "args",
    [
        ["export", "nosuchblock", "-o", "x"],
        ["export", "parser", "-p", "data_width=7", "-o", "x"],
        ["export", "parser", "-p", "strip=2", "-o", "x"],
        ["export", "parser", "-p", "nosuch=1", "-o", "x"],
        ["export", "parser", "-p", "data_width", "-o", "x"],
        ["export", "parser", "-p", "data_width=sixty", "-o", "x"],
        ["export", "parser"],
        ["bench", "nosuchblock"],
        ["bench", "parser", "--seeds", "a,b"],
        ["frobnicate"],
    ],
)
def test_bad_input_one_line(args, tmp_path):
    proc = subprocess.run(GSE + args, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gse: error:"), proc.stderr


def test_export_parser(tmp_path):
    proc = gse("export", "parser", "-p", "data_width=64", "-p", "strip=1", "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "gse_parser.json").read_text())
    assert doc["parameters"]["data_width"] == 64 and doc["parameters"]["strip"] == 1
    assert (tmp_path / "gse_parser.v").read_text().count("module gse_parser(") == 1


def test_blocks_lists_header_blocks():
    proc = gse("blocks")
    assert proc.returncode == 0
    assert "gse_parser" in proc.stdout and "gse_tagger" in proc.stdout


def test_bench_smoke():
    """The bench command runs end to end (simulation only; the ECP5 flow is a command
    of its own, `gse bench parser --json`). On the fabric link, whose bench simulates
    nothing (its line rate is a constant), so the command takes seconds; the header
    bench's throughput is checked by ``test_header_bench_throughput``."""
    proc = gse("bench", "fabric_link", "--no-pnr", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) >= {"beats_per_clock", "fmax_mhz", "luts", "ffs", "brams", "note", "meets_targets"}
    assert doc["fmax_mhz"] is None and doc["luts"] is None
    # No Fmax measured: the verdict cannot be "meets the targets".
    assert doc["meets_targets"] is not True and "meets the targets" not in doc["note"]
    assert "Fmax (MHz) not measured" in doc["note"]


def test_header_bench_throughput():
    """``gse bench parser``'s throughput (Amaranth's simulator, back-to-back frames):
    line rate at both widths for the short sizes and 1500 B. The 9000 B frames of
    :data:`BENCH_SIZES` (most of the command's minute of Python simulation) run in
    ``gse bench`` / ``gse run`` only; the Verilator benches' line-rate tests send up to
    1500 B too."""
    from opengse.sim.bench_header import BENCH_SIZES, BENCH_WIDTHS, measure

    sizes = tuple(s for s in BENCH_SIZES if s <= 1500)
    assert sizes == (60, 64, 65, 1500) and BENCH_WIDTHS == (64, 256)
    for width in BENCH_WIDTHS:
        got = measure("parser", width, sizes=sizes)
        assert set(got) == set(sizes)
        assert all(v == 1.0 for v in got.values()), (width, got)
