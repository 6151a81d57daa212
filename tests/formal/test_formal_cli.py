"""``gse formal``: it lists every property with its mode and depth, runs what it is
asked, reports each with result and wall time, and rejects an unknown name cleanly."""

import json
import subprocess
import sys
from pathlib import Path

from opengse.sim.properties import PROPERTIES

GSE = [str(Path(sys.executable).parent / "gse")]


def gse(*args):
    return subprocess.run(GSE + list(args), capture_output=True, text=True, timeout=900)


def test_list_names_every_property_with_its_depth():
    proc = gse("formal", "--list")
    assert proc.returncode == 0, proc.stderr
    for name, p in PROPERTIES.items():
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(name + " ")), None)
        assert line is not None, f"{name} not listed"
        assert f"{p.mode:5} depth {p.depth:3}" in line, line


def test_unknown_property_one_line():
    proc = gse("formal", "no_such_property")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no_such_property" in lines[0], proc.stderr


def test_run_one_property_json():
    proc = gse("formal", "link_monitor_leaves_healthy", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (row,) = json.loads(proc.stdout)
    assert row["result"] == "PASS" and row["mode"] == "prove" and row["depth"] == 40
    assert row["seconds"] > 0 and row["assumptions"]


def test_plain_run_skips_the_slow_ones(monkeypatch, capsys):
    """Without names or --all only the fast properties run; the others are rows with
    result SKIP. (The solver is replaced by a stub that records what it was asked: the
    real runs are test_formal_properties.py's.)"""
    import opengse.sim.properties as props
    from opengse.firmware import cli
    from opengse.sim.formal.runner import FormalResult

    ran = []

    def fake(prop, workdir, **kw):
        ran.append(prop.name)
        return FormalResult(True, "PASS", prop.mode, prop.depth, 0.1, Path(workdir), "")

    monkeypatch.setattr(props, "run_property", fake)
    assert cli.main(["formal", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(PROPERTIES)
    assert set(ran) == {n for n, p in PROPERTIES.items() if p.fast}
    assert all(rows[n]["result"] == "SKIP" for n, p in PROPERTIES.items() if not p.fast)
    ran.clear()
    assert cli.main(["formal", "--all", "--json"]) == 0
    assert set(ran) == set(PROPERTIES)


def test_failure_names_log_and_trace(monkeypatch, capsys, tmp_path):
    """A failing property makes the exit status 1 and prints where its log and
    counterexample trace are."""
    import opengse.sim.properties as props
    from opengse.firmware import cli
    from opengse.sim.formal.runner import FormalResult

    trace = tmp_path / "top" / "engine_0" / "trace.vcd"
    trace.parent.mkdir(parents=True)
    trace.write_text("")
    monkeypatch.setattr(
        props,
        "run_property",
        lambda prop, workdir, **kw: FormalResult(False, "FAIL", "bmc", 1, 0.1, tmp_path, ""),
    )
    assert cli.main(["formal", "parser_never_stalls"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL ") and str(trace) in out and "0/1 passed" in out
