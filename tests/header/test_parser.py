import pytest

from opengse.sim.runner import run_cocotb


@pytest.mark.parametrize("strip", [0, 1])
@pytest.mark.parametrize("data_width", [8, 64, 256])
def test_parser(data_width, strip):
    run_cocotb("parser", {"data_width": data_width, "strip": strip}, "cocotb_parser")
