"""Parser soak (opengse.sim.soak): >= 1e4 hostile frames in the default regression,
>= 1e5 under -m slow; OPENGSE_SOAK_N overrides both."""

import pytest

from opengse.sim.runner import run_cocotb
from opengse.sim.soak import soak_count, soak_env, soak_time_limit_ms


def _run(data_width, strip, n):
    run_cocotb(
        "parser",
        {"data_width": data_width, "strip": strip},
        "cocotb_parser_soak",
        extra_env=soak_env(n),
        sim_time_limit_ms=soak_time_limit_ms(n, 60),
    )


@pytest.mark.parametrize("strip", [0, 1])
def test_parser_soak(strip):
    _run(64, strip, soak_count())


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("strip", [0, 1])
def test_parser_soak_slow(strip):
    _run(64, strip, soak_count(slow=True))
