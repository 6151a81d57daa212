"""TrafficGenerator (rtl/tb/traffic_gen.py) on Verilator against sim/traffic_model.py."""

import pytest

from opengse.sim.runner import run_cocotb


@pytest.mark.parametrize("data_width", [64, 8])
def test_traffic_gen(data_width):
    run_cocotb("traffic_gen", {"data_width": data_width}, "cocotb_traffic_gen")
