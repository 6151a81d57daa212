"""The fabric benchmark: build the model of each mode, run the traffic, measure.

:func:`run_benchmark` is what ``gse fabric`` calls. GSE mode runs once; ECMP mode runs
once per hash seed (``hash_seeds``, default 8): seed k sets the generators' per-flow
UDP source ports and the switches' hash start value, so each seed lands the flows
differently, and the ECMP figures are the mean, min and max over the seeds. The GSE
run uses seed 1.

Runs of one built model are independent processes: ``jobs`` (default 2) of them run
at once (the ECMP seeds), each its own run folder. The figures do not depend on
``jobs``; only the wall time does.
"""

import time
from concurrent.futures import ThreadPoolExecutor

from .config import RunConfig, run_file
from .measure import Counters, mean, measure, tenant_figures
from .runner import build_model, run_model
from .top import FabricShape, FabricTop
from .traffic import ROLES, pattern_tables

#: The counter roles the measurement reads: the traffic module's, plus the leaf's VOQ
#: level (queued cells of every host port's VOQ; a level, never unwrapped).
MEASURE_ROLES = {**ROLES, "leaf_voq": ROLES.get("leaf_voq") or r"leaf\d+\.h\d+_in_voq_stat_queued_cells"}

__all__ = ["run_benchmark", "build_fabric", "MODES"]

MODES = ("gse", "ecmp")


def build_fabric(shape, lb, *, log=None, **kwargs):
    """The cached Verilator model of the fabric of ``shape`` in mode ``lb``."""

    def make():
        top = FabricTop(shape, lb)
        return top, top.black_boxes

    extra = {"log": log} if log else {}
    return build_model(f"fabric_{lb}", {**shape.as_dict(), "lb": lb}, make, **extra, **kwargs)


def run_once(model, shape, lb, run, work_dir, progress=None, timeout=None):
    """Run ``run`` on ``model`` and measure it (:func:`~.measure.measure`)."""
    text, start = run_file(model.address_map, shape, lb, run)
    out = run_model(model, text, work_dir, progress=progress, timeout=timeout)
    cn = Counters(out, model.address_map)
    hist = [sum(row) for row in out.readouts.get(0, [])]
    figures = measure(cn, shape, start, run.warmup, MEASURE_ROLES, histogram=hist)
    tables, _ = pattern_tables(run.pattern, shape, run.flows_per_dst)
    figures["per_tenant"] = tenant_figures(
        figures["per_host"], tables, run.tenants, figures.get("tenant_delivered")
    )
    figures["senders"] = [n for n, t in enumerate(tables) if t]
    figures["cycles_per_second"] = out.cycles_per_second
    figures["run_seconds"] = out.seconds
    figures["simulated_cycles"] = out.samples[-1][0]
    return figures


def _summary(values):
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    return {"mean": sum(vals) / len(vals), "min": min(vals), "max": max(vals)}


def run_benchmark(
    shape=FabricShape(),
    modes=MODES,
    run=RunConfig(),
    hash_seeds=8,
    work_root=None,
    progress=None,
    log=None,
    jobs=2,
):
    """``{mode: result}``; ``progress(mode, label, cycle, total, cps)`` reports runs;
    ``jobs`` runs of a model go at once."""
    from opengse.sim.runner import BUILD_ROOT

    run.check(shape)
    work_root = work_root or (BUILD_ROOT / "fabric" / "runs")
    results = {}
    for lb in modes:
        t0 = time.monotonic()
        model = build_fabric(shape, lb, log=log)
        seeds = list(range(1, hash_seeds + 1)) if lb == "ecmp" else [run.hash_seed]
        t_runs = time.monotonic()

        def one(seed, lb=lb, model=model):
            r = RunConfig(**{**run.__dict__, "hash_seed": seed})
            label = f"seed {seed}" if lb == "ecmp" else ""
            cb = (lambda c, t, cps: progress(lb, label, c, t, cps)) if progress else None
            return run_once(model, shape, lb, r, work_root / f"{lb}-seed{seed}", cb)

        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(seeds)))) as pool:
            runs = list(pool.map(one, seeds))
        res = _combine(runs, seeds)
        res["runs_wall_seconds"] = time.monotonic() - t_runs
        res["jobs"] = max(1, min(jobs, len(seeds)))
        res.update(
            {
                "mode": lb,
                "build_seconds": model.seconds,
                "build_cached": model.cached,
                "wall_seconds": time.monotonic() - t0,
                "shape": shape.as_dict(),
                "pattern": run.pattern,
                "frame_bytes": run.frame_bytes,
                "tenants": run.tenants,
                "flows": run.flows_per_dst,
                "sample": run.sample,
                "hash_seeds": len(seeds),
                "cycles": run.cycles,
                "warmup": run.warmup,
                "control_loss": run.control_loss,
                "fail_uplinks": [f"{f.leaf}:{f.port}@{f.cycle}" for f in run.fail_uplinks],
            }
        )
        results[lb] = res
    return results


def _combine(runs, seeds):
    """One mode's result from its runs: the first run's figures, with the headline
    figures replaced by their mean over runs and the spread beside them."""
    res = dict(runs[0])
    if len(runs) == 1:
        res["seeds"] = seeds
        return res
    for key in (
        "effective_throughput",
        "overhead_limit",
        "p50_latency_cycles",
        "p99_latency_cycles",
        "control_share",
    ):
        res[key] = mean([r[key] for r in runs])
        res[f"{key}_over_seeds"] = _summary([r[key] for r in runs])
    for key in ("drops", "lost", "reordered", "corrupt", "duplicate", "control_frames_spoiled"):
        vals = [r[key] for r in runs if r.get(key) is not None]
        res[key] = sum(vals) if vals else None
    for key in ("peak_voq", "peak_reorder"):
        vals = [r[key] for r in runs if r.get(key) is not None]
        res[key] = max(vals) if vals else None
    if all(r.get("peak_voq_by_port") for r in runs):
        res["peak_voq_by_port"] = {
            k: max(r["peak_voq_by_port"][k] for r in runs) for k in runs[0]["peak_voq_by_port"]
        }
    if all(r.get("host_egress_util") for r in runs):
        res["host_egress_util"] = [
            mean([r["host_egress_util"][n] for r in runs]) for n in range(len(runs[0]["host_egress_util"]))
        ]
    if all(r.get("per_tenant") for r in runs):
        res["per_tenant"] = [
            {**t, **{k: mean([r["per_tenant"][i][k] for r in runs]) for k in ("throughput", "share")}}
            for i, t in enumerate(runs[0]["per_tenant"])
        ]
    res["halves"] = [mean([r["halves"][k] for r in runs]) for k in (0, 1)]
    res["stable"] = max(r["stable"] for r in runs)
    res["cycles_per_second"] = mean([r["cycles_per_second"] for r in runs])
    res["run_seconds"] = sum(r["run_seconds"] for r in runs)
    if runs[0]["pause_fraction"] is not None:
        res["pause_fraction"] = [
            mean([r["pause_fraction"][n] for r in runs]) for n in range(len(runs[0]["pause_fraction"]))
        ]
    res["per_seed"] = [
        {
            "seed": s,
            "effective_throughput": r["effective_throughput"],
            "drops": r["drops"],
            "p99_latency_cycles": r["p99_latency_cycles"],
        }
        for s, r in zip(seeds, runs)
    ]
    res["timeline_per_seed"] = [r["timeline"] for r in runs]
    res["seeds"] = seeds
    return res
