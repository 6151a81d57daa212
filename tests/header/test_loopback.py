import pytest

from loopback_top import LOOPBACK
from opengse.sim.runner import run_cocotb


@pytest.mark.parametrize("data_width", [8, 64, 256])
def test_tag_parse_identity(data_width):
    run_cocotb(LOOPBACK, {"data_width": data_width}, "cocotb_loopback")
