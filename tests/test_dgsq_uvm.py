"""pyuvm tests (opengse.sim.uvm.stream_env) of the DGSQ blocks, on the same builds as
tests/test_dgsq.py (same parameters and build arguments: no extra Verilator build)."""
import pytest

from opengse.sim.runner import run_cocotb
from test_dgsq import ARBITER, BUILD_ARGS, MANAGER


def test_grant_arbiter_uvm():
    run_cocotb("grant_arbiter", ARBITER, "cocotb_grant_arbiter_uvm", build_args=BUILD_ARGS)


def test_grant_arbiter_uvm_can_fail():
    """The scoreboard catches a corrupted view of the grants: class lowered by one
    (strict priority) and egress room shrunk by a container (room check)."""
    with pytest.raises(AssertionError) as failure:
        run_cocotb("grant_arbiter", ARBITER, "cocotb_grant_arbiter_uvm", build_args=BUILD_ARGS,
                   extra_env={"ARB_UVM_BREAK": "tc,room"})
    for symptom in ("strict priority: GRANT to class", "grant beyond egress room"):
        assert symptom in str(failure.value), f"not caught: {symptom}"


def test_dgsq_manager_uvm():
    run_cocotb("dgsq_manager", MANAGER, "cocotb_dgsq_manager_uvm", build_args=BUILD_ARGS)
