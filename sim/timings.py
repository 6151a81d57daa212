"""Where a regression's CPU goes: tables from ``build/sim/timings.jsonl``.

Every export, Verilator build and cocotb run appends one JSON line there
(:func:`opengse.sim.runner.record_timing`), and ``tests/conftest.py`` one ``test`` line
per pytest test (its whole CPU: the test process and its children). This prints, in CPU
seconds (the process's own plus its children's), the ranking by test, by build
directory or by phase, as a Markdown table:

    python -m opengse.sim.timings [FILE ...] [--by test|dir|phase|folder] [--top N]

``export`` is split into the process's own CPU (Amaranth, and Yosys when it runs in the
process) and its children's; ``build`` is Verilator and g++ (children); ``run`` the
simulator with cocotb and the bench's Python; ``other`` what the test spent outside
those three (its Python, formal solvers, the CLI commands it runs). A file holding
several runs of one test is summed: give it the lines of one run."""

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

__all__ = ["load", "per_key", "render", "main"]

PHASES = ("export", "build", "run")


def load(paths):
    """The records of ``paths`` (JSON lines; a line that does not parse is skipped)."""
    rows = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def _cpu(row):
    return row.get("cpu", 0.0) + row.get("child_cpu", 0.0)


def per_key(rows, by="test"):
    """``{key: {"export_self", "export_child", "build", "run", "test", "wall", "n"}}``:
    CPU seconds summed per test (``by="test"``), per test folder, per build directory
    or per phase. ``test`` is the whole test's CPU (0 when no ``test`` line was
    recorded); ``wall`` the test's wall seconds (without a ``test`` line, its phases')."""
    out = defaultdict(lambda: defaultdict(float))
    for row in rows:
        phase = row.get("phase")
        if by == "phase":
            key = phase
        elif by == "dir":
            if phase == "test":
                continue
            key = row.get("dir", "")
        else:
            key = row.get("test", "") or "(outside a test)"
            if by == "folder":
                key = "/".join(key.split("::", 1)[0].split("/")[:2])
        acc = out[key]
        if phase == "export":
            acc["export_self"] += row.get("cpu", 0.0)
            acc["export_child"] += row.get("child_cpu", 0.0)
        elif phase in PHASES:
            acc[phase] += _cpu(row)
        elif phase == "test":
            acc["test"] += _cpu(row)
            acc["n"] += 1
        acc["wall" if phase == "test" or by in ("dir", "phase") else "phase_wall"] += row.get("wall", 0.0)
    for acc in out.values():
        if not acc["wall"]:
            acc["wall"] = acc["phase_wall"]
        acc.pop("phase_wall", None)
    return out


def _total(acc):
    phases = acc["export_self"] + acc["export_child"] + acc["build"] + acc["run"]
    return max(acc["test"], phases)


def render(rows, by="test", top=None):
    """The Markdown table of :func:`per_key`, highest total CPU first, with a sum row."""
    table = per_key(rows, by)
    keys = sorted(table, key=lambda k: -_total(table[k]))
    shown = keys[:top] if top else keys
    head = "| " + by + " | export CPU (own + children) | build CPU | run CPU | other CPU | total CPU | wall |"
    lines = [head, "|---|---|---|---|---|---|---|"]

    def fmt(name, acc):
        phases = acc["export_self"] + acc["export_child"] + acc["build"] + acc["run"]
        other = max(acc["test"] - phases, 0.0) if acc["test"] else 0.0
        export = acc["export_self"] + acc["export_child"]
        exp = f"{export:.0f} ({acc['export_self']:.0f} + {acc['export_child']:.0f})" if export >= 0.5 else ""
        cells = [exp] + [f"{acc[p]:.0f}" if acc[p] >= 0.5 else "" for p in ("build", "run")]
        cells.append(f"{other:.0f}" if other >= 0.5 else "")
        return f"| {name} | " + " | ".join(cells) + f" | {_total(acc):.0f} | {acc['wall']:.0f} |"

    for key in shown:
        lines.append(fmt(f"`{key}`", table[key]))
    rest = keys[len(shown) :]
    if rest:
        acc = defaultdict(float)
        for key in rest:
            for k, v in table[key].items():
                acc[k] += v
        lines.append(fmt(f"{len(rest)} more", acc))
    acc = defaultdict(float)
    for key in keys:
        for k, v in table[key].items():
            acc[k] += v
    lines.append(fmt(f"all ({len(keys)})", acc))
    return "\n".join(lines)


def main(argv=None):
    from .runner import BUILD_ROOT

    ap = argparse.ArgumentParser(prog="python -m opengse.sim.timings", description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="JSON-lines files (default: build/sim/timings.jsonl)")
    ap.add_argument("--by", choices=("test", "folder", "dir", "phase"), default="test")
    ap.add_argument("--top", type=int, default=None, help="the N highest rows, the rest summed in one")
    args = ap.parse_args(argv)
    files = args.files or [BUILD_ROOT / "sim" / "timings.jsonl"]
    missing = [str(f) for f in files if not Path(f).exists()]
    if missing:
        print(f"no timings file: {', '.join(missing)}", file=sys.stderr)
        return 1
    print(render(load(files), args.by, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
