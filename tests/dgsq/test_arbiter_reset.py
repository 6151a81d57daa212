"""Grant arbiter: random resets in mid-traffic (test_dgsq.py's ARBITER build, cached)."""

from test_dgsq import ARBITER, BUILD_ARGS

from opengse.sim.runner import run_cocotb


def test_arbiter_random_resets():
    run_cocotb("grant_arbiter", ARBITER, "cocotb_arbiter_reset", build_args=BUILD_ARGS)
