"""The fabric report: a table per mode, the JSON objects, the PNG.

Verdicts are computed from the measured figures against the targets of the brief
(section 6) and issue 14 (item 9); a figure that was not measured reads "not measured".
"""

import json
import math

__all__ = ["format_table", "to_json", "write_png", "verdicts", "TARGETS"]

#: GSE-mode targets by frame size (effective throughput), and the share of the
#: overhead limit it must reach.
TARGETS = {1500: 0.95, 9000: 0.97}
LIMIT_SHARE = 0.99


def _pct(x, digits=1):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "not measured"
    return f"{100 * x:.{digits}f} %"


def _num(x):
    return "not measured" if x is None else f"{x:g}" if isinstance(x, float) else str(x)


def target_for(frame_bytes):
    """The GSE throughput target: 0.95 up to 1500 B frames, 0.97 at 9000 B (between:
    the 1500 B one)."""
    return TARGETS[9000] if frame_bytes >= 9000 else TARGETS[1500]


def verdicts(res):
    """``[(what, verdict)]`` for a GSE-mode result (ECMP has no targets)."""
    if res["mode"] != "gse":
        return []
    out = []
    eff, lim = res.get("effective_throughput"), res.get("overhead_limit")
    t = target_for(res["frame_bytes"])
    if eff is None:
        out.append((f"effective throughput >= {t}", "not measured"))
    else:
        ok = eff >= t
        out.append(
            (f"effective throughput >= {t}", "pass" if ok else f"MISS by {100 * (t - eff):.2f} points")
        )
    if eff is None or lim is None or math.isnan(lim):
        out.append((f">= {LIMIT_SHARE} of the overhead limit", "not measured"))
    else:
        share = eff / lim
        out.append(
            (
                f">= {LIMIT_SHARE} of the overhead limit",
                f"pass ({share:.4f})"
                if share >= LIMIT_SHARE
                else f"MISS ({share:.4f}, by {100 * (LIMIT_SHARE - share):.2f} points)",
            )
        )
    drops = res.get("drops")
    injected = bool(res.get("fail_uplinks")) or res.get("control_loss")
    if drops is None:
        out.append(("zero drops", "not measured"))
    elif injected:
        out.append(("drops (failures / loss injected: counted, not a target)", str(drops)))
    else:
        refused = res.get("refused_beats") or 0
        ok = drops == 0 and refused == 0
        out.append(
            ("zero drops", "pass" if ok else f"MISS ({drops} frames dropped, {refused} beats refused)")
        )
    return out


def _eff_cell(res):
    s = res.get("effective_throughput_over_seeds")
    if s:
        return f"{_pct(s['mean'])} (min {_pct(s['min'])}, max {_pct(s['max'])}, {len(res['seeds'])} seeds)"
    return _pct(res.get("effective_throughput"), 2)


def format_table(results):
    """Plain-text report of ``{mode: result}``."""
    lines = []
    for mode, r in results.items():
        lines.append(
            f"== {mode.upper()}  {r['shape']['L']}x{r['shape']['S']} fabric, {r['shape']['H']} hosts/leaf, "
            f"pattern {r['pattern']}, {r['frame_bytes']} B, {r['tenants']} tenant(s)"
        )
        win = r.get("window_clocks")
        rows = [
            ("effective throughput", _eff_cell(r)),
            ("halves of the window", " / ".join(_pct(h, 2) for h in r.get("halves", []))),
            ("overhead limit", _pct(r.get("overhead_limit"), 2)),
            (
                "of the limit",
                _pct(r["effective_throughput"] / r["overhead_limit"], 2)
                if r.get("effective_throughput") is not None and r.get("overhead_limit")
                else "not measured",
            ),
            ("window", f"{win} clocks after a {r['warmup']}-clock warm-up" if win else "not measured"),
            ("drops (switches + failed links)", _num(r.get("drops"))),
            ("beats refused by a receiver (lost)", _num(r.get("refused_beats"))),
            (
                "lost / reordered / corrupt (checkers)",
                f"{_num(r.get('lost'))} / {_num(r.get('reordered'))} / {_num(r.get('corrupt'))}",
            ),
            (
                "latency p50 / p99 (clocks)",
                f"{_num(r.get('p50_latency_cycles'))} / {_num(r.get('p99_latency_cycles'))}",
            ),
            ("peak VOQ / reorder occupancy", f"{_num(r.get('peak_voq'))} / {_num(r.get('peak_reorder'))}"),
        ]
        pf = r.get("pause_fraction")
        rows.append(
            (
                "host time paused (mean, max)",
                f"{_pct(sum(pf) / len(pf), 2)}, {_pct(max(pf), 2)}" if pf else "not measured",
            )
        )
        rows.append(("control-frame share of fabric beats", _pct(r.get("control_share"), 2)))
        pt = r.get("per_tenant")
        if pt and (r.get("tenants") or 1) > 1:
            rows.append(
                (
                    "tenants: share of delivered (fair share)",
                    ", ".join(
                        f"{t['tenant']}: {_pct(t['share'], 2)} ({_pct(t['fair_share'], 2)})" for t in pt
                    ),
                )
            )
        util = r.get("host_egress_util")
        if util and r.get("pattern") == "incast":
            d = max(range(len(util)), key=lambda n: util[n] or 0)
            rows.append(("incast egress port busy", f"host {d}: {_pct(util[d], 2)}"))
        voq = r.get("peak_voq_by_port")
        if voq:
            grew = [f"{k} {v}" for k, v in sorted(voq.items()) if v]
            rows.append(("peak VOQ cells per port (where > 0)", ", ".join(grew) or "none"))
        if r.get("control_loss"):
            rows.append(("control frames spoiled", _num(r.get("control_frames_spoiled"))))
        if r.get("fail_uplinks"):
            rows.append(("failed uplinks", ", ".join(r["fail_uplinks"])))
        build = "cached" if r.get("build_cached") else "{:.0f} s".format(r.get("build_seconds", 0))
        rows.append(
            (
                "simulated cycles/s",
                f"{r.get('cycles_per_second', 0):,.0f} "
                f"({r.get('run_seconds', 0):.0f} s of runs, build {build})",
            )
        )
        for what, v in verdicts(r):
            rows.append((f"target: {what}", v))
        width = max(len(k) for k, _ in rows)
        lines += [f"  {k:{width}}  {v}" for k, v in rows]
        dl = r.get("downlink_util") or {}
        if dl:
            vals = list(dl.values())
            lines.append(
                f"  spine downlink utilisation: min {_pct(min(vals))}, mean {_pct(sum(vals) / len(vals))}, "
                f"max {_pct(max(vals))}"
            )
            lines.append("    " + "  ".join(f"{k} {100 * v:.1f}" for k, v in dl.items()))
        for s in r.get("per_seed", []):
            lines.append(
                f"    seed {s['seed']}: {_pct(s['effective_throughput'], 2)}, drops {_num(s['drops'])}, "
                f"p99 {_num(s['p99_latency_cycles'])}"
            )
        lines.append("")
    return "\n".join(lines)


def to_json(results):
    """One JSON object per mode, one per line (timelines left out; the PNG has them)."""
    lines = []
    for mode, r in results.items():
        obj = {k: v for k, v in r.items() if k not in ("timeline", "timeline_per_seed", "per_host")}
        obj["verdicts"] = dict(verdicts(r))
        lines.append(json.dumps(finite(obj), allow_nan=False))
    return "\n".join(lines)


def finite(x):
    """``x`` with every NaN or infinite float (a figure of a window where nothing was
    delivered, a link class that carried nothing) as None: JSON has no NaN, and
    ``json.dumps``'s ``default`` is never asked about floats."""
    if isinstance(x, float):
        return None if math.isnan(x) or math.isinf(x) else x
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def write_png(results, path):
    """Throughput over time per mode (ECMP: each seed, and their mean) and the
    utilisation of every spine downlink per mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 8))
    colours = {"gse": "tab:blue", "ecmp": "tab:red"}
    for mode, r in results.items():
        c = colours.get(mode, None)
        for k, tl in enumerate(r.get("timeline_per_seed") or []):
            ax1.plot(
                [x for x, _ in tl],
                [y for _, y in tl],
                color=c,
                alpha=0.25,
                lw=0.8,
                label=f"{mode} seeds" if k == 0 else None,
            )
        tl = r["timeline"] if not r.get("timeline_per_seed") else _mean_timeline(r["timeline_per_seed"])
        ax1.plot([x for x, _ in tl], [y for _, y in tl], color=c, lw=2, label=f"{mode} ({_eff_cell(r)})")
        if r.get("overhead_limit"):
            ax1.axhline(r["overhead_limit"], color=c, ls=":", lw=1)
        ax1.axvline(r["warmup"], color="grey", ls="--", lw=0.8)
    ax1.set_xlabel("clocks since traffic started")
    ax1.set_ylabel("effective throughput (of host line rate)")
    ax1.set_ylim(0, 1.05)
    ax1.legend(loc="lower right", fontsize=8)
    ax1.set_title("Throughput over time (dotted: overhead limit; dashed: end of warm-up)")
    names = None
    width = 0.8 / max(1, len(results))
    for k, (mode, r) in enumerate(results.items()):
        dl = r.get("downlink_util") or {}
        names = names or list(dl)
        ax2.bar(
            [i + k * width for i in range(len(dl))],
            list(dl.values()),
            width,
            color=colours.get(mode),
            label=mode,
        )
    if names:
        ax2.set_xticks([i + width * (len(results) - 1) / 2 for i in range(len(names))])
        ax2.set_xticklabels(names, rotation=60, fontsize=7)
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("busy fraction (measured window)")
    ax2.set_title("Spine downlink utilisation")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _mean_timeline(timelines):
    n = min(len(t) for t in timelines)
    return [(timelines[0][i][0], sum(t[i][1] for t in timelines) / len(timelines)) for i in range(n)]
