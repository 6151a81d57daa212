"""Stream pieces of rtl/lib on Verilator: packet mux, packet demux, skid buffer."""

import pytest

from opengse.sim.runner import run_cocotb


#: Each policy runs by default (0 at 3 inputs, 1 at 4); policy 1 at 3 inputs, a build of
#: its own that the other two cover between them, under -m slow.
@pytest.mark.parametrize("inputs,policy", [(3, 0), pytest.param(3, 1, marks=pytest.mark.slow), (4, 1)])
def test_packet_mux(inputs, policy):
    run_cocotb("packet_mux", {"inputs": inputs, "policy": policy, "data_width": 64}, "cocotb_packet_mux")


@pytest.mark.parametrize("outputs,data_width", [(3, 64), (2, 32)])
def test_packet_demux(outputs, data_width):
    run_cocotb("packet_demux", {"outputs": outputs, "data_width": data_width}, "cocotb_packet_demux")


@pytest.mark.parametrize("data_width", [64, 8])
def test_skid_buffer(data_width):
    run_cocotb("skid_buffer", {"data_width": data_width}, "cocotb_skid_buffer")
