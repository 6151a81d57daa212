"""The AXI4-Lite register bank in a composed top, on Verilator (see cocotb_regs.py)."""

from opengse.sim.runner import run_cocotb
from regs_top import TOP


def test_regs_axil_top():
    run_cocotb(TOP, {"data_width": 64, "uptime_init": 2**32 - 4000}, "cocotb_regs")
