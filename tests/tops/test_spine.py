"""GSESpine (rtl/tops/spine.py) on Verilator against sim/spine_model.py."""

from opengse.sim.runner import run_cocotb


def test_spine():
    run_cocotb("spine", {"ports": 4, "nodes": 16}, "cocotb_spine")
