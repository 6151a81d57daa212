"""pyuvm tests (opengse.sim.uvm.axis_env) of the header blocks: tagger and parser."""

from opengse.sim.runner import run_cocotb


def test_parser_uvm():
    run_cocotb("parser", {"data_width": 64, "strip": 1}, "cocotb_parser_uvm")


def test_tagger_uvm():
    run_cocotb("tagger", {"data_width": 64}, "cocotb_tagger_uvm")
