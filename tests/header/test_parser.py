import pytest

from opengse.sim.runner import run_cocotb


#: By default (each case a Verilator build of its own): strip 0 at 8 bits, the only
#: default run of that mode, and strip 1 at 256 bits, where stripping realigns the
#: payload across beats (at 8 bits a byte is a beat and nothing is realigned; strip 1
#: at 64 bits runs in test_parser_uvm and the parser soak). The rest under
#: ``make test-slow``.
SLOW = pytest.mark.slow
CASES = [
    pytest.param(8, 0, id="8-0"),
    pytest.param(8, 1, id="8-1", marks=SLOW),
    pytest.param(64, 0, id="64-0", marks=SLOW),
    pytest.param(64, 1, id="64-1", marks=SLOW),
    pytest.param(256, 0, id="256-0", marks=SLOW),
    pytest.param(256, 1, id="256-1"),
]


@pytest.mark.parametrize("data_width,strip", CASES)
def test_parser(data_width, strip):
    run_cocotb("parser", {"data_width": data_width, "strip": strip}, "cocotb_parser")
