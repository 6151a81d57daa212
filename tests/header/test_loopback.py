import pytest

from loopback_top import LOOPBACK
from opengse.sim.runner import run_cocotb


#: The widest beat runs by default, the others (each a Verilator build of its own) under
#: ``make test-slow``: the tagger and the parser are each checked at 8 bits against the
#: reference by their own tests (test_tagger.py, test_parser.py's 8-0).
WIDTHS = [pytest.param(8, marks=pytest.mark.slow), pytest.param(64, marks=pytest.mark.slow), 256]


@pytest.mark.parametrize("data_width", WIDTHS)
def test_tag_parse_identity(data_width):
    run_cocotb(LOOPBACK, {"data_width": data_width}, "cocotb_loopback")
