"""FabricLink (rtl/tb/link.py) on Verilator against sim/link_model.py."""

import pytest

from opengse.sim.runner import run_cocotb


@pytest.mark.parametrize(
    "delay,data_width", [(100, 64), (1, 64), (3, 8), pytest.param(64, 32, marks=pytest.mark.slow)]
)
def test_fabric_link(delay, data_width):
    run_cocotb("fabric_link", {"delay": delay, "data_width": data_width}, "cocotb_fabric_link")
