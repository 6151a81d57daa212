"""opengse.sim.timings: the CPU ranking of build/sim/timings.jsonl."""

import json

from opengse.sim import timings

T1, T2 = "tests/a/test_x.py::t1", "tests/b/test_y.py::t2"
ROWS = [
    {"test": T1, "dir": "blk-1", "phase": "export", "wall": 5, "cpu": 3.0, "child_cpu": 1.0},
    {"test": T1, "dir": "blk-1", "phase": "build", "wall": 9, "cpu": 0.0, "child_cpu": 8.0},
    {"test": T1, "dir": "blk-1", "phase": "run", "wall": 4, "cpu": 0.0, "child_cpu": 2.0},
    {"test": T1, "dir": "", "phase": "test", "wall": 20, "cpu": 4.0, "child_cpu": 11.0},
    {"test": T2, "dir": "blk-1", "phase": "run", "wall": 3, "cpu": 0.0, "child_cpu": 2.5},
    {"test": T2, "dir": "", "phase": "test", "wall": 4, "cpu": 0.1, "child_cpu": 2.6},
]


def test_per_test_sums_each_phase_and_the_rest():
    t = timings.per_key(ROWS, "test")[T1]
    assert (t["export_self"], t["export_child"], t["build"], t["run"], t["test"]) == (3, 1, 8, 2, 15)
    assert t["wall"] == 20


def test_per_dir_and_per_folder():
    d = timings.per_key(ROWS, "dir")["blk-1"]
    assert (d["build"], d["run"]) == (8, 4.5)
    f = timings.per_key(ROWS, "folder")
    assert set(f) == {"tests/a", "tests/b"}


def test_render_ranks_by_total_cpu_with_the_rest_summed(tmp_path):
    path = tmp_path / "timings.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS) + "not json\n")
    text = timings.render(timings.load([path]), "test", top=1)
    lines = text.splitlines()
    assert lines[2].startswith("| `tests/a/test_x.py::t1` | 4 (3 + 1) | 8 | 2 | 1 | 15 | 20 |"), lines[2]
    assert lines[3].startswith("| 1 more |") and lines[3].endswith("| 3 | 4 |"), lines[3]
    assert lines[4].startswith("| all (2) |") and "| 18 |" in lines[4], lines[4]
