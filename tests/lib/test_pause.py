"""PauseFIFO and PauseGate (rtl/lib/pause_fifo.py, pause_gate.py) on Verilator."""

import pytest

from opengse.rtl.lib.pause_fifo import pause_thresholds
from opengse.sim.runner import run_cocotb


def _fifo_params(delay, max_frame):
    depth, xoff, xon = pause_thresholds(delay, max_frame)
    return {"data_width": 64, "depth_bytes": depth, "xoff_bytes": xoff, "xon_bytes": xon}


@pytest.mark.parametrize("delay,max_frame", [(100, 9018), (30, 600)], ids=["delay100-9018B", "delay30-600B"])
def test_pause_fifo_lossless(delay, max_frame):
    """Sized by pause_thresholds for the link: lossless behind pause, and full rate."""
    env = {"PAUSE_DELAY": str(delay), "PAUSE_MAX_FRAME": str(max_frame)}
    for case in ("test_lossless_behind_pause", "test_full_rate"):
        run_cocotb(
            "pause_fifo", _fifo_params(delay, max_frame), "cocotb_pause_fifo", testcase=case, extra_env=env
        )


def test_pause_fifo_overflow():
    """A 512-byte store and a sender that ignores pause: drops and cuts as the model says."""
    params = {"data_width": 64, "depth_bytes": 512, "xoff_bytes": 256, "xon_bytes": 128}
    run_cocotb("pause_fifo", params, "cocotb_pause_fifo", testcase="test_overflow_drops_whole_and_counts")


def test_pause_gate():
    run_cocotb("pause_gate", {"data_width": 64}, "cocotb_pause_gate")
