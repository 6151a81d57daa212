import pytest

from opengse.sim.runner import run_cocotb


#: The narrowest and the widest beat run by default; the middle one (a Verilator build
#: of its own) under ``make test-slow``.
WIDTHS = [8, pytest.param(64, marks=pytest.mark.slow), 256]


@pytest.mark.parametrize("data_width", WIDTHS)
def test_tagger(data_width):
    run_cocotb("tagger", {"data_width": data_width}, "cocotb_tagger")
