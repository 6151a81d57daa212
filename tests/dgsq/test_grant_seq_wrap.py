"""Grant arbiter: GRANT seqs across 65535 -> 0 (the build of test_dgsq.py)."""

from test_dgsq import ARBITER, BUILD_ARGS

from opengse.sim.runner import run_cocotb


def test_grant_seq_wrap():
    run_cocotb("grant_arbiter", ARBITER, "cocotb_grant_seq_wrap", build_args=BUILD_ARGS)
