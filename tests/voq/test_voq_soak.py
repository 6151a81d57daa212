"""VOQ soak (opengse.sim.soak) on the small test configuration of test_voq.py (its
cached build): >= 1e4 hostile packets by default, >= 1e5 under -m slow."""

import pytest
from test_voq import BUILD_ARGS, SMALL

from opengse.sim.runner import run_cocotb
from opengse.sim.soak import soak_count, soak_env, soak_time_limit_ms


def _run(n):
    run_cocotb(
        "voq",
        SMALL,
        "cocotb_voq_soak",
        testcase="test_voq_soak",
        build_args=BUILD_ARGS,
        extra_env=soak_env(n),
        sim_time_limit_ms=soak_time_limit_ms(n, 60),
    )


def test_voq_soak():
    _run(soak_count())


@pytest.mark.slow
@pytest.mark.timeout(14400)  # 1e5 inputs: about 10x the 1e4 run, which took up to 540 s at load 12
def test_voq_soak_slow():
    _run(soak_count(slow=True))
