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


def test_soak_time_limit_is_whole_milliseconds():
    """cocotb refuses a limit it cannot hold in picoseconds: 1e5 x 60 clocks x 4 x 10 ns
    in floats was 240.00000000000003 ms, and this soak failed at 0 ns."""
    assert soak_time_limit_ms(100_000, 60) == 240.0
    assert soak_time_limit_ms(10_000, 60, floor_ms=5.0) == 24.0
    assert soak_time_limit_ms(10_001, 60, floor_ms=5.0) == 25.0  # rounded up, never down
    assert soak_time_limit_ms(10, 60) == 50.0  # the floor
    for n in (1, 7, 999, 12_345, 100_000):
        for cpi in (4, 30, 40, 60, 2.5):
            limit = soak_time_limit_ms(n, cpi, floor_ms=5.0)
            assert limit == int(limit) and limit * 1_000_000 >= n * cpi * 40  # ns
