"""Grant arbiter: random resets in mid-traffic (test_dgsq.py's ARBITER build, cached).

Each reset is followed by a full lossless loop that drains (about 20 s of simulation
a reset): the default regression resets twice, ``make test-slow`` five times."""

import pytest
from test_dgsq import ARBITER, BUILD_ARGS

from opengse.sim.runner import run_cocotb


def _run(resets):
    run_cocotb(
        "grant_arbiter",
        ARBITER,
        "cocotb_arbiter_reset",
        build_args=BUILD_ARGS,
        extra_env={"ARBITER_RESETS": str(resets)},
    )


def test_arbiter_random_resets():
    _run(2)


@pytest.mark.slow
def test_arbiter_random_resets_five():
    _run(5)
