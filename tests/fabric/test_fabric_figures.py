"""docs/fabric.md's tables are the rendering of docs/fabric-figures.json, and their
verdicts are computed from the figures (no model is built or run here)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from opengse.sim.fabric import figures as ff

ROOT = Path(__file__).resolve().parents[2]
GSE = [str(Path(sys.executable).parent / "gse")]


def _doc():
    return ff.load(ROOT / "docs" / "fabric-figures.json")


def test_doc_tables_are_the_rendering_of_the_recorded_figures():
    text = (ROOT / "docs" / "fabric.md").read_text()
    assert ff.update_doc(text, _doc()) == text, (
        "docs/fabric.md's fabric tables differ from docs/fabric-figures.json: run `gse fabric --write-doc`"
    )


def test_every_scenario_names_its_command_and_commit():
    doc = _doc()
    assert doc["scenarios"], "no recorded scenario"
    for name, entry in doc["scenarios"].items():
        assert entry["command"].startswith("gse fabric "), name
        assert entry["commit"] and entry["commit"] != "unknown", name
        assert entry["results"], name


def _result(mode="gse", **kw):
    r = {
        "mode": mode,
        "shape": {"L": 2, "S": 2, "H": 2, "delay": 100, "w": 64},
        "pattern": "inter-leaf",
        "frame_bytes": 1500,
        "tenants": 1,
        "cycles": 160000,
        "warmup": 40000,
        "control_loss": 0.0,
        "fail_uplinks": [],
        "effective_throughput": 0.96,
        "overhead_limit": 0.965,
        "halves": [0.96, 0.96],
        "drops": 0,
        "refused_beats": 0,
        "lost": 0,
        "reordered": 0,
    }
    r.update(kw)
    return r


def test_verdicts_follow_the_figures():
    doc = {"scenarios": {}}
    ff.record(doc, "a", {"gse": _result()}, "abc1234")
    (v_eff, eff), (_, lim), (_, drops) = ff.scenario_verdicts(doc, doc["scenarios"]["a"])
    assert eff == "pass" and lim.startswith("pass") and drops == "pass"
    ff.record(doc, "b", {"gse": _result(effective_throughput=0.94, drops=3)}, "abc1234")
    v = dict(ff.scenario_verdicts(doc, doc["scenarios"]["b"]))
    assert v["effective throughput >= 0.95"] == "MISS by 1.00 points"
    assert v["zero drops"].startswith("MISS (3 frames")
    ff.record(doc, "c", {"gse": _result(effective_throughput=None)}, "abc1234")
    assert dict(ff.scenario_verdicts(doc, doc["scenarios"]["c"]))["effective throughput >= 0.95"] == (
        "not measured"
    )


def test_tenant_verdicts_compare_with_the_single_tenant_twin():
    doc = {"scenarios": {}}
    pt = [
        {"tenant": t, "hosts": 1, "throughput": 0.9, "share": s, "fair_share": 0.25}
        for t, s in enumerate((0.25, 0.25, 0.26, 0.24))
    ]
    ff.record(doc, "t4", {"gse": _result(tenants=4, effective_throughput=0.93, per_tenant=pt)}, "x")
    v = dict(ff.scenario_verdicts(doc, doc["scenarios"]["t4"]))
    assert v["aggregate within 2% of single-tenant"] == "not measured"  # no twin yet
    assert v["each tenant within 2% of its share"].startswith("MISS (worst 4.00%")
    ff.record(doc, "one", {"gse": _result(effective_throughput=0.94)}, "x")
    v = dict(ff.scenario_verdicts(doc, doc["scenarios"]["t4"]))
    assert v["aggregate within 2% of single-tenant"].startswith("pass (-1.06%")


def test_incast_verdicts_name_where_queues_grew():
    doc = {"scenarios": {}}
    r = _result(
        pattern="incast",
        host_egress_util=[0.97, 0.0, 0.0, 0.0],
        senders=[1, 2, 3],
        peak_voq_by_port={"leaf0.h0": 5, "leaf0.h1": 40, "leaf1.h0": 40, "leaf1.h1": 40},
    )
    ff.record(doc, "i", {"gse": r}, "x")
    v = dict(ff.scenario_verdicts(doc, doc["scenarios"]["i"]))
    assert v["egress port >= 95% busy"].startswith("pass (host 0's port 97.00%")
    assert v["VOQ growth only at the sources"] == "MISS (also at leaf0.h0)"


def test_missing_target_rows_read_not_measured():
    doc = {"scenarios": {}}
    ff.record(doc, "a", {"gse": _result()}, "x")
    table = ff.render_tables(doc)
    for what in ("4 tenants at equal weights", "incast N:1", "1e-3 control-frame loss"):
        row = next(line for line in table.splitlines() if what in line)
        assert "not measured" in row


def test_record_replaces_and_the_command_reproduces_the_run():
    doc = {"scenarios": {}}
    res = {"gse": _result(), "ecmp": _result("ecmp", hash_seeds=4)}
    entry = ff.record(doc, "s", res, "x")
    assert entry["command"] == (
        "gse fabric --leaves 2 --spines 2 --hosts 2 --delay 100 --lb both --pattern inter-leaf "
        "--frame-bytes 1500 --cycles 160000 --warmup 40000 --hash-seeds 4 --json"
    )
    ff.record(doc, "s", {"gse": _result(effective_throughput=0.5)}, "y")
    assert doc["scenarios"]["s"]["commit"] == "y" and set(doc["scenarios"]["s"]["results"]) == {"gse"}


def _fabric(*argv):
    """``gse fabric ARGV`` in this process (the parser and ``run`` the CLI uses)."""
    import argparse

    from opengse.sim.fabric import command

    p = argparse.ArgumentParser()
    command.add_arguments(p)
    return command.run(p.parse_args(list(argv)))


def test_command_records_a_saved_json_and_checks_the_doc(tmp_path, capsys):
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(_result()) + "\n" + json.dumps(_result("ecmp")) + "\n")
    figs, doc = tmp_path / "f.json", tmp_path / "d.md"
    doc.write_text(f"head\n{ff.BEGIN}\nold\n{ff.END}\ntail\n")
    base = ["--figures", str(figs), "--doc", str(doc)]
    assert _fabric(*base, "--check-doc") == 1
    assert _fabric(*base, "--record", "x", "--from-json", str(saved)) == 0
    assert _fabric(*base, "--write-doc") == 0
    text = doc.read_text()
    assert text.startswith("head\n") and text.endswith("tail\n") and "| x | 2x2x2 |" in text
    assert _fabric(*base, "--check-doc") == 0
    junk = tmp_path / "junk.json"
    junk.write_text("{not json\n")
    with pytest.raises(ValueError, match="not `gse fabric --json` output"):
        _fabric(*base, "--record", "y", "--from-json", str(junk))
    with pytest.raises(ValueError, match="needs --record"):
        _fabric(*base, "--from-json", str(saved))
    # through the command line: one line and exit status 2, no traceback
    bad = subprocess.run(
        GSE + ["fabric", *base, "--record", "y", "--from-json", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "missing.json" in bad.stderr


def test_tenant_split_from_per_host_figures():
    from opengse.sim.fabric.measure import tenant_figures

    tables = [[2], [3], [0], [1]]
    out = tenant_figures([0.9, 0.8, 0.9, 0.8], tables, 2)
    assert [round(t["share"], 4) for t in out] == [round(0.9 * 2 / 3.4, 4), round(0.8 * 2 / 3.4, 4)]
    assert [t["fair_share"] for t in out] == [0.5, 0.5]
    assert tenant_figures([0.5, 0.5, 0.5, 0.5], [[1], [0], [0], [1]], 2) is None  # mixed receivers
    # the checkers' own per-tenant bytes split mixed receivers too
    mixed = tenant_figures([0.5, 0.5, 0.5, 0.5], [[1], [0], [0], [1]], 2, [1.5, 0.5])
    assert [t["share"] for t in mixed] == [0.75, 0.25]


def test_counter_unwrap_tells_a_wrap_from_a_counter_going_down():
    from types import SimpleNamespace

    from opengse.sim.fabric.measure import Counters

    samples = [(c, [v, w]) for c, v, w in ((0, 10, 0), (1, 2**32 - 5, 7), (2, 3, 5), (3, 8, 9))]
    out = SimpleNamespace(names=["chk0.stat_lost", "chk0.stat_bytes"], samples=samples)
    amap = {"stats": [{"name": "chk0.stat_lost", "width": 32}, {"name": "chk0.stat_bytes", "width": 32}]}
    cn = Counters(out, amap)
    assert cn.col("chk0.stat_lost") == [10, 2**32 - 5, 2**32 + 3, 2**32 + 8]  # one wrap
    assert cn.col("chk0.stat_bytes") == [0, 7, 5, 9]  # went down by 2: no wrap


def test_failure_verdict_names_loss_beyond_the_failed_link():
    doc = {"scenarios": {}}
    by = {"fab_up0_1.stat_frames_lost": 51, "spine1.stat_drop_bad_1": 1}
    ff.record(
        doc, "f", {"gse": _result(fail_uplinks=["0:1@50000"], drops=52, lost=2, drops_by_counter=by)}, "x"
    )
    v = dict(ff.scenario_verdicts(doc, doc["scenarios"]["f"]))
    key = "loss limited to frames in flight on the failed link, counted"
    assert v[key].startswith("pass (52 on the link, PROBEs included")
    # the destination's skip of the lost head counts the same loss again: still a pass
    by1 = {**by, "leaf1.h0_out_ro_stat_lost": 1}
    ff.record(
        doc, "s", {"gse": _result(fail_uplinks=["0:1@50000"], drops=53, lost=2, drops_by_counter=by1)}, "x"
    )
    v = dict(ff.scenario_verdicts(doc, doc["scenarios"]["s"]))
    assert (
        v[key]
        == "pass (52 on the link, PROBEs included; heads skipped at the destination 1; checkers miss 2)"
    )
    by2 = {**by, "leaf1.h0_out_ro_stat_drop_window": 76}
    ff.record(
        doc, "g", {"gse": _result(fail_uplinks=["0:1@50000"], drops=128, lost=2, drops_by_counter=by2)}, "x"
    )
    v = dict(ff.scenario_verdicts(doc, doc["scenarios"]["g"]))
    assert v[key].startswith(
        "MISS (52 on the link, PROBEs included; also leaf1.h0_out_ro_stat_drop_window 76"
    )


def test_a_run_that_delivered_nothing_gives_json_nulls_not_a_crash():
    # a window with nothing delivered has NaN figures (overhead limit, latency); the
    # 8 KB uplink queues once dropped every 9000 B frame and `--json` then failed
    from opengse.sim.fabric.report import to_json

    r = _result(effective_throughput=0.0, overhead_limit=float("nan"))
    r["limit_by_links"] = {"uplinks": float("inf"), "downlinks": float("nan")}
    obj = json.loads(to_json({"gse": r}))
    assert obj["overhead_limit"] is None
    assert obj["limit_by_links"] == {"uplinks": None, "downlinks": None}
    doc = {}
    entry = ff.record(doc, "empty", {"gse": r}, "abc1234")
    assert entry["results"]["gse"]["overhead_limit"] is None
    json.dumps(doc, allow_nan=False)


def test_a_container_size_other_than_the_default_is_in_the_shape_and_the_command():
    from opengse.sim.fabric.top import FabricShape

    assert "container" not in FabricShape().as_dict()  # older records keep their shape
    shape = FabricShape(2, 2, 2, container_bytes=16384)
    assert shape.leaf_config().container_bytes == 16384
    r = _result(shape=shape.as_dict())
    assert "--container-bytes 16384" in ff.command_of({"gse": r})
    with pytest.raises(ValueError, match="power of two"):
        FabricShape(container_bytes=5000)
