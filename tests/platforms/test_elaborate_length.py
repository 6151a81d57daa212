"""Style: every ``elaborate()`` in rtl/ is at most about 200 lines (the founders' rule:
a long one is split into named sub-components or helper methods, each building one
part). Measured on the source as it is (the regression also checks it is ``ruff
format``-ed), from the first decorator or the ``def`` line to the last line of the body.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RTL = ROOT / "rtl"
MAX_LINES = 200


def elaborate_lengths(source, filename="<source>"):
    """``[(qualified name, first line, lines)]`` of every function called ``elaborate``
    in Python ``source`` (methods named with their class)."""
    tree = ast.parse(source, filename)
    found = []

    def visit(node, owner):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{owner}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if child.name == "elaborate":
                    first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    found.append((f"{owner}{child.name}", first, child.end_lineno - first + 1))
                visit(child, f"{owner}{child.name}.<locals>.")

    visit(tree, "")
    return found


def rtl_elaborates():
    rows = []
    for path in sorted(RTL.rglob("*.py")):
        for name, line, length in elaborate_lengths(path.read_text(), str(path)):
            rows.append((f"{path.relative_to(ROOT)}:{line} {name}", length))
    return rows


def test_rtl_has_elaborates():
    # The measurement sees the gateware (a wrong root or parser would pass vacuously).
    rows = rtl_elaborates()
    assert len(rows) >= 40, rows
    assert any("rtl/dgsq/arbiter/engine_lane.py" in where for where, _ in rows)


def test_every_elaborate_at_most_200_lines():
    long = [f"{where}: {length} lines" for where, length in rtl_elaborates() if length > MAX_LINES]
    assert not long, f"elaborate() longer than {MAX_LINES} lines (split it into named parts):\n" + "\n".join(
        long
    )


@pytest.mark.parametrize("body_lines,too_long", [(198, False), (199, True)])
def test_measure_counts_def_to_last_line(body_lines, too_long):
    # def line + docstring-less body: 1 + body_lines lines, nested in a class.
    body = "".join(f"        x{i} = {i}\n" for i in range(body_lines))
    source = f"class Top:\n    def elaborate(self, platform):\n{body}        return None\n"
    [(name, line, length)] = elaborate_lengths(source)
    assert (name, line, length) == ("Top.elaborate", 2, body_lines + 2)
    assert (length > MAX_LINES) == too_long
