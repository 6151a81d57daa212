"""Control-frame encoder soak (opengse.sim.soak, cocotb_ctl_encoder_soak.py): >= 1e4
hostile headers by default, >= 1e5 under -m slow; OPENGSE_SOAK_N overrides both."""

import pytest

from opengse.sim.runner import run_cocotb
from opengse.sim.soak import soak_count, soak_env, soak_time_limit_ms


def _run(n):
    run_cocotb(
        "ctl_encoder",
        {"data_width": 64},
        "cocotb_ctl_encoder_soak",
        extra_env=soak_env(n),
        sim_time_limit_ms=soak_time_limit_ms(n, 30, floor_ms=5.0),
    )


def test_ctl_encoder_soak():
    _run(soak_count())


@pytest.mark.slow
@pytest.mark.timeout(14400)
def test_ctl_encoder_soak_slow():
    _run(soak_count(slow=True))
