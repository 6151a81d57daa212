"""``verilator --lint-only -Wall`` on exported Verilog, with the repo's justified waivers."""
import subprocess

from .export import WAIVERS
from .tools import tool_env

__all__ = ["WAIVERS", "lint"]


def lint(verilog_paths, top):
    """Return ``(ok, output)``: ok when Verilator prints no warning at all."""
    tool_env()
    cmd = ["verilator", "--lint-only", "-Wall", "--top-module", top, str(WAIVERS),
           *map(str, verilog_paths)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    out = (proc.stdout + proc.stderr).strip()
    return proc.returncode == 0 and "%Warning" not in out, out
