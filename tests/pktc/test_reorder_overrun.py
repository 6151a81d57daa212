"""Reorder buffer with the overrun skip (``skip_distance`` 6, as a leaf sets with
``max_inflight`` 6 in a window of 8): directed cases against ``ReorderWindowModel``, and
the random benches of cocotb_reorder.py on the same build (their streams keep every undelivered
container within the distance unless it is lost, so the rule must change nothing but
when a lost container is skipped). test_out_of_window is left out: it stores W - 1
containers ahead of a missing head on purpose, which the rule treats as a proven loss."""

import pytest
from test_pktc import REORDER, VERILATOR_ARGS

from opengse.sim.runner import run_cocotb

REORDER_SKIP = {**REORDER, "skip_distance": 6}


def _run(params, module, testcase=None):
    run_cocotb("reorder", params, module, testcase=testcase, build_args=VERILATOR_ARGS, cxx_opt="-O0")


@pytest.mark.parametrize("data_width", [64, 256])
def test_reorder_overrun(data_width):
    _run({**REORDER_SKIP, "data_width": data_width}, "cocotb_reorder_overrun")


def test_reorder_random_with_overrun_skip():
    _run(
        REORDER_SKIP,
        "cocotb_reorder",
        [
            "test_in_order_no_pause",
            "test_random_mix_backpressure",
            "test_timeout_skip_partial",
            "test_source_jumps_ahead",
        ],
    )
