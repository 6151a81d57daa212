"""Control-frame decoder soak (opengse.sim.soak): >= 1e4 hostile frames by default,
>= 1e5 under -m slow; OPENGSE_SOAK_N overrides both."""

import pytest

from opengse.sim.runner import run_cocotb
from opengse.sim.soak import soak_count, soak_env, soak_time_limit_ms


def _run(n):
    run_cocotb(
        "ctl_decoder",
        {"data_width": 64},
        "cocotb_ctl_decoder_soak",
        extra_env=soak_env(n),
        sim_time_limit_ms=soak_time_limit_ms(n, 40),
    )


def test_ctl_decoder_soak():
    _run(soak_count())


@pytest.mark.slow
@pytest.mark.timeout(14400)  # 1e5 inputs: about 10x the 1e4 run, which took up to 540 s at load 12
def test_ctl_decoder_soak_slow():
    _run(soak_count(slow=True))
