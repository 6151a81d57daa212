import pytest

from opengse.sim.runner import run_cocotb


#: The narrowest and the widest beat run by default: both strip modes at 8 bits and,
#: at 256, strip 1 (the mode that realigns the payload across beats); the middle width
#: and strip 0 at 256 bits (each a Verilator build of its own) under ``make test-slow``.
SLOW = pytest.mark.slow
CASES = [
    pytest.param(8, 0, id="8-0"),
    pytest.param(8, 1, id="8-1"),
    pytest.param(64, 0, id="64-0", marks=SLOW),
    pytest.param(64, 1, id="64-1", marks=SLOW),
    pytest.param(256, 0, id="256-0", marks=SLOW),
    pytest.param(256, 1, id="256-1"),
]


@pytest.mark.parametrize("data_width,strip", CASES)
def test_parser(data_width, strip):
    run_cocotb("parser", {"data_width": data_width, "strip": strip}, "cocotb_parser")
