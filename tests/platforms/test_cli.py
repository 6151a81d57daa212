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
    of its own, `gse bench parser --json`)."""
    proc = gse("bench", "parser", "--no-pnr", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) >= {"beats_per_clock", "fmax_mhz", "luts", "ffs", "brams"}
    assert doc["fmax_mhz"] is None
    # No Fmax measured: the verdict cannot be "meets the targets".
    assert doc["meets_targets"] is not True and "meets the targets" not in doc["note"]
    assert "Fmax (MHz, 64-bit) not measured" in doc["note"]
    by_size = doc["beats_per_clock_by_size"]
    assert set(by_size) == {"64", "256"}
    assert set(by_size["64"]) == {"60", "64", "65", "1500", "9000"}
    assert doc["beats_per_clock"] == min(min(v.values()) for v in by_size.values())
