"""The management port (rtl/mgmt/) on Verilator: frames, UART, and gsectl end to end."""

import shutil
import sys
from pathlib import Path

from mgmt_top import TOP
from opengse.sim.runner import run_cocotb

PARAMS = {"data_width": 64}


def test_mgmt_frames_and_uart():
    # -O0: the bench's time is in Python, and the model builds a minute faster
    run_cocotb(TOP, PARAMS, "cocotb_mgmt", cxx_opt="-O0")


def test_gsectl_end_to_end():
    gsectl = Path(sys.executable).parent / "gsectl"
    gsectl = str(gsectl) if gsectl.exists() else shutil.which("gsectl")
    assert gsectl, "the gsectl command is not installed (make install)"
    run_cocotb(
        TOP, PARAMS, "cocotb_gsectl", cxx_opt="-O0", extra_env={"GSECTL": gsectl}, sim_time_limit_ms=500
    )
