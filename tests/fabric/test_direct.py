"""The fabric's run path on generators wired straight to checkers (direct_top.py):
configuration, sampling, read-out and measurement give the closed-form figures."""

import pytest
from direct_top import DirectTop

from opengse.sim.fabric.config import RunConfig, Writes
from opengse.sim.fabric.measure import Counters, measure
from opengse.sim.fabric.runner import build_model, run_model
from opengse.sim.fabric.top import FabricShape
from opengse.sim.fabric.traffic import ROLES, generator_writes, readouts

SHAPE = FabricShape(leaves=2, spines=2, hosts=2, delay=100)


def _tables_to_next(shape):
    # the wiring sends host n's frames to host n + 1: give each generator that table

    return lambda pattern, s, flows: ([[(n + 1) % s.n_hosts] * flows for n in range(s.n_hosts)], False)


@pytest.mark.parametrize("frame", [1500, 61])
def test_direct_links_reach_the_closed_form(tmp_path, monkeypatch, frame):
    import opengse.sim.fabric.traffic as traffic

    monkeypatch.setattr(traffic, "pattern_tables", _tables_to_next(SHAPE))
    model = build_model("direct", SHAPE.as_dict(), lambda: (DirectTop(SHAPE), {}))
    run = RunConfig(frame_bytes=frame, cycles=30_000, warmup=5_000, sample=1_000, flows_per_dst=2)
    w = Writes(model.address_map)
    generator_writes(w, SHAPE, run)
    start = w.done_at(lambda name: name.endswith(".enable"))
    text = f"cycles {start + run.cycles}\nsample {run.sample}\nreset 16\n" + w.text()
    text += readouts(model.address_map, SHAPE)
    out = run_model(model, text, tmp_path, timeout=300)
    cn = Counters(out, model.address_map)
    hist = [sum(row) for row in out.readouts[0]]
    r = measure(cn, SHAPE, start, run.warmup, ROLES, histogram=hist)
    closed = frame / (-(-frame // 8) * 8)
    # a checker counts whole frames: the window's edges cut one frame per host at most
    edge = frame / (8 * r["window_clocks"])
    assert r["effective_throughput"] == pytest.approx(closed, abs=edge)
    assert r["overhead_limit"] == pytest.approx(closed, abs=edge)
    assert r["halves"][0] == pytest.approx(r["halves"][1], abs=4 * edge)
    assert (r["lost"], r["reordered"], r["corrupt"], r["duplicate"], r["foreign"], r["bad"]) == (0,) * 6
    assert r["drops"] == 0 and r["refused_beats"] == 0
    # every latency is the link's delay plus a clock or two: all in the bin of 96..127
    assert r["p50_latency_cycles"] == r["p99_latency_cycles"] == 128
    # the histograms are read after the last sample while traffic goes on (1024 bins,
    # 7 clocks each): they hold every frame counted by then and at most that many more
    good = sum(cn.at(f"chk{n}.stat_good_frames", -1) for n in range(SHAPE.n_hosts))
    assert good <= sum(hist) <= good + SHAPE.n_hosts * (7 * 1024 // (-(-frame // 8)) + 1)
