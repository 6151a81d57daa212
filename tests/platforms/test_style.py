"""Style: ruff's lint and format check on the project's Python (config in
pyproject.toml, [tool.ruff])."""

import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
RUFF = str(Path(sys.executable).parent / "ruff")
PATHS = ["rtl", "sim", "platforms", "firmware", "tests"]


def test_ruff_check():
    proc = subprocess.run([RUFF, "check", *PATHS], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_check():
    proc = subprocess.run([RUFF, "format", "--check", *PATHS], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
