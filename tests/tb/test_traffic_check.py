"""TrafficChecker (rtl/tb/traffic_check.py) on Verilator against sim/traffic_model.py."""

import pytest

from opengse.sim.runner import run_cocotb


@pytest.mark.parametrize("data_width,bins", [(64, 128), (8, 64)])
def test_traffic_check(data_width, bins):
    run_cocotb("traffic_check", {"data_width": data_width, "bins": bins}, "cocotb_traffic_check")
