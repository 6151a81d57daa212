"""DGSQ closed loop RTL-to-RTL: manager + control frames + grant arbiter on Verilator.

See docs/dgsq-loop.md. One Verilator build (~40 s) for all cases."""
import pytest

from opengse.sim.runner import run_cocotb

from test_dgsq import ARBITER, BUILD_ARGS, MANAGER

#: The manager and arbiter with their test_dgsq.py parameters; one build.
LOOP = {**MANAGER, **ARBITER, "src_node": 5, "dst_node": 9, "port": 3, "link_reg": 1}

#: Seed 1 of the lossless test hits the manager/arbiter mismatch of docs/dgsq-loop.md
#: ("Findings": a second container on one GRANT's leftover credit arrives after the
#: arbiter freed the slot, arb_stat_arr_unknown = 1). Strict: it passes once fixed.
MISMATCH = pytest.mark.xfail(strict=True, reason="manager sends a 2nd container on one GRANT; "
                                                 "arbiter freed the slot (docs/dgsq-loop.md)")


@pytest.mark.parametrize("testcase,seed", [
    ("test_loop_lossless", 0),
    pytest.param("test_loop_lossless", 1, marks=MISMATCH),
    ("test_loop_control_loss", 0),
])
def test_dgsq_loop(testcase, seed):
    run_cocotb("dgsq_loop_tb", LOOP, "cocotb_dgsq_loop", testcase=testcase,
               build_args=BUILD_ARGS, extra_env={"DGSQ_LOOP_CASE_SEED": str(seed)})
