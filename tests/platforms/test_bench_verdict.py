"""Bench verdicts are honest: "meets the targets" only when every target figure was
measured and met (issue 18 item 6). The benches run with their simulations replaced
by fixed figures, so each verdict path is checked without minutes of simulation;
`gse bench parser --no-pnr --json` in test_cli.py checks one end to end."""

import pytest

from opengse.sim import bench_dgsq, bench_header, bench_voq
from opengse.sim.benchmark import Target, fmax_target, no_pnr_figures, verdict


def _pnr(fmax, seeds=(1, 2, 3), timeouts=()):
    return {
        "fmax_mhz": fmax,
        "fmax_timeouts": list(timeouts),
        "seeds": list(seeds),
        "luts": 10,
        "ffs": 10,
        "brams": 0,
    }


def test_verdict_all_measured_and_met():
    assert verdict([Target("rate", 1.0, 1.0), fmax_target("Fmax", _pnr(160.0))]) == (
        "meets the targets",
        True,
    )


def test_verdict_not_measured_is_not_met():
    note, ok = verdict([Target("rate", 1.0, 1.0), fmax_target("Fmax", no_pnr_figures())])
    assert ok is None
    assert note == "targets not verified: Fmax not measured (place-and-route skipped: --no-pnr)"


def test_verdict_timeout_is_not_measured():
    note, ok = verdict([fmax_target("Fmax", _pnr(None, timeouts=(1, 2, 3)))])
    assert ok is None and "Fmax not measured (place-and-route timed out on seeds 1, 2, 3)" in note


def test_verdict_partial_seeds_are_not_verified():
    note, ok = verdict([fmax_target("Fmax", _pnr(170.0, timeouts=(3,)))])
    assert ok is None
    assert note == (
        "targets not verified: Fmax 170 from an incomplete run (median of seeds 1, 2 only: seeds 3 timed out)"
    )


def test_verdict_miss_wins_and_lists_the_unmeasured_too():
    note, ok = verdict(
        [
            Target("rate", 0.988, 1.0),
            Target("balance", 9000, 8000, least=False),
            fmax_target("Fmax", no_pnr_figures()),
        ]
    )
    assert ok is False
    assert note.startswith("misses the targets: rate 0.988 < 1; balance 9000 > 8000; Fmax not measured")


def _fake_rate(burst):
    return {"decisions_per_clock_burst": burst, "decisions_per_clock_sustained": 0.55}


@pytest.mark.parametrize("burst", [1.0, 0.9])
def test_bench_dgsq_no_pnr_never_meets_the_targets(monkeypatch, burst):
    """The bug of issue 18: `gse bench dgsq --no-pnr` said "meets the targets"."""
    monkeypatch.setattr(bench_dgsq, "decision_rate", lambda: _fake_rate(burst))
    fig = bench_dgsq.bench(pnr=False)
    assert "meets the targets" not in fig["note"]
    assert "arbiter Fmax (MHz) not measured (place-and-route skipped: --no-pnr)" in fig["note"]
    assert "manager Fmax (MHz) not measured" in fig["note"]
    assert fig["meets_targets"] is (None if burst == 1.0 else False)


@pytest.mark.parametrize(
    "arbiter, manager, ok",
    [
        (_pnr(163.1), _pnr(194.3), True),
        (_pnr(150.0), _pnr(194.3), False),
        (_pnr(None, timeouts=(1, 2, 3)), _pnr(194.3), None),
    ],
)
def test_bench_dgsq_with_pnr(monkeypatch, arbiter, manager, ok):
    monkeypatch.setattr(bench_dgsq, "decision_rate", lambda: _fake_rate(1.0))
    figs = {"grant_arbiter": arbiter, "dgsq_manager": manager}
    monkeypatch.setattr(bench_dgsq, "implement_block", lambda block, params, seeds: dict(figs[block]))
    fig = bench_dgsq.bench(pnr=True)
    assert fig["meets_targets"] is ok
    assert (fig["note"] == "meets the targets") is (ok is True)


def test_bench_voq_counts_the_64_byte_rate(monkeypatch):
    rates = {1500: (1.0, 1.0, 40), 64: (1.0, 0.988, 0)}
    monkeypatch.setattr(bench_voq, "measure_throughput", lambda size, **_kw: rates[size])
    monkeypatch.setattr(bench_voq, "implement_block", lambda *a, **k: _pnr(165.8))
    fig = bench_voq.bench(pnr=True)
    assert fig["meets_targets"] is False
    assert fig["note"] == "misses the targets: beats/clock out (64 B) 0.988 < 1"


def test_bench_header_no_pnr(monkeypatch):
    monkeypatch.setattr(bench_header, "measure", lambda block, w: {60: 1.0, 1500: 1.0})
    fig = bench_header.bench("tagger", pnr=False)
    assert fig["meets_targets"] is None and fig["note"].startswith("targets not verified: Fmax")
