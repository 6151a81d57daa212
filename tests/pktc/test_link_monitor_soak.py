"""Link monitor soak against its clock-by-clock model (sim/link_monitor_model.py): >= 1e4
inputs, most of them hostile, with random resets in the default regression, >= 1e5
under -m slow; OPENGSE_SOAK_N overrides both. The build of test_link_monitor_reset.py
(interval 64, for speed)."""

import pytest

from opengse.sim.runner import run_cocotb
from opengse.sim.soak import soak_count, soak_env, soak_time_limit_ms

PARAMS = {"data_width": 64, "links": 4, "interval": 64, "miss_limit": 2, "rejoin": 2}


def _run(n):
    run_cocotb(
        "link_monitor",
        PARAMS,
        "cocotb_link_monitor_soak",
        cxx_opt="-O0",
        extra_env=soak_env(n),
        sim_time_limit_ms=soak_time_limit_ms(n, clocks_per_input=4),
    )


def test_link_monitor_soak():
    _run(soak_count())


@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_link_monitor_soak_slow():
    _run(soak_count(slow=True))
