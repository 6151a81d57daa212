"""Grant arbiter soak (opengse.sim.soak): bogus control inputs in the closed loop,
>= 1e4 inputs in the default regression, >= 1e5 under -m slow; OPENGSE_SOAK_N overrides
both. The build of test_dgsq.py (cached)."""

import pytest
from test_dgsq import ARBITER, BUILD_ARGS

from opengse.sim.runner import run_cocotb
from opengse.sim.soak import soak_count, soak_env, soak_time_limit_ms


def _run(n, testcase=None):
    run_cocotb(
        "grant_arbiter",
        ARBITER,
        "cocotb_grant_arbiter_soak",
        testcase=testcase,
        build_args=BUILD_ARGS,
        extra_env=soak_env(n),
        sim_time_limit_ms=soak_time_limit_ms(n, 4),
    )


def test_grant_arbiter_soak():
    _run(soak_count(), "test_grant_arbiter_soak")


def test_grant_arbiter_duplicate_requests():
    _run(soak_count(), "test_grant_arbiter_duplicate_requests")


@pytest.mark.slow
@pytest.mark.timeout(14400)
def test_grant_arbiter_soak_slow():
    _run(soak_count(slow=True))
