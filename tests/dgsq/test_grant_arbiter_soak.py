"""Grant arbiter: bogus control inputs in the closed loop (the build of test_dgsq.py)."""

from test_dgsq import ARBITER, BUILD_ARGS

from opengse.sim.runner import run_cocotb


def test_grant_arbiter_bogus_inputs():
    run_cocotb("grant_arbiter", ARBITER, "cocotb_grant_arbiter_soak", build_args=BUILD_ARGS)
