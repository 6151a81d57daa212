"""DGSQ manager bogus-input soak (opengse.sim.soak): >= 1e4 packets with bogus GRANTs
in the default regression, >= 1e5 under -m slow; OPENGSE_SOAK_N overrides both.
test_dgsq.py's MANAGER build (cached, shared with the manager bench)."""

import pytest
from test_dgsq import BUILD_ARGS, MANAGER

from opengse.sim.runner import run_cocotb
from opengse.sim.soak import soak_count, soak_env, soak_time_limit_ms


def _run(n):
    run_cocotb(
        "dgsq_manager",
        MANAGER,
        "cocotb_manager_soak",
        build_args=BUILD_ARGS,
        extra_env=soak_env(n),
        sim_time_limit_ms=soak_time_limit_ms(n, 60),
    )


def test_manager_soak():
    _run(soak_count())


@pytest.mark.slow
@pytest.mark.timeout(14400)
def test_manager_soak_slow():
    _run(soak_count(slow=True))
