"""The AXI4-Lite register bank in a composed top, on Verilator (see cocotb_regs.py); with
``counter_store`` the blocks' counters are read through the bank's CounterStore."""

import pytest

from opengse.sim.runner import run_cocotb
from regs_top import TOP


@pytest.mark.parametrize("counter_store", [0, 1])
def test_regs_axil_top(counter_store):
    run_cocotb(
        TOP, {"data_width": 64, "uptime_init": 2**32 - 4000, "counter_store": counter_store}, "cocotb_regs"
    )
