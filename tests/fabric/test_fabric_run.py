"""Short runs of a small fabric (2 leaves x 2 spines, 2 hosts a leaf) with asserted
thresholds: GSE mode, ECMP mode, and one uplink failed mid-run.

Each mode is built once (cached under build/fabric) and each run is a few tens of
thousands of clocks: minutes at most. The figures a short run can promise are lower
than the benchmark's targets (warm-up and window are short); the thresholds below say
what each run must show.

All three are marked slow (``make test-slow``): a fabric build takes 7-25 minutes on a
2-core machine, too long for the default regression. The GSE run reached 0.517 with
`max_inflight` 2, 0.71 with 6, and 0.929 once the sprayers of a leaf stopped sharing an
uplink while another idled (docs/leaf.md, "Keeping a flow at line rate").
The default regression exercises the same runner and C++ main through
tests/fabric/test_direct.py and test_harness.py.
"""

import pytest

from opengse.sim.fabric.benchmark import build_fabric, run_once
from opengse.sim.fabric.config import FailUplink, RunConfig
from opengse.sim.fabric.top import FabricShape

SHAPE = FabricShape(leaves=2, spines=2, hosts=2, delay=100)
RUN = dict(pattern="inter-leaf", frame_bytes=1500, cycles=60_000, warmup=20_000, sample=2_000)


def _run(lb, tmp_path, **kw):
    model = build_fabric(SHAPE, lb)
    return run_once(model, SHAPE, lb, RunConfig(**{**RUN, **kw}), tmp_path / lb, timeout=900)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_gse_inter_leaf_permutation(tmp_path):
    r = _run("gse", tmp_path)
    assert r["drops"] == 0, r["drops_by_counter"]
    assert r["refused_beats"] == 0
    assert (r["lost"], r["reordered"], r["corrupt"]) == (0, 0, 0)
    assert r["effective_throughput"] >= 0.90, r["effective_throughput"]
    assert r["effective_throughput"] <= r["overhead_limit"] + 0.005
    assert 0.9 < r["overhead_limit"] < 1.0
    assert abs(r["halves"][0] - r["halves"][1]) < 0.02
    assert r["p99_latency_cycles"] is not None and r["p99_latency_cycles"] > 2 * SHAPE.delay


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_ecmp_is_lossless_and_in_order(tmp_path):
    r = _run("ecmp", tmp_path)
    assert r["drops"] == 0, r["drops_by_counter"]
    assert r["refused_beats"] == 0
    assert (r["lost"], r["reordered"], r["corrupt"]) == (0, 0, 0)
    # pushed traffic with no spraying: some throughput, never above the limit
    assert 0.2 < r["effective_throughput"] <= r["overhead_limit"] + 0.005
    assert r["control_share"] < 0.02  # no REQUEST/GRANT in ECMP mode (PROBEs only)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.xfail(
    strict=True,
    reason="at 0.94 of line rate (796effb) the failed link loses 6 data frames (the containers in "
    "progress) plus a PROBE per 1024 clocks after the failure (31 in all), and the destination's "
    "reorder buffer drops 35 more frames (counted, drop_window) while it waits out its 32768-clock "
    "timeout for the lost container; docs/leaf.md",
)
def test_gse_uplink_failure_loses_only_frames_in_flight(tmp_path):
    r = _run("gse", tmp_path, fail_uplinks=[FailUplink(0, 1, 30_000)])
    lost_on_link = r["drops_by_counter"].get("fab_up0_1.stat_frames_lost", 0)
    # frames in flight on the failed link: its delay holds < 1 frame of 190 beats, plus
    # the one being cut, and what the leaf sends before link_up reaches the sprayer
    assert 1 <= lost_on_link <= 4, r["drops_by_counter"]
    # every frame the checkers miss is one the link lost (counted, nothing silent)
    assert r["lost"] <= lost_on_link
    assert r["corrupt"] == 0 and r["refused_beats"] == 0
    # traffic continues on the other uplink: 2 uplinks of leaf 0, one left for its hosts
    assert r["halves"][1] >= 0.40, r["halves"]
