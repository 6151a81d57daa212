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
        run_cocotb(
            "grant_arbiter",
            ARBITER,
            "cocotb_grant_arbiter_uvm",
            build_args=BUILD_ARGS,
            extra_env={"ARB_UVM_BREAK": "tc,room"},
        )
    for symptom in ("strict priority: GRANT to class", "grant beyond egress room"):
        assert symptom in str(failure.value), f"not caught: {symptom}"


def test_dgsq_manager_uvm():
    run_cocotb("dgsq_manager", MANAGER, "cocotb_dgsq_manager_uvm", build_args=BUILD_ARGS)


@pytest.mark.parametrize("block", ["ctl_encoder", "ctl_decoder"])
def test_control_frames_uvm(block):
    run_cocotb(block, {"data_width": 64}, "cocotb_control_frames_uvm")


@pytest.mark.parametrize(
    "block,testcase,corrupt,symptoms",
    [
        (
            "ctl_encoder",
            "EncoderMixed",
            "data",
            (
                "data differs (len 60 vs expected 60, first difference at byte 24)",
                "1 scoreboard mismatch(es)",
            ),
        ),
        ("ctl_encoder", "EncoderMixed", "stat", ("counter stat_frames",)),
        ("ctl_decoder", "DecoderMixed", "data", ("seq=", "1 scoreboard mismatch(es)")),
        ("ctl_decoder", "DecoderMixed", "stat", ("counter stat_drop_err",)),
        ("ctl_decoder", "DecoderMixed", "accept", ("scoreboard mismatch(es); first:", "[ttl0]")),
    ],
)
def test_control_frames_uvm_can_fail(block, testcase, corrupt, symptoms):
    """The scoreboard catches one corrupted bit in one output (a frame's GSE seq, a
    decoded seq) and a reference that accepts what the decoder rejects (ttl 0); the
    counter check catches one counter off by one."""
    with pytest.raises(AssertionError) as failure:
        run_cocotb(
            block,
            {"data_width": 64},
            "cocotb_control_frames_uvm",
            testcase=testcase,
            extra_env={"CTL_UVM_BREAK": corrupt},
        )
    for symptom in symptoms:
        assert symptom in str(failure.value), f"not caught: {symptom}"
