"""The property table of docs/formal.md, from a ``gse formal --json`` run.

    .venv/bin/gse formal --json > run.json
    .venv/bin/python -m opengse.sim.formal.doc_table run.json [EXTRA.json ...] > table.md

One row per registered property, in registry order. ``measured`` is the result and
wall time of the first JSON file (later ones: single runs of the slow properties,
``gse formal NAME --json``) that ran it; a property none of them ran keeps the
``measured`` cell of the table already in docs/formal.md, or says ``not run``.
"""

import json
import re
import sys
from pathlib import Path

from ..properties import PROPERTIES

DOC = Path(__file__).resolve().parents[2] / "docs" / "formal.md"
HEAD = (
    "| property | block | mode | depth | regression | measured | asserts | assumes |\n"
    "|---|---|---|---|---|---|---|---|"
)


def _old_cells():
    cells = {}
    if DOC.exists():
        for line in DOC.read_text().splitlines():
            m = re.match(r"\| `([a-z0-9_]+)` \|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|", line)
            if m:
                cells[m.group(1)] = m.group(6).strip()
    return cells


def table(runs):
    measured = {}
    for rows in runs:
        for r in rows:
            if r["result"] != "SKIP" and r["name"] not in measured:
                measured[r["name"]] = f"{r['result']} {r['seconds']:.1f} s"
    old = _old_cells()
    out = [HEAD]
    for name, p in PROPERTIES.items():
        cell = measured.get(name) or old.get(name) or "not run"
        cell = cell.replace("|", "/")
        out.append(
            f"| `{name}` | {p.block} | {p.mode} | {p.depth} | {'fast' if p.fast else '--all'} | {cell} "
            f"| {p.asserts} | {p.assumptions} |"
        )
    return "\n".join(out)


def main(argv):
    if not argv:
        print("usage: python -m opengse.sim.formal.doc_table RUN.json [MORE.json ...]", file=sys.stderr)
        return 2
    runs = []
    for a in argv:
        try:
            runs.append(json.loads(Path(a).read_text()))
        except (OSError, ValueError) as e:
            print(f"{a}: {e}", file=sys.stderr)
            return 2
    print(table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
