"""``gse bench dgsq``: grant decisions per clock and ECP5 figures of the DGSQ blocks.

* ``decisions_per_clock``: grant decisions per clock of the 64-requester arbiter with
  every requester saturated and the egress room open (measured on Verilator by the
  ``bench_decision_rate`` cocotb test): the burst rate until every slot has its
  in-flight limit out, and the sustained closed-loop rate when each container's
  arrival comes back as one report after 32 clocks (then the engine, one REQUEST or
  arrival per 2 clocks, and each requester's in-flight limit bound the rate; see
  docs/dgsq.md).
* ``arbiter`` / ``manager``: ``implement_block`` figures (Fmax median over the seeds,
  LUT4, FF, DP16KD) of the default 64-requester arbiter and 64-context manager.
"""

import json
import os
import tempfile

from .benchmark import FMAX_TARGET_MHZ, Target, fmax_target, implement_block, no_pnr_figures, verdict
from .runner import run_cocotb

__all__ = ["bench", "SIM_PARAMS", "TARGET_MHZ"]

TARGET_MHZ = FMAX_TARGET_MHZ
#: The default arbiter with an egress buffer large enough (1023 containers) that the
#: room never limits the decision rate being measured.
SIM_PARAMS = {
    "n_req": 64,
    "buffer_credits": 65472,
    "grant_credits": 64,
    "max_inflight": 2,
    "n_tenants": 16,
    "lease_cycles": 8192,
}
BUILD_ARGS = ("--output-split", "0", "--output-split-cfuncs", "0", "-CFLAGS", "-O1")


def decision_rate():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rate.json")
        run_cocotb(
            "grant_arbiter",
            SIM_PARAMS,
            "opengse.sim.arbiter_bench",
            testcase="bench_decision_rate",
            extra_env={"DGSQ_BENCH_OUT": out},
            build_args=BUILD_ARGS,
        )
        with open(out) as f:
            return json.load(f)


def bench(seeds=(1, 2, 3), pnr=True, **_kw):
    rate = decision_rate()
    fig = {
        "decisions_per_clock": rate["decisions_per_clock_burst"],
        "decisions_per_clock_sustained": rate["decisions_per_clock_sustained"],
        "rate_detail": rate,
        "target": {"decisions_per_clock": 1.0, "fmax_mhz": TARGET_MHZ},
    }
    if pnr:
        fig["arbiter"] = implement_block("grant_arbiter", {}, seeds=tuple(seeds))
        fig["manager"] = implement_block("dgsq_manager", {}, seeds=tuple(seeds))
    else:
        fig["arbiter"] = no_pnr_figures()
        fig["manager"] = no_pnr_figures()
    fig["fmax_mhz"] = fig["arbiter"]["fmax_mhz"]
    fig["note"], fig["meets_targets"] = verdict(
        [
            Target("burst decisions/clock", fig["decisions_per_clock"], 1.0),
            fmax_target("arbiter Fmax (MHz)", fig["arbiter"], TARGET_MHZ),
            fmax_target("manager Fmax (MHz)", fig["manager"], TARGET_MHZ),
        ]
    )
    return fig
