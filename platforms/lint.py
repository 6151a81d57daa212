"""``verilator --lint-only -Wall`` on exported Verilog, with the repo's justified waivers."""

import subprocess
from pathlib import Path

from .export import WAIVERS
from .tools import tool_env

__all__ = ["WAIVERS", "lint"]


def lint(verilog_paths, top):
    """Return ``(ok, output)``: ok when Verilator prints no warning at all. The waivers
    are the ones shipped with the export (``<top>.vlt`` beside one of the files, as
    written by the export), or the repo's whole :data:`WAIVERS` when there is none."""
    tool_env()
    shipped = [Path(p).parent / f"{top}.vlt" for p in verilog_paths]
    waivers = next((w for w in shipped if w.exists()), WAIVERS)
    cmd = ["verilator", "--lint-only", "-Wall", "--top-module", top, str(waivers), *map(str, verilog_paths)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    out = (proc.stdout + proc.stderr).strip()
    return proc.returncode == 0 and "%Warning" not in out, out
