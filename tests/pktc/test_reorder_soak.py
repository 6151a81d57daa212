"""Reorder buffer hostile-input soak (opengse.sim.soak): >= 1e4 frames in the default
regression, >= 1e5 under -m slow; OPENGSE_SOAK_N overrides both. The 64-bit build of
test_pktc.py's REORDER (cached, shared with the reorder benches)."""

import pytest
from test_pktc import REORDER, VERILATOR_ARGS

from opengse.sim.runner import run_cocotb
from opengse.sim.soak import soak_count, soak_env, soak_time_limit_ms


def _run(n, testcase="test_reorder_soak", params=REORDER):
    run_cocotb(
        "reorder",
        params,
        "cocotb_reorder_soak",
        testcase=testcase,
        build_args=VERILATOR_ARGS,
        cxx_opt="-O0",
        extra_env=soak_env(n),
        sim_time_limit_ms=soak_time_limit_ms(n, 60, floor_ms=5.0),
    )


def test_reorder_soak():
    """45 s at 1e4 frames (load 2-3; 61-118 s at load 5-7 before the event-driven waits)."""
    _run(soak_count())


@pytest.mark.parametrize("data_width", [64, 128, 256])
def test_runt_empty_last_beat(data_width):
    """Frames of 1-31 bytes with an empty (tkeep 0) last beat are runts, at every width
    test_pktc.py builds (the same Verilator builds)."""
    _run(1, "test_runt_empty_last_beat", {**REORDER, "data_width": data_width})


@pytest.mark.slow
@pytest.mark.timeout(14400)
def test_reorder_soak_slow():
    _run(soak_count(slow=True))
