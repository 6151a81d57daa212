"""Container sprayer hostile-input soak (opengse.sim.soak, cocotb_sprayer_soak.py):
>= 1e4 frames in the default regression, >= 1e5 under -m slow (OPENGSE_SOAK_N overrides
both), in 4 epochs with a random reset in mid-traffic between them. The cached build
of test_pktc.py's sprayer."""

import pytest
from test_pktc import VERILATOR_ARGS

from opengse.sim.runner import run_cocotb
from opengse.sim.soak import soak_count, soak_env, soak_time_limit_ms

SPRAYER = {"data_width": 64, "uplinks": 4, "nodes": 16, "policy": 0}


def _run(n, env=None):
    run_cocotb(
        "sprayer",
        SPRAYER,
        "cocotb_sprayer_soak",
        build_args=VERILATOR_ARGS,
        cxx_opt="-O0",
        extra_env={**soak_env(n), **(env or {})},
        sim_time_limit_ms=soak_time_limit_ms(n, 60, floor_ms=5.0),
    )


def test_sprayer_soak():
    _run(soak_count())


def test_stuck_uplinks_fail_naming_the_port():
    """Every uplink's tready held low: the soak fails within its 2000-clock limit,
    naming the outputs, instead of hanging."""
    with pytest.raises(AssertionError, match=r"no beat on m_axis_\* for 2000 clocks"):
        _run(200, {"SPRAYER_SOAK_STUCK": "1"})


@pytest.mark.slow
@pytest.mark.timeout(14400)
def test_sprayer_soak_slow():
    _run(soak_count(slow=True))
