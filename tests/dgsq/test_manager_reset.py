"""DGSQ manager: random resets in mid-traffic (test_dgsq.py's MANAGER build, cached)."""

from test_dgsq import BUILD_ARGS, MANAGER

from opengse.sim.runner import run_cocotb


def test_manager_random_resets():
    run_cocotb("dgsq_manager", MANAGER, "cocotb_manager_reset", build_args=BUILD_ARGS)
