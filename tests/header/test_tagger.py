import pytest

from opengse.sim.runner import run_cocotb


@pytest.mark.parametrize("data_width", [8, 64, 256])
def test_tagger(data_width):
    run_cocotb("tagger", {"data_width": data_width}, "cocotb_tagger")
