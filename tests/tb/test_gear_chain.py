"""Generator -> link -> checker end to end (tests/tb/gear_chain_top.py) on Verilator."""

import pytest
from gear_chain_top import SPEC

from opengse.sim.runner import run_cocotb


@pytest.mark.parametrize("data_width", [64])
def test_gear_chain(data_width):
    run_cocotb(SPEC, {"data_width": data_width}, "cocotb_gear_chain")
