"""Formal: the parser never stalls on frames of at least 60 bytes (sim/properties.py),
and the check can fail: without the frame-size assumption it finds the clock that two
back-to-back one-beat runts cost."""
from opengse.sim.properties import PROPERTIES, ParserNeverStalls, inputs_of
from opengse.sim.formal import prove
from opengse.sim.runner import BUILD_ROOT


def test_parser_never_stalls_bmc():
    prop = PROPERTIES["parser_never_stalls"]
    top, ports = prop.build()
    res = prove(top, ports=ports, depth=prop.depth, mode=prop.mode, check=False,
                workdir=BUILD_ROOT / "formal" / "parser_never_stalls", **prop.options)
    assert res.passed, res.tail()


def test_parser_runts_can_stall():
    top = ParserNeverStalls(min_bytes=1)
    res = prove(top, ports=inputs_of(top.dut), depth=8, mode="bmc", check=False,
                workdir=BUILD_ROOT / "formal" / "parser_runt_stall", engine="smtbmc yices")
    assert res.status == "FAIL", f"expected a counterexample, got {res.status}"
