"""VOQ buffer: random resets in mid-traffic (small configuration, cached build)."""

from test_voq import BUILD_ARGS, SMALL

from opengse.sim.runner import run_cocotb


def test_voq_random_resets():
    run_cocotb("voq", SMALL, "cocotb_voq_reset", build_args=BUILD_ARGS)
