"""The management port (rtl/mgmt/) on Verilator: frames, UART, and gsectl end to end."""

from mgmt_top import TOP
from opengse.sim.runner import run_cocotb


def test_mgmt_frames_and_uart():
    run_cocotb(TOP, {"data_width": 64}, "cocotb_mgmt")
