import pytest

from opengse.sim.runner import run_cocotb


#: The narrowest and the widest beat run by default; the middle one (each width is a
#: Verilator build of its own) under ``make test-slow``.
WIDTHS = [8, pytest.param(64, marks=pytest.mark.slow), 256]


@pytest.mark.parametrize("strip", [0, 1])
@pytest.mark.parametrize("data_width", WIDTHS)
def test_parser(data_width, strip):
    run_cocotb("parser", {"data_width": data_width, "strip": strip}, "cocotb_parser")
