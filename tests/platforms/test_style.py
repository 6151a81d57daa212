"""Style: ruff's lint and format check on the project's Python (config in
pyproject.toml, [tool.ruff])."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUFF = str(Path(sys.executable).parent / "ruff")
PATHS = ["rtl", "sim", "platforms", "firmware", "tests"]

# Until the lead runs `ruff format` and `ruff check --fix` on main (after merging the
# helpers that edit these files now), the tree does not pass: 69 files to reformat and
# 40 lint findings, of which format and --fix leave 9 for a hand fix (6 unused locals,
# 3 long lines in docstrings, comments or strings). Then remove this mark.
PENDING = pytest.mark.xfail(strict=False, reason="tree not yet formatted and fixed with ruff (see docstring)")


@PENDING
def test_ruff_check():
    proc = subprocess.run([RUFF, "check", *PATHS], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@PENDING
def test_ruff_format_check():
    proc = subprocess.run([RUFF, "format", "--check", *PATHS], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
